"""The reference worker: its arrivals are the simulator's, its records are complete and
consistent, and it asks the simulator's own policy code for every batch.

Runs here are real time but short, with ``SleepBackend`` (batches and CPU jobs as sleeps)
except the PyTorch load test; nothing asserts how long anything took.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.errors import BadInput
from planner.sim import policies
from planner.sim.arrivals import arrivals
from planner.sim.engine_reference import run_reference
from planner.sim.scenario import Scenario, Sharing
from planner.sim.stages import WorkerStages
from planner.validate.worker import serve as serve_module
from planner.validate.worker.backends import SleepBackend
from planner.validate.worker.checks import problems
from planner.validate.worker.frames import DELIVERED, EXPIRED, OVERWRITTEN, PENDING, WorkerRun
from planner.validate.worker.schedule import schedule
from planner.validate.worker.serve import serve

TABLE = tuple(6.0 + 4.0 * b for b in range(1, 65))


def scenario(**changes: object) -> Scenario:
    base = Scenario(latency_ms=TABLE, sessions=3, policy="batch-all", duration_s=0.4, seed=3)
    return replace(base, **changes)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(
    sessions=st.integers(1, 6),
    fps=st.lists(st.floats(1.0, 120.0), min_size=1, max_size=1),
    phases=st.sampled_from(["random", "even", "aligned"]),
    seed=st.integers(0, 2**32),
    jitter=st.sampled_from([0.0, 0.5, 3.0, 40.0]),
    network=st.sampled_from([0.0, 0.1, 7.25]),
)
def test_the_workers_schedule_is_the_simulators_bit_for_bit(
    sessions: int, fps: list[float], phases: str, seed: int, jitter: float, network: float
) -> None:
    s = Scenario(
        latency_ms=TABLE, sessions=sessions, fps=tuple(fps), duration_s=1.5, phases=phases,  # type: ignore[arg-type]
        seed=seed, jitter_ms=jitter, stages=WorkerStages(network_ms=network),
    )  # fmt: skip
    plan = schedule(s)
    capture = arrivals(s)
    assert np.array_equal(plan.capture_ms, capture.times)  # the same floats, not close ones
    for session in range(sessions):
        mine = plan.frame[plan.session == session]
        assert np.array_equal(mine, np.arange(capture.of(session).size))
    # Where the reference engine records a frame's arrival, it is the worker's, exactly.
    records = run_reference(s)
    rows = {
        (int(a), int(b)): i for i, (a, b) in enumerate(zip(plan.session, plan.frame, strict=True))
    }
    for session, k, arrival in zip(
        records.frame_session, records.frame_index, records.frame_arrival, strict=True
    ):
        assert plan.arrival_ms[rows[(int(session), int(k))]] == arrival


def test_a_served_run_records_the_schedules_capture_times_exactly() -> None:
    s = scenario(jitter_ms=2.0, stages=WorkerStages(network_ms=1.5), phases="random", seed=11)
    run = serve(s, SleepBackend(TABLE))
    plan = schedule(s)
    assert np.array_equal(run.capture_ms, plan.capture_ms)
    assert np.array_equal(run.arrival_ms, plan.arrival_ms)
    assert problems(run) == []


def test_the_worker_asks_the_simulators_own_policy_function() -> None:
    # No second implementation: the device loop calls planner.sim.policies.decide itself.
    assert serve_module.decide is policies.decide
    calls: list[int] = []

    def counting(pid, *args):  # type: ignore[no-untyped-def]
        calls.append(pid)
        return policies.decide(pid, *args)

    s = scenario(policy="round-robin")
    original = serve_module.decide
    serve_module.decide = counting
    try:
        run = serve(s, SleepBackend(TABLE))
    finally:
        serve_module.decide = original
    assert set(calls) == {policies.POLICIES["round-robin"].pid}
    assert run.count(DELIVERED) > 0


STAGED = {"stages": WorkerStages(pre_ms=1.5, post_ms=0.5, cpu_workers=2)}


@pytest.mark.parametrize(
    ("policy", "stages"),
    [(p, STAGED) for p in policies.POLICIES] + [("batch-all", {}), ("oldest-first", {})],
)
def test_every_policy_gives_a_complete_consistent_record_set(
    policy: str, stages: dict[str, WorkerStages]
) -> None:
    s = scenario(policy=policy, sessions=4, fps=(60.0,), slo_ms=30.0, **stages)
    run = serve(s, SleepBackend(TABLE, s.stages.pre_ms, s.stages.post_ms))
    assert problems(run) == []
    counts = [run.count(c) for c in (PENDING, DELIVERED, OVERWRITTEN, EXPIRED)]
    assert sum(counts) == run.frames == schedule(s).frames
    assert counts[1] > 0


def test_the_worker_honours_the_policys_batch_limit_and_memory_limit() -> None:
    s = scenario(policy="max-batch", max_batch=2, sessions=5, fps=(90.0,))
    run = serve(s, SleepBackend(TABLE))
    assert problems(run) == []
    assert run.batch_size.max() <= 2
    limited = scenario(policy="batch-all", sessions=5, fps=(90.0,), memory_batch_limit=3)
    run = serve(limited, SleepBackend(TABLE))
    assert problems(run) == [] and run.batch_size.max() <= 3


def test_lateness_of_every_handled_arrival_is_recorded() -> None:
    # Some frames reach the worker after the end.
    s = scenario(stages=WorkerStages(network_ms=30.0))
    run = serve(s, SleepBackend(TABLE))
    handled = ~np.isnan(run.arrived_ms)
    assert handled.sum() == run.lateness_ms.size > 0
    assert np.all(run.lateness_ms >= 0)  # handled when due or after, never before
    late = run.arrival_ms >= s.duration_ms
    assert late.any() and np.all(run.status[late] == PENDING) and np.all(~handled[late])


def test_the_worker_refuses_what_it_cannot_serve() -> None:
    with pytest.raises(BadInput, match="uses this device as it is"):
        serve(scenario(sharing=Sharing.of("mps", mps_share=50)), SleepBackend(TABLE))
    with pytest.raises(BadInput, match="pool of threads"):
        serve(scenario(stages=WorkerStages(pre_ms=2.0, cpu_workers=0)), SleepBackend(TABLE))


class Failing(SleepBackend):
    def run(self, inputs):  # type: ignore[no-untyped-def]
        raise RuntimeError("out of memory")


def test_a_failing_model_stops_every_thread_and_reaches_the_caller() -> None:
    before = threading.active_count()
    with pytest.raises(RuntimeError, match="out of memory"):
        serve(scenario(**STAGED), Failing(TABLE, 1.0, 1.0))
    assert threading.active_count() == before


def test_an_error_from_the_progress_callback_stops_the_run() -> None:
    def stop(_fraction: float) -> None:
        raise KeyboardInterrupt

    before = threading.active_count()
    with pytest.raises(KeyboardInterrupt):
        serve(scenario(duration_s=2.0, **STAGED), SleepBackend(TABLE, 1.0, 1.0), on_tick=stop)
    assert threading.active_count() == before


# -- the checks catch what they claim to catch -------------------------------------------


@pytest.fixture(scope="module")
def good() -> WorkerRun:
    s = scenario(policy="batch-all", sessions=4, fps=(90.0,), duration_s=0.5, **STAGED)
    run = serve(s, SleepBackend(TABLE, s.stages.pre_ms, s.stages.post_ms))
    assert problems(run) == []
    return run


def _copy(run: WorkerRun) -> WorkerRun:
    names = [name for name in run.__dataclass_fields__ if name != "scenario"]
    columns = {name: getattr(run, name).copy() for name in names}
    return WorkerRun(scenario=run.scenario, **columns)


def _delivered(run: WorkerRun) -> np.ndarray:
    return np.flatnonzero(run.status == DELIVERED)


def break_status(run: WorkerRun) -> None:
    run.status[_delivered(run)[0]] = OVERWRITTEN  # a delivered frame loses its status


def break_duplicate(run: WorkerRun) -> None:
    run.frame[1] = run.frame[0]  # one frame recorded twice, another never
    run.session[1] = run.session[0]


def break_capture(run: WorkerRun) -> None:
    run.capture_ms[3] = np.nextafter(run.capture_ms[3], np.inf)  # one ulp off


def break_latency(run: WorkerRun) -> None:
    row = _delivered(run)[0]
    run.ready_ms[row] = run.batch_start_ms[row] + 1.0  # pending after its batch started


def break_overlap(run: WorkerRun) -> None:
    rows = _delivered(run)
    second = rows[run.batch[rows] == 1]
    first_end = run.batch_end_ms[rows[run.batch[rows] == 0][0]]
    run.batch_start_ms[second] = first_end - 1.0


def break_size(run: WorkerRun) -> None:
    rows = _delivered(run)
    run.batch_size[rows[run.batch[rows] == run.batch[rows[0]]]] += 1


@pytest.mark.parametrize(
    ("breaking", "message"),
    [
        (break_status, "belongs to a batch"),
        (break_duplicate, "other than exactly once"),
        (break_capture, "capture times are not the schedule's"),
        (break_latency, "joins a batch before it is pending"),
        (break_overlap, "two batches ran on the device at once"),
        (break_size, "recorded size differs"),
    ],
)
def test_the_checks_catch_broken_records(good: WorkerRun, breaking, message: str) -> None:  # type: ignore[no-untyped-def]
    broken = _copy(good)
    breaking(broken)
    assert any(message in p for p in problems(broken)), problems(broken)


def test_the_checks_catch_a_batch_over_the_policys_limit(good: WorkerRun) -> None:
    one_at_a_time = replace(good, scenario=good.scenario.with_(policy="oldest-first"))
    assert any("runs one frame at a time" in p for p in problems(one_at_a_time))


def test_the_checks_catch_too_many_cpu_jobs_at_once(good: WorkerRun) -> None:
    broken = _copy(good)
    rows = np.flatnonzero(~np.isnan(broken.pre_start_ms))[:3]
    broken.pre_start_ms[rows] = 100.0  # three pre jobs at once on the scenario's 2 threads
    broken.pre_end_ms[rows] = 101.0
    assert any("CPU jobs ran at once on 2 thread(s)" in p for p in problems(broken)), problems(
        broken
    )


# -- the real thing, on this machine's CPU -----------------------------------------------


@pytest.mark.torch
def test_a_short_cpu_load_test_gives_complete_consistent_records() -> None:
    import torch

    from planner.measure.harness import load_model
    from planner.measure.options import ModelSpec
    from planner.validate.worker.backends import TorchBackend

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        backend = TorchBackend(
            load_model(ModelSpec(), "cpu"), "cpu", "fp32", (9, 9, 16), 3, camera=(64, 36)
        )
        backend.warm_up(3)
        pre, post = backend.stage_costs(calls=5)
        for policy in ("batch-all", "oldest-first"):
            s = Scenario(
                latency_ms=TABLE, sessions=3, policy=policy, duration_s=2.0, seed=5,
                stages=WorkerStages(pre_ms=pre, post_ms=post, cpu_workers=1),
            )  # fmt: skip
            run = serve(s, backend)
            assert problems(run) == []
            # The acceptance's four properties, spelled out:
            statuses = [run.count(c) for c in (PENDING, DELIVERED, OVERWRITTEN, EXPIRED)]
            assert sum(statuses) == run.frames == schedule(s).frames  # each frame once
            fps = np.bincount(run.session[run.status == DELIVERED], minlength=3) / s.duration_s
            assert np.all(fps <= 30.0 + 1.0 / s.duration_s)  # at most the source rate
            done = run.status == DELIVERED
            latency = run.post_end_ms[done] - run.ready_ms[done]
            assert np.all(latency >= run.batch_end_ms[done] - run.batch_start_ms[done])
            assert run.batch_size[done].min() >= 1
            assert run.batch_size[done].max() <= (3 if policy == "batch-all" else 1)
            assert run.lateness_ms.size > 0  # recorded, not asserted on
    finally:
        torch.set_num_threads(before)
