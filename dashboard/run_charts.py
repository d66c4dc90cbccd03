"""Plotly figures of one simulation run: the batch timeline, each session's frame rate and
the latency distribution. Pure functions of ``planner.sim.results.Results`` (no Streamlit);
every axis names its quantity and unit."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from dashboard.charts import COLOURS, LEGEND, MODEBAR, rgba, trace_name
from planner import display
from planner.views.runs import Results
from planner.views.simulation import FIRST_MODEL, model_ends, model_names

TIMELINE_MS = 400.0
"""The timeline opens on the first 0.4 s; the first ``TIMELINE_DATA_MS`` can be panned."""
TIMELINE_DATA_MS = 3000.0
TIMELINE_SESSIONS = 64
"""The timeline draws at most this many sessions' lanes (the first ones) ..."""
TIMELINE_FRAMES = 10_000
"""... and at most this many frames of them (and as many batches and CPU jobs): it ends
earlier than ``TIMELINE_DATA_MS`` where more would arrive. A figure of every frame of a
large run was hundreds of megabytes, more than a page can be sent."""
HISTOGRAM_BINS = 60
CPU_COLOURS = ("#8250df", "#bf8700")  # post jobs, pre jobs (``Records.job_kind``)
BATCH_SHADES = (COLOURS[0], "#0a3069")
MODEL_COLOURS = (COLOURS[0], COLOURS[2], COLOURS[3], COLOURS[5], "#0a3069", "#57606a")
"""A cascade's models on the GPU lane, in the chain's order (the first model in the
batches' own blue); a chain longer than this reuses them."""
"""Neighbouring batches alternate between two shades of one colour (never red, which
marks what fails: a starved session, a budget)."""
CRITERIA = "#d1242f"
"""The colour of a plan's criteria (budget, floor) and of what fails them."""
_LAYOUT = {
    "margin": {"l": 70, "r": 20, "t": 50, "b": 55},
    "legend": LEGEND,
    "modebar": MODEBAR,
}


def _segments(starts: np.ndarray, ends: np.ndarray, ys: np.ndarray) -> tuple[list, list]:
    """Line segments as one trace: x and y with a gap (None) after each segment."""
    xs: list[float | None] = []
    yv: list[float | None] = []
    for a, b, y in zip(starts.tolist(), ends.tolist(), ys.tolist(), strict=True):
        xs += [a, b, None]
        yv += [y, y, None]
    return xs, yv


@dataclass(frozen=True)
class TimelineWindow:
    """What the timeline draws of a run: its first ``sessions`` of ``of_sessions``
    sessions, up to ``horizon_ms``; ``sampled`` when that is less than the run and the
    first ``TIMELINE_DATA_MS``."""

    sessions: int
    of_sessions: int
    horizon_ms: float
    sampled: bool


def _nth(values: np.ndarray, n: int) -> float:
    """The ``n``-th smallest of ``values`` (0-based), or inf when there are not more than n."""
    if values.size <= n:
        return math.inf
    return float(np.partition(values, n)[n])


def timeline_window(results: Results) -> TimelineWindow:
    """The part of the run the timeline draws (see ``TIMELINE_SESSIONS`` and
    ``TIMELINE_FRAMES``)."""
    records = results.records
    total = results.scenario.sessions
    sessions = min(total, TIMELINE_SESSIONS)
    window = min(TIMELINE_DATA_MS, results.scenario.duration_ms)
    arrivals = records.frame_arrival[records.frame_session < sessions]
    cap = min(
        _nth(arrivals, TIMELINE_FRAMES),
        _nth(records.batch_start, TIMELINE_FRAMES),
        _nth(records.job_start, TIMELINE_FRAMES),
    )
    horizon = min(window, cap)
    return TimelineWindow(sessions, total, horizon, sessions < total or horizon < window)


def timeline_figure(
    results: Results, *, window_ms: float = TIMELINE_MS, first_model: str = FIRST_MODEL
) -> go.Figure:
    """Which session's frame went into which batch, when: for each delivered frame a thin
    grey line while it waited for the GPU and a thick bar while its batch ran on the GPU,
    with its CPU stages (waiting for a thread and the work itself, before and after the
    GPU) in their own colours; the GPU lane shows the batches themselves (colours
    alternate so neighbouring batches stand apart), with the number of frames in each,
    and with a finite pool of CPU threads a CPU lane above it shows the jobs the threads
    ran (overlapping when several run at once). With a cascade, each batch on the GPU
    lane is split by model, each model of the chain (the first named ``first_model``) in
    its own colour. It draws what ``timeline_window`` says."""
    table = results.frame_table()
    records = results.records
    drawn = timeline_window(results)
    horizon = drawn.horizon_ms
    keep = (table["arrival_ms"] < horizon) & (table["session"] < drawn.sessions)
    session = table["session"][keep]
    arrival = table["arrival_ms"][keep]
    ready = table["ready_ms"][keep]
    dispatch = table["dispatch_ms"][keep]
    completion = table["completion_ms"][keep]
    done = table["done_ms"][keep]
    batch = table["batch"][keep]
    size = table["batch_size"][keep]
    n = drawn.sessions
    gpu_lane = -1.0
    cpu_lane = -2.0
    pool = results.scenario.cpu_pool
    figure = go.Figure()

    for label, colour, starts, ends in (
        ("CPU before the GPU (queue + work)", CPU_COLOURS[1], arrival, ready),
        ("CPU after the GPU (queue + work)", CPU_COLOURS[0], completion, done),
    ):
        some = ends > starts
        if some.any():
            xs, ys = _segments(starts[some], ends[some], session[some].astype(float))
            figure.add_trace(
                go.Scatter(
                    x=xs, y=ys, mode="lines", line={"color": colour, "width": 4},
                    name=label, hoverinfo="skip",
                )
            )  # fmt: skip
    xs, ys = _segments(ready, dispatch, session.astype(float))
    figure.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            mode="lines",
            line={"color": "#8c959f", "width": 2},
            name="waiting",
            hoverinfo="skip",
        )
    )
    for parity in (0, 1):
        mine = batch % 2 == parity
        xs, ys = _segments(dispatch[mine], completion[mine], session[mine].astype(float))
        figure.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                line={"color": BATCH_SHADES[parity], "width": 9},
                name="on the GPU" if parity == 0 else "on the GPU (next batch)",
                hoverinfo="skip",
            )
        )
    figure.add_trace(
        go.Scatter(
            x=completion,
            y=session,
            mode="markers",
            marker={"size": 4, "color": "#1f2328"},
            name="delivered",
            customdata=np.stack([arrival, dispatch, completion - ready, size, done], axis=-1),
            hovertemplate="session %{y}: arrived %{customdata[0]:,.3~r} ms, batch of "
            "%{customdata[3]} from %{customdata[1]:,.3~r} ms, off the GPU %{x:,.3~r} ms "
            "(GPU side %{customdata[2]:,.3~r} ms), done %{customdata[4]:,.3~r} ms"
            "<extra></extra>",
        )
    )
    shown = records.batch_start < horizon
    starts, ends = records.batch_start[shown], records.batch_end[shown]
    sizes = records.batch_size[shown]
    if results.scenario.cascade:
        _model_segments(figure, results, shown, gpu_lane, first_model)
    else:
        for parity in (0, 1):
            mine = np.arange(starts.size) % 2 == parity
            xs, ys = _segments(starts[mine], ends[mine], np.full(int(mine.sum()), gpu_lane))
            figure.add_trace(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="lines",
                    line={"color": rgba(BATCH_SHADES[parity], 0.85), "width": 14},
                    name="batch, with its frames (top lane)",
                    showlegend=parity == 0,
                    hoverinfo="skip",
                )
            )
    figure.add_trace(
        go.Scatter(
            x=(starts + ends) / 2,
            y=np.full(starts.size, gpu_lane),
            mode="text",
            text=[str(s) for s in sizes.tolist()],
            textfont={"size": 10, "color": "white"},
            showlegend=False,
            customdata=np.stack([starts, ends, sizes], axis=-1) if starts.size else None,
            hovertemplate="batch of %{customdata[2]} frames, %{customdata[0]:,.3~r}–"
            "%{customdata[1]:,.3~r} ms<extra></extra>",
        )
    )
    if pool and records.job_start.size:
        kinds = records.job_kind
        stages = results.scenario.stages
        length = np.where(kinds == 1, stages.pre_ms, stages.post_ms)
        for kind, label in ((1, "CPU thread: pre job"), (0, "CPU thread: post job")):
            mine = (kinds == kind) & (records.job_start < horizon)
            if not mine.any():
                continue
            starts = records.job_start[mine]
            xs, ys = _segments(starts, starts + length[mine], np.full(int(mine.sum()), cpu_lane))
            figure.add_trace(
                go.Scatter(
                    x=xs, y=ys, mode="lines", name=label,
                    line={"color": rgba(CPU_COLOURS[kind], 0.55), "width": 14},
                    hoverinfo="skip",
                )
            )  # fmt: skip
            waited = starts - records.job_ready[mine]
            figure.add_trace(
                go.Scatter(
                    x=starts, y=np.full(starts.size, cpu_lane), mode="markers",
                    marker={"size": 3, "color": CPU_COLOURS[kind]}, showlegend=False,
                    customdata=waited,
                    hovertemplate=f"{label[12:]} started %{{x:,.3~r}} ms after waiting "
                    "%{customdata:,.3~r} ms in the queue<extra></extra>",
                )
            )  # fmt: skip
    lanes = [cpu_lane, gpu_lane] if pool else [gpu_lane]
    labels = [*(["CPU"] if pool else []), "GPU", *(str(i) for i in range(n))]
    # Room for the plot, one lane per session and per shared resource, and the legend's
    # rows below it.
    height = max(280, 110 + 26 * (n + len(lanes))) + 90
    top, bottom = 50, 55
    which = f", sessions 0–{n - 1} of {drawn.of_sessions}" if n < drawn.of_sessions else ""
    figure.update_layout(
        title={
            "text": f"What the GPU ran, first {display.ms(min(window_ms, horizon))}{which} "
            "(drag to pan)",
            "x": 0,
            "xanchor": "left",
        },
        height=height,
        **{**_LAYOUT, "margin": {"l": 70, "r": 20, "t": top, "b": bottom}},
    )
    figure.update_xaxes(
        title_text="time since the start (ms)",
        range=[0, min(window_ms, horizon)],
        zeroline=False,
    )
    figure.update_yaxes(
        tickvals=[*lanes, *range(n)] if n <= 40 else None,
        ticktext=labels if n <= 40 else None,
        title_text="session",
        autorange="reversed",
        range=None,
        zeroline=False,
        showgrid=False,
    )
    return figure


def _model_segments(
    figure: go.Figure, results: Results, shown: np.ndarray, lane: float, first_model: str
) -> None:
    """A cascade's batches on the GPU lane, each split into its models' parts
    (``planner.sim.split``: when each model finished the batch), a trace per model."""
    records = results.records
    ends = model_ends(results.scenario, records)[shown]
    begins = np.c_[records.batch_start[shown], ends[:, :-1]]
    for j, name in enumerate(model_names(results.scenario, first_model)):
        xs, ys = _segments(begins[:, j], ends[:, j], np.full(begins.shape[0], lane))
        figure.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines",
                line={"color": rgba(MODEL_COLOURS[j % len(MODEL_COLOURS)], 0.85), "width": 14},
                name=f"batch on the GPU: {trace_name(name)} (top lane)",
                hoverinfo="skip",
            )
        )


def fps_figure(results: Results, floor: float | None = None) -> go.Figure:
    """Each session's delivered frame rate, with what it sent, the plan's frame-rate
    ``floor`` (sessions below it in red) and the starvation line (half the mean)."""
    sessions = results.sessions
    mean = results.mean_fps
    figure = go.Figure(
        go.Bar(
            x=[s.session for s in sessions],
            y=[s.fps for s in sessions],
            marker_color=[
                CRITERIA if s.starved or (floor is not None and s.fps < floor) else COLOURS[0]
                for s in sessions
            ],
            name="delivered",
            showlegend=False,
            hovertemplate="session %{x}: %{y:,.3~r} fps<extra></extra>",
        )
    )
    offered = max(s.offered_fps for s in sessions)
    span = [-0.5, len(sessions) - 0.5]
    # Reference lines as traces, so the legend names them instead of text over the bars.
    figure.add_trace(
        go.Scatter(
            x=span,
            y=[offered, offered],
            mode="lines",
            line={"color": "#57606a", "dash": "dot", "width": 1.5},
            name=f"sent ({display.fps(offered)})",
            hoverinfo="skip",
        )
    )
    if floor is not None:
        figure.add_trace(
            go.Scatter(
                x=span,
                y=[floor, floor],
                mode="lines",
                line={"color": CRITERIA, "dash": "dash", "width": 1.5},
                name=f"the plan's floor ({display.fps(floor)}; a red bar is below it)",
                hoverinfo="skip",
            )
        )
    figure.add_trace(
        go.Scatter(
            x=span,
            y=[0.5 * mean, 0.5 * mean],
            mode="lines",
            line={"color": "#9a6700", "dash": "dot", "width": 1.5},
            name=f"starving below {display.fps(0.5 * mean)} (half the mean)",
            hoverinfo="skip",
        )
    )
    figure.update_layout(
        title={"text": "Frame rate per session", "x": 0, "xanchor": "left"},
        height=340,
        **_LAYOUT,
    )
    figure.update_xaxes(
        title_text="session", tickformat="d", dtick=1 if len(sessions) <= 20 else None
    )
    figure.update_yaxes(
        title_text="delivered frames/s", rangemode="tozero", range=[0, offered * 1.15]
    )
    return figure


def bin_edges(values: np.ndarray, bins: int = HISTOGRAM_BINS) -> np.ndarray:
    """``bins`` equal bins from the smallest to the largest of ``values``, each at least a
    nanosecond-scale width wide: latencies that are all (almost) the same, as on an
    unloaded card, still make ``bins`` finite bins (NumPy refuses a range that narrow)."""
    if not values.size:
        return np.linspace(0.0, 1.0, bins + 1)
    low, high = float(values.min()), float(values.max())
    span = max(high - low, 1e-6 * max(1.0, abs(high)))
    edges = np.linspace(low, low + span, bins + 1)
    edges[-1] = max(edges[-1], high)  # rounding must not leave the largest value out
    return edges


def latency_histogram(
    results: Results, budget_ms: float | None = None, percentile: float = 99.0
) -> go.Figure:
    """How delivered frames' latency is distributed, GPU side and end to end, with the
    p50 and the ``percentile`` marked, and the plan's budget for that percentile."""
    records = results.records
    overhead = results.scenario.overhead_ms
    figure = go.Figure()
    gpu = records.frame_latency
    # Binned here: the page sends bin counts, never every frame's latency.
    both = np.concatenate([gpu, gpu + overhead]) if overhead else gpu
    edges = bin_edges(both)
    series = [("GPU side" if overhead else "GPU side = end to end (no overhead)", gpu,
               COLOURS[0], 0.7)]  # fmt: skip
    if overhead:
        series.append((f"end to end (+{display.ms(overhead)})", gpu + overhead, COLOURS[2], 0.6))
    for name, values, colour, opacity in series:
        counts, _ = np.histogram(values, bins=edges)
        figure.add_trace(
            go.Bar(
                x=(edges[:-1] + edges[1:]) / 2,
                y=counts,
                width=float(edges[1] - edges[0]),
                name=name,
                marker_color=colour,
                opacity=opacity,
                customdata=np.stack([edges[:-1], edges[1:]], axis=-1),
                hovertemplate="%{customdata[0]:,.3~r}–%{customdata[1]:,.3~r} ms: %{y} frames"
                "<extra></extra>",
            )
        )
    summary = results.e2e_latency
    ends = gpu + overhead
    judged = float(np.percentile(ends, percentile)) if ends.size else None
    marks = (("p50", summary.p50, "top left"), (f"p{percentile:g}", judged, "top right"))
    for name, value, side in marks:
        if value is not None:
            figure.add_vline(
                x=value,
                line={"color": "#1f2328", "dash": "dot", "width": 1},
                annotation_text=f"{name} {display.ms(value)}",
                annotation_position=side,
            )
    if budget_ms is not None:
        # A trace rather than a line shape, so that the legend names it.
        figure.add_trace(
            go.Scatter(
                x=[budget_ms, budget_ms],
                y=[0, 1],
                yaxis="y2",
                mode="lines",
                line={"color": CRITERIA, "dash": "dash", "width": 1.5},
                name=f"the plan's budget for p{percentile:g} ({display.ms(budget_ms)})",
                hoverinfo="skip",
            )
        )
        figure.update_layout(
            yaxis2={"overlaying": "y", "range": [0, 1], "visible": False, "fixedrange": True}
        )
    figure.update_layout(
        title={"text": "Latency of delivered frames", "x": 0, "xanchor": "left"},
        height=340,
        barmode="overlay",
        **_LAYOUT,
    )
    figure.update_xaxes(title_text="latency (ms)", rangemode="tozero")
    figure.update_yaxes(title_text="frames")
    return figure
