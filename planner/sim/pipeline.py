"""The worker's pipeline beyond the GPU, as figures: where a frame's end-to-end time goes,
and how busy the CPU threads are (SPEC §5.1).

A delivered frame's end-to-end latency is the sum of six parts:

- ``network``: the way in and the way back (``2 * network_ms``);
- ``pre``: waiting for a CPU thread and decoding (arrival to pending for the GPU);
- ``gpu_wait``: pending for the GPU until its batch starts;
- ``gpu``: its batch running;
- ``post``: waiting for a CPU thread and post-processing (batch end to post end);
- ``overhead``: the constant ``overhead_ms`` that occupies nothing.

The breakdown is given as means over all delivered frames and over the frames at or
beyond a latency percentile (the slow tail); percentiles of the parts would not add up to
the percentile of the whole, means do. The CPU pool's figures are per stage: the fraction
of the pool's thread-time inside the run that each stage kept busy, and the wait in the
queue (from the moment a job's frame joined it until a thread took the job).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.units import Milliseconds

PARTS: tuple[str, ...] = ("network", "pre", "gpu_wait", "gpu", "post", "overhead")
"""The parts of end-to-end latency, in the order a frame goes through them."""
PART_LABELS: dict[str, str] = {
    "network": "network (both ways)",
    "pre": "pre (wait + work)",
    "gpu_wait": "GPU wait",
    "gpu": "GPU",
    "post": "post (wait + work)",
    "overhead": "overhead",
}


@dataclass(frozen=True)
class Breakdown:
    """Mean milliseconds a frame spends in each part of the pipeline (``PARTS``)."""

    network: Milliseconds
    pre: Milliseconds
    gpu_wait: Milliseconds
    gpu: Milliseconds
    post: Milliseconds
    overhead: Milliseconds

    @property
    def total(self) -> Milliseconds:
        return self.network + self.pre + self.gpu_wait + self.gpu + self.post + self.overhead

    def as_dict(self) -> dict[str, float]:
        return {part: getattr(self, part) for part in PARTS}


@dataclass(frozen=True)
class Stages:
    """The breakdown over all delivered frames (``mean``) and over those at or beyond the
    ``percentile``-th end-to-end latency (``tail``, ``tail_frames`` of them); None when no
    frame was delivered."""

    percentile: float
    mean: Breakdown | None
    tail: Breakdown | None
    tail_frames: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "percentile": self.percentile,
            "mean": None if self.mean is None else self.mean.as_dict(),
            "tail": None if self.tail is None else self.tail.as_dict(),
            "tail_frames": self.tail_frames,
        }


def frame_parts(
    arrival: np.ndarray, ready: np.ndarray, start: np.ndarray, end: np.ndarray, done: np.ndarray
) -> np.ndarray:
    """Per delivered frame, the variable parts as rows: pre, GPU wait, GPU, post (ms)."""
    return np.stack([ready - arrival, start - ready, end - start, done - end])


def stages(
    parts: list[np.ndarray],
    e2e: list[np.ndarray],
    percentile: float,
    network_ms: Milliseconds,
    overhead_ms: Milliseconds,
    threshold: float | None = None,
) -> Stages:
    """The breakdown of several runs pooled: ``parts`` from ``frame_parts`` and the
    end-to-end latencies (any constant offset) of each run's delivered frames;
    ``threshold`` is their pooled percentile, when the caller has it already."""
    frames = sum(int(e.size) for e in e2e)
    if frames == 0:
        return Stages(percentile, None, None, 0)
    if threshold is None:
        threshold = float(np.percentile(np.concatenate(e2e), percentile))
    total = np.zeros(4)
    tail = np.zeros(4)
    beyond = 0
    for p, e in zip(parts, e2e, strict=True):
        total += p.sum(axis=1)
        slow = e >= threshold
        beyond += int(slow.sum())
        tail += p[:, slow].sum(axis=1)

    def of(sums: np.ndarray, count: int) -> Breakdown:
        pre, wait, gpu, post = (float(v) / count for v in sums)
        return Breakdown(2.0 * network_ms, pre, wait, gpu, post, overhead_ms)

    return Stages(percentile, of(total, frames), of(tail, beyond), beyond)


@dataclass(frozen=True)
class CpuStage:
    """One stage's use of the CPU pool: its share of the pool's thread-time inside the run,
    how many jobs started, and their wait in the queue (mean and p99, ms)."""

    busy_fraction: float
    jobs: int
    wait_mean_ms: Milliseconds | None
    wait_p99_ms: Milliseconds | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "busy_fraction": self.busy_fraction,
            "jobs": self.jobs,
            "wait_mean_ms": self.wait_mean_ms,
            "wait_p99_ms": self.wait_p99_ms,
        }


@dataclass(frozen=True)
class CpuPool:
    """The CPU threads' figures: all jobs together, and per stage."""

    workers: int
    total: CpuStage
    pre: CpuStage
    post: CpuStage

    @property
    def busy_fraction(self) -> float:
        return self.total.busy_fraction

    def as_dict(self) -> dict[str, Any]:
        return {
            "workers": self.workers,
            **self.total.as_dict(),
            "pre": self.pre.as_dict(),
            "post": self.post.as_dict(),
        }


def job_sums(
    kind: np.ndarray,
    ready: np.ndarray,
    start: np.ndarray,
    pre_ms: float,
    post_ms: float,
    duration_ms: float,
) -> np.ndarray:
    """From a run's job records: thread-ms inside the run on pre and on post jobs, their
    total waits in the queue, and their counts (the fast engine's loop keeps the same)."""
    pre = kind == 1
    length = np.where(pre, pre_ms, post_ms)
    inside = np.clip(np.minimum(start + length, duration_ms) - start, 0.0, None)
    wait = start - ready
    return np.array(
        [inside[pre].sum(), inside[~pre].sum(), wait[pre].sum(), wait[~pre].sum(),
         float(pre.sum()), float((~pre).sum())]
    )  # fmt: skip


def cpu_pool(
    workers: int,
    duration_ms: float,
    sums: list[np.ndarray],
    waits: list[tuple[np.ndarray, np.ndarray]] | None = None,
) -> CpuPool:
    """The pool's figures over several runs of the same length: ``sums`` of each run
    (``job_sums``); with each run's (job kinds, waits), the p99 waits too."""
    total = np.sum(sums, axis=0) if sums else np.zeros(6)
    capacity = max(workers * duration_ms * len(sums), 1e-300)
    kind = np.concatenate([k for k, _ in waits]) if waits else None
    wait = np.concatenate([w for _, w in waits]) if waits else None

    def stage(busy: float, waited: float, jobs: float, chosen: np.ndarray | None) -> CpuStage:
        p99 = None
        if wait is not None and chosen is not None and chosen.any():
            p99 = float(np.percentile(wait[chosen], 99.0))
        return CpuStage(
            busy_fraction=busy / capacity,
            jobs=int(jobs),
            wait_mean_ms=waited / jobs if jobs else None,
            wait_p99_ms=p99,
        )

    return CpuPool(
        workers=workers,
        total=stage(
            total[0] + total[1],
            total[2] + total[3],
            total[4] + total[5],
            None if kind is None else np.ones(kind.size, np.bool_),
        ),
        pre=stage(total[0], total[2], total[4], None if kind is None else kind == 1),
        post=stage(total[1], total[3], total[5], None if kind is None else kind == 0),
    )
