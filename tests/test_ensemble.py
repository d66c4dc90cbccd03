"""Many runs at once give exactly what each run gives on its own."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.errors import BadInput
from planner.sim import ensemble
from planner.sim.ensemble import run_many
from planner.sim.pipeline import job_sums
from planner.sim.scenario import Scenario
from planner.sim.simulate import simulate
from planner.sim.sweep import pooled_runs

from .simulation_cases import scenarios


@settings(max_examples=25, deadline=None)
@given(st.lists(scenarios(max_sessions=16), min_size=1, max_size=8))
def test_run_many_equals_simulating_each_scenario(batch: list[Scenario]) -> None:
    # Same seeds and sharing with other session counts and policies, so runs share
    # arrivals and co-tenant timelines drawn to different horizons.
    batch = batch + [s.with_(policy="batch-all") for s in batch]
    batch += [s.with_(sessions=max(1, s.sessions - 1), fps=s.fps[:1]) for s in batch[:2]]
    for outcome, scenario in zip(run_many(batch), batch, strict=True):
        alone = simulate(scenario)
        assert outcome.scenario is scenario
        assert np.array_equal(outcome.latency_ms, alone.records.frame_latency)
        assert np.array_equal(outcome.fps, np.array(alone.per_session_fps))
        assert outcome.overwritten == sum(s.overwritten for s in alone.sessions)
        assert outcome.expired == sum(s.expired for s in alone.sessions)
        assert outcome.arrived == sum(s.arrived for s in alone.sessions)
        assert outcome.gpu_busy_fraction == pytest.approx(alone.gpu_busy_fraction, rel=1e-12)
        hist = {b: int(c) for b, c in enumerate(outcome.batch_sizes) if c}
        assert hist == alone.batch_histogram
        r = alone.records
        assert np.array_equal(outcome.worker_ms, r.frame_done - r.frame_arrival)
        if scenario.cpu_pool:
            # Kept as sums inside the loop (the job records are not kept for many runs).
            sums = job_sums(
                r.job_kind,
                r.job_ready,
                r.job_start,
                scenario.stages.pre_ms,
                scenario.stages.post_ms,
                scenario.duration_ms,
            )
            assert outcome.cpu_sums == pytest.approx(sums, rel=1e-9, abs=1e-9)
        else:
            assert outcome.cpu_sums is None


def test_run_many_of_nothing_is_nothing() -> None:
    assert run_many([]) == []


@settings(max_examples=25, deadline=None)
@given(scenarios(max_sessions=16), st.integers(0, 2**40))
def test_a_copy_with_another_seed_is_the_validated_copy(scenario: Scenario, seed: int) -> None:
    fast, checked = scenario.with_seed(seed), scenario.with_(seed=seed)
    assert fast == checked and hash(fast) == hash(checked)
    assert vars(fast) == vars(checked)
    assert scenario.seed == scenario.with_seed(seed).with_seed(scenario.seed).seed


def test_a_copy_with_a_bad_seed_is_refused_as_before() -> None:
    scenario = Scenario(latency_ms=(1.0, 2.0), sessions=2)
    for seed in (-1, 1.5):
        with pytest.raises(BadInput, match="seed must be"):
            scenario.with_seed(seed)  # type: ignore[arg-type]


@settings(max_examples=10, deadline=None)
@given(st.lists(scenarios(max_sessions=8), min_size=1, max_size=4), st.data())
def test_runs_pooled_together_with_their_own_seed_counts_are_the_runs_pooled_apart(
    batch: list[Scenario], data: st.DataObject
) -> None:
    counts = [data.draw(st.integers(1, 3)) for _ in batch]
    together, ran = pooled_runs(batch, counts, 99.0)
    apart = [pooled_runs([s], k, 99.0) for s, k in zip(batch, counts, strict=True)]
    assert together == [rows[0] for rows, _ in apart]
    assert [row.seeds for row in together] == [tuple(range(k)) for k in counts]
    # The same scenario asked twice (with one seed count) is run once.
    distinct = {(s.with_seed(0), k) for s, k in zip(batch, counts, strict=True)}
    assert ran == sum(k for _, k in distinct)


def test_runs_on_several_threads_come_back_in_the_order_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Runs of different lengths, which the threads take longest first.
    batch = [
        Scenario(latency_ms=tuple(0.5 + 0.2 * b for b in range(1, 41)), sessions=n,
                 policy=policy, duration_s=d, seed=seed)
        for n, d in ((3, 2.0), (40, 5.0), (12, 1.0), (25, 3.0))
        for policy in ("batch-all", "oldest-first")
        for seed in (0, 1)
    ]  # fmt: skip
    alone = [run_many([s])[0] for s in batch]
    monkeypatch.setattr(ensemble, "PARALLEL_FRAMES", 0)
    ensemble.set_threads(2)
    try:
        together = run_many(batch)
    finally:
        ensemble.reset_threads()
    assert [o.scenario for o in together] == batch
    for a, b in zip(together, alone, strict=True):
        assert np.array_equal(a.latency_ms, b.latency_ms) and np.array_equal(a.fps, b.fps)
        assert np.array_equal(a.batch_sizes, b.batch_sizes) and a.arrived == b.arrived
