"""What a simulation run produces: flat records of frames, batches and sessions.

Both engines fill the same ``Records``; the results (``planner.sim.results``) are computed
from them by one function, so the engines are compared on the records themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Records:
    """Raw output of one run.

    - frames: one row per delivered frame, in delivery order: ``frame_session``,
      ``frame_index`` (the frame's position among its session's frames in the run: k,
      unless jitter pushed earlier frames out of the run), ``frame_batch`` (row in the
      batch arrays), ``frame_arrival`` (when it reached the worker: capture time plus the
      network delay), ``frame_ready`` (when it became pending for the GPU, after the pre
      stage), ``frame_latency`` (batch completion minus ``frame_ready``, ms, GPU side) and
      ``frame_done`` (when its post stage completed);
    - batches: ``batch_start``, ``batch_end`` (ms) and ``batch_size``;
    - sessions: ``arrived`` (frames captured in the run), ``delivered``, ``overwritten``,
      ``expired``, ``pending`` (frames neither delivered nor dropped at the end: waiting
      for the GPU, for a CPU thread, in a pre stage, or reaching the worker after the end);
    - CPU jobs, one row per job a thread of a finite pool started, in start order (empty
      when the pool is unlimited or no stage takes time): ``job_kind`` (0 post, 1 pre),
      ``job_ready`` (when its frame joined the queue) and ``job_start``.
    """

    frame_session: np.ndarray
    frame_index: np.ndarray
    frame_batch: np.ndarray
    frame_arrival: np.ndarray
    frame_ready: np.ndarray
    frame_latency: np.ndarray
    frame_done: np.ndarray
    batch_start: np.ndarray
    batch_end: np.ndarray
    batch_size: np.ndarray
    arrived: np.ndarray
    delivered: np.ndarray
    overwritten: np.ndarray
    expired: np.ndarray
    pending: np.ndarray
    job_kind: np.ndarray
    job_ready: np.ndarray
    job_start: np.ndarray

    def same_as(self, other: Records, tolerance_ms: float = 1e-9) -> list[str]:
        """Differences from ``other`` (empty when the runs agree): integer fields exactly,
        times within ``tolerance_ms``."""
        problems = []
        for name in self.__dataclass_fields__:
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine.shape != theirs.shape:
                problems.append(f"{name}: shape {mine.shape} vs {theirs.shape}")
            elif mine.dtype.kind == "f":
                if not np.allclose(mine, theirs, rtol=0.0, atol=tolerance_ms):
                    worst = int(np.argmax(np.abs(mine - theirs)))
                    problems.append(f"{name}[{worst}]: {mine[worst]!r} vs {theirs[worst]!r}")
            elif not np.array_equal(mine, theirs):
                first = int(np.argmax(mine != theirs))
                problems.append(f"{name}[{first}]: {mine[first]!r} vs {theirs[first]!r}")
        return problems
