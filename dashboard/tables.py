"""Table rows for the dashboard (curves, leave-one-out trials, sessions), and
edited table rows back into points.

Plain functions of curves and rows (no Streamlit), so the pages stay thin and the
conversions are tested on their own.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from planner import display
from planner.curves.curve import OPTIONAL_POINT_FIELDS, Curve, Point, make_point, normalise_points
from planner.curves.fit import FittedCurve
from planner.curves.labels import config_label, distinct_labels
from planner.errors import BadInput
from planner.views.curve import YES, curve_metadata, loo_table
from planner.views.curve import point_columns as views_point_columns
from planner.views.curve import point_table as views_point_table
from planner.views.runs import Results
from planner.views.table import Table

MISSING = "-"
LONG_TEXT = 48  # characters; longer metadata values are shown in full below the table
POINT_COLUMNS = ("batch", "latency_ms", *OPTIONAL_POINT_FIELDS)


def curve_rows(curves: Iterable[Curve], stored: set[str] | None = None) -> list[dict[str, Any]]:
    """One row per curve for the curves table; ``stored`` marks ids already in the store.

    A ``config`` column appears when some curve came from a model configuration (a Model
    Analyzer table gives one curve per config), a ``flag`` column when some curve is
    flagged (a failed drift check)."""
    listed = list(curves)
    configs = any(c.environment.get("model_config") for c in listed)
    flags = any(c.flag for c in listed)
    rows = []
    for curve in listed:
        row: dict[str, Any] = {
            "id": curve.id,
            "model": curve.model,
            "card": curve.card,
            "MIG profile": curve.mig_profile or MISSING,
            "precision": curve.precision or MISSING,
            "resolution": curve.resolution or MISSING,
        }
        if configs:
            row["config"] = str(curve.environment.get("model_config") or MISSING)
        row.update(
            {
                "source": curve.source,
                "points": len(curve.points),
                "batches": ", ".join(str(b) for b in curve.batches),
            }
        )
        if flags:
            row["flag"] = flag_text(curve)
        if stored is not None:
            row["already stored"] = curve.id in stored
        rows.append(row)
    return rows


def flag_text(curve: Curve) -> str:
    """A short mark for a flagged curve (``⚠ drift check failed``), empty otherwise."""
    if not curve.flag:
        return ""
    return "⚠ " + curve.flag.split(":")[0]


def curve_name(curve: Curve) -> str:
    """A curve's label with its flag, wherever a curve is named for choosing."""
    mark = flag_text(curve)
    label = config_label(curve)
    return f"{label} — {mark}" if mark else label


def preview_labels(curves: Sequence[Curve]) -> dict[str, str]:
    """A label per curve id that tells curves of one import apart: the curve's label,
    with its model configuration where it has one (a Model Analyzer table gives one curve
    per config, all of one model on one card), and its id where labels still repeat
    (``planner.curves.labels.distinct_labels``)."""
    return distinct_labels(curves)


def metadata_rows(curve: Curve, *, longest: int = LONG_TEXT) -> list[dict[str, str]]:
    """The curve's identity and environment as (field, value) text rows, leaving out
    notes and values longer than ``longest`` characters (see ``long_metadata``)."""
    return curve_metadata(curve, longest=longest)[0].records


def long_metadata(curve: Curve, *, longest: int = LONG_TEXT) -> list[tuple[str, str]]:
    """Notes and other environment values too long for a table cell, to show in full."""
    return list(curve_metadata(curve, longest=longest)[1])


def point_columns(curve: Curve) -> list[str]:
    """Batch and latency, plus each optional column that some point of the curve has."""
    return views_point_columns(curve)


def point_rows(curve: Curve, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The curve's points as rows with the given columns (default: ``point_columns``)."""
    wanted = list(columns or point_columns(curve))
    return [{c: getattr(p, c) for c in wanted} for p in curve.points]


WHOLE = ("batch", "runs")
"""Columns of whole numbers: a page's table shows and sorts them as numbers."""
YES_OR_NO = ("inside the band",)
"""Columns of yes-or-no cells: a page's table shows them as ticks."""


def typed(table: Table) -> list[dict[str, Any]]:
    """A view's table as a page's table takes it: the cells of whole-number columns as
    numbers and of yes-or-no columns as ticks, every other cell as the view wrote it."""

    def cell(column: str, text: str) -> Any:
        if column in WHOLE and text.isdigit():
            return int(text)
        if column in YES_OR_NO:
            return text == YES
        return text

    return [{k: cell(k, v) for k, v in row.items()} for row in table.records]


def point_table(curve: Curve) -> list[dict[str, Any]]:
    """The curve's points for reading (not editing), as the curve's view writes them."""
    return typed(views_point_table(curve))


def points_from_rows(rows: Iterable[Mapping[str, Any]]) -> tuple[Point, ...]:
    """Validated points from edited table rows; BadInput lists every bad row by number.

    Rows left completely empty (a row added and not filled in) are skipped. Row numbers
    count from 1 in the order the table shows them.
    """
    points: list[Point] = []
    problems: list[str] = []
    for number, row in enumerate(rows, start=1):
        cells = {name: _cell(row.get(name)) for name in POINT_COLUMNS}
        if all(value is None for value in cells.values()):
            continue
        missing = [name for name in ("batch", "latency_ms") if cells[name] is None]
        if missing:
            problems.append(f"row {number}: {' and '.join(missing)} is empty")
            continue
        try:
            points.append(make_point(cells))
        except BadInput as exc:
            problems.extend(f"row {number}: {p}" for p in exc.problems)
    if problems:
        raise BadInput(problems)
    return normalise_points(points)


def download_name(curve: Curve) -> str:
    """A safe file name for a curve's CSV: ``model__card__id.csv``, odd characters dashed."""

    def slug(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-.")[:40] or "curve"

    return f"{slug(curve.model)}__{slug(curve.card)}__{curve.id}.csv"


def _cell(value: Any) -> Any:
    """A table cell as a plain Python value: blanks and NaN become None."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, numbers.Number):
        number = float(value)  # type: ignore[arg-type]
        return None if math.isnan(number) else number
    if isinstance(value, str):
        return value.strip() or None
    return value


def loo_rows(fit: FittedCurve) -> list[dict[str, Any]]:
    """Leave-one-out trials: each point predicted from the others, by the fit (with its
    band) and by the straight-line method."""
    return typed(loo_table(fit))


def session_rows(results: Results) -> list[dict[str, Any]]:
    """Per-session accounting of one run: frame rate and what happened to every frame
    (frame rates to one decimal, as the planner writes them everywhere)."""
    return [
        {
            "session": s.session,
            "offered (fps)": display.fps(s.offered_fps, unit=False),
            "delivered (fps)": display.fps(s.fps, unit=False),
            "arrived": s.arrived,
            "delivered": s.delivered,
            "overwritten": s.overwritten,
            "expired": s.expired,
            "pending at end": s.pending,
            "starved": s.starved,
        }
        for s in results.sessions
    ]


def run_rows(runs: Sequence[Results]) -> list[dict[str, Any]]:
    """One row per simulated run, as text to read: frame rates, latency and what happened
    to the frames."""
    rows = []
    for results in runs:
        e2e = results.e2e_latency
        rows.append(
            {
                "policy": results.scenario.policy,
                "slowest session (fps)": display.fps(results.min_fps, unit=False),
                "mean (fps)": display.fps(results.mean_fps, unit=False),
                "p50 (ms)": display.ms(e2e.p50, unit=False),
                "p99 (ms)": display.ms(e2e.p99, unit=False),
                "max (ms)": display.ms(e2e.max, unit=False),
                "overwritten": display.fraction(results.overwritten_fraction),
                "expired": display.fraction(results.expired_fraction),
                "GPU busy": display.fraction(results.gpu_busy_fraction),
                "Jain fairness": f"{results.jain:.3f}",
                "starved sessions": str(len(results.starved_sessions)),
            }
        )
    return rows
