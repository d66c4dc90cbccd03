"""The Validate page's figures and tables: a load test's measured figures against the
predicted ones, by session count and policy. Pure functions of ``planner.validate.loadtest``
values (no Streamlit), so they are tested without a server."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from typing import Any

import plotly.graph_objects as go

from dashboard.charts import COLOURS, trace_name
from planner import display
from planner.validate.measured_vs_predicted import ErrorStats, error_stats
from planner.validate.runs import LoadTest, Run
from planner.views.runs import Calibration

_LAYOUT = {
    "margin": {"l": 70, "r": 20, "t": 50, "b": 55},
    "legend": {"orientation": "h", "y": -0.25, "x": 0},
}
FIGURES = {
    "min_fps": ("Slowest session", "frames per second"),
    "e2e_p99_ms": ("p99 latency, end to end", "ms"),
    "e2e_p50_ms": ("p50 latency, end to end", "ms"),
}


def torch_available() -> bool:
    """Whether this server can run the reference worker (PyTorch is installed)."""
    return importlib.util.find_spec("torch") is not None


def by_policy(test: LoadTest) -> dict[str, list[Run]]:
    """The runs of each policy by session count (seeds kept apart, in order)."""
    out: dict[str, list[Run]] = {}
    for run in test.runs:
        out.setdefault(run.policy, []).append(run)
    for runs in out.values():
        runs.sort(key=lambda r: (r.sessions, r.scenario.seed))
    return out


def figure(test: LoadTest, metric: str, calibrated: bool = False) -> go.Figure:
    """``metric`` against session count: per policy a solid line measured, a dashed line
    predicted (the calibrated prediction where asked for and there is one)."""
    title, unit = FIGURES[metric]
    traces: list[dict[str, Any]] = []
    for i, (policy, runs) in enumerate(by_policy(test).items()):
        colour = COLOURS[i % len(COLOURS)]
        sessions = [r.sessions for r in runs]
        measured = [_measured(r, metric) for r in runs]
        predicted = [
            getattr(r.calibrated if calibrated and r.calibrated else r.predicted, metric)
            for r in runs
        ]
        name = trace_name(policy)
        traces.append({"type": "scatter", "mode": "lines+markers", "x": sessions,
                       "y": measured, "name": f"{name}, measured",
                       "line": {"color": colour}})  # fmt: skip
        traces.append({"type": "scatter", "mode": "lines+markers", "x": sessions,
                       "y": predicted, "name": f"{name}, predicted",
                       "line": {"color": colour, "dash": "dash"},
                       "marker": {"symbol": "circle-open"}})  # fmt: skip
    if metric == "min_fps":
        fps = test.options.fps
        traces.append({"type": "scatter", "mode": "lines", "x": [min(test.options.sessions),
                       max(test.options.sessions)], "y": [fps, fps], "name": "source rate",
                       "line": {"color": "#888", "dash": "dot"}})  # fmt: skip
    layout = {
        **_LAYOUT,
        "title": {"text": f"{title}: measured (solid) and predicted (dashed)"},
        "xaxis": {"title": {"text": "sessions"}, "dtick": 1},
        "yaxis": {"title": {"text": unit}, "rangemode": "tozero"},
    }
    return go.Figure({"data": traces, "layout": layout})


def _measured(run: Run, metric: str) -> float | None:
    """A run's measured figure; an imported range's middle."""
    ranges = dict(run.ranges)
    if metric in ranges:
        low, high = ranges[metric]
        return (low + high) / 2.0
    value = getattr(run.measured, metric)
    return None if value is None else float(value)


WRITERS: dict[str, Callable[[float | None], str]] = {
    "fps": display.fps,
    "ms": display.ms,
    "fraction": display.fraction,
}
"""How a compared figure of each unit is written in the error table (with its unit: the
column's label does not name it)."""


def error_rows(test: LoadTest, calibrated: bool = False) -> list[dict[str, Any]]:
    """One row per run: each compared figure as measured, predicted and the verdict."""
    rows = []
    for run in test.runs:
        row: dict[str, Any] = {
            "sessions": run.sessions,
            "policy": run.policy,
            "seed": run.scenario.seed,
            "loaded": "yes" if run.loaded else "",
        }
        for f in run.figures(calibrated):
            label, write = f.metric.label, WRITERS[f.metric.unit]
            if f.measured is None:
                row[f"{label}: measured"] = display.MISSING
            elif f.is_range:
                row[f"{label}: measured"] = f"{write(f.measured[0])}–{write(f.measured[1])}"
            else:
                row[f"{label}: measured"] = write(f.measured[0])
            row[f"{label}: predicted"] = write(f.predicted)
            row[f"{label}: error"] = f.verdict
        rows.append(row)
    return rows


def accuracy_rows(stats: Sequence[ErrorStats]) -> list[dict[str, Any]]:
    """Median and largest |relative error| per figure, over the loaded runs."""
    return [
        {
            "figure": s.metric,
            "loaded runs": s.runs,
            "median error": display.fraction(s.median),
            "largest error": display.fraction(s.largest),
        }
        for s in stats
    ]


def accuracy(test: LoadTest, calibrated: bool = False) -> list[ErrorStats]:
    """``error_stats`` (``planner.validate.measured_vs_predicted``) over the runs that
    loaded the device."""
    pairs = [
        (r.measured, r.calibrated if calibrated and r.calibrated else r.predicted)
        for r in test.runs
        if r.loaded
    ]
    return error_stats(pairs)


def calibration_rows(found: Sequence[Calibration]) -> list[dict[str, Any]]:
    return [
        {
            "calibration": c.id,
            "load test": c.loadtest,
            "date": None if c.created_at is None else c.created_at.isoformat(sep=" "),
            "a (ms per batch)": round(c.a_ms, 3),
            "c (ms per frame)": round(c.c_ms, 4),
            "d (ms outside the device)": round(c.d_ms, 3),
            "batches": c.batches,
            "note": c.note,
        }
        for c in found
    ]
