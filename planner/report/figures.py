"""Plotly figures that leave the dashboard: the charts of a plan report, and the demand
chart the Plan page shares with it.

Pure functions of the library's results. Text from users (a model's or a card's name)
is escaped for Plotly's pseudo-HTML, which would otherwise render ``<a href>`` or ``<b>``
in a trace name or a title.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import plotly.graph_objects as go

from planner.curves.curve import Point
from planner.curves.fit import FittedCurve
from planner.demand.fleet import DemandFleet
from planner.plan.outcomes import Option

COLOURS = ("#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a3069")
SESSIONS_AXIS = "concurrent sessions"
_LAYOUT: dict[str, Any] = {
    "margin": {"l": 60, "r": 60, "t": 50, "b": 55},
    "legend": {"orientation": "h", "y": -0.25, "x": 0},
    "hovermode": "closest",
    "height": 380,
}


def plotly_text(text: str, limit: int = 80) -> str:
    """User text for a Plotly label: cut to ``limit`` characters, pseudo-HTML escaped."""
    cut = text if len(text) <= limit else text[: limit - 1] + "…"
    return html.escape(cut, quote=False)


def _title(text: str, under: str = "") -> dict[str, Any]:
    """A chart's title, and what it shows in a smaller line ``under`` it: two short lines
    fit a phone's width where one long one runs off the chart."""
    if under:
        text += f"<br><span style='font-size:12px'>{under}</span>"
    return {"text": text, "x": 0, "xanchor": "left"}


_TWO_LINE_TITLE = {**_LAYOUT["margin"], "t": 70}


def curve_figure(label: str, points: Sequence[Point], fit: FittedCurve, upto: int) -> go.Figure:
    """The batch curve a plan runs on: measured points, the fit, and its band (optimistic
    to pessimistic), for batch 1..``upto``."""
    batches = np.arange(1, upto + 1, dtype=np.float64)
    central, optimistic, pessimistic = fit.band(batches)
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "x": np.concatenate([batches, batches[::-1]]),
            "y": np.concatenate([pessimistic, optimistic[::-1]]),
            "mode": "lines",
            "fill": "toself",
            "fillcolor": "rgba(31, 111, 235, 0.15)",
            "line": {"width": 0},
            "hoverinfo": "skip",
            "name": "band (optimistic to pessimistic)",
        },
        {
            "type": "scatter",
            "x": batches,
            "y": central,
            "mode": "lines",
            "line": {"color": COLOURS[0], "width": 2},
            "name": "fit",
            "hovertemplate": "batch %{x}: %{y:,.3~r} ms per call<extra>fit</extra>",
        },
        {
            "type": "scatter",
            "x": [p.batch for p in points],
            "y": [p.latency_ms for p in points],
            "mode": "markers",
            "marker": {"size": 10, "color": COLOURS[1]},
            "name": "measured",
            "hovertemplate": "batch %{x}: %{y:,.3~r} ms<extra>measured</extra>",
        },
    ]
    layout = {
        **_LAYOUT,
        "title": _title("The batch curve", plotly_text(label)),
        "margin": _TWO_LINE_TITLE,
        "xaxis": {"title": {"text": "batch size (frames per call)"}},
        "yaxis": {"title": {"text": "latency per call (ms)"}, "rangemode": "tozero"},
    }
    return go.Figure(data=data, layout=layout)


def options_figure(
    options: Sequence[Option],
    *,
    metric: Literal["latency", "fps"],
    limit: float,
    percentile: float,
    most: int = 8,
) -> go.Figure:
    """The ``most`` best options over session counts up to one past their cap (the runs
    the recommendation made): the latency percentile against the budget, or the slowest
    session's frame rate against the floor."""
    data: list[dict[str, Any]] = []
    for index, option in enumerate(options[:most]):
        rows = option.history
        if metric == "latency":
            ys = [r.e2e_latency_ms for r in rows]
            hover = f"%{{x}} sessions: p{percentile:g} %{{y:,.3~r}} ms"
        else:
            ys = [r.min_fps for r in rows]
            hover = "%{x} sessions: slowest %{y:,.3~r} fps"
        data.append(
            {
                "type": "scatter",
                "x": [r.sessions for r in rows],
                "y": ys,
                "mode": "lines+markers",
                "line": {"color": COLOURS[index % len(COLOURS)]},
                "name": option.label,
                "hovertemplate": hover + "<extra>%{fullData.name}</extra>",
            }
        )
    widest = max((r.sessions for o in options[:most] for r in o.history), default=1)
    what = f"p{percentile:g} latency, end to end (ms)" if metric == "latency" else "slowest fps"
    line = "budget" if metric == "latency" else "floor"
    layout = {
        **_LAYOUT,
        "title": _title(
            f"{'Latency' if metric == 'latency' else 'Slowest session'} against sessions",
            f"up to one past each cap; the {line} dashed",
        ),
        "margin": _TWO_LINE_TITLE,
        # One tick per session count while they fit; beyond, Plotly's own spacing.
        "xaxis": {"title": {"text": SESSIONS_AXIS}, **({"dtick": 1} if widest <= 40 else {})},
        "yaxis": {"title": {"text": what}, "rangemode": "tozero"},
        "shapes": [
            {
                "type": "line",
                "xref": "paper",
                "x0": 0,
                "x1": 1,
                "y0": limit,
                "y1": limit,
                "line": {"dash": "dash", "color": "#57606a"},
            }
        ],
    }
    return go.Figure(data=data, layout=layout)


def demand_figure(fleet: DemandFleet, *, height: int = 380) -> go.Figure:
    """Demand over the profile (sessions, left axis) and the GPUs each provisioning rule
    runs (right axis), step by step."""
    profile = fleet.profile
    hours = [*profile.hours, profile.span_minutes / 60.0]

    def steps(values: Sequence[float]) -> list[float]:
        # A step chart holds each value for its whole step: repeat the last to close it.
        return [*values, values[-1]]

    shape = {"shape": "hv"}
    start = f" from {profile.start}" if profile.start else ""
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "x": hours,
            "y": steps(profile.sessions),
            "mode": "lines",
            "line": {**shape, "color": "#8c959f", "width": 1},
            "fill": "tozeroy",
            "fillcolor": "rgba(140, 149, 159, 0.25)",
            "name": "demand (sessions)",
            "hovertemplate": "hour %{x:,.3~r}: %{y:.4~g} sessions<extra></extra>",
        },
        {
            "type": "scatter",
            "x": hours,
            "y": steps(fleet.fixed.gpus),
            "mode": "lines",
            "line": {**shape, "color": COLOURS[1], "dash": "dash"},
            "name": "GPUs, fixed fleet",
            "yaxis": "y2",
            "hovertemplate": "hour %{x:,.3~r}: %{y} GPUs<extra>fixed</extra>",
        },
        {
            "type": "scatter",
            "x": hours,
            "y": steps(fleet.autoscaled.gpus),
            "mode": "lines",
            "line": {**shape, "color": COLOURS[0], "width": 2},
            "name": f"GPUs, autoscaled ({fleet.lead_time_min:g} min lead)",
            "yaxis": "y2",
            "hovertemplate": "hour %{x:,.3~r}: %{y} GPUs<extra>autoscaled</extra>",
        },
        {
            "type": "scatter",
            "x": hours,
            "y": steps(fleet.needed),
            "mode": "lines",
            "line": {**shape, "color": COLOURS[2], "dash": "dot", "width": 1},
            "name": "GPUs needed in the step",
            "yaxis": "y2",
            "hovertemplate": "hour %{x:,.3~r}: %{y} GPUs<extra>needed</extra>",
        },
    ]
    # The GPU axis is the sessions axis in cards: ceil(sessions (1 + h) / seats), so the
    # GPU lines sit just on or above the demand they serve.
    top = max(profile.peak, 1.0) * 1.1
    cards = max(top * (1.0 + fleet.headroom) / fleet.seats_per_card, max(fleet.fixed.gpus) * 1.05)
    layout = {
        **_LAYOUT,
        "height": height,
        "title": _title(f"Demand and GPUs over {plotly_text(profile.name)}"),
        "xaxis": {"title": {"text": f"hours{plotly_text(start)}"}},
        "yaxis": {"title": {"text": SESSIONS_AXIS}, "range": [0, top]},
        "yaxis2": {
            "title": {"text": "GPUs"},
            "overlaying": "y",
            "side": "right",
            "range": [0, cards],
            "tickmode": "auto",
            "showgrid": False,
        },
    }
    return go.Figure(data=data, layout=layout)
