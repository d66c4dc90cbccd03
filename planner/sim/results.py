"""What a simulation run tells a user (SPEC §3.3 "Results"), computed from its records.

One function, ``summarise``, turns records into results for both engines, so the
engines are compared on their records and the figures cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.sim.arrivals import arrivals
from planner.sim.delivered import delivered_fps
from planner.sim.pipeline import CpuPool, Stages, cpu_pool, frame_parts, job_sums, stages
from planner.sim.records import Records
from planner.sim.scenario import Scenario
from planner.units import FramesPerSecond, Milliseconds

PERCENTILES = (50.0, 90.0, 99.0)


@dataclass(frozen=True)
class LatencySummary:
    """Percentiles (numpy's default linear interpolation) over delivered frames, in ms.

    All None when no frame was delivered; ``frames`` says how many stand behind them.
    """

    p50: Milliseconds | None
    p90: Milliseconds | None
    p99: Milliseconds | None
    max: Milliseconds | None
    frames: int

    @classmethod
    def of(cls, latencies: np.ndarray) -> LatencySummary:
        if latencies.size == 0:
            return cls(None, None, None, None, 0)
        p50, p90, p99 = (float(v) for v in np.percentile(latencies, PERCENTILES))
        return cls(p50, p90, p99, float(latencies.max()), int(latencies.size))

    def as_dict(self) -> dict[str, Any]:
        return {"p50": self.p50, "p90": self.p90, "p99": self.p99, "max": self.max,
                "frames": self.frames}  # fmt: skip


@dataclass(frozen=True)
class SessionResult:
    """One session's frame accounting: arrived = delivered + overwritten + expired + pending."""

    session: int
    offered_fps: FramesPerSecond
    fps: FramesPerSecond
    arrived: int
    delivered: int
    overwritten: int
    expired: int
    pending: int
    starved: bool


@dataclass(frozen=True)
class QueueGrowth:
    """Whether a server that queues every frame keeps up: the p99 end-to-end latency of
    the frames delivered in the first and in the last third of the run (None where none
    was), and the frames still queued, or on their way, at the end. Past saturation the
    queue, and latency with it, grows through the run: ``grows`` when the last third's
    p99 is at least 1.5 times the first third's."""

    p99_first_third_ms: Milliseconds | None
    p99_last_third_ms: Milliseconds | None
    queued_at_end: int

    @property
    def grows(self) -> bool:
        first, last = self.p99_first_third_ms, self.p99_last_third_ms
        return first is not None and last is not None and last >= 1.5 * first

    @classmethod
    def of(cls, scenario: Scenario, records: Records) -> QueueGrowth:
        started = records.batch_start[records.frame_batch]
        e2e = e2e_latencies(scenario, records)
        third = scenario.duration_ms / 3.0
        first, last = e2e[started < third], e2e[started >= 2.0 * third]
        return cls(
            float(np.percentile(first, 99.0)) if first.size else None,
            float(np.percentile(last, 99.0)) if last.size else None,
            int(records.pending.sum()),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "p99_first_third_ms": self.p99_first_third_ms,
            "p99_last_third_ms": self.p99_last_third_ms,
            "queued_at_end": self.queued_at_end,
            "grows": self.grows,
        }


@dataclass(frozen=True)
class Results:
    """Everything SPEC §3.3 and §5.1 list for one run; ``records`` holds the raw rows.

    ``e2e_latency`` is over each delivered frame's end-to-end latency: post completion
    plus the network delay back and the overhead, minus its capture time. ``stages``
    breaks it down by part of the pipeline (``planner.sim.pipeline``); ``cpu`` has the CPU
    pool's figures, None when the pool is unlimited or no stage takes time.
    """

    scenario: Scenario
    sessions: tuple[SessionResult, ...]
    latency: LatencySummary
    e2e_latency: LatencySummary
    overwritten_fraction: float
    expired_fraction: float
    gpu_busy_fraction: float
    batch_histogram: dict[int, int]
    records: Records
    stages: Stages | None = None
    cpu: CpuPool | None = None
    queue: QueueGrowth | None = None

    @property
    def per_session_fps(self) -> list[float]:
        return [s.fps for s in self.sessions]

    @property
    def mean_fps(self) -> float:
        return float(np.mean(self.per_session_fps))

    @property
    def min_fps(self) -> float:
        return float(np.min(self.per_session_fps))

    @property
    def max_fps(self) -> float:
        return float(np.max(self.per_session_fps))

    @property
    def jain(self) -> float:
        return jain_index(np.asarray(self.per_session_fps))

    @property
    def starved_sessions(self) -> list[int]:
        return [s.session for s in self.sessions if s.starved]

    def as_dict(self) -> dict[str, Any]:
        """The document ``planner simulate --json`` prints."""
        return {
            "sessions": self.scenario.sessions,
            "policy": self.scenario.policy,
            "mode": self.scenario.sharing.mode,
            "per_session_fps": self.per_session_fps,
            "mean_fps": self.mean_fps,
            "min_fps": self.min_fps,
            "max_fps": self.max_fps,
            "jain": self.jain,
            "latency_ms": self.latency.as_dict(),
            "e2e_latency_ms": self.e2e_latency.as_dict(),
            "overwritten_fraction": self.overwritten_fraction,
            "expired_fraction": self.expired_fraction,
            "gpu_busy_fraction": self.gpu_busy_fraction,
            "batch_histogram": {str(k): v for k, v in self.batch_histogram.items()},
            "starved_sessions": self.starved_sessions,
            "memory_batch_limit": self.scenario.memory_batch_limit,
            "stages_ms": None if self.stages is None else self.stages.as_dict(),
            "cpu_pool": None if self.cpu is None else self.cpu.as_dict(),
            "queue": self.scenario.queue,
            "queue_growth": None if self.queue is None else self.queue.as_dict(),
        }

    def frame_table(self) -> dict[str, np.ndarray]:
        """Flat per-frame records as columns (one call makes a DataFrame of them)."""
        r = self.records
        return {
            "session": r.frame_session,
            "frame": r.frame_index,
            "batch": r.frame_batch,
            "arrival_ms": r.frame_arrival,
            "ready_ms": r.frame_ready,
            "dispatch_ms": r.batch_start[r.frame_batch],
            "completion_ms": r.batch_end[r.frame_batch],
            "done_ms": r.frame_done,
            "latency_ms": r.frame_latency,
            "e2e_latency_ms": e2e_latencies(self.scenario, r),
            "batch_size": r.batch_size[r.frame_batch],
        }


def worker_latencies(records: Records) -> np.ndarray:
    """Each delivered frame's time at the worker: post completion minus arrival. Without
    stages that is its GPU-side latency to the last bit (post completion is the batch's
    end plus 0, arrival the capture time plus 0)."""
    return records.frame_done - records.frame_arrival


def e2e_latencies(scenario: Scenario, records: Records) -> np.ndarray:
    """Each delivered frame's end-to-end latency (SPEC §5.1): post completion + network +
    overhead - capture, computed as the time at the worker plus the constant parts."""
    return worker_latencies(records) + (2.0 * scenario.stages.network_ms + scenario.overhead_ms)


def jain_index(fps: np.ndarray) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all equal, 1/n when one gets all.

    With nothing delivered at all every session got the same (zero): 1.
    """
    squares = float(np.sum(fps * fps))
    if squares == 0.0:
        return 1.0
    return float(np.sum(fps) ** 2 / (fps.size * squares))


def summarise(scenario: Scenario, records: Records, percentile: float = 99.0) -> Results:
    """Results of a run from its records; the stage breakdown's tail is the frames at or
    beyond the ``percentile``-th end-to-end latency."""
    fps = delivered_fps(scenario, arrivals(scenario), records.delivered, records.pending)
    mean = float(fps.mean())
    sessions = tuple(
        SessionResult(
            session=i,
            offered_fps=scenario.session_fps[i],
            fps=float(fps[i]),
            arrived=int(records.arrived[i]),
            delivered=int(records.delivered[i]),
            overwritten=int(records.overwritten[i]),
            expired=int(records.expired[i]),
            pending=int(records.pending[i]),
            starved=bool(fps[i] < 0.5 * mean),
        )
        for i in range(scenario.sessions)
    )
    arrived = max(int(records.arrived.sum()), 1)
    busy = np.minimum(records.batch_end, scenario.duration_ms) - records.batch_start
    sizes, counts = np.unique(records.batch_size, return_counts=True)
    worker = worker_latencies(records)
    parts = frame_parts(
        records.frame_arrival,
        records.frame_ready,
        records.batch_start[records.frame_batch],
        records.batch_end[records.frame_batch],
        records.frame_done,
    )
    pool = None
    worker_stages = scenario.engine_stages  # decoding on the CPU is the threads' work too
    if worker_stages.cpu_pool:
        sums = job_sums(
            records.job_kind, records.job_ready, records.job_start, worker_stages.pre_ms,
            worker_stages.post_ms, scenario.duration_ms,
        )  # fmt: skip
        waits = (records.job_kind, records.job_start - records.job_ready)
        pool = cpu_pool(worker_stages.cpu_workers, scenario.duration_ms, [sums], [waits])
    return Results(
        scenario=scenario,
        sessions=sessions,
        latency=LatencySummary.of(records.frame_latency),
        e2e_latency=LatencySummary.of(e2e_latencies(scenario, records)),
        overwritten_fraction=float(records.overwritten.sum()) / arrived,
        expired_fraction=float(records.expired.sum()) / arrived,
        gpu_busy_fraction=float(busy.sum()) / scenario.duration_ms,
        batch_histogram={int(s): int(c) for s, c in zip(sizes, counts, strict=True)},
        records=records,
        stages=stages(
            [parts], [worker], percentile, worker_stages.network_ms, scenario.overhead_ms
        ),
        cpu=pool,
        queue=QueueGrowth.of(scenario, records) if scenario.queue == "all" else None,
    )
