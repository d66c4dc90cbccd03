"""The worker beyond the GPU (SPEC §5.1): network, CPU pre/post stages on a finite pool of
threads, and a memory limit on the batch — hand-worked traces, theory checks and the
invariants both engines must keep."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings

from planner.errors import BadInput
from planner.sim.engine_fast import run_fast
from planner.sim.engine_reference import run_reference
from planner.sim.policies import POLICIES
from planner.sim.records import Records
from planner.sim.scenario import Scenario, Sharing
from planner.sim.simulate import simulate
from planner.sim.stages import MAX_CPU_WORKERS, STAGE_FIELDS, WorkerStages

from .simulation_cases import LAPTOP_TABLE, scenarios

AMPLE = tuple(0.1 + 0.001 * b for b in range(64))  # a GPU that is never the bottleneck


def both(scenario: Scenario) -> Records:
    """The run's records, after checking that both engines agree on them."""
    fast, reference = run_fast(scenario), run_reference(scenario)
    assert fast.same_as(reference) == []
    return fast


def batches(r: Records) -> list[tuple[float, float, list[tuple[int, int]]]]:
    """Each batch: start, end and its frames as (session, frame index)."""
    out = []
    for b in range(r.batch_size.size):
        rows = np.flatnonzero(r.frame_batch == b)
        members = [(int(r.frame_session[i]), int(r.frame_index[i])) for i in rows]
        out.append((float(r.batch_start[b]), float(r.batch_end[b]), members))
    return out


# -- hand-worked traces -------------------------------------------------------------------


def test_a_post_job_goes_before_a_pre_job_that_became_ready_at_the_same_instant() -> None:
    # Two sessions at 10 fps, even phases: session 0 captures at 0, 100, 200, session 1 at
    # 50, 150, 250. One thread; pre 10 ms, post 5 ms; a batch of one takes 40 ms.
    r = both(
        Scenario(
            latency_ms=(40.0, 45.0),
            sessions=2,
            policy="batch-all",
            fps=(10.0,),
            duration_s=0.3,
            phases="even",
            stages=WorkerStages(pre_ms=10.0, post_ms=5.0, cpu_workers=1),
        )
    )
    # 0: s0's pre job 0-10; its batch 10-50. At 50 the batch's post job (s0) and s1's pre
    # job are both ready: the post job runs first (50-55), the pre job after it (55-65).
    assert r.job_kind[:4].tolist() == [1, 0, 1, 1]
    assert r.job_start[:4].tolist() == [0.0, 50.0, 55.0, 100.0]
    assert r.job_ready[:4].tolist() == [0.0, 50.0, 50.0, 100.0]
    assert batches(r)[:3] == [
        (10.0, 50.0, [(0, 0)]),
        (65.0, 105.0, [(1, 0)]),  # s1 is pending only when its pre job ends
        (110.0, 150.0, [(0, 1)]),  # s0's frame 1: pre 100-110
    ]
    # s1's post job (ready 105) waits for the thread until s0's pre job ends at 110.
    assert r.frame_ready[:3].tolist() == [10.0, 65.0, 110.0]
    assert r.frame_done[:3].tolist() == [55.0, 115.0, 155.0]


def test_post_jobs_of_one_batch_queue_in_session_order() -> None:
    # max-batch takes the oldest frames first, so the batch is [s1, s0]; their post jobs,
    # ready at the same instant, still run s0 first, then s1.
    r = both(
        Scenario(
            latency_ms=(110.0, 120.0),
            sessions=2,
            policy="max-batch",
            max_batch=2,
            fps=(10.0,),
            duration_s=0.2,
            phases="even",
            stages=WorkerStages(post_ms=10.0, cpu_workers=1),
        )
    )
    # s0 frame 0 runs 0-110; by then s1 frame 0 (50) and s0 frame 1 (100) are pending.
    assert batches(r) == [(0.0, 110.0, [(0, 0)]), (110.0, 230.0, [(1, 0), (0, 1)])]
    assert r.job_start.tolist() == [110.0, 230.0, 240.0]
    done = dict(
        zip(
            zip(r.frame_session.tolist(), r.frame_index.tolist(), strict=True),
            r.frame_done.tolist(),
            strict=True,
        )
    )
    assert done == {(0, 0): 120.0, (0, 1): 240.0, (1, 0): 250.0}


def test_pre_jobs_ready_at_the_same_instant_go_in_session_order() -> None:
    r = both(
        Scenario(
            latency_ms=(1.0, 1.5, 2.0),
            sessions=3,
            policy="oldest-first",
            fps=(10.0,),
            duration_s=0.1,
            phases="aligned",
            stages=WorkerStages(pre_ms=10.0, cpu_workers=1),
        )
    )
    assert r.job_start.tolist() == [0.0, 10.0, 20.0]
    assert r.frame_session.tolist() == [0, 1, 2]
    assert r.frame_ready.tolist() == [10.0, 20.0, 30.0]


def test_a_newer_frame_replaces_a_waiting_pre_job_and_keeps_its_place() -> None:
    # Two sessions at 10 fps, even phases (s0: 0, 100, 200, 300; s1: 50, 150, 250, 350),
    # one thread, pre 120 ms: the queue backs up.
    r = both(
        Scenario(
            latency_ms=(5.0, 6.0),
            sessions=2,
            policy="batch-all",
            fps=(10.0,),
            duration_s=0.4,
            phases="even",
            stages=WorkerStages(pre_ms=120.0, cpu_workers=1),
        )
    )
    # 0-120 s0 f0. 120-240 s1 f0 (queued at 50). s0 f1 (100) waits; s0 f2 (200) replaces
    # it and keeps its place, ahead of s1 f1 (150): it runs 240-360. s1 f2 (250) replaces
    # s1 f1, and s1 f3 (350) replaces s1 f2; it runs 360-480, past the end: pending. s0 f3
    # (300) never starts: no pre job starts after the end.
    assert r.job_start.tolist() == [0.0, 120.0, 240.0, 360.0]
    assert r.job_ready.tolist() == [0.0, 50.0, 200.0, 350.0]  # each frame's own arrival
    assert batches(r) == [
        (120.0, 125.0, [(0, 0)]),
        (240.0, 245.0, [(1, 0)]),
        (360.0, 365.0, [(0, 2)]),
    ]
    assert r.delivered.tolist() == [2, 1]
    assert r.overwritten.tolist() == [1, 2]
    assert r.pending.tolist() == [1, 1]
    assert r.arrived.tolist() == [4, 4]


def test_the_drain_rule_counts_frames_still_on_their_way_as_pending() -> None:
    # One session at 10 fps for 0.3 s (captures 0, 100, 200), network 150 ms each way:
    # frames 1 and 2 reach the worker at 250 and 350; the run ends at 300.
    r = both(
        Scenario(
            latency_ms=(10.0,),
            sessions=1,
            fps=(10.0,),
            duration_s=0.3,
            phases="aligned",
            stages=WorkerStages(network_ms=150.0, post_ms=500.0),
        )
    )
    assert batches(r) == [(150.0, 160.0, [(0, 0)]), (250.0, 260.0, [(0, 1)])]
    assert r.pending.tolist() == [1]  # frame 2 reached the worker after the end
    # Post work is a delay (unlimited threads) and runs to completion after the end.
    assert r.frame_done.tolist() == [660.0, 760.0]
    e2e = simulate(
        Scenario(
            latency_ms=(10.0,),
            sessions=1,
            fps=(10.0,),
            duration_s=0.3,
            phases="aligned",
            stages=WorkerStages(network_ms=150.0, post_ms=500.0),
        )
    )
    assert e2e.e2e_latency.max == pytest.approx(150.0 + 10.0 + 500.0 + 150.0)


def test_a_zero_ms_stage_makes_no_cpu_job() -> None:
    threads = WorkerStages(cpu_workers=2)
    base = Scenario(latency_ms=LAPTOP_TABLE, sessions=3, duration_s=1.0, stages=threads)
    assert both(base).job_kind.size == 0
    assert set(both(base.with_(stages=replace(threads, pre_ms=3.0))).job_kind.tolist()) == {1}
    assert set(both(base.with_(stages=replace(threads, post_ms=3.0))).job_kind.tolist()) == {0}


# -- theory --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sessions", "workers", "pre_ms"),
    [(10, 2, 10.0), (10, 4, 10.0), (6, 1, 12.0), (40, 3, 7.0), (3, 1, 12.0)],
)
def test_k_threads_decode_min_of_offered_and_capacity(
    sessions: int, workers: int, pre_ms: float
) -> None:
    """GPU ample: K threads of pre work s serve min(N fps, 1000 K / s) frames a second in
    all; above capacity the rest is overwritten (per-session shares may differ)."""
    r = simulate(
        Scenario(
            latency_ms=AMPLE,
            sessions=sessions,
            policy="batch-all",
            stages=WorkerStages(pre_ms=pre_ms, cpu_workers=workers),
            seed=3,
        )
    )
    expected = min(sessions * 30.0, 1000.0 * workers / pre_ms)
    assert sum(r.per_session_fps) == pytest.approx(expected, rel=0.01)
    arrived = sum(s.arrived for s in r.sessions)
    overwritten = sum(s.overwritten for s in r.sessions)
    assert overwritten / arrived == pytest.approx(1.0 - expected / (sessions * 30.0), abs=0.01)
    assert r.cpu is not None
    busy = expected * pre_ms / (1000.0 * workers)
    assert r.cpu.busy_fraction == pytest.approx(busy, abs=0.01)


@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unlimited_threads_make_the_stages_a_pure_delay(policy: str, seed: int) -> None:
    network, pre, post = 3.5, 6.25, 4.0
    plain = Scenario(
        latency_ms=LAPTOP_TABLE,
        sessions=5,
        policy=policy,
        duration_s=3.0,
        seed=seed,
        slo_ms=40.0 if policy in ("aimd", "deadline") else None,
    )
    staged = plain.with_(stages=WorkerStages(network_ms=network, pre_ms=pre, post_ms=post))
    a, b = simulate(plain), simulate(staged)
    shift = network + pre
    # Batches the plain run started before duration - network - pre are exactly the
    # staged run's batches, later by that much; nothing else is dispatched.
    cutoff = plain.duration_ms - shift
    kept = a.records.batch_start < cutoff
    assert b.records.batch_start.size == int(kept.sum())
    assert np.allclose(b.records.batch_start, a.records.batch_start[kept] + shift, atol=1e-9)
    assert np.allclose(b.records.batch_end, a.records.batch_end[kept] + shift, atol=1e-9)
    assert np.array_equal(b.records.batch_size, a.records.batch_size[kept])
    rows = np.isin(a.records.frame_batch, np.flatnonzero(kept))
    assert np.array_equal(b.records.frame_session, a.records.frame_session[rows])
    assert np.array_equal(b.records.frame_index, a.records.frame_index[rows])
    assert np.allclose(b.records.frame_latency, a.records.frame_latency[rows], atol=1e-9)
    e2e_a = a.frame_table()["e2e_latency_ms"][rows]
    e2e_b = b.frame_table()["e2e_latency_ms"]
    assert np.allclose(e2e_b, e2e_a + pre + post + 2 * network, atol=1e-9)


def test_the_stage_breakdown_adds_up_to_the_end_to_end_latency() -> None:
    s = Scenario(
        latency_ms=LAPTOP_TABLE,
        sessions=4,
        policy="batch-all",
        stages=WorkerStages(network_ms=7.0, pre_ms=9.0, post_ms=4.0, cpu_workers=1),
        overhead_ms=2.0,
        seed=4,
    )
    r = simulate(s)
    assert r.stages is not None and r.stages.mean is not None and r.stages.tail is not None
    mean = r.stages.mean
    assert mean.network == 14.0 and mean.overhead == 2.0
    e2e = r.frame_table()["e2e_latency_ms"]
    assert mean.total == pytest.approx(float(e2e.mean()), rel=1e-12)
    tail = e2e[e2e >= np.percentile(e2e, 99.0)]
    assert r.stages.tail_frames == tail.size
    assert r.stages.tail.total == pytest.approx(float(tail.mean()), rel=1e-12)
    assert mean.pre >= 9.0 and mean.post >= 4.0  # work, plus any wait for the thread


# -- invariants -----------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_every_stage_happens_in_order_and_post_jobs_are_never_dropped(s: Scenario) -> None:
    r = run_fast(s)
    start, end = r.batch_start[r.frame_batch], r.batch_end[r.frame_batch]
    stages = s.stages
    assert np.all(r.frame_arrival + stages.pre_ms <= r.frame_ready + 1e-9)
    assert np.all(r.frame_ready <= start) and np.all(start < end)
    assert np.all(np.isfinite(r.frame_done))  # every delivered frame's post stage ran
    assert np.all(r.frame_done >= end + stages.post_ms - 1e-9)
    # Threads: never more than K jobs at once, and each waits for no one once started.
    if s.cpu_pool:
        length = np.where(r.job_kind == 1, stages.pre_ms, stages.post_ms)
        events = sorted([(t, 1) for t in r.job_start] + [(t, -1) for t in r.job_start + length])
        running = np.cumsum([d for _, d in events])
        assert running.max(initial=0) <= stages.cpu_workers
        assert np.all(r.job_start >= r.job_ready)
        assert np.all(np.diff(r.job_start) >= 0)
        assert not np.any((r.job_kind == 1) & (r.job_start >= s.duration_ms))
    else:
        assert r.job_kind.size == 0


@settings(max_examples=100, deadline=None)
@given(scenarios())
def test_no_batch_is_larger_than_fits_in_memory(s: Scenario) -> None:
    r = run_fast(s)
    if s.memory_batch_limit is not None:
        assert np.all(r.batch_size <= s.memory_batch_limit)


# -- the memory limit on the batch ----------------------------------------------------------


def test_batch_all_takes_the_oldest_frames_that_fit() -> None:
    three = Scenario(
        latency_ms=(30.0, 50.0, 70.0),
        sessions=3,
        policy="batch-all",
        fps=(10.0,),
        duration_s=0.2,
        phases="aligned",
    )
    assert batches(both(three))[:1] == [(0.0, 70.0, [(0, 0), (1, 0), (2, 0)])]
    # Only two fit: the two oldest (ties to the lower session) run, then the third.
    assert batches(both(three.with_(memory_batch_limit=2)))[:3] == [
        (0.0, 50.0, [(0, 0), (1, 0)]),
        (50.0, 80.0, [(2, 0)]),
        (100.0, 150.0, [(0, 1), (1, 1)]),
    ]
    # Every policy respects it; the ones that batch change their batches.
    for policy in ("max-batch", "triton", "aimd", "deadline"):
        s = Scenario(
            latency_ms=AMPLE,
            sessions=12,
            policy=policy,
            fps=(30.0,),
            phases="aligned",
            duration_s=1.0,
            memory_batch_limit=3,
            slo_ms=100.0,
            max_batch=8,
        )
        assert both(s).batch_size.max() <= 3, policy


def test_a_limit_that_cannot_bind_is_dropped() -> None:
    s = Scenario(latency_ms=LAPTOP_TABLE, sessions=4, policy="batch-all", memory_batch_limit=4)
    assert s.memory_batch_limit is None
    one = Scenario(latency_ms=LAPTOP_TABLE, sessions=9, memory_batch_limit=2)
    assert one.memory_batch_limit is None  # oldest-first runs one frame at a time


# -- bad values -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"network_ms": -1.0}, "network delay (network_ms) must be from 0 to 60000 ms"),
        ({"pre_ms": -0.5}, "pre_ms) must be from 0"),
        ({"post_ms": float("nan")}, "post_ms) must be from 0"),
        ({"pre_ms": "12"}, "pre_ms) must be from 0"),
        ({"cpu_workers": MAX_CPU_WORKERS + 1}, "a whole number from 0 to 1024 (0: unlimited)"),
        ({"cpu_workers": -1}, "a whole number from 0 to 1024 (0: unlimited)"),
        ({"cpu_workers": 1.5}, "CPU threads (cpu_workers) must be a whole number"),
        ({"memory_batch_limit": 0}, "memory batch limit must be a whole number from 1"),
        ({"stages": (0.0, 1.0, 0.0, 1)}, "stages must be a WorkerStages value"),
    ],
)
def test_bad_stage_values_are_refused_with_a_clear_message(
    changes: dict[str, object], message: str
) -> None:
    stages = {k: v for k, v in changes.items() if k in STAGE_FIELDS}
    others = {k: v for k, v in changes.items() if k not in STAGE_FIELDS}
    with pytest.raises(BadInput) as caught:
        values = {"stages": WorkerStages(**stages), **others}  # type: ignore[arg-type]
        Scenario(latency_ms=LAPTOP_TABLE, sessions=3, **values)  # type: ignore[arg-type]
    assert any(message in p for p in caught.value.problems), caught.value.problems


@pytest.mark.parametrize(
    ("sharing", "message"),
    [
        (
            {"mode": "time-slicing", "cotenants": (0.5,), "cotenant_memory_mb": ("lots",)},
            "co-tenant memory must be numbers of MB",
        ),
        (
            {"mode": "time-slicing", "cotenants": (0.5,), "cotenant_memory_mb": (-1.0,)},
            "co-tenant memory must be numbers of MB",
        ),
        (
            {"mode": "time-slicing", "cotenants": (0.5, 0.5), "cotenant_memory_mb": (1.0,) * 3},
            "one per co-tenant (2), not 3",
        ),
        ({"cotenant_memory_mb": (100.0,)}, "co-tenant memory applies to time-slicing only"),
        (
            {"mode": "mps", "mps_share": 50.0, "mps_memory_mb": float("inf")},
            "MPS memory limit must be above 0",
        ),
        ({"mps_memory_mb": 1000.0}, "an MPS memory limit applies to MPS only"),
    ],
)
def test_bad_memory_values_are_refused_with_a_clear_message(
    sharing: dict[str, object], message: str
) -> None:
    with pytest.raises(BadInput) as caught:
        Sharing.of(**sharing)  # type: ignore[arg-type]
    assert any(message in p for p in caught.value.problems), caught.value.problems


def test_a_long_queue_of_post_jobs_runs_back_to_back_in_order() -> None:
    # One thread, 20 ms of post work per frame, 300 deliveries a second: the queue grows
    # to hundreds of jobs (past the ring's first sizes) and every post job still runs,
    # first in first out, one right after the other, long after the end of the run.
    r = both(
        Scenario(
            latency_ms=AMPLE,
            sessions=10,
            policy="batch-all",
            duration_s=2.0,
            stages=WorkerStages(post_ms=20.0, cpu_workers=1),
        )
    )
    starts = r.job_start[r.job_kind == 0]
    assert starts.size == r.delivered.sum() > 500
    assert np.allclose(np.diff(starts), 20.0)
    assert np.all(np.diff(r.job_ready) >= 0)  # taken in the order they became ready
    assert r.frame_done.max() == starts[-1] + 20.0 > 5 * 2000.0  # never dropped
