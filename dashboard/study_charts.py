"""Plotly figures of a study: a heatmap of one figure over two axes, and the cheapest
cost per seat at each latency budget. Pure functions of ``planner.studies.view`` values."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from dashboard.charts import COLOURS, trace_name
from planner import display
from planner.studies.store import Member
from planner.studies.view import METRICS, Grid, axis_words, label


def heatmap_figure(
    view: Grid, metric: str, height: int = 420, names: Mapping[str, str] | None = None
) -> go.Figure:
    """``metric`` per cell over the grid's two axes, the value written in each cell; an
    empty cell was not computed (or failed). Axes are titled in words (``axis_words``);
    ``names`` gives values a name of their own (a curve's model and card for its id)."""
    names = names or {}
    x_title, y_title = axis_words(view.x_axis), axis_words(view.y_axis)
    money = metric == "cost_per_seat_hour"
    text = [["" if v is None else (display.money(v) if money else f"{v:g}") for v in row]
            for row in view.z]  # fmt: skip
    figure = go.Figure(
        go.Heatmap(
            x=[trace_name(names.get(x, x), 60) for x in view.x],
            y=[trace_name(names.get(y, y), 60) for y in view.y],
            z=view.z,
            text=text,
            texttemplate="%{text}",
            colorscale="Blues_r" if money else "Blues",
            colorbar={"title": {"text": METRICS[metric]}},
            hovertemplate=f"{x_title} %{{x}}, {y_title} %{{y}}: %{{text}}<extra></extra>",
            xgap=2,
            ygap=2,
        )
    )
    figure.update_layout(
        title={"text": f"{METRICS[metric].capitalize()} by {x_title} and {y_title}",
               "x": 0, "xanchor": "left"},
        height=height,
        margin={"l": 90, "r": 20, "t": 60, "b": 60},
        xaxis={"title": {"text": x_title}, "type": "category", "automargin": True},
        yaxis={"title": {"text": y_title}, "type": "category", "automargin": True},
    )  # fmt: skip
    return figure


def front_figure(
    points: Sequence[tuple[str, float, Member]],
    height: int = 380,
    names: Mapping[str, str] | None = None,
) -> go.Figure:
    """The cheapest cost per seat-hour at each latency budget (any card and sharing
    mode): what a looser budget buys; ``names`` names the curves by model and card."""
    names = names or {}
    labels = [
        f"{names.get(m.curve_id, m.curve_id)}, {label(m.coordinates.get('modes', ['exclusive']))}"
        for _, _, m in points
    ]
    figure = go.Figure(
        go.Scatter(
            x=[float(b) for b, _, _ in points],
            y=[cost for _, cost, _ in points],
            mode="lines+markers",
            line={"color": COLOURS[0], "shape": "hv"},
            customdata=[
                [display.money(cost), name]
                for (_, cost, _), name in zip(points, labels, strict=True)
            ],
            hovertemplate="budget %{x} ms: %{customdata[0]} per seat-hour (%{customdata[1]})"
            "<extra></extra>",
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
