"""What a load test produced: each run's measured and predicted figures (``Run``), the
measured seat cap beside the predicted one (``Cap``), the whole test (``LoadTest``), and
its progress events."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from planner.curves.curve import Curve
from planner.sim.calibration import Calibration
from planner.sim.results import Results
from planner.sim.scenario import Scenario
from planner.units import Milliseconds
from planner.validate.measured_vs_predicted import (
    METRICS,
    Figure,
    Interval,
    Summary,
    compare,
    loaded,
    point,
)
from planner.validate.options import LoadTestOptions
from planner.validate.worker.frames import WorkerRun

SERVER_SOURCE = "server"
"""The source of a load test against a KServe v2 server (``planner.validate.server``); the
reference worker's is ``measured``."""


SERVER_LOADED = 0.5
"""The busy fraction from which a run loads a server that queues every frame."""


@dataclass(frozen=True)
class Run:
    """One (sessions, policy, seed): what the worker measured and the simulator predicted
    for the same scenario. ``records`` are the worker's per-frame records (None for an
    imported summary); ``calibrated`` the prediction with a calibration applied, where
    one was asked for."""

    scenario: Scenario
    measured: Summary
    predicted: Summary
    records: WorkerRun | None = None
    calibrated: Summary | None = None
    predicted_results: Results | None = field(default=None, repr=False, compare=False)
    ranges: tuple[tuple[str, Interval], ...] = ()

    @property
    def sessions(self) -> int:
        return self.scenario.sessions

    @property
    def policy(self) -> str:
        return self.scenario.policy

    @property
    def loaded(self) -> bool:
        """Whether the run loaded the device: its slowest session below 95% of the
        source rate (``LOADED``), or, on a server that queues every frame (where frame
        rates hold while the queue grows), the server busy at least half the run: as its
        statistics say, or, where it withholds them, as the prediction on the uncalibrated
        curve says (which does not depend on how far off the prediction is); either way
        a run whose slowest session lost frames is loaded."""
        if self.scenario.queue == "all":
            busy = self.measured.gpu_busy_fraction
            if busy is None:
                busy = self.predicted.gpu_busy_fraction
            if busy is not None and busy >= SERVER_LOADED:
                return True
            if self.measured.gpu_busy_fraction is not None:
                return False
        return loaded(self.measured, self.scenario.session_fps[0])

    def figures(self, calibrated: bool = False) -> list[Figure]:
        """Each figure measured against predicted (with ``calibrated``, against the
        calibrated prediction where there is one). An imported summary's ranges stand
        for the measured values they give."""
        prediction = self.calibrated if calibrated and self.calibrated else self.predicted
        if self.ranges:
            given = dict(self.ranges)
            measured = {
                m.name: given.get(m.name, point(getattr(self.measured, m.name))) for m in METRICS
            }
            return compare(measured, prediction)
        return compare(self.measured, prediction)


@dataclass(frozen=True)
class Cap:
    """The seat cap of one policy measured on the real worker against the predicted one
    (with the prediction's range from the curve's band)."""

    policy: str
    measured: int
    predicted: int
    predicted_low: int
    predicted_high: int
    largest: int  # the largest session count searched
    measured_reason: str
    predicted_reason: str
    # The measured figures at the boundary: (sessions, the percentile's end-to-end
    # latency in ms or None, the slowest session's fps) of the last count that met the
    # criteria and of the first that failed, where the search ran them.
    boundary: tuple[tuple[int, float | None, float], ...] = ()

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Cap:
        """A cap as ``as_dict`` wrote it (one stored before ``boundary`` had none)."""
        kept = {k: v for k, v in values.items() if k not in ("agrees", "boundary")}
        edge = tuple((int(n), None if t is None else float(t), float(f))
                     for n, t, f in values.get("boundary") or ())  # fmt: skip
        return cls(**kept, boundary=edge)

    def closeness(self, budget_ms: float, min_fps: float) -> float | None:
        """How near the boundary runs came to a criterion: the smallest relative distance
        of their latency to ``budget_ms`` or of their slowest fps to ``min_fps`` (None:
        no boundary figures)."""
        gaps = [abs(f - min_fps) / min_fps for _, _, f in self.boundary if min_fps > 0]
        gaps += [abs(t - budget_ms) / budget_ms for _, t, _ in self.boundary
                 if t is not None and budget_ms > 0]  # fmt: skip
        return min(gaps) if gaps else None

    @property
    def agrees(self) -> bool:
        """The measured cap equals the predicted one, or lies inside its range."""
        low = min(self.predicted, self.predicted_low, self.predicted_high)
        high = max(self.predicted, self.predicted_low, self.predicted_high)
        return low <= self.measured <= high

    @property
    def predicted_text(self) -> str:
        low = min(self.predicted, self.predicted_low, self.predicted_high)
        high = max(self.predicted, self.predicted_low, self.predicted_high)
        return str(self.predicted) if low == high else f"{self.predicted} ({low}–{high})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "measured": self.measured,
            "predicted": self.predicted,
            "predicted_low": self.predicted_low,
            "predicted_high": self.predicted_high,
            "largest": self.largest,
            "agrees": self.agrees,
            "measured_reason": self.measured_reason,
            "predicted_reason": self.predicted_reason,
            "boundary": [list(b) for b in self.boundary],
        }


@dataclass(frozen=True)
class LoadTest:
    """A finished (or interrupted) load test: the curve the predictions used, the stage
    costs measured for them, the runs, the calibration fitted from the runs, measured
    seat caps, and what it ran on (``environment``: machine, load average before and
    after, PyTorch and its threads, the device)."""

    curve: Curve
    options: LoadTestOptions
    runs: tuple[Run, ...]
    pre_ms: Milliseconds = 0.0
    post_ms: Milliseconds = 0.0
    environment: dict[str, Any] = field(default_factory=dict)
    calibration: Calibration | None = None
    applied: Calibration | None = None
    caps: tuple[Cap, ...] = ()
    interrupted: bool = False
    warnings: tuple[str, ...] = ()
    id: int | None = None
    source: str = "measured"
    description: str = ""
    created_at: datetime | None = None

    @property
    def lateness_ms(self) -> np.ndarray:
        """The lateness of every arrival the worker handled, over all runs (ms)."""
        parts = [r.records.lateness_ms for r in self.runs if r.records is not None]
        return np.concatenate(parts) if parts else np.zeros(0)


@dataclass(frozen=True)
class Progress:
    """Where a load test is: ``fraction`` of the whole from 0 to 1, and what it does."""

    fraction: float
    message: str


ProgressFn = Callable[[Progress], None]


def runs_at(test: LoadTest, policy: str) -> list[Run]:
    """The runs of one policy, by session count."""
    return sorted((r for r in test.runs if r.policy == policy), key=lambda r: r.sessions)
