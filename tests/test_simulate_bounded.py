"""The Simulate page is bounded in what it draws and what it keeps: the timeline draws at
most ``TIMELINE_SESSIONS`` sessions and ``TIMELINE_FRAMES`` frames and says so, the
histogram sends bin counts, and the cache of simulations is capped in bytes."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import streamlit as st
from hypothesis import given, settings
from hypothesis import strategies as hs
from streamlit.testing.v1 import AppTest

from dashboard.cache import _Table
from dashboard.run_charts import HISTOGRAM_BINS, TIMELINE_FRAMES, TIMELINE_SESSIONS, bin_edges

REPO = Path(__file__).resolve().parent.parent
# The probe's link, smaller: 128 sessions at 240 fps on a card that serves every frame
# (307,200 frames; the first 3 s of the timeline alone held 92,160 of them).
LARGE = {"sessions": "128", "duration_s": "10", "fps": "240", "points": "1:0.001,2:0.001"}


def _values(data: object) -> list[float]:
    """A trace's values as Plotly sends them: a list, or a typed array (base64 bytes)."""
    if isinstance(data, dict):
        raw = base64.b64decode(data["bdata"])
        values = np.frombuffer(raw, dtype=np.dtype(data["dtype"]))
        return values.reshape(data["shape"]).tolist() if "shape" in data else values.tolist()
    return list(data or [])  # type: ignore[call-overload]


@pytest.fixture
def app(db_path: Path) -> Iterator[AppTest]:
    st.cache_resource.clear()
    yield AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    st.cache_resource.clear()


def test_a_large_run_draws_a_bounded_timeline_and_binned_latencies_and_says_so(
    app: AppTest,
) -> None:
    for key, value in LARGE.items():
        app.query_params[key] = value
    app.switch_page("dashboard/pages/simulate.py")
    app.run()
    assert not app.exception, app.exception
    charts = {c.key: json.loads(c.proto.spec) for c in app.get("plotly_chart")}
    timeline = charts["sim_chart_timeline_0"]
    delivered = next(t for t in timeline["data"] if t.get("name") == "delivered")
    sessions = _values(delivered["y"])
    assert 0 < len(sessions) <= TIMELINE_FRAMES
    assert max(sessions) == TIMELINE_SESSIONS - 1
    points = sum(len(_values(t.get("x"))) for t in timeline["data"])
    assert points <= 3 * 3 * TIMELINE_FRAMES  # each frame's segments, the batches', the marks
    histogram = charts["sim_chart_latency_0"]
    bars = [t for t in histogram["data"] if t["type"] == "bar"]
    assert bars and all(len(_values(t["y"])) == HISTOGRAM_BINS for t in bars)
    assert sum(_values(bars[0]["y"])) > 300_000 - 10_000  # every delivered frame
    sent = sum(len(c.proto.spec) for c in app.get("plotly_chart"))
    assert sent < 5 * 2**20, sent
    captions = " ".join(c.value for c in app.caption)
    assert f"the first {TIMELINE_SESSIONS} of its 128 sessions" in captions, captions


@settings(max_examples=60, deadline=None)
@given(
    hs.lists(hs.tuples(hs.integers(0, 9), hs.integers(0, 400)), max_size=40),
    hs.integers(50, 500),
)
def test_the_simulation_cache_never_keeps_more_bytes_than_its_cap(
    calls: list[tuple[int, int]], cap: int
) -> None:
    table: _Table[int] = _Table(16, cap, lambda weight: weight)
    for key, weight in calls:
        assert table.get_or_make(f"{key}:{weight}", lambda w=weight: w) == weight
        assert table.bytes <= cap and len(table) <= 16


@settings(max_examples=200, deadline=None)
@given(hs.lists(hs.floats(1e-3, 1e6), min_size=1, max_size=50), hs.booleans())
def test_latency_bins_hold_every_frame_even_when_all_latencies_are_equal(
    latencies: list[float], same: bool
) -> None:
    """Latencies that are all the same (an unloaded card) made NumPy refuse to bin them."""
    values = np.array([latencies[0]] * len(latencies) if same else latencies)
    edges = bin_edges(values)
    assert len(edges) == HISTOGRAM_BINS + 1 and np.all(np.diff(edges) > 0)
    counts, _ = np.histogram(values, bins=edges)
    assert counts.sum() == values.size
