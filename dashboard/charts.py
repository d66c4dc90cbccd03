"""Plotly figures of batch curves. Pure functions of curves: no Streamlit, no I/O.

Every axis names its quantity and unit. Only measured points are drawn here, as markers
(with the p10-p90 spread as error bars where the file gave it), so nothing on the chart
suggests values that were not measured.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence

import plotly.graph_objects as go

from planner.curve import Curve, Point

BATCH_AXIS = "batch size (frames per call)"
COLOURS = ("#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a3069")


def latency_figure(curves: Sequence[Curve]) -> go.Figure:
    """Latency of one batched call against batch size, one trace per curve."""
    return _points_figure(
        curves,
        lambda p, v: v,
        title="Latency per batched call",
        y_title="latency per call (ms)",
        hover="batch %{x}: %{y:.2f} ms per call",
    )


def per_frame_figure(curves: Sequence[Curve]) -> go.Figure:
    """Time per frame (latency / batch) against batch size: below batch 1 means batching pays."""
    return _points_figure(
        curves,
        lambda p, v: v / p.batch,
        title="Time per frame",
        y_title="time per frame (ms)",
        hover="batch %{x}: %{y:.2f} ms per frame",
    )


def _points_figure(
    curves: Sequence[Curve],
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
                name=_short(curve.label),
                marker={"size": 10, "color": COLOURS[index % len(COLOURS)]},
                error_y=error_y,
                hovertemplate=hover + "<extra>%{fullData.name}</extra>",
            )
        )
    wide = bool(batches) and max(batches) / min(batches) > 64
    figure.update_layout(
        title={"text": title, "x": 0, "xanchor": "left"},
        template="plotly_white",
        height=360,
        margin={"l": 60, "r": 20, "t": 50, "b": 55},
        showlegend=len(curves) > 1,
        legend={"orientation": "h", "y": -0.25, "x": 0},
    )
    figure.update_xaxes(
        title_text=BATCH_AXIS,
        type="log" if wide else "linear",
        rangemode="tozero",
        tickformat="d",
        zeroline=False,
    )
    figure.update_yaxes(title_text=y_title, rangemode="tozero", tickformat=".3~g")
    if figure.data and any(len(c.points) == 1 for c in curves) and not wide:
        # One point alone would sit on an axis squeezed around it.
        figure.update_xaxes(range=[0, max(batches) + 1])
    return figure


def _short(label: str, limit: int = 60) -> str:
    """A trace name: cut to ``limit`` characters, and with Plotly's pseudo-HTML
    (``<a href>``, ``<b>``) escaped, since the label is text from a user's file."""
    cut = label if len(label) <= limit else label[: limit - 1] + "…"
    return html.escape(cut, quote=False)
