"""Plotly figures of a study: a heatmap of one figure over two axes, and the cheapest
cost per seat at each latency budget. Pure functions of ``planner.studies.view`` values."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from dashboard.charts import COLOURS, trace_name
from planner.studies.store import Member
from planner.studies.view import METRICS, Grid


def heatmap_figure(view: Grid, metric: str, height: int = 420) -> go.Figure:
    """``metric`` per cell over the grid's two axes, the value written in each cell; an
    empty cell was not computed (or failed)."""
    money = metric == "cost_per_seat_hour"
    text = [["" if v is None else (f"${v:.3f}" if money else f"{v:g}") for v in row]
            for row in view.z]  # fmt: skip
    figure = go.Figure(
        go.Heatmap(
            x=[trace_name(x, 30) for x in view.x],
            y=[trace_name(y, 30) for y in view.y],
            z=view.z,
            text=text,
            texttemplate="%{text}",
            colorscale="Blues_r" if money else "Blues",
            colorbar={"title": {"text": METRICS[metric]}},
            hovertemplate=f"{view.x_axis} %{{x}}, {view.y_axis} %{{y}}: %{{text}}<extra></extra>",
            xgap=2,
            ygap=2,
        )
    )
    figure.update_layout(
        title={"text": f"{METRICS[metric].capitalize()} by {view.x_axis} and {view.y_axis}",
               "x": 0, "xanchor": "left"},
        height=height,
        margin={"l": 90, "r": 20, "t": 60, "b": 60},
        xaxis={"title": {"text": view.x_axis}, "type": "category"},
        yaxis={"title": {"text": view.y_axis}, "type": "category"},
    )  # fmt: skip
    return figure


def front_figure(points: Sequence[tuple[str, float, Member]], height: int = 380) -> go.Figure:
    """The cheapest cost per seat-hour at each latency budget (any card and sharing
    mode): what a looser budget buys."""
    labels = [f"{m.curve_id}, {m.coordinates.get('modes', ['exclusive'])}" for _, _, m in points]
    figure = go.Figure(
        go.Scatter(
            x=[float(b) for b, _, _ in points],
            y=[cost for _, cost, _ in points],
            mode="lines+markers",
            line={"color": COLOURS[0], "shape": "hv"},
            customdata=labels,
            hovertemplate="budget %{x} ms: $%{y:.3f} per seat-hour (%{customdata})<extra></extra>",
        )
    )
    figure.update_layout(
        title={"text": "Cheapest cost per seat against the latency budget", "x": 0,
               "xanchor": "left"},
        height=height,
        margin={"l": 70, "r": 20, "t": 60, "b": 55},
        xaxis={"title": {"text": "latency budget (ms)"}},
        yaxis={"title": {"text": "USD per seat-hour"}, "rangemode": "tozero"},
    )  # fmt: skip
    return figure
