"""The cap search (``planner.plan.search``): the bracketed search against the exhaustive one.

Two kinds of test. On synthetic runs (a latency and a frame rate as functions of the
session count, so any shape can be drawn) the searches' logic is checked exactly: where
they agree, what the bracketed one simulates, and the one case where by design it may
differ. On real simulations, over the built-in curves and varied curves and criteria
(every policy, sharing modes, stages on and off), the two give the same cap, range and
binding constraint.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.curves.curve import Point
from planner.curves.fit import fit_curve
from planner.plan.recommend import recommend
from planner.plan.request import Criteria, Request
from planner.plan.search import (
    EXHAUSTIVE_UPTO,
    FULL,
    PROBE,
    PROBE_ROOM,
    Found,
    Hint,
    Search,
    bracketed,
    exhaustive,
    room,
    rungs,
)
from planner.sim.scenario import Sharing
from planner.sim.stages import WorkerStages
from planner.sim.sweep import Pooled

CRITERIA = Criteria(budget_ms=50.0, min_fps=28.5)
FPS = 30.0


def row(n: int, latency_ms: float, fps: float = 29.97, seeds: int = 8) -> Pooled:
    return Pooled(
        policy="batch-all", mode="exclusive", sessions=n, seeds=tuple(range(seeds)),
        percentile=99.0, latency_ms=latency_ms, e2e_latency_ms=latency_ms, p50_ms=latency_ms,
        p90_ms=latency_ms, p99_ms=latency_ms, max_ms=latency_ms, frames=900 * n * seeds,
        min_fps_by_seed=(fps,) * seeds, mean_fps=fps, overwritten_fraction=0.0,
        expired_fraction=0.0, gpu_busy_fraction=0.5, batch_sizes=(0, 1),
    )  # fmt: skip


Runs = Callable[[int, str], Pooled]


def drive(steps: Search, runs: Runs) -> tuple[Found, list[tuple[int, str]]]:
    """Run a search on synthetic runs; also the runs it asked for, in order."""
    asked: list[tuple[int, str]] = []
    try:
        wanted = next(steps)
        while True:
            asked += wanted
            wanted = steps.send({(n, f): runs(n, f) for n, f in wanted})
    except StopIteration as stop:
        return stop.value, asked


def both(runs: Runs, limit: int) -> tuple[Found, Found, list[tuple[int, str]]]:
    slow, _ = drive(exhaustive(limit, CRITERIA, FPS), runs)
    fast, asked = drive(bracketed(limit, CRITERIA, FPS, probe_is_full=False), runs)
    return slow, fast, asked


def rising(cap: int) -> Runs:
    """Latency rising smoothly to the budget just after ``cap``."""
    return lambda n, f: row(n, 49.9 * (n / cap) ** 3 if n <= cap else 55.0)


@given(cap=st.integers(0, 2000), limit=st.integers(1, 4096))
@settings(max_examples=60, deadline=None)
def test_a_smooth_boundary_is_found_exactly_and_cheaply(cap: int, limit: int) -> None:
    slow, fast, asked = both(rising(max(cap, 1)) if cap else lambda n, f: row(n, 60.0), limit)
    assert fast.cap == slow.cap == min(cap, limit)
    # The rows it keeps are full runs at counts the exhaustive search ran too, the same.
    assert all(fast.rows[n] == slow.rows[n] for n in fast.rows if n <= fast.cap + 1)
    assert fast.cap in fast.rows or fast.cap == 0
    assert fast.cap == limit or fast.cap + 1 in fast.rows
    # Work grows about as N log N: beyond the exhaustive start, full runs only at the
    # boundary and where a probe leaves too little room, and probes a few per doubling.
    full = {n for n, f in asked if f == FULL and n > EXHAUSTIVE_UPTO}
    probes = {n for n, f in asked if f == PROBE}
    runs = rising(max(cap, 1))
    thin = {n for n in range(EXHAUSTIVE_UPTO + 1, fast.cap + 1)
            if room(runs(n, PROBE), CRITERIA, FPS) < PROBE_ROOM}  # fmt: skip
    assert len(full - thin) <= 4
    assert len(probes) <= 6 * max(fast.cap, 2).bit_length() + 8


def test_the_limit_is_reached_when_every_count_passes() -> None:
    slow, fast, _ = both(lambda n, f: row(n, 5.0), 4096)
    assert fast.cap == slow.cap == 4096
    assert set(fast.rows) >= {4096}


@pytest.mark.parametrize("distance", [1, 2, 3, 4, 8, 16])
def test_a_failure_just_below_the_boundary_is_found(distance: int) -> None:
    # Passing is not monotone: one count below the first boundary fails, among others
    # that pass with little room. The rungs and the probes' room find it.
    top = 700
    bad = top - distance

    def runs(n: int, f: str) -> Pooled:
        if n == bad:
            return row(n, 51.0)
        return row(n, 47.0 + 2.0 * n / top) if n <= top else row(n, 60.0)

    slow, fast, _ = both(runs, 4096)
    assert fast.cap == slow.cap == bad - 1


def test_a_probe_that_passes_with_little_room_is_run_in_full() -> None:
    # Seed 0 alone passes at 300 sessions, but another seed's session falls below the floor.
    def runs(n: int, f: str) -> Pooled:
        if n > 500:
            return row(n, 80.0)
        if n == 300 and f == FULL:
            return row(n, 49.5, fps=27.0)
        return row(n, 49.5 if n >= 250 else 10.0)  # little room from 250 sessions up

    slow, fast, asked = both(runs, 4096)
    assert fast.cap == slow.cap == 299
    assert (300, FULL) in asked


@pytest.mark.parametrize(
    ("floor", "probe_s", "resolved"),
    [(29.9, 10.0, False), (29.9, 3.0, False), (29.8, 10.0, True), (28.5, 3.0, True)],
)
def test_a_floor_within_a_frame_of_the_source_leaves_a_probe_no_rate_room(
    floor: float, probe_s: float, resolved: bool
) -> None:
    # Half of a 0.1 fps allowance is half a frame over a 10 s probe: seed 0 losing no
    # frame at 59 sessions (a rung, just below the boundary) says nothing of the other
    # seeds, one of which loses a few frames there and fails.
    criteria = Criteria(budget_ms=50.0, min_fps=floor)

    def runs(n: int, f: str) -> Pooled:
        if n > 60:
            return row(n, 80.0)
        if n == 59 and f == FULL:
            return row(n, 10.0, fps=floor - 0.1)  # another seed's slowest session
        return row(n, 10.0, fps=FPS)  # every probe loses nothing: full room, as read

    slow, _ = drive(exhaustive(4096, criteria, FPS), runs)
    fast, asked = drive(bracketed(4096, criteria, FPS, probe_is_full=False, probe_s=probe_s), runs)
    if resolved:  # half the allowance is a frame or more: the probe's room is real, and
        # the seed doing a frame worse is the documented exception (b)
        assert slow.cap == 58 and fast.cap == 60 and (59, FULL) not in asked
    else:
        assert fast.cap == slow.cap == 58 and (59, FULL) in asked


def test_a_candidate_whose_probe_passes_thinly_is_run_before_the_count_above_it() -> None:
    # The probes put the boundary at 300, but 300's probe leaves little room and its full
    # run fails: the full run at 301, which nothing would use, is not made.
    def runs(n: int, f: str) -> Pooled:
        if n > 300:
            return row(n, 80.0)
        if n == 300:
            return row(n, 49.5, fps=27.0) if f == FULL else row(n, 49.5)
        return row(n, 10.0)

    slow, fast, asked = both(runs, 4096)
    assert fast.cap == slow.cap == 299
    assert (300, FULL) in asked and (301, FULL) not in asked
    assert all(fast.rows[n] == slow.rows[n] for n in fast.rows if n <= fast.cap + 1)


def test_a_candidate_whose_probe_has_room_is_run_beside_the_count_above_it() -> None:
    # Where the probe establishes the candidate, both full runs go in one round.
    steps = bracketed(4096, CRITERIA, FPS, probe_is_full=False)

    def runs(n: int, f: str) -> Pooled:
        return row(n, 10.0 if n <= 600 else 80.0)

    rounds = []
    try:
        wanted = next(steps)
        while True:
            rounds.append(wanted)
            wanted = steps.send({(n, f): runs(n, f) for n, f in wanted})
    except StopIteration as stop:
        assert stop.value.cap == 600
    fulls = [sorted(n for n, f in r if f == FULL and n > EXHAUSTIVE_UPTO) for r in rounds]
    assert [600, 601] in fulls


def test_the_stated_case_a_narrow_dip_in_a_wide_margin_can_go_unseen() -> None:
    # The one case the bracketed search may differ (docs/design.md): a count whose full run
    # fails between two counts that both pass with wide room, which no rung or probe lands
    # on. The exhaustive search finds it; the bracketed one does not, by design.
    rung = set(rungs(600, EXHAUSTIVE_UPTO))
    bad = next(n for n in range(450, 500) if n not in rung and n % 2)

    def runs(n: int, f: str) -> Pooled:
        if n == bad:
            return row(n, 200.0)
        return row(n, 10.0) if n <= 600 else row(n, 70.0)

    slow, fast, asked = both(runs, 4096)
    assert slow.cap == bad - 1
    assert fast.cap == 600
    assert all(n != bad for n, _ in asked)


@given(cap=st.integers(0, 2000), limit=st.integers(1, 4096), hint=st.integers(0, 5000))
@settings(max_examples=60, deadline=None)
def test_from_another_searchs_boundary_the_same_cap_is_found(
    cap: int, limit: int, hint: int
) -> None:
    # A band edge starts from where the fitted curve's probes found the boundary: near
    # it, far from it or beyond the limit, the cap is the exhaustive search's.
    runs = rising(max(cap, 1)) if cap else lambda n, f: row(n, 60.0)
    slow, _ = drive(exhaustive(limit, CRITERIA, FPS), runs)
    told = Hint(count=hint, known=True)
    fast, _ = drive(bracketed(limit, CRITERIA, FPS, probe_is_full=False, follow=told), runs)
    assert fast.cap == slow.cap == min(cap, limit)
    assert all(fast.rows[n] == slow.rows[n] for n in fast.rows if n <= fast.cap + 1)


def test_a_hint_saves_probes_and_a_search_tells_where_its_probes_found_the_boundary() -> None:
    runs = rising(600)
    told = Hint()
    central, _ = drive(bracketed(4096, CRITERIA, FPS, probe_is_full=False, tell=told), runs)
    assert told.known and told.count is not None and abs(told.count - 600) <= 1
    # An edge whose boundary lies 4% lower, from the hint and without it.
    edge = rising(576)
    hinted, asked = drive(bracketed(4096, CRITERIA, FPS, probe_is_full=False, follow=told), edge)
    alone, asked_alone = drive(bracketed(4096, CRITERIA, FPS, probe_is_full=False), edge)
    assert hinted.cap == alone.cap == 576 == central.cap - 24
    probes = [n for n, f in asked if f == PROBE]
    assert len(probes) < len([n for n, f in asked_alone if f == PROBE])


def test_a_search_waits_for_the_hint_it_follows() -> None:
    told = Hint()
    steps = bracketed(4096, CRITERIA, FPS, probe_is_full=False, follow=told)
    runs = rising(600)
    wanted = next(steps)
    while wanted:  # the full runs up to 16 sessions
        wanted = steps.send({(n, f): runs(n, f) for n, f in wanted})
    assert steps.send({}) == []  # still waiting
    told.count, told.known = 590, True
    assert steps.send({}) == [(590, PROBE)]


def test_rungs_near_the_cap_then_doubling() -> None:
    assert rungs(100, 16) == [99, 98, 97, 96, 92, 84, 68, 36]
    assert rungs(18, 16) == [17]
    assert rungs(16, 16) == []


# -- real simulations ----------------------------------------------------------------------

CURVES = Path(__file__).resolve().parents[1] / "measurements" / "curves"


def _builtin() -> list[tuple[str, list[tuple[int, float]]]]:
    out = []
    for path in sorted(CURVES.glob("*.json")):
        raw = json.loads(path.read_text())
        out.append((path.stem, [(p["batch"], p["latency_ms"]) for p in raw["points"]]))
    return out


BUILTIN = _builtin()
PIPELINE = WorkerStages(network_ms=2.0, pre_ms=1.0, post_ms=0.5)
POOLED = WorkerStages(network_ms=2.0, pre_ms=1.0, post_ms=0.5, cpu_workers=4)
SLICED = Sharing.of("time-slicing", cotenants=(0.5,))
MPS = Sharing.of("mps", mps_share=50.0)
# (curve, latency scale, criteria, sharing, stages): caps from 0 to about 200.
VARIED = [
    (0, 0.05, Criteria(budget_ms=100.0, min_fps=28.5), Sharing(), PIPELINE),
    (0, 0.1, Criteria(budget_ms=50.0, min_fps=15.0), SLICED, WorkerStages()),
    (1, 0.05, Criteria(budget_ms=20.0, min_fps=28.5), Sharing(), POOLED),
    (1, 0.25, Criteria(budget_ms=50.0, min_fps=29.5), MPS, WorkerStages()),
    (2, 0.1, Criteria(budget_ms=100.0, min_fps=0.0, max_overwritten=0.05), Sharing(), PIPELINE),
    (2, 0.05, Criteria(budget_ms=50.0, min_fps=28.5), Sharing(), WorkerStages()),
    (3, 0.1, Criteria(budget_ms=50.0, min_fps=15.0), Sharing(), POOLED),
    (3, 0.05, Criteria(budget_ms=100.0, min_fps=28.5), SLICED, PIPELINE),
    (4, 0.05, Criteria(budget_ms=50.0, min_fps=28.5), Sharing(), WorkerStages()),
    (4, 0.1, Criteria(budget_ms=20.0, min_fps=0.0), MPS, PIPELINE),
    (4, 0.25, Criteria(budget_ms=50.0, min_fps=28.5, max_overwritten=0.05), Sharing(), POOLED),
    (0, 2.0, Criteria(budget_ms=50.0, min_fps=28.5), Sharing(), WorkerStages()),
    (1, 0.5, Criteria(budget_ms=100.0, min_fps=15.0), SLICED, WorkerStages()),
    (2, 0.25, Criteria(budget_ms=20.0, min_fps=28.5), Sharing(), PIPELINE),
    (3, 0.05, Criteria(budget_ms=20.0, min_fps=29.5), Sharing(), WorkerStages()),
    (4, 0.5, Criteria(budget_ms=100.0, min_fps=28.5), MPS, POOLED),
    (0, 0.1, Criteria(budget_ms=50.0, min_fps=0.0, max_overwritten=0.05), Sharing(), POOLED),
    (1, 0.1, Criteria(budget_ms=100.0, min_fps=28.5), Sharing(), WorkerStages()),
    (2, 1.0, Criteria(budget_ms=50.0, min_fps=15.0), SLICED, PIPELINE),
    (3, 0.25, Criteria(budget_ms=100.0, min_fps=28.5), Sharing(), WorkerStages()),
    (4, 0.05, Criteria(budget_ms=100.0, min_fps=15.0), SLICED, WorkerStages()),
]  # fmt: skip
CASES = [(name, points, 1.0, Criteria(), Sharing(), WorkerStages()) for name, points in BUILTIN]
CASES += [
    (f"{BUILTIN[i][0]} x{scale:g}", BUILTIN[i][1], scale, criteria, sharing, stages)
    for i, scale, criteria, sharing, stages in VARIED
]


@pytest.mark.parametrize(
    ("name", "points", "scale", "criteria", "sharing", "stages"), CASES, ids=[c[0] for c in CASES]
)
def test_the_bracketed_search_gives_the_exhaustive_caps(
    name: str,
    points: list[tuple[int, float]],
    scale: float,
    criteria: Criteria,
    sharing: Sharing,
    stages: WorkerStages,
) -> None:
    fitted = fit_curve([Point(b, latency * scale) for b, latency in points])
    answers = {}
    for search in ("exhaustive", "bracketed"):
        request = Request(
            curve=fitted, criteria=criteria, sharings=(sharing,), stages=stages, seeds=2,
            duration_s=5.0, max_sessions=250, search=search,
        )  # fmt: skip
        result = recommend(request)
        answers[search] = {
            (o.policy, o.mode): (o.cap, o.cap_low, o.cap_high, o.binding_constraint)
            for o in result.options
        }
    assert answers["bracketed"] == answers["exhaustive"]


# -- random curves ---------------------------------------------------------------------------


@given(
    first_ms=st.floats(0.3, 4.0),
    growth=st.floats(0.15, 1.0),
    noise=st.lists(st.floats(0.9, 1.1), min_size=2, max_size=6),
    budget=st.sampled_from([20.0, 50.0, 100.0]),
    floor=st.sampled_from([0.0, 15.0, 28.5, 29.9]),
    stages=st.sampled_from([WorkerStages(), PIPELINE]),
)
@settings(max_examples=12, deadline=None)
def test_on_random_curves_the_bracketed_caps_are_the_exhaustive_ones(
    first_ms: float,
    growth: float,
    noise: list[float],
    budget: float,
    floor: float,
    stages: WorkerStages,
) -> None:
    # A random curve (batch 1, 2, 4, ...: latency growing as batch ** growth, each point
    # moved by up to 10% but never below the one before) and random criteria, with caps
    # from 0 to the 60 sessions considered, so that the bracketed search's probes, rungs
    # and gaps (beyond 16 sessions) decide many of them. Both searches see the same runs.
    points, latency = [], 0.0
    for k, factor in enumerate(noise):
        latency = max(latency, first_ms * (2**k) ** growth * factor)
        points.append(Point(2**k, latency))
    fitted = fit_curve(points)
    criteria = Criteria(budget_ms=budget, min_fps=floor)
    answers = {}
    for search in ("exhaustive", "bracketed"):
        request = Request(
            curve=fitted, criteria=criteria, stages=stages, seeds=2, duration_s=3.0,
            max_sessions=60, search=search,
        )  # fmt: skip
        answers[search] = {
            (o.policy, o.mode): (o.cap, o.cap_low, o.cap_high, o.binding_constraint)
            for o in recommend(request).options
        }
    assert answers["bracketed"] == answers["exhaustive"]
