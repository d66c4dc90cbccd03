"""A curve's view: what the Curves page, ``planner curves show`` and ``planner fit`` show
of one batch curve.

``fit_view`` composes what a person reads of a fit to measured points: the fit's
description, its predictions batch by batch (``planner fit``'s table), the leave-one-out
errors (a sentence, a table and the bars of a chart), the points reconciled, the batch to
measure next, what the fit assumes, and the series a chart draws (``FitSeries``: the
central line, the band, the measured points, the straight-line method). ``curve_view``
adds the stored curve around it: its title, its flag, its metadata and points as tables,
the links to plan and simulate with it, and the commands that reproduce it. The page and
the command line only lay these out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from planner import display
from planner.curves import measure_next
from planner.curves.curve import OPTIONAL_POINT_FIELDS, Curve, Point
from planner.curves.fit import FittedCurve, fit_curve, straight_line
from planner.views.cards import flag_mark
from planner.views.table import Link, Metric, Table

__all__ = [
    "CurveView",
    "FitSeries",
    "FitView",
    "LooBar",
    "chart_upto",
    "curve_metadata",
    "curve_view",
    "fit_document",
    "fit_series",
    "fit_view",
    "loo_table",
    "point_table",
]

LONG_TEXT = 48
"""Characters: a longer metadata value is said in full below the metadata table."""
FLAG_ADVICE = (
    "This curve is kept out of Compare cards and out of the Plan page's default choices. "
    "Measure the card again on an idle device."
)
LOO_LABEL, LOO_HOW = "Leave-one-out", "each point predicted from the others"
LOO_TOO_FEW = (
    "Leave-one-out needs three points or more: with fewer, each point is needed to draw "
    "the curve at all."
)
POINT_HEADERS = {
    "batch": "batch",
    "latency_ms": "latency (ms)",
    "p10_ms": "p10 (ms)",
    "p50_ms": "p50 (ms)",
    "p90_ms": "p90 (ms)",
    "p99_ms": "p99 (ms)",
    "std_ms": "std (ms)",
    "n": "runs",
    "memory_mb": "memory (MB)",
}
"""Column headers of a point table, by point field: a quantity and its unit."""
PREDICTION_HEADER = ("batch", "latency_ms", "low_ms", "high_ms", "frames/s", "")
LOO_HEADER = (
    "batch", "measured (ms)", "fit predicts (ms)", "fit error", "band (ms)", "inside the band",
    "straight line predicts (ms)", "straight-line error",
)  # fmt: skip
YES, NO = "yes", "no"
"""The cells of a yes-or-no column (whether a point fell inside its band)."""


@dataclass(frozen=True, eq=False)
class FitSeries:
    """What a chart draws of one fit for batch 1..``upto``: the central estimate and the
    optimistic and pessimistic edges of its band (latency per call, ms), where it is
    extrapolated, the measured points (those reconciled marked), the straight-line
    method, and the first and last measured batch."""

    label: str
    batches: NDArray[np.float64]
    central: NDArray[np.float64]
    optimistic: NDArray[np.float64]
    pessimistic: NDArray[np.float64]
    extrapolated: NDArray[np.bool_]
    measured: NDArray[np.float64]
    measured_ms: NDArray[np.float64]
    reconciled: NDArray[np.bool_]
    straight: NDArray[np.float64]
    first: int
    last: int


def fit_series(label: str, points: Sequence[Point], fit: FittedCurve, upto: int) -> FitSeries:
    """The series a chart draws of ``fit`` (of ``points``, named ``label``) up to ``upto``."""
    batches = np.arange(1, upto + 1, dtype=np.float64)
    central, optimistic, pessimistic = fit.band(batches)
    measured = np.array([p.batch for p in points], dtype=np.float64)
    return FitSeries(
        label=label,
        batches=batches,
        central=central,
        optimistic=optimistic,
        pessimistic=pessimistic,
        extrapolated=fit.extrapolated(batches),
        measured=measured,
        measured_ms=np.array([p.latency_ms for p in points], dtype=np.float64),
        reconciled=np.isin(measured, fit.reconciled),
        straight=np.maximum(straight_line(tuple(points))(batches), 1e-9),
        first=fit.points[0].batch,
        last=fit.points[-1].batch,
    )


@dataclass(frozen=True)
class LooBar:
    """One point of a leave-one-out chart: its batch, the fit's and the straight-line
    method's relative errors predicting it from the others, and whether it fell inside
    the fit's band."""

    batch: int
    error: float
    straight_line_error: float
    inside: bool


@dataclass(frozen=True)
class FitView:
    """What a person reads of a fit: its description, its predictions for batch
    1..``upto`` (``planner fit``'s table), the leave-one-out figures (``loo``, None with
    fewer than three points, when ``loo_note`` says why), their table and chart bars, a
    warning of points reconciled, the batch to measure next, the assumptions, the
    series a chart draws and what ``planner fit --json`` prints."""

    description: str
    upto: int
    predictions: Table
    loo: Metric | None
    loo_note: str
    loo_table: Table
    loo_bars: tuple[LooBar, ...]
    reconciled: str | None
    measure_next: Metric | None
    assumptions: tuple[str, ...]
    series: FitSeries
    document: Mapping[str, object]


def fit_view(points: Sequence[Point], *, upto: int, label: str = "") -> FitView:
    """The view of the fit to ``points`` (named ``label`` in a chart), predicted up to
    batch ``upto``."""
    fitted = fit_curve(points)
    document = fit_document(fitted, upto)
    loo = fitted.loo
    advice = measure_next.for_curve(fitted)
    return FitView(
        description=fitted.description,
        upto=upto,
        predictions=_predictions(fitted, document, upto),
        loo=None if loo is None else Metric(LOO_LABEL, _loo_sentence(fitted), LOO_HOW),
        loo_note="" if loo is not None else LOO_TOO_FEW,
        loo_table=loo_table(fitted),
        loo_bars=()
        if loo is None
        else tuple(LooBar(p.batch, p.error, p.straight_line_error, p.inside) for p in loo.points),
        reconciled=_reconciled(fitted),
        measure_next=None
        if advice.batch is None
        else Metric("measure next", f"batch {advice.batch}", f"relative to {advice.basis}"),
        assumptions=tuple(fitted.assumptions),
        series=fit_series(label, tuple(points), fitted, upto),
        document=document,
    )


def fit_document(fitted: FittedCurve, upto: int) -> dict[str, object]:
    """What ``planner fit --json`` prints: points, model, predictions 1..upto, loo, next."""
    batches = np.arange(1, upto + 1, dtype=np.float64)
    central, low, high = fitted.band(batches)
    outside = fitted.extrapolated(batches)
    loo = fitted.loo
    advice = measure_next.for_curve(fitted)
    return {
        "points": [[p.batch, p.latency_ms] for p in fitted.points],
        "model": fitted.description,
        "predictions": [
            {
                "batch": int(b),
                "latency_ms": float(c),
                "low_ms": float(lo),
                "high_ms": float(hi),
                "extrapolated": bool(x),
            }
            for b, c, lo, hi, x in zip(batches, central, low, high, outside, strict=True)
        ],
        "loo": None if loo is None else {"fit": loo.fit, "straight_line": loo.straight_line},
        "measure_next": advice.batch,
        "measure_next_basis": advice.basis,
    }


def _predictions(fitted: FittedCurve, document: Mapping[str, object], upto: int) -> Table:
    """The predictions ``planner fit`` prints: every batch to 16, the powers of two, the
    measured batches and ``upto``."""
    measured = {p.batch for p in fitted.points}
    shown = sorted(
        set(range(1, min(upto, 16) + 1))
        | {2**k for k in range(13) if 2**k <= upto}
        | {b for b in measured if b <= upto}
        | {upto}
    )
    predictions = document["predictions"]
    assert isinstance(predictions, list)
    rows = []
    for b in shown:
        p = predictions[b - 1]
        note = "measured" if b in measured else ("extrapolated" if p["extrapolated"] else "")
        rows.append(
            (
                str(b),
                display.ms(p["latency_ms"], unit=False),
                display.ms(p["low_ms"], unit=False),
                display.ms(p["high_ms"], unit=False),
                display.fps(1000.0 * b / p["latency_ms"], unit=False),
                note,
            )
        )
    return Table(PREDICTION_HEADER, tuple(rows))


def _loo_sentence(fitted: FittedCurve) -> str:
    loo = fitted.loo
    assert loo is not None
    inside = sum(p.inside for p in loo.points)
    return (
        f"the fit is off by {display.fraction(loo.fit)} on average, the straight-line method "
        f"by {display.fraction(loo.straight_line)}; {inside} of {len(loo.points)} points fell "
        "inside the predicted band"
    )


def loo_table(fitted: FittedCurve) -> Table:
    """Leave-one-out trials: each point predicted from the others, by the fit (with its
    band) and by the straight-line method."""
    loo = fitted.loo
    rows = () if loo is None else tuple(
        (
            str(p.batch),
            display.ms(p.measured_ms, unit=False),
            display.ms(p.predicted_ms, unit=False),
            display.fraction(p.error),
            f"{display.ms(p.low_ms, unit=False)}–{display.ms(p.high_ms, unit=False)}",
            YES if p.inside else NO,
            display.ms(p.straight_line_ms, unit=False),
            display.fraction(p.straight_line_error),
        )
        for p in loo.points
    )  # fmt: skip
    return Table(LOO_HEADER, rows)


def _reconciled(fitted: FittedCurve) -> str | None:
    if not fitted.reconciled:
        return None
    names = ", ".join(str(b) for b in fitted.reconciled)
    return (
        "Measured latency fell with batch size, which the fit does not allow: the points were "
        f"reconciled to the nearest non-decreasing curve, and batch {names} could not be "
        "honoured (likely noise). They show as crosses."
    )


# ---------------------------------------------------------------------------------------
# A stored curve.


def chart_upto(curve: Curve) -> int:
    """How far a curve's charts reach: twice its largest batch, from 32 to 256."""
    return min(max(32, 2 * curve.points[-1].batch), 256)


@dataclass(frozen=True)
class CurveView:
    """What a person reads of a stored curve: its title (the label, user text), its flag
    (None when not flagged), its metadata (identity and environment; values too long for
    a cell in ``long_metadata``), its points, its fit charted up to ``chart_upto``, the
    links to plan and simulate with it, and the commands that show it."""

    id: str
    title: str
    source: str
    flag: Metric | None
    metadata: Table
    long_metadata: tuple[tuple[str, str], ...]
    points: Table
    fit: FitView
    links: tuple[Link, ...]
    commands: tuple[str, ...]


def curve_view(curve: Curve, *, longest: int = LONG_TEXT) -> CurveView:
    """The view of ``curve``; metadata values over ``longest`` characters go below the
    table."""
    metadata, long_metadata = curve_metadata(curve, longest=longest)
    upto = chart_upto(curve)
    return CurveView(
        id=curve.id,
        title=curve.label,
        source=curve.source,
        flag=Metric("Flagged", curve.flag, FLAG_ADVICE) if curve.flag else None,
        metadata=metadata,
        long_metadata=long_metadata,
        points=point_table(curve),
        fit=fit_view(curve.points, upto=upto, label=curve.label),
        links=(
            Link("Plan seats with this curve", f"/?curve={curve.id}"),
            Link("Simulate sessions on it", f"/simulate?curve={curve.id}"),
        ),
        commands=(
            f"planner curves show {curve.id}",
            f"planner fit --curve {curve.id} --upto {upto}",
        ),
    )


def curve_metadata(
    curve: Curve, *, longest: int = LONG_TEXT
) -> tuple[Table, tuple[tuple[str, str], ...]]:
    """The curve's identity and environment as a table of fields and values, and the
    notes and other values longer than ``longest`` characters, to say in full below it."""
    environment = _environment(curve)
    rows = [
        ("id", curve.id),
        ("model", curve.model),
        ("card", curve.card),
        ("MIG profile", curve.mig_profile or display.MISSING),
        ("precision", curve.precision or display.MISSING),
        ("resolution", curve.resolution or display.MISSING),
        ("source", curve.source),
        ("stored", curve.created_at.strftime("%Y-%m-%d %H:%M UTC") if curve.created_at else ""),
    ]
    if curve.renamed_from:
        rows.append(("renamed from", curve.renamed_from))
    if curve.flag:
        rows.append(("flag", flag_mark(curve)))
    rows += [(k, v) for k, v in environment if len(v) <= longest]
    return (
        Table(("field", "value"), tuple(rows)),
        tuple((k, v) for k, v in environment if len(v) > longest),
    )


def point_columns(curve: Curve) -> list[str]:
    """Batch and latency, plus each optional column that some point of the curve has."""
    optional = [
        c for c in OPTIONAL_POINT_FIELDS if any(getattr(p, c) is not None for p in curve.points)
    ]
    return ["batch", "latency_ms", *optional]


def point_table(curve: Curve) -> Table:
    """The curve's points for reading (not editing): headers with units, times written
    the one way the planner writes them (``38.5``, ``9.82``)."""
    columns = point_columns(curve)
    rows = tuple(
        tuple(
            _whole(getattr(p, c)) if c in ("batch", "n") else display.number(getattr(p, c))
            for c in columns
        )
        for p in curve.points
    )
    return Table(tuple(POINT_HEADERS[c] for c in columns), rows)


def _whole(value: int | None) -> str:
    return display.MISSING if value is None else str(value)


def _environment(curve: Curve) -> list[tuple[str, str]]:
    items = [(str(k), _text(v)) for k, v in sorted(curve.environment.items())]
    # Notes first among the long texts: they are what a person wrote about the curve.
    return sorted(items, key=lambda kv: kv[0] != "notes")


def _text(value: object) -> str:
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, default=str, sort_keys=True)
    return str(value)
