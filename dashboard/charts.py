"""Plotly figures of batch curves. Pure functions of curves: no Streamlit, no I/O.

Every axis names its quantity and unit. ``latency_figure`` and ``per_frame_figure`` draw
measured points only, as markers (with the p10-p90 spread as error bars where the file
gave it), for a preview where nothing may suggest values that were not measured.
``fit_figure`` draws a fitted curve with its band, the measured points on it, and where
it is extrapolated; ``loo_figure`` the fit's leave-one-out errors.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import plotly.graph_objects as go

from planner.curves.curve import Curve, Point
from planner.curves.fit import FittedCurve
from planner.views.curve import FitSeries, LooBar, fit_series

BATCH_AXIS = "batch size (frames per call)"
MODEBAR = {"orientation": "v"}
"""Every chart's toolbar stands on its right edge: across the top it covered the chart's
title on a narrow screen."""
LEGEND = {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0}
"""Legends sit at the foot of the figure, below the axis title however many rows they
wrap into on a narrow screen (the figure makes room for them)."""
VALUE_TICKS = ",.3~r"
"""Value axes in plain decimals, three significant digits, thousands separated: "2,000"
frames/s, never Plotly's "2e+3" (which ``~g`` prints for round thousands)."""
COLOURS = ("#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a3069")


def latency_figure(curves: Sequence[Curve], labels: Sequence[str] | None = None) -> go.Figure:
    """Latency of one batched call against batch size, one trace per curve (named by
    ``labels``, default the curves' own labels)."""
    return _points_figure(
        curves,
        labels,
        lambda p, v: v,
        title="Latency per batched call",
        y_title="latency per call (ms)",
        hover="batch %{x}: %{y:,.3~r} ms per call",
    )


def per_frame_figure(curves: Sequence[Curve], labels: Sequence[str] | None = None) -> go.Figure:
    """Time per frame (latency / batch) against batch size: below batch 1 means batching pays."""
    return _points_figure(
        curves,
        labels,
        lambda p, v: v / p.batch,
        title="Time per frame",
        y_title="time per frame (ms)",
        hover="batch %{x}: %{y:,.3~r} ms per frame",
    )


def _points_figure(
    curves: Sequence[Curve],
    labels: Sequence[str] | None,
    value: Callable[[Point, float], float],
    *,
    title: str,
    y_title: str,
    hover: str,
) -> go.Figure:
    figure = go.Figure()
    batches: list[int] = []
    for index, curve in enumerate(curves):
        points = curve.points
        batches.extend(p.batch for p in points)
        y = [value(p, p.latency_ms) for p in points]
        spread = all(p.p10_ms is not None and p.p90_ms is not None for p in points)
        error_y = None
        if spread:
            error_y = {
                "type": "data",
                "symmetric": False,
                "array": [value(p, p.p90_ms or 0.0) - v for p, v in zip(points, y, strict=True)],
                "arrayminus": [
                    v - value(p, p.p10_ms or 0.0) for p, v in zip(points, y, strict=True)
                ],
                "thickness": 1.2,
            }
        figure.add_trace(
            go.Scatter(
                x=[p.batch for p in points],
                y=y,
                mode="markers",
                name=trace_name(labels[index] if labels else curve.label),
                marker={"size": 10, "color": COLOURS[index % len(COLOURS)]},
                error_y=error_y,
                hovertemplate=hover + "<extra>%{fullData.name}</extra>",
            )
        )
    wide = bool(batches) and max(batches) / min(batches) > 64
    figure.update_layout(
        title={"text": title, "x": 0, "xanchor": "left"},
        height=360,
        margin={"l": 60, "r": 20, "t": 50, "b": 55},
        showlegend=len(curves) > 1,
        legend=LEGEND,
        modebar=MODEBAR,
    )
    figure.update_xaxes(
        title_text=BATCH_AXIS,
        type="log" if wide else "linear",
        rangemode="tozero",
        tickformat="d",
        zeroline=False,
        # Batch sizes are whole numbers: ticks at whole steps only (Plotly would put
        # ticks at 0.5 and print them rounded, "0 1 1 2 2", on a short axis).
        **({} if wide or not batches else {"dtick": batch_step(max(batches)), "tick0": 0}),
    )
    figure.update_yaxes(title_text=y_title, rangemode="tozero", tickformat=VALUE_TICKS)
    if figure.data and any(len(c.points) == 1 for c in curves) and not wide:
        # One point alone would sit on an axis squeezed around it.
        figure.update_xaxes(range=[0, max(batches) + 1])
    return figure


def batch_step(largest: int, ticks: int = 8) -> int:
    """A whole tick step for a batch axis from 0 to ``largest``: 1, 2 or 5 times a power of
    ten, giving at most about ``ticks`` ticks."""
    step = 1
    while largest / step > ticks:
        for factor in (2, 5, 10):
            if largest / (step * factor) <= ticks or factor == 10:
                step *= factor
                break
    return step


def trace_name(label: str, limit: int = 60) -> str:
    """A trace name: cut to ``limit`` characters, and with Plotly's pseudo-HTML
    (``<a href>``, ``<b>``) escaped, since the label is text from a user's file."""
    cut = label if len(label) <= limit else label[: limit - 1] + "…"
    return html.escape(cut, quote=False)


# ---------------------------------------------------------------------------------------
# Fitted curves: the central estimate, its band, and the measured points it rests on.

View = Literal["latency", "per_frame", "throughput"]
_VIEWS: dict[str, tuple[str, str, str]] = {
    # view: (title, y axis, hover unit)
    "latency": ("Latency per batched call", "latency per call (ms)", "ms per call"),
    "per_frame": ("Time per frame", "time per frame (ms)", "ms per frame"),
    "throughput": ("Throughput", "throughput (frames/s)", "frames/s"),
}


def _in_view(view: View, batches: np.ndarray, latency: np.ndarray) -> np.ndarray:
    if view == "per_frame":
        return latency / batches
    if view == "throughput":
        return 1000.0 * batches / latency
    return latency


@dataclass(frozen=True)
class Fitted:
    """A curve to draw with its fit: a label (user text), measured points and the fit."""

    label: str
    points: tuple[Point, ...]
    fit: FittedCurve


def fit_figure(
    curves: Sequence[Fitted],
    *,
    view: View = "latency",
    upto: int = 32,
    straight: bool = False,
    title: str | None = None,
    height: int = 380,
) -> go.Figure:
    """The fitted curves for batch 1..``upto`` (see ``series_figure``)."""
    series = [fit_series(entry.label, entry.points, entry.fit, upto) for entry in curves]
    return series_figure(series, view=view, straight=straight, title=title, height=height)


def series_figure(
    curves: Sequence[FitSeries],
    *,
    view: View = "latency",
    straight: bool = False,
    title: str | None = None,
    height: int = 380,
) -> go.Figure:
    """Fitted curves as their views give them: central line (dotted where extrapolated),
    band shaded between the optimistic and pessimistic edges, measured points as
    markers (reconciled ones as crosses). ``straight`` adds the straight-line method for
    comparison (one curve only). With one curve the extrapolated region is shaded."""
    name, y_title, unit = _VIEWS[view]
    data: list[dict[str, Any]] = []  # one go.Figure(...) at the end: validated once
    upto = int(curves[0].batches[-1]) if curves else 1
    for index, entry in enumerate(curves):
        colour = COLOURS[index % len(COLOURS)]
        label = trace_name(entry.label)
        single = len(curves) == 1
        batches = entry.batches
        central, optimistic, pessimistic = entry.central, entry.optimistic, entry.pessimistic
        low, high = (
            (_in_view(view, batches, pessimistic), _in_view(view, batches, optimistic))
            if view == "throughput"
            else (_in_view(view, batches, optimistic), _in_view(view, batches, pessimistic))
        )
        middle = _in_view(view, batches, central)
        data.append(
            dict(
                type="scatter",
                x=np.concatenate([batches, batches[::-1]]),
                y=np.concatenate([high, low[::-1]]),
                fill="toself",
                fillcolor=rgba(colour, 0.15),
                line={"width": 0},
                hoverinfo="skip",
                name="band (optimistic to pessimistic)",
                legendgroup=label,
                showlegend=single,
            )
        )
        outside = entry.extrapolated
        inside_line = np.where(outside, np.nan, middle)
        # Extend the dotted part by one step so the two parts meet.
        touching = outside | np.roll(outside, 1) | np.roll(outside, -1)
        outside_line = np.where(touching, middle, np.nan)
        hover = f"batch %{{x}}: %{{y:,.3~r}} {unit}"
        data.append(
            dict(
                type="scatter",
                x=batches,
                y=inside_line,
                mode="lines",
                line={"color": colour, "width": 2},
                name="fit" if single else label,
                legendgroup=label,
                hovertemplate=hover + "<extra>fit</extra>",
            )
        )
        data.append(
            dict(
                type="scatter",
                x=batches,
                y=outside_line,
                mode="lines",
                line={"color": colour, "width": 2, "dash": "dot"},
                name="extrapolated",
                legendgroup=label,
                showlegend=False,
                hovertemplate=hover + "<extra>extrapolated</extra>",
            )
        )
        measured = entry.measured
        shown = measured <= upto
        values = _in_view(view, measured, entry.measured_ms)
        reconciled = entry.reconciled
        data.append(
            dict(
                type="scatter",
                x=measured[shown],
                y=values[shown],
                mode="markers",
                marker={
                    "size": 9,
                    "color": colour,
                    "symbol": np.where(reconciled[shown], "x", "circle").tolist(),
                    "line": {"width": 1, "color": "white"},
                },
                name="measured (a cross: reconciled)" if single else f"{label} (measured)",
                legendgroup=label,
                showlegend=single,
                hovertemplate=f"batch %{{x}}: %{{y:,.3~r}} {unit}<extra>measured</extra>",
            )
        )
        if straight and len(curves) == 1:
            data.append(
                dict(
                    type="scatter",
                    x=batches,
                    y=_in_view(view, batches, entry.straight),
                    mode="lines",
                    line={"color": "#57606a", "width": 1.5, "dash": "dash"},
                    name="straight-line method",
                    hovertemplate=hover + "<extra>straight line</extra>",
                )
            )
    shapes: list[dict[str, Any]] = []
    annotations: list[dict[str, Any]] = []
    if len(curves) == 1:
        first, last = curves[0].first, curves[0].last
        for start, end in ((0.5, first - 0.5), (last + 0.5, upto + 0.5)):
            if end > start + 0.5:
                shapes.append(
                    {"type": "rect", "xref": "x", "yref": "paper", "x0": start, "x1": end,
                     "y0": 0, "y1": 1, "fillcolor": "#f6f8fa", "line": {"width": 0},
                     "layer": "below"}
                )  # fmt: skip
                # Each label stands inside its region, away from the measured points: the
                # region before them ends its label at its right edge, the one after starts
                # it at its left edge, so the two never overlap (one point: either side).
                before = start == 0.5
                annotations.append(
                    {"xref": "x", "yref": "paper", "x": end if before else start, "y": 1,
                     "xanchor": "right" if before else "left", "yanchor": "top",
                     "text": "extrapolated", "showarrow": False, "font": {"color": "#57606a"}}
                )  # fmt: skip
    layout = {
        "title": {"text": title or name, "x": 0, "xanchor": "left"},
        "height": height,
        "margin": {"l": 60, "r": 20, "t": 50, "b": 55},
        "legend": LEGEND,
        "modebar": MODEBAR,
        "hovermode": "closest",
        "shapes": shapes,
        "annotations": annotations,
        "xaxis": {"title": {"text": BATCH_AXIS}, "range": [0.5, upto + 0.5], "tickformat": "d"},
        "yaxis": {"title": {"text": y_title}, "rangemode": "tozero", "tickformat": VALUE_TICKS},
    }
    return go.Figure(data=data, layout=layout)


def loo_figure(fit: FittedCurve) -> go.Figure | None:
    """Leave-one-out: each point's error when predicted from the others, by the fit and
    by the straight-line method (None with fewer than three points)."""
    if fit.loo is None:
        return None
    return loo_bars_figure(
        [LooBar(p.batch, p.error, p.straight_line_error, p.inside) for p in fit.loo.points]
    )


def loo_bars_figure(bars: Sequence[LooBar]) -> go.Figure:
    """Leave-one-out bars as a fit's view gives them (``FitView.loo_bars``)."""
    batches = [str(p.batch) for p in bars]
    figure = go.Figure()
    figure.add_trace(
        go.Bar(
            x=batches,
            y=[100 * p.error for p in bars],
            name="fit",
            marker_color=[COLOURS[0] if p.inside else "#d1242f" for p in bars],
            hovertemplate="batch %{x}: %{y:,.3~r}% off<extra>fit</extra>",
        )
    )
    figure.add_trace(
        go.Bar(
            x=batches,
            y=[100 * p.straight_line_error for p in bars],
            name="straight-line method",
            marker_color="#8c959f",
            hovertemplate="batch %{x}: %{y:,.3~r}% off<extra>straight line</extra>",
        )
    )
    figure.update_layout(
        title={"text": "Leave-one-out: error predicting each point", "x": 0, "xanchor": "left"},
        height=320,
        barmode="group",
        margin={"l": 60, "r": 20, "t": 50, "b": 55},
        legend=LEGEND,
        modebar=MODEBAR,
    )
    figure.update_xaxes(title_text="batch size held out (frames per call)", type="category")
    figure.update_yaxes(title_text="relative error (%)", rangemode="tozero", tickformat=".2~f")
    return figure


def rgba(colour: str, alpha: float) -> str:
    """``#rrggbb`` as ``rgba(r, g, b, alpha)``."""
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r}, {g}, {b}, {alpha})"
