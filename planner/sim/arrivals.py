"""Frame arrival times of every session, and the scenario's random generators.

Frame k of session i arrives at ``offset_i + k * P_i`` with ``P_i = 1000 / fps_i`` ms
(computed, never accumulated, so no rounding drift). Phases: ``random`` draws each offset
uniformly from [0, P_i); ``even`` spaces them ``P_i / N`` apart; ``aligned`` starts all at
zero. Jitter moves each arrival by a normal draw clipped to ±P_i/2, so a session's frames
keep their order; frames whose time falls outside [0, duration) are not part of the run.

Randomness: one seed per scenario, with a generator per stream (``planner.sim.streams``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np

from planner.sim.scenario import Scenario
from planner.sim.streams import generators


@dataclass(frozen=True)
class Arrivals:
    """Arrival times of all frames, session after session (compressed sparse rows).

    Session i's frames are ``times[start[i]:start[i + 1]]``, in arrival order.
    """

    times: np.ndarray  # float64, ms
    start: np.ndarray  # int64, length sessions + 1

    @property
    def sessions(self) -> int:
        return int(self.start.size - 1)

    def of(self, session: int) -> np.ndarray:
        return self.times[self.start[session] : self.start[session + 1]]


def arrivals(scenario: Scenario) -> Arrivals:
    """The arrival times of every frame of the scenario (see the module docstring)."""
    n = scenario.sessions
    periods = 1000.0 / np.asarray(scenario.session_fps, dtype=np.float64)
    duration = scenario.duration_ms
    phase_rng, jitter_rng = generators(scenario.seed)[:2]
    if scenario.phases == "random":
        offsets = phase_rng.random(n) * periods
    elif scenario.phases == "even":
        offsets = np.arange(n, dtype=np.float64) * periods / n
    else:
        offsets = np.zeros(n)
    if scenario.jitter_ms <= 0:
        return _periodic(offsets, periods, duration)
    chunks = []
    for i in range(n):
        period, offset = periods[i], offsets[i]
        # Frames up to half a period beyond the end can be pulled back inside by jitter.
        count = int(np.floor((duration + period / 2 - offset) / period)) + 1
        k = np.arange(max(count, 0), dtype=np.float64)
        shift = np.clip(jitter_rng.normal(0.0, scenario.jitter_ms, k.size), -period / 2, period / 2)
        # Clipping to ±P/2 keeps the order in exact arithmetic; the running maximum
        # keeps it when rounding puts two neighbours one ulp the wrong way round.
        times = np.maximum.accumulate(offset + k * period + shift)
        chunks.append(times[(times >= 0.0) & (times < duration)])
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum([c.size for c in chunks], out=start[1:])
    return Arrivals(times=np.concatenate(chunks) if chunks else np.zeros(0), start=start)


def _periodic(offsets: np.ndarray, periods: np.ndarray, duration: float) -> Arrivals:
    """The arrivals without jitter, all sessions at once: the same figures, bit for bit,
    as session by session (``offset + k * period`` for k = 0, 1, ... while before the end),
    without a loop over sessions."""
    n = offsets.size
    counts = np.maximum(np.ceil((duration - offsets) / periods), 0.0).astype(np.int64)
    longest = int(counts.max()) if n else 0
    if longest * n <= 2 * int(counts.sum()):
        # Sessions with about as many frames each: one row of frames per session.
        k = np.arange(longest, dtype=np.float64)
        grid = k[None, :] * periods[:, None]
        grid += offsets[:, None]  # offset + k * period (the sum is the same either way round)
        if longest and int(counts.min()) == longest and not np.any(grid[:, -1] >= duration):
            # Every session has all its frames (the usual case): the grid is whole.
            whole = np.arange(0, (n + 1) * longest, longest, dtype=np.int64)
            return Arrivals(times=grid.ravel(), start=whole)
        kept = (k[None, :] < counts[:, None]) & (grid < duration)
        start = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.count_nonzero(kept, axis=1), out=start[1:])
        return Arrivals(times=grid[kept], start=start)
    owner = np.repeat(np.arange(n, dtype=np.int64), counts)
    first = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])
    steps = (np.arange(owner.size, dtype=np.int64) - first[owner]).astype(np.float64)
    times = offsets[owner] + steps * periods[owner]
    inside = times < duration
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner[inside], minlength=n), out=start[1:])
    return Arrivals(times=times[inside], start=start)


Order: TypeAlias = tuple[np.ndarray | None, np.ndarray, np.ndarray]
"""``arrival_order``: frames by arrival, their sessions and arrival times (with a pool of
CPU threads); without one, None, then the sessions and times of the frames in the order
they become pending for the GPU."""


def arrival_order(times: np.ndarray, start: np.ndarray, stages: np.ndarray) -> Order:
    """The order in which frames reach the worker, for a scenario with a pool of CPU
    threads: global frame indices by arrival time, ties to the lower session (then the
    earlier frame), each one's session and arrival time (kept in that order so the loop
    reads them one after another). Without a pool, for which the loop is compiled without
    the pool's code (the first is None): the order in which frames become pending for the
    GPU (arrival + pre), as the sessions and times of the frames in that order (the loop
    takes each session's frames one after another, so their sessions say which).

    Sorted on the times the loop computes (capture + network, + pre), not capture: adding
    a delay can make two different capture times equal, and the tie then goes to the
    lower session. A stable sort of the sessions' sorted runs, laid out one after another,
    does both.
    """
    network, pre, post, workers = (float(v) for v in stages)
    arrival = times + network if network != 0.0 else times
    if not (workers > 0 and (pre > 0 or post > 0)):
        ready = arrival + pre if pre != 0.0 else arrival
        return (None, *_sorted(ready, start, indices=False)[1:])
    order, owner, ordered = _sorted(arrival, start)
    assert order is not None
    return order.astype(np.int64), owner, ordered


def _sorted(
    values: np.ndarray, start: np.ndarray, indices: bool = True
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """``np.argsort(values, kind="stable")`` (by value, ties to the lower index), the
    session of each frame in that order and the values in that order, for values laid out
    session after session, each session's in increasing order. Without ``indices`` the
    first may be None (the caller needs only the other two).

    Sessions at one frame rate interleave: frame k of every session comes before frame
    k + 1 of any, in the order of the sessions' first frames. That order is tried first
    and kept only where it is exactly the full sort's: values that never decrease, and
    every tie with the lower index first. Anything else is sorted in full."""
    sessions = start.size - 1
    counts = np.diff(start)
    busy = np.flatnonzero(counts)
    longest = int(counts.max()) if sessions else 0
    if busy.size > 1 and longest * busy.size <= 2 * values.size:
        by_first = busy[np.argsort(values[start[busy]], kind="stable")]
        firsts = start[by_first]
        k = np.arange(longest, dtype=np.int64)[:, None]
        if busy.size == sessions and values.size == longest * sessions:
            # Every session has as many frames (the usual case): the guess is whole rows,
            # taken row by row rather than frame by frame.
            ordered = values.reshape(sessions, longest)[by_first].T.ravel()
            if _ascending(ordered, lambda p: firsts[p % sessions] + p // sessions):
                owner = np.tile(by_first, longest)
                return ((firsts[None, :] + k).ravel() if indices else None), owner, ordered
        else:
            inside = k < counts[by_first][None, :]
            guess = (firsts[None, :] + k)[inside]
            ordered = values[guess]
            if _ascending(ordered, lambda p: guess[p]):
                owner = np.broadcast_to(by_first[None, :], inside.shape)[inside]
                return guess, owner, ordered
    owner = np.repeat(np.arange(sessions, dtype=np.int64), counts)
    order = np.argsort(values, kind="stable")
    return order, owner[order], values[order]


def _ascending(ordered: np.ndarray, index: Callable[[np.ndarray], np.ndarray]) -> bool:
    """Whether ``ordered`` is the stable sort's order: values that never decrease, and
    every tie with the lower index first (``index`` of positions: their indices)."""
    later, earlier = ordered[1:], ordered[:-1]
    if np.any(later < earlier):
        return False
    tied = np.flatnonzero(later == earlier)
    return not np.any(index(tied) > index(tied + 1))
