"""A curve's batch cost beyond its median (``planner.curves.batch_cost``): the spread its
points' percentiles give, the per-request cost, and how a plan's runs take both."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from planner.curves.batch_cost import Z90, has_spread, point_sigma, spread_table, with_per_request
from planner.curves.curve import Point, make_curve
from planner.curves.fit import fit_curve
from planner.errors import BadInput
from planner.links.urls import decode, encode
from planner.plan.params import PlanParams
from planner.plan.recommend import recommend
from planner.plan.request import Request, model_spread, model_table
from planner.sim.calibration import Calibration, Sample, fit, fit_spread
from planner.sim.scenario import Sharing
from planner.store.calibrations import calibration, save_calibration
from planner.store.repository import Store

POINTS = (
    Point(1, 10.0, p10_ms=10.0 * math.exp(-Z90 * 0.1), p90_ms=10.0 * math.exp(Z90 * 0.1)),
    Point(4, 30.0),
    Point(16, 100.0, p10_ms=100.0 * math.exp(-Z90 * 0.3), p90_ms=100.0 * math.exp(Z90 * 0.3)),
)


def test_sigma_of_a_point_from_p10_and_p90_from_one_of_them_or_from_std() -> None:
    assert point_sigma(POINTS[0]) == pytest.approx(0.1)
    assert point_sigma(Point(2, 20.0, p90_ms=20.0 * math.exp(Z90 * 0.2))) == pytest.approx(0.2)
    assert point_sigma(Point(2, 20.0, p10_ms=20.0 * math.exp(-Z90 * 0.2))) == pytest.approx(0.2)
    # With a p50 the median is the p50, not the central latency.
    assert point_sigma(Point(2, 21.0, p50_ms=20.0, p90_ms=20.0 * math.exp(Z90 * 0.2))) == (
        pytest.approx(0.2)
    )
    assert point_sigma(Point(2, 20.0, std_ms=2.0)) == pytest.approx(math.sqrt(math.log(1.01)))
    assert point_sigma(Point(2, 20.0)) is None
    assert point_sigma(Point(2, 20.0, p10_ms=0.01, p90_ms=1e5)) == 1.0  # bounded


def test_spread_is_interpolated_in_log_batch_and_held_beyond_the_points() -> None:
    table = spread_table(POINTS, 64)
    assert len(table) == 64
    assert table[0] == pytest.approx(0.1) and table[15] == pytest.approx(0.3)
    # Batch 4 lies halfway between 1 and 16 in log batch: halfway in sigma; its own point
    # has no spread and contributes nothing.
    assert table[3] == pytest.approx(0.2)
    assert table[63] == pytest.approx(0.3) and table[40] == pytest.approx(0.3)
    assert np.all(np.diff(table) >= -1e-12)
    assert spread_table([Point(1, 1.0), Point(2, 2.0)], 8) == ()
    assert has_spread(POINTS) and not has_spread([Point(1, 1.0)])


def test_the_per_request_cost_adds_b_times_it_to_the_table() -> None:
    assert with_per_request((10.0, 12.0, 15.0), 0.5) == (10.5, 13.0, 16.5)
    assert with_per_request((10.0, 12.0), 0.0) == (10.0, 12.0)
    fitted = fit_curve(POINTS)
    plain = model_table(fitted, 8, "central", 0.0, None)
    costly = model_table(fitted, 8, "central", 0.25, None)
    assert costly == pytest.approx([v + 0.25 * b for b, v in enumerate(plain, start=1)])
    # A calibration's c is the per-request cost a load test measured: never both.
    calibrated = Calibration(curve_id="x", a_ms=1.0, c_ms=0.1, d_ms=0.0)
    assert model_table(fitted, 8, "central", 0.25, calibrated) == calibrated.table(plain)


def test_a_curve_carries_its_per_request_cost_in_its_id_and_through_the_store(
    tmp_path: object,
) -> None:
    plain = make_curve(model="m", card="c", points=POINTS)
    costly = make_curve(model="m", card="c", points=POINTS, environment={"per_request_ms": "0.4"})
    assert plain.per_request_ms == 0.0 and costly.per_request_ms == 0.4
    assert costly.id != plain.id
    zero = make_curve(model="m", card="c", points=POINTS, environment={"per_request_ms": 0})
    assert zero.id == plain.id and "per_request_ms" not in zero.environment
    with pytest.raises(BadInput, match="per_request_ms"):
        make_curve(model="m", card="c", points=POINTS, environment={"per_request_ms": "1e9"})
    with Store(f"{tmp_path}/s.duckdb", load_builtins=False) as store:
        store.add_curves([costly])
        back = store.curve(costly.id)
    assert back.per_request_ms == 0.4 and back.id == costly.id


def test_a_plan_on_a_curve_with_a_per_request_cost_runs_slower_batches() -> None:
    fitted = fit_curve(POINTS)
    base = Request(curve=fitted, max_sessions=8, seeds=1, duration_s=1.0)
    costly = Request(curve=fitted, max_sessions=8, seeds=1, duration_s=1.0, per_request_ms=2.0)
    one, other = (r.scenario("batch-all", Sharing(), "central", 6, 0) for r in (base, costly))
    assert np.all(np.array(other.latency_ms) > np.array(one.latency_ms))
    assert other.latency_ms[5] == pytest.approx(one.latency_ms[5] + 12.0)


def test_uncalibrated_the_optimistic_edge_takes_the_per_request_cost_off_the_path() -> None:
    fitted = fit_curve(POINTS)
    for edge in ("central", "pessimistic"):
        plain = model_table(fitted, 8, edge, 0.0, None)
        costly = model_table(fitted, 8, edge, 0.5, None)
        assert costly == pytest.approx([v + 0.5 * b for b, v in enumerate(plain, start=1)])
    assert model_table(fitted, 8, "optimistic", 0.5, None) == model_table(
        fitted, 8, "optimistic", 0.0, None
    )
    # A calibration settles the cost: every edge takes its a + c * b, the optimistic too.
    calibrated = Calibration(curve_id="x", a_ms=1.0, c_ms=0.1, d_ms=0.0)
    optimistic = model_table(fitted, 8, "optimistic", 0.0, None)
    assert model_table(fitted, 8, "optimistic", 0.5, calibrated) == calibrated.table(optimistic)


def test_a_per_request_cost_widens_only_the_high_end_of_an_uncalibrated_plan() -> None:
    """A server's per-request cost moves the likely count and the low end as before (the
    cost on the path) and lifts the high end to what the batches alone allow; a plan says
    so, and a calibrated one does not."""
    fitted = fit_curve(POINTS)
    plain = Request(curve=fitted, policies=("triton",), seeds=2, duration_s=5.0, queue="all")
    costly = replace(plain, per_request_ms=3.0)
    answer = recommend(costly)
    alone, paid = recommend(plain).recommended, answer.recommended
    assert alone is not None and paid is not None
    assert paid.band_cap_high == alone.band_cap_high  # the high end: no cost on the path
    assert paid.cap < alone.cap and paid.cap_low <= alone.cap_low
    assert any("per-request cost" in a for a in answer.assumptions)
    cost = Calibration(curve_id="x", a_ms=0.0, c_ms=3.0, d_ms=0.0)
    calibrated = replace(costly, calibration=cost)
    settled = recommend(calibrated)
    assert not any("per-request cost" in a for a in settled.assumptions)
    assert settled.recommended is not None and settled.recommended.cap_high < alone.cap_high


def test_a_plan_takes_the_curves_spread_unless_turned_off() -> None:
    fitted = fit_curve(POINTS)
    on = Request(curve=fitted, max_sessions=8, seeds=1, duration_s=1.0)
    off = Request(curve=fitted, max_sessions=8, seeds=1, duration_s=1.0, spread=False)
    s_on = on.scenario("batch-all", Sharing(), "central", 6, 0)
    s_off = off.scenario("batch-all", Sharing(), "central", 6, 0)
    assert len(s_on.spread) == len(s_on.latency_ms) and s_on.spread[0] == pytest.approx(0.1)
    assert s_off.spread == ()
    # A calibration that fitted a spread gives its own, at every size.
    fitted_spread = Calibration(curve_id="x", a_ms=0.0, c_ms=0.0, d_ms=0.0, spread_sigma=0.2)
    assert model_spread(fitted, 4, fitted_spread) == (0.2,) * 4
    assert model_spread(fitted, 4, fitted_spread, on=False) == ()
    no_spread = Calibration(curve_id="x", a_ms=0.0, c_ms=0.0, d_ms=0.0)
    assert model_spread(fitted, 4, no_spread) == spread_table(POINTS, 4)


def test_the_spread_switch_travels_in_a_link() -> None:
    params = PlanParams(spread=False)
    assert encode(params)["spread"] == "0"
    assert "spread" not in encode(PlanParams())
    assert decode(PlanParams, {"spread": "off"})[0].spread is False


def test_a_calibration_recovers_a_known_spread_of_batch_times() -> None:
    rng = np.random.default_rng(5)
    sizes = rng.choice([1, 2, 4, 8], size=3000)
    curve = (10.0, 14.0, 18.0, 22.0, 26.0, 30.0, 34.0, 38.0)
    median = np.array(curve)[sizes - 1] + 1.0 + 0.5 * sizes
    durations = median * np.exp(0.25 * rng.standard_normal(sizes.size))
    sample = Sample(sizes, durations, curve, np.array([5.0]), 5.0)
    c = fit([sample], "abc")
    assert c.spread_sigma == pytest.approx(0.25, rel=0.05)
    # Batches that all take their median: no spread; too few batches: not fitted.
    exact = fit([Sample(sizes, median, curve, np.array([5.0]), 5.0)], "abc")
    assert exact.spread_sigma == 0.0
    assert fit_spread(sizes[:10], durations[:10]) is None
    assert "spread" in c.description and "spread_sigma" in c.as_dict()


def test_a_calibrations_spread_is_stored_and_keeps_older_ids(tmp_path: object) -> None:
    old = Calibration(curve_id="x", a_ms=1.0, c_ms=0.1, d_ms=0.0)
    new = Calibration(curve_id="x", a_ms=1.0, c_ms=0.1, d_ms=0.0, spread_sigma=0.3)
    assert new.id != old.id and "spread_sigma" not in old.as_dict()
    with Store(f"{tmp_path}/s.duckdb", load_builtins=False) as store:
        new, old = save_calibration(store, new), save_calibration(store, old)
        assert calibration(store, new.id).spread_sigma == 0.3
        assert calibration(store, old.id).spread_sigma is None
