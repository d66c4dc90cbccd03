"""Measured against predicted: the figures of a load test run and how they compare.

A run's ``Summary`` holds the figures SPEC §5.2 compares: the slowest and mean session's
frame rate, p50 and p99 latency on the GPU side and end to end, the overwritten
fraction and the GPU's busy fraction. A measured run of the reference worker and its
simulation are summarised from records by the same function (``planner.sim.results``), so
both summaries mean the same thing.

An imported load test may give ranges ("16–20 fps per session") where a report did, so a
measured figure is an interval ``(low, high)``; a single value is an interval of width 0.
``compare`` pairs each measured figure with the prediction: a relative error where the
measurement is one value, and whether the prediction falls inside where it is a range.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from planner import display
from planner.sim.results import Results, e2e_latencies
from planner.units import FramesPerSecond, Milliseconds

LOADED = 0.95
"""A run is *loaded* when its slowest measured session gets less than this fraction of
the source rate: where every session gets its full rate, fps errors are trivially zero."""


@dataclass(frozen=True)
class Summary:
    """The compared figures of one run (None where unknown: an imported summary may give
    only some of them). Latencies in ms, fractions from 0 to 1."""

    min_fps: FramesPerSecond | None = None
    mean_fps: FramesPerSecond | None = None
    max_fps: FramesPerSecond | None = None
    p50_ms: Milliseconds | None = None
    p99_ms: Milliseconds | None = None
    e2e_p50_ms: Milliseconds | None = None
    e2e_p99_ms: Milliseconds | None = None
    overwritten_fraction: float | None = None
    expired_fraction: float | None = None
    gpu_busy_fraction: float | None = None
    frames: int = 0
    per_session_fps: tuple[float, ...] = ()
    lateness_p50_ms: Milliseconds | None = None
    lateness_p99_ms: Milliseconds | None = None

    @classmethod
    def of(cls, results: Results, lateness_ms: np.ndarray | None = None) -> Summary:
        """The figures of a run's results (and, for a measured run, its arrivals'
        lateness)."""
        e2e = e2e_latencies(results.scenario, results.records)
        late = None
        if lateness_ms is not None and lateness_ms.size:
            late = tuple(float(v) for v in np.percentile(lateness_ms, [50.0, 99.0]))
        return cls(
            min_fps=results.min_fps,
            mean_fps=results.mean_fps,
            max_fps=results.max_fps,
            p50_ms=results.latency.p50,
            p99_ms=results.latency.p99,
            e2e_p50_ms=float(np.percentile(e2e, 50.0)) if e2e.size else None,
            e2e_p99_ms=float(np.percentile(e2e, 99.0)) if e2e.size else None,
            overwritten_fraction=results.overwritten_fraction,
            expired_fraction=results.expired_fraction,
            gpu_busy_fraction=results.gpu_busy_fraction,
            frames=results.latency.frames,
            per_session_fps=tuple(results.per_session_fps),
            lateness_p50_ms=None if late is None else late[0],
            lateness_p99_ms=None if late is None else late[1],
        )

    def as_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["per_session_fps"] = list(self.per_session_fps)
        return out

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Summary:
        known = {f.name for f in fields(cls)}
        kept = {k: v for k, v in values.items() if k in known}
        kept["per_session_fps"] = tuple(kept.get("per_session_fps") or ())
        return cls(**kept)


Interval = tuple[float, float]


@dataclass(frozen=True)
class Metric:
    """A compared figure: its field in ``Summary``, a label and its unit."""

    name: str
    label: str
    unit: str


METRICS: tuple[Metric, ...] = (
    Metric("min_fps", "slowest session", "fps"),
    Metric("mean_fps", "mean fps", "fps"),
    Metric("e2e_p50_ms", "p50 end to end", "ms"),
    Metric("e2e_p99_ms", "p99 end to end", "ms"),
    Metric("p50_ms", "p50 GPU side", "ms"),
    Metric("p99_ms", "p99 GPU side", "ms"),
    Metric("overwritten_fraction", "overwritten", "fraction"),
    Metric("gpu_busy_fraction", "GPU busy", "fraction"),
)
"""The figures a load test compares, in the order tables show them."""
ACCURACY_METRICS: tuple[str, ...] = ("min_fps", "mean_fps", "e2e_p50_ms", "e2e_p99_ms")
"""The figures the accuracy report judges (SPEC §5.2): slowest and mean fps, p50, p99."""
TARGETS: dict[str, float] = {
    "min_fps": 0.05,
    "mean_fps": 0.05,
    "e2e_p50_ms": 0.10,
    "e2e_p99_ms": 0.20,
}
"""SPEC §5.2's targets for the median relative error after calibration."""


@dataclass(frozen=True)
class Figure:
    """One figure measured (a value, or a range) against its prediction."""

    metric: Metric
    measured: Interval | None
    predicted: float | None

    @property
    def is_range(self) -> bool:
        return self.measured is not None and self.measured[0] != self.measured[1]

    @property
    def error(self) -> float | None:
        """(predicted - measured) / measured, for a measured value (not a range)."""
        if self.measured is None or self.predicted is None or self.is_range:
            return None
        value = self.measured[0]
        if value == 0:
            return 0.0 if self.predicted == 0 else None
        return (self.predicted - value) / abs(value)

    @property
    def inside(self) -> bool | None:
        """Whether the prediction falls inside a measured range (None: not a range)."""
        if not self.is_range or self.predicted is None or self.measured is None:
            return None
        low, high = self.measured
        return low <= self.predicted <= high

    @property
    def verdict(self) -> str:
        """The comparison in words: ``+4.1%``, ``inside``, ``outside (above)``, ``-``."""
        if self.measured is None or self.predicted is None:
            return "-"
        if self.is_range:
            if self.inside:
                return "inside"
            return "outside (above)" if self.predicted > self.measured[1] else "outside (below)"
        error = self.error
        return "-" if error is None else display.fraction(error, sign=True)

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric.name,
            "label": self.metric.label,
            "unit": self.metric.unit,
            "measured": None if self.measured is None else list(self.measured),
            "predicted": self.predicted,
            "error": self.error,
            "inside": self.inside,
            "verdict": self.verdict,
        }


def point(value: float | None) -> Interval | None:
    return None if value is None else (float(value), float(value))


def compare(
    measured: Summary | Mapping[str, Interval | None],
    predicted: Summary,
    metrics: Sequence[Metric] = METRICS,
) -> list[Figure]:
    """Each metric measured against predicted. ``measured`` is a run's summary (values)
    or, for an imported summary, the intervals a file gave per metric."""
    out = []
    for metric in metrics:
        if isinstance(measured, Summary):
            got = point(getattr(measured, metric.name))
        else:
            got = measured.get(metric.name)
        out.append(Figure(metric, got, getattr(predicted, metric.name)))
    return out


def loaded(summary: Summary, fps: FramesPerSecond) -> bool:
    """Whether a measured run loaded the device (``LOADED``)."""
    return summary.min_fps is not None and summary.min_fps < LOADED * fps


@dataclass(frozen=True)
class ErrorStats:
    """The median and the largest absolute relative error of one metric over runs."""

    metric: str
    runs: int
    median: float | None
    largest: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "runs": self.runs, "median": self.median,
                "largest": self.largest}  # fmt: skip


def error_stats(
    pairs: Sequence[tuple[Summary, Summary]], metrics: Sequence[str] = ACCURACY_METRICS
) -> list[ErrorStats]:
    """For (measured, predicted) pairs: the median and largest |relative error| per
    metric, over the pairs where both are known."""
    by_name = {m.name: m for m in METRICS}
    out = []
    for name in metrics:
        errors = []
        for measured, predicted in pairs:
            figure = compare(measured, predicted, [by_name[name]])[0]
            if figure.error is not None and math.isfinite(figure.error):
                errors.append(abs(figure.error))
        out.append(
            ErrorStats(
                name,
                len(errors),
                float(np.median(errors)) if errors else None,
                float(np.max(errors)) if errors else None,
            )
        )
    return out
