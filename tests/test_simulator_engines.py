"""The fast engine against the reference engine, and the invariants both must keep."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from planner.sim.arrivals import arrivals
from planner.sim.engine_fast import run_fast
from planner.sim.engine_reference import run_reference
from planner.sim.policies import POLICIES
from planner.sim.scenario import Scenario, Sharing
from planner.sim.sharing import effective_table
from planner.sim.simulate import simulate
from planner.sim.stages import WorkerStages

from .simulation_cases import LAPTOP_TABLE, scenarios


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_fast_engine_matches_reference_engine_exactly(scenario: Scenario) -> None:
    fast = run_fast(scenario)
    reference = run_reference(scenario)
    assert fast.same_as(reference, tolerance_ms=1e-9) == []


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(cascade=True, spread=True), st.booleans())
@example(Scenario(latency_ms=tuple(2.0 + b for b in range(9)), sessions=3, policy="triton",
                  max_batch=10, duration_s=0.5), True)  # fmt: skip
def test_fast_engine_matches_reference_engine_exactly_with_a_cascade(
    scenario: Scenario, queue_all: bool
) -> None:
    # A chain of models per frame, fixed or drawn crops, under both queue semantics.
    if queue_all and not scenario.cpu_pool:
        # A server that queues every frame can form its largest batch from one session's
        # backlog, so that batch must be in the table: drawn tables cover the session
        # count, not a larger max_batch.
        if "max_batch" in POLICIES[scenario.policy].params:
            largest = min(int(scenario.param("max_batch")), len(scenario.latency_ms))
            scenario = scenario.with_(max_batch=largest)
        scenario = scenario.with_(queue="all")
    fast = run_fast(scenario)
    reference = run_reference(scenario)
    assert fast.same_as(reference, tolerance_ms=1e-9) == []


# A fast card at 1,024 sessions: lightly loaded, so nearly every frame is a decision.
FAST_CARD = tuple(0.01 + 0.002 * b for b in range(1024))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(max_sessions=1024, min_sessions=49, durations_s=(0.1, 0.2, 0.3)))
@example(Scenario(latency_ms=FAST_CARD, sessions=1024, policy="round-robin", duration_s=0.3))
@example(Scenario(latency_ms=FAST_CARD, sessions=1024, policy="deadline", duration_s=0.2,
                  phases="aligned", jitter_ms=1.0, slo_ms=0.5))  # fmt: skip
@example(Scenario(latency_ms=FAST_CARD, sessions=1000, policy="triton", duration_s=0.2,
                  stages=WorkerStages(pre_ms=0.05, post_ms=0.02, cpu_workers=8),
                  max_batch=300))  # fmt: skip
def test_fast_engine_matches_reference_engine_exactly_at_many_sessions(
    scenario: Scenario,
) -> None:
    # Up to the largest session count a scenario takes, where the fast engine's pending
    # set spans many words and its queue compacts within a run; short runs keep the
    # reference engine quick.
    fast = run_fast(scenario)
    reference = run_reference(scenario)
    assert fast.same_as(reference, tolerance_ms=1e-9) == []


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_every_frame_is_accounted_for(scenario: Scenario) -> None:
    r = run_fast(scenario)
    assert np.array_equal(r.arrived, r.delivered + r.overwritten + r.expired + r.pending)
    offered = np.diff(arrivals(scenario).start)
    assert np.array_equal(r.arrived, offered)
    assert np.all(r.delivered <= r.arrived)
    assert np.all(np.bincount(r.frame_session, minlength=scenario.sessions) == r.delivered)
    pairs = set(zip(r.frame_session.tolist(), r.frame_index.tolist(), strict=True))
    assert len(pairs) == r.frame_session.size  # no frame delivered twice


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_one_batch_at_a_time_and_latency_at_least_batch_one(scenario: Scenario) -> None:
    r = run_fast(scenario)
    assert np.all(r.batch_start[1:] >= r.batch_end[:-1])  # the GPU runs one batch at a time
    assert np.all(r.batch_start < scenario.duration_ms)  # nothing dispatched after the end
    assert np.all(r.batch_size >= 1) and np.all(r.batch_size <= scenario.sessions)
    one = effective_table(np.asarray(scenario.latency_ms), scenario.sharing)[0]
    assert np.all(r.frame_latency >= one - 1e-9)
    assert np.all(r.frame_arrival <= r.batch_start[r.frame_batch])


@settings(max_examples=50, deadline=None)
@given(scenarios())
def test_same_scenario_same_result(scenario: Scenario) -> None:
    assert run_fast(scenario).same_as(run_fast(scenario), tolerance_ms=0.0) == []
    again = Scenario(**{f: getattr(scenario, f) for f in scenario.__dataclass_fields__})
    assert again == scenario and hash(again) == hash(scenario)


@settings(max_examples=50, deadline=None)
@given(scenarios(), st.lists(st.sampled_from([0.2, 0.9, 1.0]), min_size=1, max_size=3))
def test_co_tenants_never_change_the_phases_of_a_seed(
    scenario: Scenario, duties: list[float]
) -> None:
    shared = scenario.with_(sharing=Sharing.of("time-slicing", cotenants=tuple(duties)))
    plain, busy = arrivals(scenario), arrivals(shared)
    assert np.array_equal(plain.times, busy.times) and np.array_equal(plain.start, busy.start)


def test_jitter_keeps_frames_in_order_and_inside_the_run() -> None:
    s = Scenario(latency_ms=LAPTOP_TABLE, sessions=8, jitter_ms=50.0, duration_s=5.0)
    a = arrivals(s)
    for i in range(8):
        times = a.of(i)
        assert np.all(np.diff(times) >= 0)
        assert times.min() >= 0 and times.max() < 5000.0
    assert a.times.size != arrivals(s.with_(jitter_ms=0.0)).times.size or not np.array_equal(
        a.times, arrivals(s.with_(jitter_ms=0.0)).times
    )


def test_jitter_moves_each_arrival_at_most_half_a_period_from_its_grid_time() -> None:
    # The order above would hold whatever the clip is (a running maximum forces it), so
    # check the clip itself: frame k of session i stays within P_i/2 of offset_i + k*P_i,
    # and a deviation of 50 ms (1.5 to 3 periods) reaches that bound in every session.
    fps = (30.0, 25.0, 10.0, 60.0)
    s = Scenario(latency_ms=LAPTOP_TABLE, sessions=4, fps=fps, jitter_ms=50.0, duration_s=5.0)
    jittered, plain = arrivals(s), arrivals(s.with_(jitter_ms=0.0))
    for i, rate in enumerate(fps):
        period = 1000.0 / rate
        offset = plain.of(i)[0]  # jitter never changes the phases of a seed
        times = jittered.of(i)
        # The run starts at frame 0, or at frame 1 when jitter pulled frame 0 below zero
        # (which of the two can be a tie when both moved the full half period).
        frame = np.arange(times.size)
        moved = min(
            (times - (offset + (first + frame) * period) for first in (0, 1)),
            key=lambda m: float(np.abs(m).max()),
        )
        assert np.abs(moved).max() <= period / 2 * (1 + 1e-12), i
        # The clip is reached both ways, so it is neither narrower nor lopsided.
        assert moved.max() >= 0.49 * period and moved.min() <= -0.49 * period, i


def test_even_a_jitter_under_a_millisecond_moves_the_arrivals() -> None:
    s = Scenario(latency_ms=LAPTOP_TABLE, sessions=8, jitter_ms=0.5, duration_s=1.0)
    jittered, plain = arrivals(s), arrivals(s.with_(jitter_ms=0.0))
    assert jittered.times.size == plain.times.size  # 0.5 ms moves no frame out of the run
    assert 0 < np.abs(jittered.times - plain.times).max() < 1000.0 / 30 / 2


def test_simulate_with_the_reference_engine_gives_the_same_results() -> None:
    s = Scenario(latency_ms=LAPTOP_TABLE, sessions=5, policy="batch-all", seed=3)
    fast, reference = simulate(s), simulate(s, engine="reference")
    assert fast.as_dict() == reference.as_dict()
