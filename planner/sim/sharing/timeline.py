"""Co-tenant activity as a speed profile, and when a batch finishes under it (SPEC §3.4).

Under time-slicing each co-tenant alternates exponential busy and idle periods; while k
of them are busy the card alternates among k+1 contexts and a running batch progresses at
1/(k+1) of its speed. The profile is piecewise constant with its integral precomputed, so
a batch's end is found by integrating that speed from its start (``finish``, compiled into
the fast engine's loop): it depends on when the batch runs, not on a fixed multiplier.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from planner.sim.jit import jit
from planner.sim.streams import COTENANT_STREAM, generators
from planner.units import Milliseconds


@dataclass(frozen=True)
class Timeline:
    """Piecewise-constant speed of our context: ``speed[m]`` on ``[edges[m], edges[m+1])``.

    ``work[m]`` is the work done (in exclusive-card milliseconds) from time 0 to
    ``edges[m]``. The last segment extends to infinity.
    """

    edges: np.ndarray
    speed: np.ndarray
    work: np.ndarray


def cotenant_activity(
    cotenants: tuple[float, ...],
    busy_ms: Milliseconds | tuple[Milliseconds, ...],
    seed: int,
    horizon_ms: Milliseconds,
) -> Timeline | None:
    """The speed profile that co-tenants with these duty cycles give a run, or None when
    none of them is ever busy.

    Each co-tenant gets its own generator spawned from the scenario's co-tenant stream, so
    adding a co-tenant leaves the others' activity (and the phases) unchanged. Activity is
    drawn to at least ``horizon_ms``; drawn further it is the same process, longer (the
    draws come in fixed-size chunks), so one profile serves every run of a seed that
    ends before it, and profiles are kept for reuse. ``busy_ms`` is every co-tenant's
    mean busy period, or one per co-tenant.
    """
    if not any(d > 0 for d in cotenants):
        return None
    # Round the horizon up to a power of two so runs of different lengths share a profile.
    bucket = float(2 ** math.ceil(math.log2(max(horizon_ms, 1.0))))
    return _timeline(cotenants, busy_ms, seed, bucket)


@functools.lru_cache(maxsize=64)
def _timeline(
    cotenants: tuple[float, ...],
    busy_ms: float | tuple[float, ...],
    seed: int,
    horizon_ms: float,
) -> Timeline:
    stream = generators(seed)[COTENANT_STREAM]
    children = np.random.SeedSequence(int(stream.integers(2**63))).spawn(len(cotenants))
    periods = busy_ms if isinstance(busy_ms, tuple) else (busy_ms,) * len(cotenants)
    times_list, deltas_list = [], []
    for duty, period, child in zip(cotenants, periods, children, strict=True):
        if duty <= 0:
            continue
        times, deltas = _busy_changes(np.random.default_rng(child), duty, period, horizon_ms)
        times_list.append(times)
        deltas_list.append(deltas)
    times = np.concatenate(times_list)
    deltas = np.concatenate(deltas_list)
    order = np.argsort(times, kind="mergesort")
    times, deltas = times[order], deltas[order]
    busy = np.cumsum(deltas)
    # Collapse changes at the same instant; the busy count after the last one holds.
    # Every co-tenant contributes a row at time 0, so the first edge is 0.
    last = np.r_[times[1:] != times[:-1], True]
    edges, counts = times[last], busy[last]
    speed = 1.0 / (counts + 1.0)
    work = np.r_[0.0, np.cumsum(np.diff(edges) * speed[:-1])]
    return Timeline(edges=edges, speed=speed, work=work)


_CHUNK = 4096


def _busy_changes(
    rng: np.random.Generator, duty: float, busy_ms: float, horizon_ms: float
) -> tuple[np.ndarray, np.ndarray]:
    """Times (ms) and +1/-1 steps at which one co-tenant starts and stops being busy,
    from time 0 until past ``horizon_ms``; its state at time 0 is drawn from the
    stationary distribution (busy with probability ``duty``)."""
    if duty >= 1.0:
        return np.zeros(1), np.ones(1)
    idle_ms = busy_ms * (1.0 - duty) / duty
    busy_first = bool(rng.random() < duty)
    first = (busy_ms, idle_ms) if busy_first else (idle_ms, busy_ms)
    scales = np.tile(np.array(first), _CHUNK // 2)
    periods = []
    end = 0.0
    while end < horizon_ms:
        chunk = rng.standard_exponential(_CHUNK) * scales
        periods.append(chunk)
        end += float(chunk.sum())
    ends = np.cumsum(np.concatenate(periods))
    ends = ends[: int(np.searchsorted(ends, horizon_ms, side="right")) + 1]
    # Period i ends a busy period when the first one was busy and i is even (or the
    # first was idle and i is odd): busy ends step down, idle ends step up.
    index = np.arange(ends.size)
    ends_busy = (index % 2 == 0) if busy_first else (index % 2 == 1)
    steps = np.where(ends_busy, -1.0, 1.0)
    start = np.array([1.0 if busy_first else 0.0])
    return np.r_[0.0, ends], np.r_[start, steps]


@jit()
def finish(edges, speed, work, start, amount):  # type: ignore[no-untyped-def]
    """When a batch that needs ``amount`` ms of exclusive-card time, started at ``start``,
    completes under the speed profile."""
    m = np.searchsorted(edges, start, side="right") - 1
    target = work[m] + (start - edges[m]) * speed[m] + amount
    j = np.searchsorted(work, target, side="right") - 1
    if j < m:
        j = m
    return edges[j] + (target - work[j]) / speed[j]
