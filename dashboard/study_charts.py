"""Plotly figures of a study: a heatmap of one figure over two axes, and the cheapest
cost per seat at each latency budget. Pure functions of a study's view (``planner.views.study``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from dashboard.charts import COLOURS, trace_name
from planner.studies.view import METRICS, Grid, axis_words
from planner.views.study import FrontPoint, grid_text


def heatmap_figure(
    view: Grid,
    metric: str,
    height: int = 420,
    names: Mapping[str, str] | None = None,
    text: Sequence[Sequence[str]] | None = None,
) -> go.Figure:
    """``metric`` per cell over the grid's two axes, the value written in each cell; an
    empty cell was not computed (or failed). Axes are titled in words (``axis_words``);
    ``names`` gives values a name of their own (a curve's model and card for its id);
    ``text`` is each cell's figure as the study's view writes it (``grid_text``)."""
    names = names or {}
    x_title, y_title = axis_words(view.x_axis), axis_words(view.y_axis)
    money = metric == "cost_per_seat_hour"
    text = [list(row) for row in (text if text is not None else grid_text(view, metric))]
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


def front_figure(points: Sequence[FrontPoint], height: int = 380) -> go.Figure:
    """The cheapest cost per seat-hour at each latency budget (any card and sharing
    mode), as the study's view gives it: what a looser budget buys."""
    figure = go.Figure(
        go.Scatter(
            x=[float(p.budget) for p in points],
            y=[p.cost for p in points],
            mode="lines+markers",
            line={"color": COLOURS[0], "shape": "hv"},
            customdata=[[p.cost_text, trace_name(p.label)] for p in points],
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
