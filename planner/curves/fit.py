"""Curve fitting: from a few measured batch sizes to a whole latency curve with a band.

``fit_curve`` turns a curve's points into a ``FittedCurve``: the central latency for any
batch size, an optimistic and a pessimistic edge around it, which batch sizes are
extrapolated, leave-one-out diagnostics against the straight-line method, and the batch
size worth measuring next. ``straight_line`` is that baseline method exactly as the
specification defines it. The numerical model lives in ``planner.curves.shape``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import isotonic_regression

from planner.curves.curve import Point, normalise_points
from planner.curves.shape import (
    BAND,
    GAIN_CAP,
    NOISE,
    ONE_POINT_SLOPE,
    BandRules,
    FloatArray,
    Shape,
)
from planner.display import number
from planner.errors import BadInput
from planner.units import Milliseconds

Edge = Literal["central", "optimistic", "pessimistic"]
EDGES: tuple[Edge, ...] = ("central", "optimistic", "pessimistic")

# A measured point is honoured when the fitted curve passes within this fraction of it (or
# within its reported spread, if that is wider).
HONOUR = 0.01
# Candidate batch sizes for ``measure_next`` above this are limited to round numbers.
EVERY_CANDIDATE_UP_TO = 64


@dataclass(frozen=True)
class HeldOut:
    """One point predicted from all the others (a leave-one-out trial)."""

    batch: int
    measured_ms: Milliseconds
    predicted_ms: Milliseconds
    straight_line_ms: Milliseconds
    low_ms: Milliseconds
    high_ms: Milliseconds

    @property
    def error(self) -> float:
        """Relative error of the fit's prediction."""
        return abs(self.predicted_ms - self.measured_ms) / self.measured_ms

    @property
    def straight_line_error(self) -> float:
        """Relative error of the straight-line method's prediction."""
        return abs(self.straight_line_ms - self.measured_ms) / self.measured_ms

    @property
    def inside(self) -> bool:
        """Whether the measured latency fell inside the predicted band."""
        return self.low_ms <= self.measured_ms <= self.high_ms


@dataclass(frozen=True)
class LeaveOneOut:
    """Each point predicted from the others, by this fit and by the straight-line method.

    ``fit`` and ``straight_line`` are mean relative errors over ``points``.
    """

    fit: float
    straight_line: float
    points: tuple[HeldOut, ...]

    @property
    def inside(self) -> float:
        """Fraction of held-out points that fell inside the band."""
        return sum(p.inside for p in self.points) / len(self.points)


@dataclass(frozen=True)
class FittedCurve:
    """A whole batch curve fitted to measured points, with an uncertainty band.

    Every method takes a batch size or an array of them (>= 1) and returns a float64
    array of the same shape. ``latency`` is the central estimate of one batched call in
    ms; ``optimistic`` and ``pessimistic`` are the edges of the band. ``reconciled`` lists
    the batches whose measured latency the fit could not honour because latency fell with
    batch size; ``assumptions`` says in plain sentences what the fit assumes.
    """

    points: tuple[Point, ...]
    description: str
    assumptions: tuple[str, ...]
    reconciled: tuple[int, ...]
    _shape: Shape = field(repr=False, compare=False)

    # -- the curve ------------------------------------------------------------------------

    def band(self, batch: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Central, optimistic and pessimistic latency (ms) at each batch size."""
        return self._shape.evaluate(_batches(batch))

    def latency(self, batch: ArrayLike) -> FloatArray:
        """Central latency of one batched call, in ms."""
        return self.band(batch)[0]

    def optimistic(self, batch: ArrayLike) -> FloatArray:
        """Lower edge of the band: the fastest latency the fit considers plausible."""
        return self.band(batch)[1]

    def pessimistic(self, batch: ArrayLike) -> FloatArray:
        """Upper edge of the band: the slowest latency the fit considers plausible."""
        return self.band(batch)[2]

    def edge(self, batch: ArrayLike, edge: Edge = "central") -> FloatArray:
        """Latency on the named edge: ``central``, ``optimistic`` or ``pessimistic``."""
        if edge not in EDGES:
            raise ValueError(f"edge {edge!r} is not one of {', '.join(EDGES)}")
        return self.band(batch)[EDGES.index(edge)]

    def extrapolated(self, batch: ArrayLike) -> NDArray[np.bool_]:
        """Whether each batch size lies outside the measured range."""
        b = _batches(batch)
        return (b < self.points[0].batch) | (b > self.points[-1].batch)

    def throughput(self, batch: ArrayLike, edge: Edge = "central") -> FloatArray:
        """Frames per second when every call carries ``batch`` frames: 1000 * b / latency."""
        b = _batches(batch)
        return 1000.0 * b / self.edge(b, edge)

    def time_per_frame(self, batch: ArrayLike, edge: Edge = "central") -> FloatArray:
        """Milliseconds of GPU time per frame at each batch size."""
        b = _batches(batch)
        return self.edge(b, edge) / b

    def table(self, upto: int, edge: Edge = "central") -> FloatArray:
        """Latency for batch sizes 1..upto (index 0 is batch 1), as the simulator uses it."""
        if upto < 1:
            raise ValueError(f"upto must be at least 1, not {upto}")
        return self.edge(np.arange(1, upto + 1, dtype=np.float64), edge)

    # -- diagnostics -----------------------------------------------------------------------

    @cached_property
    def loo(self) -> LeaveOneOut | None:
        """Leave-one-out errors of this fit and of the straight-line method (>= 3 points)."""
        if len(self.points) < 3:
            return None
        trials = []
        for i, point in enumerate(self.points):
            rest = self.points[:i] + self.points[i + 1 :]
            c, lo, hi = fit_curve(rest, rules=self._shape.rules).band(point.batch)
            line = straight_line(rest)(np.array([point.batch], dtype=np.float64))
            trials.append(
                HeldOut(
                    batch=point.batch,
                    measured_ms=point.latency_ms,
                    predicted_ms=float(c),
                    straight_line_ms=float(line[0]),
                    low_ms=float(lo),
                    high_ms=float(hi),
                )
            )
        return LeaveOneOut(
            fit=float(np.mean([t.error for t in trials])),
            straight_line=float(np.mean([t.straight_line_error for t in trials])),
            points=tuple(trials),
        )

    def measure_next(self, upto: int = 64, weights: ArrayLike | None = None) -> int | None:
        """The unmeasured batch size in 1..upto whose measurement would narrow the band most.

        Each candidate is tried as if it had been measured at the current central estimate;
        the one that leaves the smallest weighted sum of relative band widths over batch
        sizes 1..upto wins (ties go to the smaller batch, which is cheaper to measure).
        ``weights[b - 1]`` says how much batch size b matters (default: all equally).
        Above ``EVERY_CANDIDATE_UP_TO`` only round batch sizes are tried. Returns None when
        every candidate is already measured.
        """
        if upto < 1:
            raise ValueError(f"upto must be at least 1, not {upto}")
        grid = np.arange(1, upto + 1, dtype=np.float64)
        w = np.ones(upto) if weights is None else np.asarray(weights, dtype=np.float64)
        if w.shape != (upto,) or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError(f"weights must be {upto} finite non-negative numbers")
        measured = {p.batch for p in self.points}
        candidates = [b for b in _candidates(upto) if b not in measured]
        if not candidates:
            return None
        central = self.latency(np.asarray(candidates, dtype=np.float64))
        scores = []
        for batch, ms in zip(candidates, central, strict=True):
            trial = fit_curve(
                (*self.points, Point(batch=batch, latency_ms=float(ms))), rules=self._shape.rules
            )
            c, lo, hi = trial.band(grid)
            scores.append(float(np.sum(w * (hi - lo) / c)))
        # Candidates within 1% of the best narrow the band equally well, as far as the model
        # can tell; among them take the one farthest (in log scale) from any measured batch.
        best = min(scores)
        near = [b for b, s in zip(candidates, scores, strict=True) if s <= best + 0.01 * best]
        logs = np.log([p.batch for p in self.points])
        return max(near, key=lambda b: (float(np.min(np.abs(np.log(b) - logs))), -b))


def fit_curve(points: Iterable[Point], *, rules: BandRules = BAND) -> FittedCurve:
    """Fit a whole batch curve, with an optimistic/pessimistic band, to measured points.

    Model assumptions: latency of one batched call never falls as the batch grows;
    measured medians carry about 0.75% noise (or their reported spread); between two
    measured batches the time per frame moves monotonically; beyond the measured range
    each extra frame costs about what the last measured step cost, so the central
    throughput levels off where the data put it, never above 16x the best measured
    (``GAIN_CAP``, which also bounds the optimistic edge); and the band widens with
    distance towards "no further batching gain". See ``planner.curves.shape`` and
    ``docs/design.md`` for the reasoning.

    Parameters
    ----------
    points
        Measured points in any order (``planner.curves.curve.Point``); batch sizes >= 1, latencies
        > 0, each batch at most once. Spread fields (p10/p90 or std) widen the noise.
    rules
        How far the band reaches beyond the measured range (``planner.curves.shape.BandRules``).
        The default is the choice made on published curves; other values are for judging
        that choice (``planner.bench.fit_eval``). The central estimate does not depend on it.

    Returns
    -------
    FittedCurve
        Immutable and cheap to evaluate; ``reconciled`` lists points that had to move by
        more than their noise because latency fell with batch size.

    Raises
    ------
    BadInput
        No points, a batch below 1, a latency that is not a positive finite number, or the
        same batch twice with different latencies.

    Examples
    --------
    >>> from planner.curves.curve import Point
    >>> fit = fit_curve([Point(1, 8.0), Point(3, 20.0)])
    >>> round(float(fit.latency(2)), 3)
    14.0
    >>> bool(fit.optimistic(8) < fit.latency(8) < fit.pessimistic(8))
    True
    """
    pts = _validated(points)
    batches = np.array([p.batch for p in pts], dtype=np.float64)
    measured = np.array([p.latency_ms for p in pts], dtype=np.float64)
    noise = np.array([_noise(p) for p in pts], dtype=np.float64)
    noise_low, noise_high = noise[:, 0].copy(), noise[:, 1].copy()
    # Nearest non-decreasing curve in log space (relative errors), weighted by certainty.
    # Points the reconciliation left alone keep their measured value exactly.
    logs = np.log(measured)
    nearest = isotonic_regression(logs, weights=4 / (noise_low + noise_high) ** 2).x
    fitted = np.where(np.abs(nearest - logs) < 1e-12, measured, np.exp(nearest))
    slack = 1e-9 * measured
    honoured = (fitted >= measured * (1 - np.maximum(noise_low, HONOUR)) - slack) & (
        fitted <= measured * (1 + np.maximum(noise_high, HONOUR)) + slack
    )
    reconciled = tuple(int(b) for b in batches[~honoured])
    for arr in (batches, fitted, noise_low, noise_high):
        arr.flags.writeable = False
    shape = Shape(
        batches=batches,
        latencies=fitted,
        noise_low=noise_low,
        noise_high=noise_high,
        best_per_frame=float(np.min(measured / batches)),
        rules=rules,
    )
    return FittedCurve(
        points=pts,
        description=_describe(pts, fitted),
        assumptions=_assumptions(pts, fitted, reconciled),
        reconciled=reconciled,
        _shape=shape,
    )


def straight_line(points: Iterable[Point]) -> Callable[[ArrayLike], FloatArray]:
    """The baseline from the specification (what the one-off script did), exactly.

    Inside the measured range: linear interpolation between the two measured neighbours.
    Outside it: the line through the two nearest measured points (the last two above the
    range, the first two below it). With one point: latency proportional to batch size.
    Points are used as measured (no reconciliation), so the line may fall.
    """
    pts = _validated(points)
    xs = np.array([p.batch for p in pts], dtype=np.float64)
    ys = np.array([p.latency_ms for p in pts], dtype=np.float64)

    def predict(batch: ArrayLike) -> FloatArray:
        b = np.asarray(batch, dtype=np.float64)
        if len(xs) == 1:
            return np.asarray(ys[0] * b / xs[0], dtype=np.float64)
        out = np.interp(b, xs, ys)
        up = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        down = (ys[1] - ys[0]) / (xs[1] - xs[0])
        out = np.where(b > xs[-1], ys[-1] + up * (b - xs[-1]), out)
        out = np.where(b < xs[0], ys[0] + down * (b - xs[0]), out)
        return np.asarray(out, dtype=np.float64)

    return predict


# ---------------------------------------------------------------------------------------


def _batches(batch: ArrayLike) -> FloatArray:
    b = np.asarray(batch, dtype=np.float64)
    if not np.all(np.isfinite(b)) or np.any(b < 1):
        raise ValueError("batch sizes must be finite and at least 1")
    return b


def _validated(points: Iterable[Point]) -> tuple[Point, ...]:
    """Points checked, as plain Python numbers, sorted by batch (duplicates must agree)."""
    problems = []
    clean: list[Point] = []
    for p in points:
        batch, latency = p.batch, p.latency_ms
        if isinstance(batch, bool) or not isinstance(batch, numbers.Integral) or batch < 1:
            problems.append(f"batch {batch!r} is not a whole number of at least 1")
            continue
        if (
            isinstance(latency, bool)
            or not isinstance(latency, numbers.Real)
            or not math.isfinite(latency)
            or latency <= 0
        ):
            problems.append(f"latency {latency!r} ms at batch {batch} is not above zero")
            continue
        clean.append(replace(p, batch=int(batch), latency_ms=float(latency)))
    if problems:
        raise BadInput(problems)
    return normalise_points(clean)


def _noise(point: Point) -> tuple[float, float]:
    """Relative noise below and above a measured latency: NOISE, or the reported spread
    (p10 and p90, else the standard deviation) where that is wider; at most 50%."""
    ms = point.latency_ms
    below = above = 0.0
    if point.p10_ms is not None and point.p90_ms is not None:
        below, above = ms - point.p10_ms, point.p90_ms - ms
    elif point.std_ms is not None:
        below = above = point.std_ms
    return (
        max(NOISE, min(below / ms, 0.5)),
        max(NOISE, min(above / ms, 0.5)),
    )


def _candidates(upto: int) -> list[int]:
    """Batch sizes ``measure_next`` tries: all up to 64, then 2**k and 3 * 2**k."""
    small = list(range(1, min(upto, EVERY_CANDIDATE_UP_TO) + 1))
    large = {m * 2**k for m in (1, 3) for k in range(13)}
    return small + sorted(b for b in large if EVERY_CANDIDATE_UP_TO < b <= upto)


def _fmt(ms: float) -> str:
    return f"{ms:.3g}"


def _describe(pts: tuple[Point, ...], fitted: FloatArray) -> str:
    if len(pts) == 1:
        p = pts[0]
        return (
            f"one point ({_fmt(p.latency_ms)} ms at batch {p.batch}); shape assumed: latency "
            f"~ batch^{ONE_POINT_SLOPE:g}, throughput <= {GAIN_CAP:g}x measured"
        )
    first, last = pts[0].batch, pts[-1].batch
    step = max((fitted[-1] - fitted[-2]) / (pts[-1].batch - pts[-2].batch), 0.0)
    return (
        f"{len(pts)} points, batch {first}-{last}: linear between them; beyond {last}: "
        f"+{_fmt(step)} ms per extra frame, throughput <= {GAIN_CAP:g}x best measured"
    )


def _levels_off(step: float, best: float) -> str:
    """Where the central throughput heads when every extra frame costs ``step`` ms."""
    limit = GAIN_CAP * best
    if step > 0 and 1000.0 / step < limit:
        return f"so the central throughput levels off towards {number(1000.0 / step)} frames/s"
    return f"so the central throughput rises until the bound of {number(limit)} frames/s"


def _assumptions(
    pts: tuple[Point, ...], fitted: FloatArray, reconciled: tuple[int, ...]
) -> tuple[str, ...]:
    best = max(1000.0 * p.batch / p.latency_ms for p in pts)
    caps = (
        f"Throughput never exceeds {GAIN_CAP:g}x the best measured ({number(best)} frames/s, "
        f"so at most {number(GAIN_CAP * best)} frames/s), on the central estimate or the "
        "optimistic edge."
    )
    if len(pts) == 1:
        p = pts[0]
        return (
            f"Only batch {p.batch} was measured, so the shape of the curve is assumed: the "
            f"central estimate grows as batch^{ONE_POINT_SLOPE:g}, which predicted published "
            "curves best from their first point alone.",
            "The optimistic edge assumes batching is free (latency stays flat); the "
            "pessimistic edge assumes it gains nothing (latency proportional to batch size).",
            caps,
            "Measure at least one more batch size to replace the assumed shape.",
        )
    out = [
        "Between measured batch sizes latency is interpolated linearly; the band assumes "
        "latency does not fall and the time per frame moves steadily from one measured "
        "value to the next.",
    ]
    last, before = pts[-1], pts[-2]
    step = max((fitted[-1] - fitted[-2]) / (last.batch - before.batch), 0.0)
    average = fitted[-1] / last.batch
    if step <= average:
        out.append(
            f"Beyond batch {last.batch} each extra frame is assumed to cost what the last "
            f"measured step cost ({_fmt(step)} ms per frame), {_levels_off(step, best)}."
        )
        out.append(
            "The optimistic edge assumes extra frames may cost somewhat less than that; the "
            "pessimistic edge assumes the remaining batching gain fades with distance, "
            f"towards no further gain ({_fmt(average)} ms for every extra frame, the time "
            f"per frame at batch {last.batch})."
        )
    else:
        out.append(
            f"Time per frame rose from batch {before.batch} to {last.batch} (batching "
            "hurts there, e.g. activations spilling out of cache). Beyond it the central "
            f"estimate continues the last step ({_fmt(step)} ms per extra frame); the "
            "pessimistic edge assumes time per frame keeps rising at the same rate, the "
            "optimistic edge that it stops rising."
        )
    out.append(caps)
    if pts[0].batch > 1:
        out.append(
            f"Below batch {pts[0].batch} the same rules run downwards from the first measured step."
        )
    if reconciled:
        names = [str(b) for b in reconciled]
        listed = (
            f"batch {names[0]}"
            if len(names) == 1
            else f"batches {', '.join(names[:-1])} and {names[-1]}"
        )
        out.append(
            "Measured latency fell with batch size, which the fit does not allow: the "
            "points were reconciled to the nearest non-decreasing curve, and the latency "
            f"measured at {listed} could not be honoured (likely measurement noise)."
        )
    return tuple(out)
