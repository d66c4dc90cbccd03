"""The Validate page's figures and tables: a load test's measured figures against the
predicted ones, by session count and policy, drawn from its view
(``planner.views.loadtest``; no Streamlit), so they are tested without a server."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from dashboard.charts import COLOURS, trace_name
from planner.validate.measured_vs_predicted import ErrorStats
from planner.validate.runs import LoadTest
from planner.views.loadtest import (
    Chart,
    accuracy,
    accuracy_table,
    calibration_table,
    loadtest_view,
)
from planner.views.runs import Calibration

__all__ = ["accuracy", "accuracy_rows", "calibration_rows", "chart_figure", "error_rows",
           "figure", "torch_available"]  # fmt: skip

_LAYOUT = {
    "margin": {"l": 70, "r": 20, "t": 50, "b": 55},
    "legend": {"orientation": "h", "y": -0.25, "x": 0},
}


def torch_available() -> bool:
    """Whether this server can run the reference worker (PyTorch is installed)."""
    return importlib.util.find_spec("torch") is not None


def figure(test: LoadTest, metric: str, calibrated: bool = False) -> go.Figure:
    """``metric`` of ``test`` against session count (see ``chart_figure``)."""
    (chart,) = [c for c in loadtest_view(test).charts if c.metric == metric]
    return chart_figure(chart, calibrated)


def chart_figure(chart: Chart, calibrated: bool = False) -> go.Figure:
    """A load test's chart as its view gives it: per policy a solid line measured, a
    dashed line predicted (the calibrated prediction where asked for and there is one)."""
    traces: list[dict[str, Any]] = []
    for i, series in enumerate(chart.series):
        colour = COLOURS[i % len(COLOURS)]
        sessions = list(series.sessions)
        predicted = list(series.calibrated if calibrated else series.predicted)
        name = trace_name(series.policy)
        traces.append({"type": "scatter", "mode": "lines+markers", "x": sessions,
                       "y": list(series.measured), "name": f"{name}, measured",
                       "line": {"color": colour}})  # fmt: skip
        traces.append({"type": "scatter", "mode": "lines+markers", "x": sessions,
                       "y": predicted, "name": f"{name}, predicted",
                       "line": {"color": colour, "dash": "dash"},
                       "marker": {"symbol": "circle-open"}})  # fmt: skip
    if chart.source_rate is not None:
        (low, high), fps = chart.source_rate
        traces.append({"type": "scatter", "mode": "lines", "x": [low, high],
                       "y": [fps, fps], "name": "source rate",
                       "line": {"color": "#888", "dash": "dot"}})  # fmt: skip
    layout = {
        **_LAYOUT,
        "title": {"text": f"{chart.title}: measured (solid) and predicted (dashed)"},
        "xaxis": {"title": {"text": "sessions"}, "dtick": 1},
        "yaxis": {"title": {"text": chart.unit}, "rangemode": "tozero"},
    }
    return go.Figure({"data": traces, "layout": layout})


def error_rows(test: LoadTest, calibrated: bool = False) -> list[dict[str, Any]]:
    """One row per run: each compared figure as measured / predicted (verdict), as the
    load test's view writes them."""
    view = loadtest_view(test)
    table = view.calibrated_errors if calibrated and view.calibrated_errors else view.errors
    return table.records


def accuracy_rows(stats: Sequence[ErrorStats]) -> list[dict[str, Any]]:
    """Median and largest |relative error| per figure, over the loaded runs."""
    return accuracy_table(stats).records


def calibration_rows(found: Sequence[Calibration]) -> list[dict[str, Any]]:
    return calibration_table(found).records
