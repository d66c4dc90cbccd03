"""The cap search: for one option on one curve, the largest N at which the option meets
the criteria at every n <= N (``planner.plan.recommend`` runs one search per option and
band edge, all in lockstep). Two searches answer that question:

- ``exhaustive``: the full runs (every seed, the whole duration) at n = 1, 2, 3, ... up
  to the first failure. Its work grows with the square of the cap.
- ``bracketed`` (the default): full runs at every n up to ``EXHAUSTIVE_UPTO``; beyond it
  one-seed *probes* bracket the first failure by doubling and bisect it; full runs settle
  the boundary (the cap passes, the count above it fails); and then every count below is
  established, where the runs say there is room, by probes and by the room around them
  rather than a run of its own. Its work grows about as N log N.

``docs/design.md`` (the cap search) says exactly what is simulated at which n and the one
case where the two can differ. The searches are generators: each yields the runs it needs
next, as ``(sessions, fidelity)`` pairs, receives them pooled, and returns what it found.
"""

from __future__ import annotations

import itertools
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from typing import Literal

from planner.plan.outcomes import failures
from planner.plan.request import SEARCHES, Criteria
from planner.sim.sweep import Pooled

Fidelity = Literal["full", "probe"]
FULL: Fidelity = "full"
"""Every seed of the request over its whole duration: the runs a cap is judged on."""
PROBE: Fidelity = "probe"
"""The first seed alone (seed 0) over a third of the duration, but at least 10 s (or the
whole duration, when it is shorter): a 24th of a full run at the default 8 seeds of 30 s,
used to find where the boundary lies and to screen the counts below it."""
PROBE_SECONDS = 10.0


def probe_duration(duration_s: float) -> float:
    """How long a probe runs, for full runs of ``duration_s``."""
    return min(duration_s, max(duration_s / 3.0, PROBE_SECONDS))


Run = tuple[int, Fidelity]
Search = Generator[list[Run], dict[Run, Pooled], "Found"]
_Count = Generator[list[Run], dict[Run, Pooled], int]
_MaybeCount = Generator[list[Run], dict[Run, Pooled], int | None]

EXHAUSTIVE_UPTO = 16
"""The bracketed search runs every count up to this one in full, as the exhaustive search
does: there full runs are cheap, and small caps are decided exactly as before."""
PROBE_ROOM = 0.05
PROBE_RATE_ROOM = 0.5
"""A probe that meets the criteria with at least 5% of the latency budget left and at
least half of the frame-rate and overwritten allowances (``rooms``) establishes its count
without a full run; with less, the count is run in full. The latency percentile of one
seed is within about 1% of all seeds' at these counts; the slowest session of the worst
of 8 seeds can be a good part of a frame per second below the first seed's near
saturation, hence the wider margin there. A probe counts a session's frames whole, so
where half the frame-rate allowance is less than one frame over the probe (a floor of
29.9 fps for 30 fps sources, over 10 s: half a frame), a probe that lost no frame says
nothing of a seed that loses one: such a floor leaves a probe no frame-rate room, as a
floor equal to the source rate leaves none (``_Judge.rate_resolved``)."""
GAP_ROOM = 0.3
GAP_ROOM_PER_LOAD = 4.0
"""Counts strictly between two established counts ``a < c`` are established without runs
of their own when both have room of at least ``min(GAP_ROOM, GAP_ROOM_PER_LOAD * (c - a) / c)``:
a gap that spans 2.5% of the load needs 10% room at both ends, one of 7.5% or more 30%.
Otherwise the gap is split and its middle checked."""


@dataclass(frozen=True)
class Found:
    """What one search found: the cap and the full runs it made, by session count."""

    cap: int
    rows: dict[int, Pooled] = field(default_factory=dict)
    probes: int = 0  # counts screened by a probe

    @property
    def history(self) -> tuple[Pooled, ...]:
        """The full runs up to one past the cap, in order of session count."""
        return tuple(self.rows[n] for n in sorted(self.rows) if n <= self.cap + 1)


def rooms(row: Pooled, criteria: Criteria, fps: float) -> tuple[float, float]:
    """How far a run that meets the criteria is from failing them (0 for a run that
    fails): the fraction of the latency budget it leaves, and the smallest fraction it
    leaves of the other allowances: of the frames per second a session may lose to the
    floor (``fps - min_fps``) and of the overwritten limit."""
    if failures(row, criteria) or row.e2e_latency_ms is None:
        return 0.0, 0.0
    latency = 1.0 - row.e2e_latency_ms / criteria.budget_ms
    others = [1.0]
    if criteria.min_fps > 0:
        allowed, lost = fps - criteria.min_fps, max(fps - row.min_fps, 0.0)
        others.append(1.0 - lost / allowed if allowed > 0 else float(lost == 0))
    limit = criteria.max_overwritten
    if limit is not None:
        over = row.overwritten_fraction
        others.append(1.0 - over / limit if limit > 0 else float(over == 0))
    return max(0.0, latency), max(0.0, min(others))


def room(row: Pooled, criteria: Criteria, fps: float) -> float:
    """The smallest of ``rooms``: how far the run is from failing any criterion."""
    return min(rooms(row, criteria, fps))


@dataclass
class _Judge:
    """The criteria, and the runs one search has made so far."""

    criteria: Criteria
    fps: float
    probe_is_full: bool  # one seed per count: a probe is the full run
    probe_s: float = PROBE_SECONDS  # how long a probe runs
    full: dict[int, Pooled] = field(default_factory=dict)
    probe: dict[int, Pooled] = field(default_factory=dict)

    def fails(self, row: Pooled) -> bool:
        return bool(failures(row, self.criteria))

    def room(self, row: Pooled) -> float:
        return room(row, self.criteria, self.fps)

    def ask(self, runs: Iterable[Run]) -> Generator[list[Run], dict[Run, Pooled], None]:
        """Yield the runs not made yet; keep what comes back."""
        wanted = []
        for n, fidelity in runs:
            if fidelity == PROBE and self.probe_is_full:
                fidelity = FULL
            if n not in self.full and (fidelity == FULL or n not in self.probe):
                wanted.append((n, fidelity))
        if wanted:
            got = yield list(dict.fromkeys(wanted))
            for (n, fidelity), row in got.items():
                (self.full if fidelity == FULL else self.probe)[n] = row

    def made(self, n: int) -> bool:
        return n in self.full or n in self.probe

    def probed(self, n: int) -> Pooled:
        return self.full[n] if self.probe_is_full else self.probe[n]

    def established(self, n: int) -> float | None:
        """The room of count ``n`` if it is established as meeting the criteria: by its full
        run, or by a probe with room; None otherwise."""
        if n in self.full:
            return None if self.fails(self.full[n]) else self.room(self.full[n])
        row = self.probe.get(n)
        if row is None or self.fails(row):
            return None
        latency, rate = rooms(row, self.criteria, self.fps)
        if not self.rate_resolved:
            rate = 0.0
        return min(latency, rate) if latency >= PROBE_ROOM and rate >= PROBE_RATE_ROOM else None

    @property
    def rate_resolved(self) -> bool:
        """Whether half the frame-rate allowance is at least one frame over a probe, so
        that a probe can tell room from one frame's loss (``PROBE_RATE_ROOM``)."""
        allowed = self.fps - self.criteria.min_fps
        return self.criteria.min_fps <= 0 or allowed * self.probe_s * PROBE_RATE_ROOM > 1.0 - 1e-9


def exhaustive(limit: int, criteria: Criteria, fps: float) -> Search:
    """Full runs at n = 1, 2, ... up to the first failure (or ``limit``)."""
    judge = _Judge(criteria, fps, probe_is_full=True)
    for n in range(1, limit + 1):
        yield from judge.ask([(n, FULL)])
        if judge.fails(judge.full[n]):
            return Found(n - 1, judge.full)
    return Found(limit, judge.full)


@dataclass
class Hint:
    """Where the probes of one search found the boundary, for another search of the same
    option to start from (the band's edges start from the fitted curve's): ``known`` once
    that search has got past its bracket, with ``count`` None when it found none."""

    count: int | None = None
    known: bool = False


HINT_STEP = 32
"""A search that starts from a hint steps away from it by 1/32 of the count, doubling."""


def bracketed(
    limit: int,
    criteria: Criteria,
    fps: float,
    *,
    probe_is_full: bool,
    tell: Hint | None = None,
    follow: Hint | None = None,
    probe_s: float = PROBE_SECONDS,
) -> Search:
    """The bracketed search (see the module docstring and ``docs/design.md``). With
    ``tell`` it says where its probes found the boundary; with ``follow`` it brackets the
    boundary from where another search's probes found it (waiting for it, if need be)
    rather than doubling from the start. ``probe_s``: how long a probe runs."""
    judge = _Judge(criteria, fps, probe_is_full, probe_s)
    try:
        return (yield from _bracketed(limit, judge, tell, follow))
    finally:
        if tell is not None:
            tell.known = True


def _bracketed(limit: int, judge: _Judge, tell: Hint | None, follow: Hint | None) -> Search:
    small = min(EXHAUSTIVE_UPTO, limit)
    for n in range(1, small + 1):
        yield from judge.ask([(n, FULL)])
        if judge.fails(judge.full[n]):
            return Found(n - 1, judge.full)
    if limit == small:
        return Found(limit, judge.full)
    while follow is not None and not follow.known:
        yield []  # the other search's probes are still bracketing
    if follow is not None and follow.count is not None and follow.count > small:
        low, high = yield from _from_hint(judge, min(follow.count, limit), small, limit)
    else:
        # Bracket the first failing probe by doubling.
        low, high, n = small, None, 2 * small
        while high is None and low < limit:
            n = min(n, limit)
            yield from judge.ask([(n, PROBE)])
            if judge.fails(judge.probed(n)):
                high = n
            else:
                low, n = n, 2 * n
    # Then bisect it.
    while high is not None and high - low > 1:
        middle = (low + high) // 2
        yield from judge.ask([(middle, PROBE)])
        if judge.fails(judge.probed(middle)):
            high = middle
        else:
            low = middle
    if tell is not None:
        tell.count, tell.known = low, True
    cap = yield from _settle(judge, low, limit, small)
    while True:
        failing = yield from _verify(judge, cap, small)
        if failing is None:
            return Found(cap, judge.full, len(judge.probe))
        cap = yield from _below(judge, failing, small)


_Bracket = Generator[list[Run], dict[Run, Pooled], tuple[int, int | None]]


def _from_hint(judge: _Judge, start: int, small: int, limit: int) -> _Bracket:
    """A passing probe and the first failing one above it (None: none up to ``limit``),
    found by probing ``start`` and stepping away from it: up while probes pass, down while
    they fail (``small``, established in full, passes), by 1/``HINT_STEP`` of ``start``
    and doubling."""
    step = max(1, start // HINT_STEP)
    yield from judge.ask([(start, PROBE)])
    if judge.fails(judge.probed(start)):
        high = start
        while True:
            n = max(high - step, small)
            if n == small:
                return small, high
            yield from judge.ask([(n, PROBE)])
            if not judge.fails(judge.probed(n)):
                return n, high
            high, step = n, 2 * step
    low = start
    while low < limit:
        n = min(low + step, limit)
        yield from judge.ask([(n, PROBE)])
        if judge.fails(judge.probed(n)):
            return low, n
        low, step = n, 2 * step
    return low, None


def _settle(judge: _Judge, candidate: int, limit: int, small: int) -> _Count:
    """The boundary on full runs near ``candidate``: a count whose full run passes and
    whose next count's fails (or ``limit``, passing). The count above is run beside the
    candidate only when the candidate's probe establishes it (``_Judge.established``);
    otherwise the candidate's full run goes first, so that a candidate whose full run
    fails (a probe that passed thinly) costs no full run above it that nothing uses."""
    sure = judge.established(candidate) is not None
    runs = [(candidate, FULL)] + ([(candidate + 1, FULL)] if candidate < limit and sure else [])
    yield from judge.ask(runs)
    if judge.fails(judge.full[candidate]):
        return (yield from _below(judge, candidate, small))
    if candidate == limit:
        return candidate
    yield from judge.ask([(candidate + 1, FULL)])
    if judge.fails(judge.full[candidate + 1]):
        return candidate
    # The full runs pass beyond the probes' boundary: gallop upward, then bisect.
    low, step = candidate + 1, 1
    while low < limit:
        n = min(low + step, limit)
        yield from judge.ask([(n, FULL)])
        if judge.fails(judge.full[n]):
            return (yield from _bisect(judge, low, n))
        low, step = n, 2 * step
    return limit


def _below(judge: _Judge, failing: int, small: int) -> _Count:
    """The boundary below a count whose full run fails: gallop downward to a passing full
    run (``small`` passes), then bisect."""
    high, step = failing, 1
    while True:
        n = max(high - step, small)
        yield from judge.ask([(n, FULL)])
        if not judge.fails(judge.full[n]):
            return (yield from _bisect(judge, n, high))
        high, step = n, 2 * step


def _bisect(judge: _Judge, low: int, high: int) -> _Count:
    """Between a passing full run at ``low`` and a failing one at ``high``, a count whose
    full run passes and whose next count's fails."""
    while high - low > 1:
        middle = (low + high) // 2
        yield from judge.ask([(middle, FULL)])
        if judge.fails(judge.full[middle]):
            high = middle
        else:
            low = middle
    return low


def rungs(cap: int, small: int) -> list[int]:
    """The counts checked first below a cap: 1, 2, 3, 4, 8, 16, 32, ... below it."""
    distances, d = [1, 2, 3], 4
    while cap - d > small:
        distances.append(d)
        d *= 2
    return [cap - d for d in distances if cap - d > small]


def _verify(judge: _Judge, cap: int, small: int) -> _MaybeCount:
    """Establish every count between ``small`` and ``cap``; return the smallest whose full
    run fails, or None when all are established."""
    todo = rungs(cap, small)
    while True:
        # A count run on the way here (a bisection's probe) is established like any other.
        todo += [n for n in range(small + 1, cap) if judge.made(n) and judge.established(n) is None]
        if not todo:
            return None
        failing = yield from _check(judge, sorted(set(todo)))
        if failing is not None:
            return failing
        points = [n for n in range(small, cap + 1) if judge.made(n)]
        todo = []
        for a, c in itertools.pairwise(points):
            if c - a > 1:
                ends = judge.established(a), judge.established(c)
                need = min(GAP_ROOM, GAP_ROOM_PER_LOAD * (c - a) / c)
                if ends[0] is None or ends[1] is None or min(ends[0], ends[1]) < need:
                    todo.append((a + c) // 2)


def _check(judge: _Judge, counts: list[int]) -> _MaybeCount:
    """Probe the counts; run in full those a probe does not establish; return the smallest
    count whose full run fails, or None."""
    yield from judge.ask([(n, PROBE) for n in counts])
    doubtful = [n for n in counts if judge.established(n) is None]
    yield from judge.ask([(n, FULL) for n in doubtful])
    failing = [n for n in doubtful if judge.fails(judge.full[n])]
    return min(failing) if failing else None


def search(
    name: str,
    limit: int,
    criteria: Criteria,
    fps: float,
    *,
    seeds: int,
    tell: Hint | None = None,
    follow: Hint | None = None,
    probe_s: float = PROBE_SECONDS,
) -> Search:
    """The named search (``SEARCHES``: bracketed, exhaustive) of one option on one curve;
    ``tell`` and ``follow`` share where the boundary lies between the bracketed searches
    of one option (``bracketed``); ``probe_s``: how long a probe runs."""
    assert name in SEARCHES, name
    if name == "exhaustive":
        return exhaustive(limit, criteria, fps)
    return bracketed(
        limit, criteria, fps, probe_is_full=seeds == 1, tell=tell, follow=follow, probe_s=probe_s
    )
