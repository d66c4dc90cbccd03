"""Plotly figures of a recommendation: sessions against latency and frame rate per policy,
seats against latency across options, caps side by side, and the latency at the cap by
stage. Pure functions of the
library's results (no Streamlit); every axis names its quantity and unit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import plotly.graph_objects as go

from dashboard.charts import COLOURS, LEGEND, MODEBAR, trace_name
from planner import display
from planner.plan.outcomes import Option
from planner.spans import Span
from planner.views.choices import POLICIES
from planner.views.runs import PART_LABELS, PARTS, Pooled, Stages

SESSIONS_AXIS = "concurrent sessions"
SYMBOLS = ("circle", "square", "diamond", "triangle-up", "cross", "x", "star")
_MARGIN = {"l": 60, "r": 20, "t": 50, "b": 55}
_LAYOUT = {
    "margin": _MARGIN,
    "legend": LEGEND,
    "modebar": MODEBAR,
    "hovermode": "closest",
}


def _style(policy: str) -> dict[str, object]:
    """The same colour and marker for a policy on every chart."""
    index = list(POLICIES).index(policy) if policy in POLICIES else 0
    return {"color": COLOURS[index % len(COLOURS)], "symbol": SYMBOLS[index % len(SYMBOLS)]}


def sessions_figure(
    rows: Sequence[Pooled],
    *,
    metric: Literal["latency", "fps"],
    limit: float,
    cap: int | None = None,
    height: int = 380,
) -> go.Figure:
    """One line per policy over session counts: the latency percentile (end to end,
    seeds pooled) against the budget, or the slowest session's frame rate on the worst
    seed against the floor. ``cap`` marks the recommended seat count."""
    # Built from plain dicts in one go: Plotly validates a figure once this way, where
    # add_trace / add_hline validate and copy it again at every call (the Plan page draws
    # these on every rerun).
    data: list[dict[str, Any]] = []
    percentile = rows[0].percentile if rows else 99.0
    highest = 0.0
    for policy in dict.fromkeys(r.policy for r in rows):
        mine = [r for r in rows if r.policy == policy]
        if metric == "latency":
            ys = [r.e2e_latency_ms for r in mine]
            hover = f"%{{x}} sessions: p{percentile:g} %{{y:,.3~r}} ms"
        else:
            ys = [r.min_fps for r in mine]
            hover = "%{x} sessions: slowest %{y:,.3~r} fps"
        highest = max([highest, *(y for y in ys if y is not None)])
        style = _style(policy)
        data.append(
            {
                "type": "scatter",
                "x": [r.sessions for r in mine],
                "y": ys,
                "mode": "lines+markers",
                "name": policy,
                "line": {"color": style["color"], "width": 2},
                "marker": {"symbol": style["symbol"], "size": 7, "color": style["color"]},
                "opacity": 0.85,
                "hovertemplate": hover + f"<extra>{policy}</extra>",
            }
        )
    if metric == "latency":
        title = f"p{percentile:g} latency, end to end"
        y_title = f"p{percentile:g} latency, end to end (ms)"
        line_text = f"budget {display.ms(limit)}"
        # Latency far beyond the budget says nothing more; keep the budget readable.
        top = min(max(highest, limit) * 1.08, limit * 4)
    else:
        title = "Frame rate of the slowest session"
        y_title = "slowest session (frames/s)"
        line_text = f"floor {display.fps(limit)}"
        top = max(highest, limit) * 1.15
    red, green = "#d1242f", "#1a7f37"
    shapes: list[dict[str, Any]] = [
        {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": limit, "y1": limit,
         "line": {"color": red, "dash": "dash", "width": 1.5}},
    ]  # fmt: skip
    # Above the budget on the left and below the floor on the right is where the lines
    # are not: latencies rise late, failing frame rates fall late.
    left = metric == "latency"
    annotations: list[dict[str, Any]] = [
        {"xref": "paper", "x": 0.01 if left else 0.99, "xanchor": "left" if left else "right",
         "y": limit, "yanchor": "bottom" if left else "top", "text": line_text,
         "showarrow": False, "font": {"color": red}},
    ]  # fmt: skip
    if cap is not None and cap >= 1:
        shapes.append(
            {"type": "line", "yref": "paper", "y0": 0, "y1": 1, "x0": cap, "x1": cap,
             "line": {"color": green, "dash": "dot", "width": 1.5}}
        )  # fmt: skip
        annotations.append(
            {"yref": "paper", "y": 1, "yanchor": "bottom", "x": cap, "xanchor": "left",
             "text": f"{cap} seats", "showarrow": False, "font": {"color": green}}
        )  # fmt: skip
    layout = {
        **_LAYOUT,
        "title": {"text": title, "x": 0, "xanchor": "left"},
        "height": height,
        "shapes": shapes,
        "annotations": annotations,
        "xaxis": {"title": {"text": SESSIONS_AXIS}, "tickformat": "d", "rangemode": "tozero"},
        "yaxis": {"title": {"text": y_title}, "range": [0, top], "tickformat": ",.3~r"},
    }
    return go.Figure(data=data, layout=layout)


def pareto_figure(
    options: Sequence[Option], dominated: Sequence[Option | None], height: int = 380
) -> go.Figure:
    """Seats (with the seat range as error bars: the band's, or the uncalibrated range
    where a margin applies) against the latency at the cap, one marker per group of options
    at the same point; dominated options (``planner.plan.pareto``) hollow and grey."""
    groups: dict[tuple[int, float, bool], list[Option]] = {}
    for option, beaten in zip(options, dominated, strict=True):
        at = option.at_cap
        if option.cap < 1 or at is None or at.e2e_latency_ms is None:
            continue
        key = (option.seats_per_card, round(at.e2e_latency_ms, 1), beaten is not None)
        groups.setdefault(key, []).append(option)
    data: list[dict[str, Any]] = []
    percentile = next((o.at_cap.percentile for o in options if o.at_cap is not None), 99.0)
    xrange, yrange = _pareto_ranges(options, [k[1] for k in groups])
    named = [(k, g) for k, g in groups.items() if not k[2]]
    labels = label_positions(
        [(k[1], k[0], _group_label(g)) for k, g in named],
        [(k[1], k[0]) for k in groups],
        xrange,
        yrange,
        (PLOT_WIDTH, height - _MARGIN["t"] - _MARGIN["b"]),
    )
    for is_dominated in (False, True):
        points = [(k, g) for k, g in groups.items() if k[2] == is_dominated]
        if not points:
            continue
        colour = "#8c959f" if is_dominated else COLOURS[0]
        data.append(
            dict(
                type="scatter",
                x=[k[1] for k, _ in points],
                y=[k[0] for k, _ in points],
                # Only the options worth choosing are named; hover names the others.
                mode="markers" if is_dominated else "markers+text",
                text=[_group_label(g) for _, g in points],
                textposition="middle right" if is_dominated else labels,
                textfont={"size": 11, "color": "#57606a" if is_dominated else "#1f2328"},
                marker={
                    "size": 12,
                    "color": "white" if is_dominated else colour,
                    "line": {"width": 2, "color": colour},
                },
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [g[0].seats_per_card_high - g[0].seats_per_card for _, g in points],
                    "arrayminus": [
                        g[0].seats_per_card - g[0].seats_per_card_low for _, g in points
                    ],
                    "color": colour,
                    "thickness": 1.2,
                },
                name="dominated" if is_dominated else "not dominated",
                customdata=[_group_hover(g) for _, g in points],
                hovertemplate="%{customdata}<extra></extra>",
            )
        )
    xaxis: dict[str, Any] = {
        "title": {"text": f"p{percentile:g} latency at the cap, end to end (ms)"}
    }
    if groups:
        xaxis["range"] = list(xrange)
    layout = {
        **_LAYOUT,
        "title": {"text": "Seats per card against latency at the cap", "x": 0, "xanchor": "left"},
        "height": height,
        "xaxis": xaxis,
        "yaxis": {"title": {"text": "seats per card"}, "tickformat": "d", "range": list(yrange)},
    }  # fmt: skip
    return go.Figure(data=data, layout=layout)


def _pareto_ranges(
    options: Sequence[Option], xs: Sequence[float]
) -> tuple[tuple[float, float], tuple[float, float]]:
    """The latency and seat axes' ranges: room on the right for the labels, which stand
    beside their markers, and above the highest seat count's error bar."""
    top = max((o.seats_per_card_high for o in options), default=1)
    yrange = (0.0, top * 1.2 + 0.5)
    if not xs:
        return (0.0, 1.0), yrange
    low, high = min(xs), max(xs)
    span = max(high - low, 0.2 * high, 1.0)
    return (max(0.0, low - 0.15 * span), high + 0.6 * span), yrange


PLOT_WIDTH = 420
"""The narrowest plot area a chart of half the page gets, in pixels (what labels must fit)."""
CHAR_PX, LINE_PX, MARKER_PX = 6.6, 14.0, 8.0  # an 11 px label's character and line; a marker
POSITIONS = ("middle right", "top right", "bottom right", "middle left", "top left", "bottom left")
Box = tuple[float, float, float, float]  # left, top, right, bottom, in pixels from top left


def label_box(x: float, y: float, text: str, position: str) -> Box:
    """Where Plotly draws ``text`` at ``position`` beside a marker at pixel ``(x, y)``,
    about (``CHAR_PX`` a character, ``LINE_PX`` a line, a marker ``MARKER_PX`` across each
    way from its centre)."""
    width = CHAR_PX * len(text)
    vertical, side = position.split()
    if vertical == "middle":
        top, gap = y - LINE_PX / 2, MARKER_PX
    else:
        top = y - MARKER_PX - LINE_PX if vertical == "top" else y + MARKER_PX
        gap = 0.0
    left = x + gap if side == "right" else x - gap - width
    return (left, top, left + width, top + LINE_PX)


def label_positions(
    labels: Sequence[tuple[float, float, str]],
    markers: Sequence[tuple[float, float]],
    xrange: tuple[float, float],
    yrange: tuple[float, float],
    plot: tuple[float, float],
) -> list[str]:
    """A text position for each label ``(x, y, text)`` such that no two labels overlap and
    none covers a marker, where one exists (``POSITIONS`` in order of preference; labels
    with the most seats placed first). Options close in seats and latency, such as two
    policies a few tenths of a millisecond apart at the same cap, would otherwise print
    their names over each other."""

    def pixels(x: float, y: float) -> tuple[float, float]:
        return (
            (x - xrange[0]) / (xrange[1] - xrange[0]) * plot[0],
            (yrange[1] - y) / (yrange[1] - yrange[0]) * plot[1],
        )

    def overlap(a: Box, b: Box) -> bool:
        return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]

    dots = [pixels(x, y) for x, y in markers]
    taken = [(px - MARKER_PX, py - MARKER_PX, px + MARKER_PX, py + MARKER_PX) for px, py in dots]
    chosen = ["middle right"] * len(labels)
    for i in sorted(range(len(labels)), key=lambda i: -labels[i][1]):
        px, py = pixels(labels[i][0], labels[i][1])
        mine = (px - MARKER_PX, py - MARKER_PX, px + MARKER_PX, py + MARKER_PX)
        others = [b for b in taken if b != mine]
        for position in POSITIONS:
            box = label_box(px, py, labels[i][2], position)
            if not any(overlap(box, b) for b in others):
                chosen[i] = position
                break
        taken.append(label_box(px, py, labels[i][2], chosen[i]))
    return chosen


def _group_label(group: Sequence[Option]) -> str:
    first = group[0]
    # A MIG option is named by its profile: a plan of every profile has several MIG ones.
    mode = first.sharing.kind.short_label(first.sharing)
    name = first.policy if first.sharing.kind.as_measured else f"{first.policy}, {mode}"
    more = len(group) - 1
    # Options at the same point share one marker: say how many more it stands for.
    return trace_name(name if not more else f"{name} and {more} more", 40)


def _group_hover(group: Sequence[Option]) -> str:
    lines = []
    for option in group:
        iso = option.sharing.kind.isolation
        lines.append(
            f"{trace_name(option.label, 60)}: {option.seats} seats "
            f"(memory isolation {iso.memory}, fault isolation {iso.fault})"
        )
    return "<br>".join(lines)


def caps_figure(labels: Sequence[str], options: Sequence[Option | None]) -> go.Figure:
    """Seats per card for each curve, the band's range as error bars."""
    caps = [o.seats_per_card if o is not None else 0 for o in options]
    figure = go.Figure(
        go.Bar(
            x=[trace_name(label, 50) for label in labels],
            y=caps,
            marker_color=[COLOURS[i % len(COLOURS)] for i in range(len(labels))],
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [o.seats_per_card_high - o.seats_per_card if o else 0 for o in options],
                "arrayminus": [
                    o.seats_per_card - o.seats_per_card_low if o else 0 for o in options
                ],
            },
            text=[o.seats if o is not None else "0" for o in options],
            # At the foot of the bar, clear of the range's error bar at its top.
            textposition="inside",
            insidetextanchor="start",
            textangle=0,
            textfont={"color": "white", "size": 13},
            hovertemplate="%{x}: %{text} seats<extra></extra>",
        )
    )
    figure.update_layout(
        title={"text": "Seats per card", "x": 0, "xanchor": "left"},
        height=380,
        showlegend=False,
        margin={"l": 60, "r": 20, "t": 50, "b": 120},
        modebar=MODEBAR,
    )
    figure.update_xaxes(title_text="curve (card, resolution, precision)")
    figure.update_yaxes(title_text="seats per card", tickformat="d", rangemode="tozero")
    return figure


def cost_figure(labels: Sequence[str], costs: Sequence[Span | None]) -> go.Figure:
    """Cost per seat-hour for each curve whose card has a price (others left empty): the
    likely cost as the bar, the range its seats per card allow as error bars."""
    likely = [None if c is None else c.likely for c in costs]
    figure = go.Figure(
        go.Bar(
            x=[trace_name(label, 50) for label in labels],
            y=likely,
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [0 if c is None else c.high - c.likely for c in costs],
                "arrayminus": [0 if c is None else c.likely - c.low for c in costs],
            },
            marker_color=[COLOURS[i % len(COLOURS)] for i in range(len(labels))],
            text=["no price" if c is None else display.span(c, display.money) for c in costs],
            textposition="outside",
            hovertemplate="%{x}: %{text} per seat-hour<extra></extra>",
        )
    )
    known = [c.high for c in costs if c is not None]
    figure.update_layout(
        title={"text": "Cost per seat-hour", "x": 0, "xanchor": "left"},
        height=380,
        showlegend=False,
        margin={"l": 60, "r": 20, "t": 50, "b": 120},
        modebar=MODEBAR,
    )
    figure.update_xaxes(title_text="curve (card, resolution, precision)")
    figure.update_yaxes(
        title_text="USD per seat-hour", rangemode="tozero", range=[0, max(known, default=1) * 1.25]
    )
    return figure


STAGE_COLOURS = {
    "network": "#8c959f",
    "pre": "#9a6700",
    "gpu_wait": "#bf8700",
    "gpu": "#1f6feb",
    "post": "#8250df",
    "overhead": "#57606a",
}


def stages_figure(stages: Stages, sessions: int, height: int = 260) -> go.Figure:
    """Where a frame's end-to-end time goes at ``sessions``: one horizontal bar for the
    mean over every delivered frame and one for the slow tail (the frames at or beyond the
    percentile), each stacked by stage in the order a frame goes through them."""
    rows = [("all frames (mean)", stages.mean), (f"p{stages.percentile:g} and beyond", stages.tail)]
    shown = [(label, b) for label, b in rows if b is not None]
    data: list[dict[str, Any]] = []
    for part in PARTS:
        values = [getattr(b, part) for _, b in shown]
        if not any(v > 0 for v in values):
            continue
        data.append(
            {
                "type": "bar",
                "orientation": "h",
                "x": values,
                "y": [label for label, _ in shown],
                "name": PART_LABELS[part],
                "marker": {"color": STAGE_COLOURS[part]},
                "hovertemplate": f"{PART_LABELS[part]}: %{{x:,.3~r}} ms<extra>%{{y}}</extra>",
            }
        )
    layout = {
        **_LAYOUT,
        "barmode": "stack",
        "title": {"text": f"End-to-end latency by stage at {sessions} sessions", "x": 0,
                  "xanchor": "left"},
        "height": height,
        "xaxis": {"title": {"text": "milliseconds per frame"}, "rangemode": "tozero"},
        "yaxis": {"autorange": "reversed"},
        "legend": {"orientation": "h", "y": -0.45, "x": 0},
    }  # fmt: skip
    return go.Figure(data=data, layout=layout)
