"""Sweeps: one call that simulates a grid of policies x session counts x seeds.

Seeds are pooled the way the recommendation judges an option (SPEC §3.5): latency
percentiles over the delivered frames of all seeds together, the slowest session's frame
rate on the worst seed, overwritten and expired fractions over all frames. The dashboard
draws its charts from these rows and recomputes them on every control change.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.errors import BadInput
from planner.sim.ensemble import Outcome, run_many, threads
from planner.sim.pipeline import CpuPool, Stages, cpu_pool, stages
from planner.sim.policies import POLICIES
from planner.sim.quantiles import percentiles
from planner.sim.scenario import Scenario
from planner.sim.work import Work, chunks, frames_of
from planner.units import FramesPerSecond, Milliseconds


@dataclass(frozen=True)
class Pooled:
    """One (policy, mode, session count) over several seeds.

    ``latency_ms`` is the ``percentile``-th GPU-side latency over the delivered frames of
    all seeds (None when nothing was delivered); ``e2e_latency_ms`` the same percentile of
    their end-to-end latencies (SPEC §5.1: the time at the worker plus the network both
    ways and the overhead). ``frames_beyond`` is how many frames lie beyond that
    percentile: under 10 and the percentile is low-confidence. ``stages`` breaks the
    end-to-end latency down by part of the pipeline (means over all frames and over those
    at or beyond the percentile; only for runs made in detail); ``cpu`` has the CPU pool's
    figures (None when its threads are unlimited or no stage takes time).
    """

    policy: str
    mode: str
    sessions: int
    seeds: tuple[int, ...]
    percentile: float
    latency_ms: Milliseconds | None
    e2e_latency_ms: Milliseconds | None
    p50_ms: Milliseconds | None
    p90_ms: Milliseconds | None
    p99_ms: Milliseconds | None
    max_ms: Milliseconds | None
    frames: int
    min_fps_by_seed: tuple[FramesPerSecond, ...]
    mean_fps: FramesPerSecond
    overwritten_fraction: float
    expired_fraction: float
    gpu_busy_fraction: float
    batch_sizes: tuple[int, ...]  # batch_sizes[b] = batches of b frames, all seeds
    # Detail of the same runs (a row made in detail has the breakdown and the p99 waits):
    # two rows of the same runs compare equal whatever detail they carry.
    stages: Stages | None = field(default=None, compare=False)
    cpu: CpuPool | None = field(default=None, compare=False)
    # A server that queues every frame (``Scenario.queue == "all"``): the percentile of the
    # end-to-end latency over the frames delivered in the first and in the last third of
    # the run, and the frames still queued (or on their way) at the end; None otherwise.
    early_ms: Milliseconds | None = None
    late_ms: Milliseconds | None = None
    queued_fraction: float | None = None

    @property
    def queue_grows(self) -> bool:
        """Whether latency grows through the run: the last third's percentile at least
        1.5 times the first third's (a server that queues every frame, past saturation)."""
        return (
            self.early_ms is not None
            and self.late_ms is not None
            and self.late_ms >= 1.5 * self.early_ms
        )

    @property
    def min_fps(self) -> FramesPerSecond:
        """The slowest session's frame rate on the worst seed."""
        return min(self.min_fps_by_seed)

    @property
    def frames_beyond(self) -> float:
        return self.frames * (1.0 - self.percentile / 100.0)

    @property
    def low_confidence(self) -> bool:
        return self.frames_beyond < 10

    def as_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "mode": self.mode,
            "sessions": self.sessions,
            "percentile": self.percentile,
            "latency_ms": self.latency_ms,
            "e2e_latency_ms": self.e2e_latency_ms,
            "p50_ms": self.p50_ms,
            "p90_ms": self.p90_ms,
            "p99_ms": self.p99_ms,
            "max_ms": self.max_ms,
            "frames": self.frames,
            "low_confidence": self.low_confidence,
            "min_fps": self.min_fps,
            "mean_fps": self.mean_fps,
            "overwritten_fraction": self.overwritten_fraction,
            "expired_fraction": self.expired_fraction,
            "gpu_busy_fraction": self.gpu_busy_fraction,
            "cpu_busy_fraction": None if self.cpu is None else self.cpu.busy_fraction,
            "cpu_wait_mean_ms": None if self.cpu is None else self.cpu.total.wait_mean_ms,
            "cpu_wait_p99_ms": None if self.cpu is None else self.cpu.total.wait_p99_ms,
            "stages_ms": None if self.stages is None else self.stages.as_dict(),
            **(
                {}
                if self.queued_fraction is None
                else {
                    "first_third_latency_ms": self.early_ms,
                    "last_third_latency_ms": self.late_ms,
                    "queued_fraction": self.queued_fraction,
                    "queue_grows": self.queue_grows,
                }
            ),
        }


def pool(outcomes: Sequence[Outcome], percentile: float) -> Pooled:
    """Pool the outcomes of one option at one session count (one outcome per seed); the
    stage breakdown where the outcomes carry their frames' parts (``run_many(detail=)``)."""
    first = outcomes[0].scenario
    latencies = np.concatenate([o.latency_ms for o in outcomes])
    if latencies.size:
        worst: float | None = float(latencies.max())
        # (The concatenation is this function's own copy, which the percentiles reorder.)
        p, p50, p90, p99 = percentiles(latencies, [percentile, 50.0, 90.0, 99.0])
    else:
        p = p50 = p90 = p99 = worst = None  # type: ignore[assignment]
    e2e = None
    at_worker = None
    if p is not None:
        # Without stages the time at the worker is the GPU-side latency, to the last bit.
        staged = first.takes_time_outside
        at_worker = (
            percentiles(np.concatenate([o.worker_ms for o in outcomes]), [percentile])[0]
            if staged
            else p
        )
        e2e = at_worker + (2.0 * first.stages.network_ms + first.overhead_ms)
    cpu = None
    if first.cpu_pool:
        cpu = cpu_pool(
            first.stages.cpu_workers,
            first.duration_ms,
            [o.cpu_sums for o in outcomes if o.cpu_sums is not None],
            [o.job_waits for o in outcomes if o.job_waits is not None] or None,
        )
    arrived = max(sum(o.arrived for o in outcomes), 1)
    width = max(o.batch_sizes.size for o in outcomes)
    sizes = np.zeros(width, np.int64)
    for o in outcomes:
        sizes[: o.batch_sizes.size] += o.batch_sizes
    early = late = queued = None
    if first.queue == "all" and all(o.thirds is not None for o in outcomes):
        # (Outcomes made from a real server's records carry no thirds: None there.)
        constant = 2.0 * first.stages.network_ms + first.overhead_ms
        parts = [
            np.concatenate([o.worker_ms[: o.thirds[0]] for o in outcomes if o.thirds]),
            np.concatenate([o.worker_ms[o.thirds[1] :] for o in outcomes if o.thirds]),
        ]
        early, late = (
            float(np.percentile(x, percentile)) + constant if x.size else None for x in parts
        )
        queued = sum(o.pending for o in outcomes) / arrived
    return Pooled(
        policy=first.policy,
        mode=first.sharing.mode,
        sessions=first.sessions,
        seeds=tuple(o.scenario.seed for o in outcomes),
        percentile=percentile,
        latency_ms=p,
        e2e_latency_ms=e2e,
        p50_ms=p50,
        p90_ms=p90,
        p99_ms=p99,
        max_ms=worst,
        frames=int(latencies.size),
        min_fps_by_seed=tuple(o.min_fps for o in outcomes),
        mean_fps=float(np.mean([o.fps.mean() for o in outcomes])),
        overwritten_fraction=sum(o.overwritten for o in outcomes) / arrived,
        expired_fraction=sum(o.expired for o in outcomes) / arrived,
        gpu_busy_fraction=float(np.mean([o.gpu_busy_fraction for o in outcomes])),
        batch_sizes=tuple(int(v) for v in sizes),
        stages=None
        if any(o.parts is None for o in outcomes)
        else stages(
            [o.parts for o in outcomes if o.parts is not None],
            [o.worker_ms for o in outcomes],
            percentile,
            first.stages.network_ms,
            first.overhead_ms,
            threshold=at_worker,
        ),
        cpu=cpu,
        early_ms=early,
        late_ms=late,
        queued_fraction=queued,
    )


class PoolCache:
    """Pooled results already simulated, for reuse: a bounded least-recently-used memo,
    safe to share between threads (the sessions of one dashboard server).

    The key is the scenario with seed 0 (every other field, the curve table included),
    the number of seeds and the percentile, so a hit is exactly the runs that would be
    simulated again. Changing a plan's frame-rate floor, say, re-judges cached runs
    instead of repeating them.
    """

    def __init__(self, size: int = 20_000) -> None:
        self._size = size
        self._entries: OrderedDict[tuple[Scenario, int, float], Pooled] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Scenario, int, float]) -> Pooled | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: tuple[Scenario, int, float], value: Pooled) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


def pooled_runs(
    templates: Sequence[Scenario],
    seeds: int | Sequence[int],
    percentile: float,
    cache: PoolCache | None = None,
    work: Work | None = None,
    detail: bool = False,
) -> tuple[list[Pooled], int]:
    """Each template (seed 0) run on seeds 0..seeds-1 and pooled; with the number of runs
    simulated (those not found in ``cache``). ``seeds`` is one number for every template
    or one per template (a recommendation's full runs and probes go in one call). The
    misses run in parallel batches: all at once, or under ``work`` in chunks that count
    against its budget, with a checkpoint between chunks (``planner.sim.work``). ``detail``
    adds the stage breakdown (``Pooled.stages``); such rows bypass the cache."""
    if detail:
        cache = None
    each = [seeds] * len(templates) if isinstance(seeds, int) else list(seeds)
    if len(each) != len(templates):
        raise ValueError("one seed count per template")
    keys = [
        (t.with_seed(0) if t.seed else t, k, percentile)
        for t, k in zip(templates, each, strict=True)
    ]
    found = [cache.get(k) if cache is not None else None for k in keys]
    # Templates that are the same scenario (a memory limit that cannot bind is dropped, for
    # one) are simulated once.
    missing = list(dict.fromkeys(keys[i] for i, hit in enumerate(found) if hit is None))
    done: dict[tuple[Scenario, int, float], Pooled] = {}
    ran = 0
    # A few keys at a time, pooled as soon as they are run, so that the frames of a
    # search's many runs at large counts are not all held at once.
    for group in _groups(missing):
        grid = [key[0] if s == 0 else key[0].with_seed(s) for key in group for s in range(key[1])]
        outcomes = run_many(grid, detail=detail) if work is None else run_within(grid, work, detail)
        ran += len(grid)
        ends = np.cumsum([key[1] for key in group])
        parts = [outcomes[end - key[1] : end] for key, end in zip(group, ends, strict=True)]
        for key, pooled in zip(group, _pool_all(parts, percentile), strict=True):
            done[key] = pooled
            if cache is not None:
                cache.put(key, pooled)
    return [f if f is not None else done[k] for f, k in zip(found, keys, strict=True)], ran


PARALLEL_FRAMES = 2_000_000
"""Below this many frames, preparing or pooling runs on several threads costs more than
it saves."""
POOL_FRAMES = 16_000_000
"""At most about this many frames' latencies are held before they are pooled (128 MB)."""


def _groups(keys: Sequence[tuple[Scenario, int, float]]) -> list[list[tuple[Scenario, int, float]]]:
    groups: list[list[tuple[Scenario, int, float]]] = []
    held = POOL_FRAMES
    for key in keys:
        frames = frames_of(sum(key[0].session_fps), key[0].duration_s) * key[1]
        if held + frames > POOL_FRAMES:
            groups.append([])
            held = 0
        groups[-1].append(key)
        held += frames
    return groups


def _pool_all(parts: Sequence[Sequence[Outcome]], percentile: float) -> list[Pooled]:
    """``pool`` of each part, on several threads when they are large enough to gain from
    it (NumPy's sorting releases the GIL; a thread pool costs more than small parts)."""
    workers = min(threads(), len(parts))
    frames = sum(o.latency_ms.size for part in parts for o in part)
    if workers <= 1 or frames < PARALLEL_FRAMES:
        return [pool(p, percentile) for p in parts]
    with ThreadPoolExecutor(max_workers=workers) as executor:
        return list(executor.map(lambda p: pool(p, percentile), parts))


def run_within(scenarios: Sequence[Scenario], work: Work, detail: bool = False) -> list[Outcome]:
    """``run_many`` in chunks of at most ``planner.sim.work.CHUNK_FRAMES`` frames, each
    admitted against ``work``'s budget, run in its turn and checked in afterwards."""
    sizes = [frames_of(sum(s.session_fps), s.duration_s) for s in scenarios]
    outcomes: list[Outcome] = []
    for group in chunks(sizes):
        frames = sum(sizes[i] for i in group)
        work.admit(frames)
        with work.turn():
            outcomes += run_many([scenarios[i] for i in group], detail=detail)
        work.finished(frames)
    return outcomes


def sweep(
    template: Scenario,
    policies: Iterable[str] = tuple(POLICIES),
    sessions: Iterable[int] = range(1, 33),
    seeds: Iterable[int] = range(4),
    percentile: float = 99.0,
    cache: PoolCache | None = None,
) -> list[Pooled]:
    """Simulate every policy x session count, pooling the seeds; rows in that order.

    ``template`` gives everything else (curve table, frame rate, duration, phases, jitter,
    overhead, policy parameters, sharing); its table must cover the largest session
    count, and it must give one frame rate for all sessions.
    """
    policies, counts, seeds = list(policies), sorted(set(sessions)), list(seeds)
    if len(template.fps) != 1:
        raise BadInput("a sweep over session counts needs one frame rate for all sessions")
    if not counts or not seeds or not policies:
        raise BadInput("a sweep needs at least one policy, one session count and one seed")
    if not 0.0 < percentile < 100.0:
        raise BadInput("the percentile must be above 0 and below 100")
    if seeds != list(range(len(seeds))):
        grid = [
            template.with_(policy=p, sessions=n, seed=s)
            for p in policies
            for n in counts
            for s in seeds
        ]
        outcomes = run_many(grid)
        k = len(seeds)
        return [pool(outcomes[i : i + k], percentile) for i in range(0, len(outcomes), k)]
    templates = [template.with_(policy=p, sessions=n, seed=0) for p in policies for n in counts]
    return pooled_runs(templates, len(seeds), percentile, cache)[0]


def table(rows: Sequence[Pooled]) -> dict[str, list[Any]]:
    """Rows as columns (``pandas.DataFrame(table(rows))`` makes a data frame)."""
    dicts = [r.as_dict() for r in rows]
    return {key: [d[key] for d in dicts] for key in (dicts[0] if dicts else {})}
