"""Many simulation runs at once: the engine behind sweeps and the recommendation.

``run_many(scenarios)`` gives the same figures as simulating each scenario on its own
(a test checks it against ``simulate``) but prepares shared inputs once — runs that
differ only in policy share their arrivals and co-tenant activity — and runs the fast
engine's loop on several threads at once (the loop releases the GIL), keeping per-frame
latencies only.

Threads rather than Numba's ``parallel=True``: the loop is compiled once, for both
engines, and a parallel kernel around it would cost more to compile on a fresh machine
(seconds) than it saves at run time. ``threads()`` is the number of cores, or
``NUMBA_NUM_THREADS`` where that is set (one per worker in a process pool).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np

from planner.arrivals import Arrivals, arrivals
from planner.engine_fast import _loop
from planner.policies import POLICIES
from planner.scenario import Scenario, Sharing
from planner.sharing import Timeline, cotenant_timeline, effective_table, horizon

_NO_TIMELINE = np.zeros(1)


@dataclass(frozen=True)
class Outcome:
    """The summary of one run that sweeps and recommendations need.

    ``latency_ms`` holds the GPU-side latency of every delivered frame; ``fps`` each
    session's delivered frame rate; counts are totals over sessions.
    """

    scenario: Scenario
    fps: np.ndarray
    arrived: int
    delivered: int
    overwritten: int
    expired: int
    busy_ms: float
    latency_ms: np.ndarray
    batch_sizes: np.ndarray  # batch_sizes[b] = how many batches of b frames ran

    @property
    def min_fps(self) -> float:
        return float(self.fps.min())

    @property
    def gpu_busy_fraction(self) -> float:
        return self.busy_ms / self.scenario.duration_ms


def _arrival_key(s: Scenario) -> tuple[object, ...]:
    return (s.sessions, s.session_fps, s.duration_s, s.phases, s.seed, s.jitter_ms)


def _timeline_key(s: Scenario) -> tuple[object, ...]:
    return (s.sharing.mode, s.sharing.cotenants, s.sharing.busy_period_ms, s.seed)


_THREADS: list[int] = []


def set_threads(count: int) -> None:
    """Run this many runs at once from now on in this process (a study's pool worker
    runs one, so that the pool and these threads do not oversubscribe the cores)."""
    _THREADS[:] = [max(1, int(count))]


def threads() -> int:
    """How many runs go at once: as ``set_threads`` said, else ``NUMBA_NUM_THREADS``
    (default: the number of cores)."""
    if _THREADS:
        return _THREADS[0]
    configured = getattr(numba.config, "NUMBA_NUM_THREADS", 0)
    return max(1, int(configured or os.cpu_count() or 1))


@dataclass(frozen=True)
class _Job:
    """One run's prepared inputs, shared with the runs that have the same ones."""

    scenario: Scenario
    arrivals: Arrivals
    latency: np.ndarray  # latency[b] for a batch of b (index 0 unused)
    timeline: Timeline | None


def run_many(scenarios: Sequence[Scenario]) -> list[Outcome]:
    """Simulate every scenario; outcomes come back in the same order."""
    if not scenarios:
        return []
    arrival_sets: dict[tuple[object, ...], Arrivals] = {}
    table_sets: dict[tuple[object, ...], np.ndarray] = {}
    timeline_sets: dict[tuple[object, ...], Timeline | None] = {}
    # A co-tenant timeline drawn further is the same process drawn longer (the prefix is
    # identical), so one timeline per seed covers every run of that seed.
    horizons: dict[tuple[object, ...], float] = {}
    for s in scenarios:
        key = (s.latency_ms, _sharing_table_key(s.sharing))
        if key not in table_sets:
            table = effective_table(np.asarray(s.latency_ms), s.sharing)
            table_sets[key] = np.r_[0.0, table]
        if s.sharing.mode == "time-slicing":
            tkey = _timeline_key(s)
            reach = horizon(s, table_sets[key][1:])
            horizons[tkey] = max(horizons.get(tkey, 0.0), reach)
    jobs = []
    for s in scenarios:
        akey = _arrival_key(s)
        if akey not in arrival_sets:
            arrival_sets[akey] = arrivals(s)
        timeline = None
        if s.sharing.mode == "time-slicing":
            tkey = _timeline_key(s)
            if tkey not in timeline_sets:
                timeline_sets[tkey] = cotenant_timeline(s.sharing, s.seed, horizons[tkey])
            timeline = timeline_sets[tkey]
        table = table_sets[(s.latency_ms, _sharing_table_key(s.sharing))]
        jobs.append(_Job(s, arrival_sets[akey], table, timeline))
    workers = min(threads(), len(jobs))
    if workers == 1:
        return [_run(job) for job in jobs]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_run, jobs, chunksize=max(1, len(jobs) // (4 * workers))))


def warm_up() -> float:
    """Compile the fast engine (or load it from the compiled-code cache) by simulating a
    few frames under every policy, and return the seconds it took.

    The dashboard calls this when its server starts, so the first plan a visitor asks for
    does not wait for the compiler. Safe to call from any thread at any time: Numba
    compiles each function once, and a caller that needs it meanwhile waits for it.
    """
    start = time.perf_counter()
    table = tuple(float(b) for b in range(1, 5))
    run_many(
        [
            Scenario(latency_ms=table, sessions=2, policy=policy, duration_s=0.1, sharing=sharing)
            for policy in POLICIES
            for sharing in (Sharing(), Sharing(mode="time-slicing", cotenants=(0.5,)))
        ]
    )
    return time.perf_counter() - start


def _run(job: _Job) -> Outcome:
    """One run on the fast engine's loop, summarised as ``planner.results`` does."""
    s = job.scenario
    if job.timeline is None:
        edges = speed = work = _NO_TIMELINE
    else:
        edges, speed, work = job.timeline.edges, job.timeline.speed, job.timeline.work
    out = _loop(
        job.arrivals.times, job.arrivals.start, s.duration_ms, job.latency,
        POLICIES[s.policy].pid, s.policy_params(), job.timeline is not None,
        edges, speed, work,
    )  # fmt: skip
    frames, batches, counters = out[0], out[1], out[10]
    batch_start, batch_end, batch_size = out[7][:batches], out[8][:batches], out[9][:batches]
    busy = np.minimum(batch_end, s.duration_ms) - batch_start
    arrived, delivered, overwritten, expired = counters[0], counters[1], counters[2], counters[3]
    return Outcome(
        scenario=s,
        fps=delivered / s.duration_s,
        arrived=int(arrived.sum()),
        delivered=int(delivered.sum()),
        overwritten=int(overwritten.sum()),
        expired=int(expired.sum()),
        busy_ms=float(busy.sum()),
        latency_ms=out[6][:frames],
        batch_sizes=np.bincount(batch_size, minlength=s.sessions + 1),
    )


def _sharing_table_key(sharing: Sharing) -> tuple[object, ...]:
    """What of the sharing mode changes the latency table (time-slicing does not)."""
    if sharing.mode in ("mps", "mig"):
        return (sharing.mode, sharing.mps_share, sharing.mig_slices, sharing.mig_total,
                sharing.mig_derived)  # fmt: skip
    return ("exclusive",)
