"""Hand-worked traces of tiny scenarios: each policy's exact decisions (SPEC §3.3)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.errors import BadInput
from planner.sim.scenario import Scenario, Sharing
from planner.sim.simulate import simulate

# Two sessions at 10 fps (a frame every 100 ms), both arriving at 0, 100 and 200 ms.
TWO = {"latency_ms": (30.0, 50.0), "sessions": 2, "fps": (10.0,), "duration_s": 0.3,
       "phases": "aligned"}  # fmt: skip


def trace(**kwargs: object) -> list[tuple[float, float, list[int]]]:
    r = simulate(Scenario(**{**TWO, **kwargs})).records  # type: ignore[arg-type]
    batches = []
    for b in range(r.batch_size.size):
        members = r.frame_session[r.frame_batch == b].tolist()
        batches.append((float(r.batch_start[b]), float(r.batch_end[b]), members))
    return batches


def test_oldest_first_breaks_ties_by_session_index() -> None:
    assert trace(policy="oldest-first") == [
        (0.0, 30.0, [0]), (30.0, 60.0, [1]),
        (100.0, 130.0, [0]), (130.0, 160.0, [1]),
        (200.0, 230.0, [0]), (230.0, 260.0, [1]),
    ]  # fmt: skip


def test_round_robin_serves_the_next_session_after_the_last_served() -> None:
    three = {"sessions": 3, "latency_ms": (30.0, 50.0, 70.0)}
    batches = trace(policy="round-robin", **three)
    assert [b[2] for b in batches] == [[0], [1], [2], [0], [1], [2], [0], [1], [2]]


def test_batch_all_runs_every_pending_frame_together() -> None:
    assert trace(policy="batch-all") == [
        (0.0, 50.0, [0, 1]), (100.0, 150.0, [0, 1]), (200.0, 250.0, [0, 1])
    ]  # fmt: skip


def test_max_batch_takes_at_most_b_oldest() -> None:
    three = {"sessions": 3, "latency_ms": (30.0, 50.0, 70.0)}
    assert [b[2] for b in trace(policy="max-batch", max_batch=2, **three)][:2] == [[0, 1], [2]]


def test_triton_waits_for_the_queue_delay_then_runs() -> None:
    batches = trace(policy="triton", max_batch=8, max_queue_delay_us=2000.0)
    assert batches[0] == (2.0, 52.0, [0, 1])  # fewer than 8 pending: waits 2 ms
    full = trace(policy="triton", max_batch=2, max_queue_delay_us=2000.0)
    assert full[0] == (0.0, 50.0, [0, 1])  # 2 pending = B: runs at once


def test_triton_with_zero_delay_is_max_batch() -> None:
    kwargs = {"sessions": 3, "latency_ms": (30.0, 50.0, 70.0), "max_batch": 2}
    assert trace(policy="triton", max_queue_delay_us=0.0, **kwargs) == trace(
        policy="max-batch", **kwargs
    )


def test_deadline_drops_frames_that_cannot_finish_in_time() -> None:
    r = simulate(Scenario(**{**TWO, "policy": "deadline", "slo_ms": 40.0}))  # type: ignore[arg-type]
    # At 0 a batch of two (50 ms) would miss 40 ms: one frame runs; at 30 the other would
    # finish at 60 > 40 even alone, so it expires.
    assert [s.delivered for s in r.sessions] == [3, 0]
    assert [s.expired for s in r.sessions] == [0, 3]
    assert r.expired_fraction == pytest.approx(0.5)


def test_deadline_runs_the_largest_batch_that_meets_every_deadline() -> None:
    r = simulate(Scenario(**{**TWO, "policy": "deadline", "slo_ms": 60.0}))  # type: ignore[arg-type]
    assert r.batch_histogram == {2: 3}


def test_aimd_grows_the_cap_while_the_objective_holds_and_cuts_it_after_a_miss() -> None:
    # Four sessions at 10 fps, aligned: each 100 ms, four frames arrive together.
    four = {"sessions": 4, "latency_ms": (10.0, 12.0, 14.0, 16.0), "duration_s": 0.5}

    def sizes(slo_ms: float) -> list[int]:
        return [len(b[2]) for b in trace(policy="aimd", slo_ms=slo_ms, **four)]

    # Every batch meets 100 ms: the cap grows by one per batch (1, 2, 3) up to N = 4, and
    # from the second round on all four frames run together.
    assert sizes(100.0) == [1, 2, 1, 4, 4, 4, 4]
    # 23 ms: batches of 1 and 2 meet it (cap 1 -> 2 -> 3); the last frame waited 22 ms and
    # finishes at 32, a miss: floor(0.9 * 3) = 2. Each later round: two frames finish at
    # 12 ms (cap 3), the other two at 24 ms (a miss, back to 2). Without the cut the second
    # round would run 3 + 1; a cut to 1 instead of 10% would run 1 + 2 + 1.
    assert sizes(23.0) == [1, 2, 1] + [2, 2] * 4
    # 11 ms: the first batch meets it (cap 2), the second batch's frames finish at 22 ms, a
    # miss: floor(0.9 * 2) = 1. Every round starts again from a batch of one.
    assert sizes(11.0) == [1, 2, 1] * 5


def test_newest_frame_replaces_a_waiting_one_and_frames_arriving_at_completion_are_eligible() -> (
    None
):
    r = simulate(
        Scenario(latency_ms=(25.0,), sessions=1, fps=(100.0,), duration_s=0.06, phases="aligned")
    )
    rec = r.records
    assert rec.frame_index.tolist() == [0, 2, 5]  # frame 5 arrives at 50, exactly at completion
    assert rec.frame_latency.tolist() == [25.0, 30.0, 25.0]
    (s,) = r.sessions
    assert (s.arrived, s.delivered, s.overwritten, s.pending) == (6, 3, 3, 0)


def test_a_batch_dispatched_before_the_end_completes_frames_pending_at_the_end_count() -> None:
    r = simulate(
        Scenario(latency_ms=(80.0,), sessions=1, fps=(20.0,), duration_s=0.1, phases="aligned")
    )
    (s,) = r.sessions
    # Arrivals at 0 and 50; the first batch runs 0-80, the second would start at 80 < 100.
    assert r.records.batch_end.tolist() == [80.0, 160.0]
    assert (s.delivered, s.pending) == (2, 0)
    late = simulate(
        Scenario(latency_ms=(120.0,), sessions=1, fps=(20.0,), duration_s=0.1, phases="aligned")
    )
    (s,) = late.sessions
    assert (s.delivered, s.pending, s.arrived) == (1, 1, 2)  # next decision at 120 >= end


def test_a_run_that_delivers_nothing_has_no_latency_figures_and_is_even() -> None:
    # No frame can finish within 10 ms when one alone takes 30: deadline drops them all.
    r = simulate(Scenario(**{**TWO, "policy": "deadline", "slo_ms": 10.0}))  # type: ignore[arg-type]
    assert all(s.delivered == 0 and s.fps == 0.0 for s in r.sessions)
    assert r.expired_fraction == 1.0
    for summary in (r.latency, r.e2e_latency):
        assert (summary.p50, summary.p90, summary.p99, summary.max, summary.frames) == (
            None, None, None, None, 0
        )  # fmt: skip
    assert r.jain == 1.0  # every session got the same: nothing


def test_even_phases_spread_sessions_over_the_period() -> None:
    r = simulate(Scenario(latency_ms=(1.0, 2.0), sessions=2, fps=(10.0,), duration_s=0.1,
                          phases="even"))  # fmt: skip
    assert sorted(r.records.frame_arrival.tolist()) == [0.0, 50.0]


def test_time_slicing_with_always_busy_co_tenants_stretches_a_batch() -> None:
    s = Scenario(latency_ms=(10.5,), sessions=1, fps=(1.0,), duration_s=5.0, phases="aligned",
                 sharing=Sharing.of("time-slicing", cotenants=(1.0, 1.0)))  # fmt: skip
    r = simulate(s)
    assert r.records.frame_latency == pytest.approx([31.5] * 5)  # three contexts take turns


def test_mps_and_mig_scale_the_curve_by_the_share_of_the_card() -> None:
    # Batch 1 reaches the card's best throughput (u = 1), so a 50% share doubles it.
    base = {"latency_ms": (10.0, 20.0), "sessions": 1, "fps": (1.0,), "duration_s": 2.0,
            "phases": "aligned"}  # fmt: skip
    mps = simulate(Scenario(**base, sharing=Sharing.of("mps", mps_share=50.0)))  # type: ignore[arg-type]
    assert mps.records.frame_latency.tolist() == [20.0, 20.0]
    mig = simulate(Scenario(**base, sharing=Sharing.of("mig", mig_slices=3, mig_total=7)))  # type: ignore[arg-type]
    assert mig.records.frame_latency == pytest.approx([10.0 * 7 / 3] * 2)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"sessions": 0}, "sessions must be"),
        ({"policy": "fifo"}, "policy 'fifo' is not one of"),
        ({"fps": (30.0, 30.0, 30.0)}, "one frame rate for all sessions or one per session"),
        ({"fps": (0.0,)}, "frame rates must be above 0"),
        ({"latency_ms": (10.0, 5.0)}, "must not decrease"),
        ({"latency_ms": (10.0,)}, "covers batch 1..1"),
        ({"duration_s": -1.0}, "duration must be"),
        ({"phases": "chaos"}, "phases 'chaos'"),
        ({"jitter_ms": float("nan")}, "jitter"),
        ({"max_batch": 0, "policy": "max-batch"}, "max batch"),
    ],
)
def test_bad_scenarios_are_refused_with_a_reason(changes: dict, message: str) -> None:
    with pytest.raises(BadInput, match=message):
        Scenario(**{"latency_ms": (10.0, 20.0), "sessions": 2, **changes})


def test_bad_sharing_is_refused_with_a_reason() -> None:
    with pytest.raises(BadInput, match="duty cycle"):
        Sharing.of("time-slicing", cotenants=(1.5,))
    with pytest.raises(BadInput, match="MPS compute share"):
        Sharing.of("mps", mps_share=0.0)
    with pytest.raises(BadInput, match="MIG instance"):
        Sharing.of("mig", mig_slices=8, mig_total=7)


def test_parameters_a_policy_does_not_use_are_dropped() -> None:
    a = Scenario(latency_ms=(10.0,), sessions=1, policy="oldest-first", max_batch=4, slo_ms=9.0)
    assert a == Scenario(latency_ms=(10.0,), sessions=1, policy="oldest-first")
    b = Scenario(latency_ms=(10.0,), sessions=1, policy="aimd")
    assert b.param("slo_ms") == 50.0


def test_the_run_ends_exactly_at_its_duration() -> None:
    # 4.03 s is 4030.0000000000005 ms in binary floating point; a frame at exactly 4030 ms
    # must still fall outside [0, duration).
    s = Scenario(latency_ms=(1.0,), sessions=1, fps=(100.0,), duration_s=4.03, phases="aligned")
    (session,) = simulate(s).sessions
    assert session.arrived == 403


def test_co_tenants_switching_too_often_for_one_run_are_refused() -> None:
    busy = Sharing.of("time-slicing", cotenants=(0.5,) * 16, busy_period_ms=0.1)
    with pytest.raises(BadInput, match="co-tenants would switch about"):
        Scenario(latency_ms=(10.0,), sessions=1, duration_s=30.0, sharing=busy)


def test_co_tenant_activity_drawn_further_is_the_same_activity_longer() -> None:
    from planner.sim.sharing import cotenant_timeline

    sharing = Sharing.of("time-slicing", cotenants=(0.9, 0.3), busy_period_ms=20.0)
    short = cotenant_timeline(sharing, 7, 1_000.0)
    long = cotenant_timeline(sharing, 7, 100_000.0)
    assert short is not None and long is not None
    n = short.edges.size - 1  # the last edge may close differently
    assert np.array_equal(short.edges[:n], long.edges[:n])
    assert np.array_equal(short.speed[:n], long.speed[:n])
    assert long.edges[-1] >= 100_000.0
