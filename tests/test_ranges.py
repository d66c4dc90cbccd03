"""Every GPU count and cost that follows from a seat range is a range too, with the
likely figure (on the fitted curve's seats per card) beside it: in the library, the JSON
(``X``, ``X_low``, ``X_high``), the command line's text and the report."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner import display
from planner.curves.curve import Point
from planner.curves.fit import fit_curve
from planner.demand.fleet import demand_fleet, gpus_for
from planner.demand.profiles import builtin_profile
from planner.plan.fleet import plan_fleet
from planner.plan.outcomes import Fleet, Recommendation, fleet
from planner.plan.recommend import recommend
from planner.plan.request import Request
from planner.spans import Span, from_fields

SERVER = [(1, 8.0), (3, 20.0)]  # two points: a wide band, so the cap is a range


@pytest.fixture(scope="module")
def ranged() -> Recommendation:
    request = Request(
        curve=fit_curve([Point(b, v) for b, v in SERVER]),
        seeds=2,
        duration_s=5.0,
        peak_sessions=200,
        price_per_hour=2.5,
    )
    return recommend(request)


seats = st.tuples(st.integers(1, 40), st.integers(0, 20), st.integers(0, 20)).map(
    lambda t: Span(t[0], t[0] + t[1], t[0] + t[1] + t[2])
)


@given(seats, st.integers(1, 5000), st.floats(0, 1), st.floats(0.01, 50), st.floats(0.1, 1))
def test_a_fleet_on_a_seat_range_spans_what_each_end_needs(
    seat: Span, peak: int, headroom: float, price: float, share: float
) -> None:
    sized = Fleet(peak, headroom, seat, price, share)
    gpus = sized.gpus_span
    assert gpus is not None
    # The most seats per card need the fewest GPUs; the fewest seats the most.
    assert gpus.low == gpus_for(peak, headroom, int(seat.high))
    assert gpus.likely == sized.gpus == gpus_for(peak, headroom, int(seat.likely))
    assert gpus.high == gpus_for(peak, headroom, int(seat.low))
    cost = sized.cost_per_seat_hour_span
    assert cost is not None
    assert cost.low == pytest.approx(price * share / seat.high)
    assert cost.high == pytest.approx(price * share / seat.low)
    doc = sized.as_dict()
    assert (doc["gpus_low"], doc["gpus"], doc["gpus_high"]) == (gpus.low, gpus.likely, gpus.high)
    assert doc["cost_per_hour_low"] == pytest.approx(gpus.low * price * share, abs=1e-4)
    assert doc["cost_per_hour_high"] == pytest.approx(gpus.high * price * share, abs=1e-4)


@given(st.integers(1, 30), st.integers(1, 10), st.integers(1, 10), st.integers(10, 2000))
def test_a_demand_fleet_on_a_seat_range_is_the_fleet_at_each_end(
    low: int, extra: int, more: int, peak: int
) -> None:
    likely, high = low + extra, low + extra + more
    profile = builtin_profile("office-hours", peak)
    f = demand_fleet(profile, seats_per_card=likely, headroom=0.2, price_per_hour=2.0,
                     seat_range=(low, high))  # fmt: skip
    for rule in ("fixed", "autoscaled"):
        at = {
            s: getattr(
                demand_fleet(profile, seats_per_card=s, headroom=0.2, price_per_hour=2.0), rule
            )
            for s in (low, likely, high)
        }
        span = f.span(rule, "peak_gpus")
        assert span == Span(at[high].peak_gpus, at[likely].peak_gpus, at[low].peak_gpus)
        day = f.span(rule, "cost_per_day")
        assert day is not None
        assert (day.low, day.high) == (at[high].cost_per_day, at[low].cost_per_day)
        doc = f.as_dict()[rule]
        assert (doc["peak_gpus_low"], doc["peak_gpus"], doc["peak_gpus_high"]) == (
            span.low,
            span.likely,
            span.high,
        )


def test_the_recommended_fleet_on_a_ranged_cap_is_a_range(ranged: Recommendation) -> None:
    best = ranged.recommended
    assert best is not None and best.seats_per_card_low < best.seats_per_card_high
    sized = ranged.fleet
    assert sized is not None and sized.gpus_span is not None
    assert sized.gpus_span.low < sized.gpus_span.high  # 200 sessions: the ends differ
    doc = ranged.as_dict()["fleet"]
    assert doc["gpus_high"] == gpus_for(200, ranged.request.headroom, best.seats_per_card_low)
    assert doc["gpus_low"] == gpus_for(200, ranged.request.headroom, best.seats_per_card_high)
    assert doc["cost_per_seat_hour_high"] == pytest.approx(2.5 / best.seats_per_card_low, 1e-3)
    # Every option's fleet, as the options table sizes it, is a range on its own seats.
    for option in ranged.options:
        each = fleet(option, peak_sessions=200, headroom=0.2, price_per_hour=2.5)
        if each is not None and each.gpus_span is not None:
            assert each.gpus_span.high == gpus_for(200, 0.2, max(option.seats_per_card_low, 1)) or (
                option.seats_per_card_low < 1
            )


def test_the_demand_fleet_of_a_ranged_cap_is_a_range(ranged: Recommendation) -> None:
    profile = builtin_profile("office-hours", 200)
    f = plan_fleet(ranged, profile, 30.0)
    assert f is not None
    span = f.span("fixed", "peak_gpus")
    assert span is not None and span.low < span.high
    assert span.likely == f.fixed.peak_gpus


def test_text_says_the_range_and_the_likely_figure(ranged: Recommendation) -> None:
    sized = ranged.fleet
    assert sized is not None and sized.gpus_span is not None
    text = display.span(sized.gpus_span)
    g = sized.gpus_span
    assert text == f"{g.low:,.0f}–{g.high:,.0f}, likely {g.likely:,.0f}"


def _range_cli(cli: Any, *extra: str) -> Any:
    return cli(
        "recommend", "--points", "1:8,3:20", "--seeds", "2", "--duration-s", "5",
        "--peak-sessions", "200", "--price-per-hour", "2.5", *extra,
    )  # fmt: skip


def test_recommend_prints_gpus_and_costs_as_ranges(cli: Any) -> None:
    doc = _range_cli(cli, "--json").json
    f = doc["fleet"]
    assert f["gpus_low"] < f["gpus_high"]
    text = _range_cli(cli).out
    gpus = display.span(from_fields(f, "gpus"), unit=" GPUs")
    assert f"fleet: {gpus} for 200 sessions" in text
    cost = display.span(from_fields(f, "cost_per_seat_hour"), display.money, " per seat-hour")
    assert f"Cost: {cost}" in text  # the cost sentence the page and the report say
    hourly = display.span(from_fields(f, "cost_per_hour"), display.money, " per hour")
    assert hourly in text
