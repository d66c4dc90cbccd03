"""Regression against published batch curves (tests/data/fit_devset): hide points, predict.

The development set holds curves copied from vendor benchmark tables, each with its source.
These tests run the evaluation that ``docs/performance.md`` reports and hold the fit to the
targets: the central estimate at least as accurate as the straight-line method, and a band
that contains at least 80% of hidden points with a median relative width of at most 0.5.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.fit_eval import PROTOCOLS, evaluate, load_curves, report, splits

DEVSET = Path(__file__).parent / "data" / "fit_devset" / "curves.json"
EXTRAPOLATION = ("next-two", "first-half", "first-half-up")


@pytest.fixture(scope="module")
def results():
    return evaluate(load_curves(DEVSET))


def test_the_development_set_is_broad_and_every_curve_says_where_it_came_from() -> None:
    raw = json.loads(DEVSET.read_text(encoding="utf-8"))
    assert len(raw) >= 25
    assert len({c["id"] for c in raw}) == len(raw)
    assert {c["family"] for c in raw} >= {"cnn", "transformer", "llm"}
    for curve in raw:
        for key in ("model", "gpu", "gpu_class", "precision", "latency_column", "source"):
            assert curve[key], (curve["id"], key)
        assert curve["source"]["repository"] and (
            curve["source"].get("path") or curve["source"].get("url")
        )
        batches = [b for b, _ in curve["points"]]
        assert batches == sorted(set(batches)) and len(batches) >= 4
        assert all(ms > 0 for _, ms in curve["points"])


@pytest.mark.parametrize("protocol", EXTRAPOLATION)
def test_the_band_contains_most_hidden_points_and_stays_narrow(results, protocol: str) -> None:
    r = results[protocol]
    assert r.inside >= 0.80, report(results)
    assert r.width <= 0.50, report(results)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_central_fit_is_at_least_as_accurate_as_the_straight_line(
    results, protocol: str
) -> None:
    # Including the first half predicting the rest, which reaches up to 32x beyond the
    # measured batches: LLM-decode and EfficientNet curves gain 5-12x in throughput there,
    # and the central estimate has to let the data say so (a fixed 4x cap did not).
    r = results[protocol]
    assert r.fit_error <= r.straight_line_error, report(results)


def test_every_protocol_hides_points_from_every_curve(results) -> None:
    curves = load_curves(DEVSET)
    for protocol in PROTOCOLS:
        assert results[protocol].curves == sum(
            any(True for _ in splits(protocol, c.points)) for c in curves
        )
        assert results[protocol].hidden > 0
