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
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, cast

import numba
import numpy as np

from planner.sim.arrivals import Arrivals, Order, arrival_order, arrivals
from planner.sim.batch_time import spread_arrays, stretch
from planner.sim.cascade import prepared, reach_table
from planner.sim.decoded import arrived_at_worker, loop_times
from planner.sim.delivered import delivered_fps
from planner.sim.engine_fast import fast_loop, records_of
from planner.sim.pipeline import frame_parts
from planner.sim.policies import POLICIES
from planner.sim.queue_all import run_queue_all
from planner.sim.scenario import Scenario
from planner.sim.sharing import Sharing, Timeline, cotenant_timeline, effective_table, horizon
from planner.sim.stages import NO_STAGES, WorkerStages

_NO_TIMELINE = np.zeros(1)


@dataclass(frozen=True)
class Outcome:
    """The summary of one run that sweeps and recommendations need.

    ``latency_ms`` holds the GPU-side latency of every delivered frame and ``worker_ms``
    its time at the worker (post completion minus arrival: end-to-end latency less the
    network and the overhead; the same array when the scenario has no stages); ``fps``
    each session's delivered frame rate (``planner.sim.delivered``); counts are totals
    over sessions. With a finite
    pool of CPU threads, ``cpu_sums`` has the thread-time inside the run on pre and on
    post jobs, their total waits and their counts (``planner.sim.pipeline.job_sums``). Only
    when the runs were asked for in detail: ``parts`` (the pre, GPU wait, GPU and post
    time of each frame, as rows: ``planner.sim.pipeline.frame_parts``) and ``job_waits`` (each
    job's kind and wait). Under ``queue = all``, ``thirds`` are where the frames delivered
    in the second and in the last third of the run start in ``latency_ms`` (whether the
    queue grows through the run); None otherwise.
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
    worker_ms: np.ndarray
    parts: np.ndarray | None = None
    cpu_sums: np.ndarray | None = None
    job_waits: tuple[np.ndarray, np.ndarray] | None = None
    thirds: tuple[int, int] | None = None

    @property
    def pending(self) -> int:
        """Frames neither delivered nor dropped at the end: still queued, or on their way."""
        return self.arrived - self.delivered - self.overwritten - self.expired

    @property
    def min_fps(self) -> float:
        return float(self.fps.min())

    @property
    def gpu_busy_fraction(self) -> float:
        return self.busy_ms / self.scenario.duration_ms


def _arrival_key(s: Scenario) -> tuple[object, ...]:
    return (s.sessions, s.session_fps, s.duration_s, s.phases, s.seed, s.jitter_ms)


PARALLEL_FRAMES = 2_000_000
"""Below about this many frames in all, arrivals are drawn on one thread (a pool of
threads costs more than it saves)."""
_THREADS: list[int] = []


def set_threads(count: int) -> None:
    """Run this many runs at once from now on in this process (a study's pool worker
    runs one, so that the pool and these threads do not oversubscribe the cores)."""
    _THREADS[:] = [max(1, int(count))]


def reset_threads() -> None:
    """Forget ``set_threads``: run as many runs at once as ``NUMBA_NUM_THREADS`` says."""
    _THREADS.clear()


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
    order: Order  # arrivals.arrival_order
    times: np.ndarray  # the times the loop takes (engine_fast.loop_times)


def run_many(scenarios: Sequence[Scenario], detail: bool = False) -> list[Outcome]:
    """Simulate every scenario; outcomes come back in the same order (with each frame's
    stage times when ``detail``)."""
    if not scenarios:
        return []
    arrival_sets: dict[tuple[object, ...], Arrivals] = {}
    table_sets: dict[tuple[object, ...], np.ndarray] = {}
    timeline_sets: dict[tuple[object, ...], Timeline | None] = {}
    # A co-tenant timeline drawn further is the same process drawn longer (the prefix is
    # identical), so one timeline per seed covers every run of that seed.
    horizons: dict[tuple[object, ...], float] = {}
    # The order frames reach the worker in, shared by the runs with a pool of CPU threads
    # that have the same arrivals and network delay; without a pool, the order they become
    # pending for the GPU in, shared by the runs that also have the same pre stage.
    orders: dict[object, Order] = {}
    for s in scenarios:
        key = (s.latency_ms, s.sharing.kind.table_key(s.sharing), s.peak_upto)
        if key not in table_sets:
            table = effective_table(np.asarray(s.latency_ms), s.sharing, s.peak_upto)
            table_sets[key] = np.r_[0.0, table]
        tkey = s.sharing.kind.timeline_key(s.sharing, s.seed)
        if tkey is not None:
            largest = s.largest_batch(memory=False)
            bound = reach_table(s, table_sets[key][1:], largest, stretch(s.spread))
            reach = horizon(s.sharing, s.duration_ms, *bound)
            horizons[tkey] = max(horizons.get(tkey, 0.0), reach)
    # Arrivals and their order are drawn once per set of runs that share them, in parallel
    # (sorting them is as much work as a run of the loop at many sessions).
    frames = sum(len(s.session_fps) * s.duration_s * max(s.session_fps) for s in scenarios)
    workers = min(threads(), len(scenarios)) if frames >= PARALLEL_FRAMES else 1
    firsts = {_arrival_key(s): s for s in reversed(scenarios)}
    arrival_sets.update(zip(firsts, _each(arrivals, list(firsts.values()), workers), strict=True))
    wanted: dict[object, tuple[Arrivals, np.ndarray]] = {}
    for s in scenarios:
        okey = _order_key(s)
        if okey not in wanted:
            capture = arrival_sets[_arrival_key(s)]
            times = loop_times(s, capture)
            loop = capture if times is capture.times else Arrivals(times, capture.start)
            wanted[okey] = (loop, s.engine_stages.as_array())
    made = _each(
        lambda a: arrival_order(a[0].times, a[0].start, a[1]), list(wanted.values()), workers
    )
    orders.update(zip(wanted, made, strict=True))
    jobs = []
    for s in scenarios:
        akey = _arrival_key(s)
        timeline = None
        tkey = s.sharing.kind.timeline_key(s.sharing, s.seed)
        if tkey is not None:
            if tkey not in timeline_sets:
                timeline_sets[tkey] = cotenant_timeline(s.sharing, s.seed, horizons[tkey])
            timeline = timeline_sets[tkey]
        table = table_sets[(s.latency_ms, s.sharing.kind.table_key(s.sharing), s.peak_upto)]
        okey = _order_key(s)
        jobs.append(
            _Job(s, arrival_sets[akey], table, timeline, orders[okey], wanted[okey][0].times)
        )
    run = _run_in_detail if detail else _run
    if workers == 1:
        return [run(job) for job in jobs]
    # Longest runs first, so that no core is left with a long run after the others are
    # done (a plan's round mixes full runs with probes a 24th their size); outcomes come
    # back in the scenarios' order.
    longest = sorted(range(len(jobs)), key=lambda i: -_size(jobs[i].scenario))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(run, [jobs[i] for i in longest]))
    outcomes: list[Outcome | None] = [None] * len(jobs)
    for i, outcome in zip(longest, done, strict=True):
        outcomes[i] = outcome
    return cast(list[Outcome], outcomes)


def _size(s: Scenario) -> float:
    """About how many frames a run simulates."""
    return len(s.session_fps) * s.duration_s * max(s.session_fps)


def _order_key(s: Scenario) -> tuple[object, ...]:
    """What the order frames reach the loop in depends on: the arrivals, the stages as the
    loop runs them, and the decoder engines where there are some."""
    stages = s.engine_stages
    decoding = s.decode
    decoders = (
        None
        if decoding is None or decoding.on_cpu
        else (decoding, s.queue, s.stages.network_ms, s.duration_ms)
    )
    pre = None if s.cpu_pool else stages.pre_ms
    return (_arrival_key(s), stages.network_ms, pre, decoders)


def _each(make: Callable[[Any], Any], items: list[Any], workers: int) -> list[Any]:
    """``make`` of each item, in order, on ``workers`` threads."""
    if workers == 1 or len(items) == 1:
        return [make(item) for item in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(make, items))


def warm_up(cpu_pool: bool = False, queue_all: bool = False) -> float:
    """Compile the fast engine (or load it from the compiled-code cache) by simulating a
    few frames under every policy, and return the seconds it took.

    The dashboard calls this when its server starts, so the first plan a visitor asks for
    does not wait for the compiler. Safe to call from any thread at any time: Numba
    compiles each function once, and a caller that needs it meanwhile waits for it.

    The loop has a second compiled version for scenarios with a pool of CPU threads;
    ``cpu_pool=True`` compiles it too (after the first). By default it is left to the
    first scenario that needs it: compiled in the background at start-up, it competed with
    the first visitor's plan for the CPU and delayed it by seconds on a small machine.
    ``queue_all=True`` compiles the loop of a server that queues every frame as well
    (``planner compile --all`` does both ahead of time).
    """
    start = time.perf_counter()
    table = tuple(float(b) for b in range(1, 5))
    pooled = WorkerStages(pre_ms=1.0, cpu_workers=1)
    for stages in (NO_STAGES, pooled) if cpu_pool else (NO_STAGES,):
        run_many(
            [
                Scenario(
                    latency_ms=table,
                    sessions=2,
                    policy=policy,
                    duration_s=0.1,
                    sharing=sharing,
                    stages=stages,
                )
                for policy in POLICIES
                for sharing in (Sharing(), Sharing.of("time-slicing", cotenants=(0.5,)))
            ]
        )
    if queue_all:
        eight = tuple(float(b) for b in range(1, 9))  # the batches such a server may form
        run_many(
            [
                Scenario(latency_ms=eight, sessions=2, policy=policy, duration_s=0.1, queue="all")
                for policy in POLICIES
            ]
        )
    return time.perf_counter() - start


def _run_in_detail(job: _Job) -> Outcome:
    return _run(job, detail=True)


def _run(job: _Job, detail: bool = False) -> Outcome:
    """One run on the fast engine's loop, summarised as ``planner.sim.results`` does."""
    s = job.scenario
    if job.timeline is None:
        edges = speed = work = _NO_TIMELINE
    else:
        edges, speed, work = job.timeline.edges, job.timeline.speed, job.timeline.work
    latency, chain = prepared(s, job.latency, job.arrivals.times.size)
    if s.queue == "all":
        out = run_queue_all(
            s, job.times, job.arrivals.start, latency, job.timeline, job.order,
            chain=chain,
        )  # fmt: skip
    else:
        sigma, z = spread_arrays(s.spread, s.seed, job.arrivals.times.size)
        out = fast_loop()(
            job.times, job.arrivals.start, s.duration_ms, latency,
            POLICIES[s.policy].pid, s.policy_params(), job.timeline is not None, edges, speed,
            work, s.engine_stages.as_array(), job.order[0], job.order[1], job.order[2], detail,
            sigma, z, chain,
        )  # fmt: skip
    r = arrived_at_worker(records_of(out), s, job.arrivals)
    thirds = None
    if s.queue == "all":
        # Delivered frames are in delivery order: those of the first and the last third of
        # the run (by the start of their batch) are a prefix and a suffix.
        started = r.batch_start[r.frame_batch]
        edges_ms = (s.duration_ms / 3.0, 2.0 * s.duration_ms / 3.0)
        first, last = np.searchsorted(started, edges_ms)
        thirds = (int(first), int(last))
    busy = np.minimum(r.batch_end, s.duration_ms) - r.batch_start
    arrived, delivered, overwritten, expired = r.arrived, r.delivered, r.overwritten, r.expired
    pool: dict[str, Any] = {}
    if s.cpu_pool:
        pool["cpu_sums"] = out[-1]
        if detail:
            pool["job_waits"] = (r.job_kind, r.job_start - r.job_ready)
    staged = s.takes_time_outside
    worker = r.frame_done - r.frame_arrival if staged else r.frame_latency
    parts = None
    if detail:
        start, end = r.batch_start[r.frame_batch], r.batch_end[r.frame_batch]
        parts = frame_parts(r.frame_arrival, r.frame_ready, start, end, r.frame_done)
    return Outcome(
        scenario=s,
        fps=delivered_fps(s, job.arrivals, delivered, r.pending),
        arrived=int(arrived.sum()),
        delivered=int(delivered.sum()),
        overwritten=int(overwritten.sum()),
        expired=int(expired.sum()),
        busy_ms=float(busy.sum()),
        latency_ms=r.frame_latency,
        batch_sizes=np.bincount(r.batch_size, minlength=s.sessions + 1),
        worker_ms=worker,
        parts=parts,
        thirds=thirds,
        **pool,
    )
