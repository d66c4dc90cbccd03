"""Curve fitting: behaviour on known cases, acceptance on the built-in curves, properties."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.curves.curve import Point
from planner.curves.fit import HONOUR, fit_curve, straight_line
from planner.curves.shape import GAIN_CAP
from planner.errors import BadInput

LAPTOP_FP16 = [(1, 9.82), (2, 20.36), (3, 32.71), (4, 46.15), (8, 103.77), (16, 221.25)]
LAPTOP_FP32 = [(1, 15.11), (2, 34.21), (3, 57.10), (4, 79.69), (8, 178.09), (16, 366.10)]
SERVER = [(1, 8.0), (3, 20.0)]


def pts(pairs: list[tuple[int, float]]) -> list[Point]:
    return [Point(batch=b, latency_ms=ms) for b, ms in pairs]


def best_throughput(pairs: list[tuple[int, float]]) -> float:
    return max(1000.0 * b / ms for b, ms in pairs)


# -- known cases -----------------------------------------------------------------------


def test_two_points_interpolate_on_the_straight_line_and_extrapolate_with_a_band() -> None:
    fit = fit_curve(pts(SERVER))
    assert fit.latency(2) == pytest.approx(14.0)
    assert fit.latency(5) == pytest.approx(32.0)  # the last step, 6 ms per frame
    assert fit.optimistic(5) < fit.latency(5) < fit.pessimistic(5)
    assert list(fit.extrapolated([1, 2, 3, 4])) == [False, False, False, True]
    assert fit.loo is None
    assert fit.reconciled == ()


def test_latency_throughput_and_time_per_frame_agree() -> None:
    fit = fit_curve(pts(LAPTOP_FP16))
    b = np.array([1, 5, 16, 40])
    for edge in ("central", "optimistic", "pessimistic"):
        ms = fit.edge(b, edge)
        assert np.allclose(fit.throughput(b, edge), 1000 * b / ms)
        assert np.allclose(fit.time_per_frame(b, edge), ms / b)
    assert np.array_equal(fit.table(64), fit.latency(np.arange(1, 65)))
    assert fit.table(64).dtype == np.float64 and fit.table(64)[0] == pytest.approx(9.82)
    assert fit.table(8, "pessimistic")[7] == pytest.approx(float(fit.pessimistic(8)))
    assert np.shape(fit.latency(3)) == ()


def test_points_may_come_in_any_order() -> None:
    shuffled = fit_curve(pts(LAPTOP_FP16[::-1]))
    ordered = fit_curve(pts(LAPTOP_FP16))
    assert shuffled == ordered
    assert np.array_equal(shuffled.table(100), ordered.table(100))


def test_points_may_be_any_iterable_of_numpy_numbers() -> None:
    fit = fit_curve(Point(np.int64(b), np.float32(ms)) for b, ms in SERVER)
    assert fit.points == tuple(pts(SERVER))
    assert type(fit.points[0].batch) is int and type(fit.points[0].latency_ms) is float
    assert fit == fit_curve(pts(SERVER))


def test_one_point_works_with_a_wide_band_and_says_the_shape_is_assumed() -> None:
    fit = fit_curve(pts([(4, 20.0)]))
    assert fit.latency(4) == pytest.approx(20.0)
    assert fit.pessimistic(8) >= 40.0 - 1e-9  # no batching gain
    assert fit.optimistic(8) <= 20.0 + 1e-9  # full batching gain
    assert fit.optimistic(2) <= 10.0 + 1e-9 and fit.pessimistic(2) >= 20.0 - 1e-9
    assert (fit.pessimistic(8) - fit.optimistic(8)) / fit.latency(8) > 0.5
    assert any("assumed" in sentence for sentence in fit.assumptions)
    assert "assumed" in fit.description
    assert fit.loo is None


def test_decreasing_latency_is_reconciled_and_the_points_not_honoured_are_listed() -> None:
    measured = [(1, 12.96), (2, 13.18), (4, 12.99), (8, 12.82), (16, 15.8), (32, 29.54)]
    fit = fit_curve(pts(measured))
    table = fit.table(64)
    assert np.all(np.diff(table) >= 0)
    assert fit.reconciled == (2, 8)
    for b, ms in measured:
        if b not in fit.reconciled:
            assert abs(float(fit.latency(b)) - ms) <= HONOUR * ms
    assert any("batches 2 and 8 could not be honoured" in s for s in fit.assumptions)


def test_a_reported_spread_widens_the_band_at_that_point() -> None:
    noisy = [Point(1, 10.0), Point(2, 12.0, p10_ms=11.0, p90_ms=13.5), Point(4, 16.0)]
    fit = fit_curve(noisy)
    assert fit.optimistic(2) == pytest.approx(11.0)  # exactly the reported spread
    assert fit.pessimistic(2) == pytest.approx(13.5)
    quiet = fit_curve([Point(1, 10.0), Point(2, 12.0), Point(4, 16.0)])
    assert (quiet.pessimistic(2) - quiet.optimistic(2)) / 12.0 <= 0.02
    # A one-sided spread widens only its own side; a standard deviation widens both.
    lopsided = fit_curve([Point(1, 10.0), Point(2, 12.0, p10_ms=11.95, p90_ms=13.0)])
    assert lopsided.optimistic(2) == pytest.approx(quiet.optimistic(2))
    assert lopsided.pessimistic(2) == pytest.approx(13.0)
    spread = fit_curve([Point(1, 10.0), Point(2, 12.0, std_ms=0.6), Point(4, 16.0)])
    assert float(spread.pessimistic(2) - spread.optimistic(2)) == pytest.approx(1.2)


def test_throughput_is_bounded_and_the_optimistic_edge_says_what_it_assumes() -> None:
    flat = [(1, 10.0), (2, 10.0), (4, 10.0), (8, 10.0)]
    fit = fit_curve(pts(flat))
    best = best_throughput(flat)
    # Flat latency sets no limit of its own, so the bound does: the central estimate
    # reaches it far out, and neither it nor the optimistic edge goes beyond it.
    central = float(fit.throughput(4096))
    assert math.isfinite(central) and central == pytest.approx(GAIN_CAP * best)
    assert central <= GAIN_CAP * best
    assert float(fit.throughput(4096, "optimistic")) <= GAIN_CAP * best
    # The pessimistic edge gives up the remaining batching gain with distance: far out it is
    # close to "no further gain" (the throughput measured at batch 8).
    assert best <= float(fit.throughput(4096, "pessimistic")) <= 1.1 * best
    text = " ".join(fit.assumptions)
    assert "optimistic edge assumes" in text and f"{GAIN_CAP:g}x" in text


def test_the_central_estimate_follows_the_last_step_past_four_times_the_measured_gain() -> None:
    # LLM-decode-like: each extra sequence costs 0.5 ms, so far out the data put throughput
    # at 2,000 frames/s, 5.75x the best measured (348 frames/s at batch 4). The central
    # estimate keeps the measured marginal cost instead of stopping at a fixed gain.
    curve = [(1, 10.0), (2, 10.5), (4, 11.5)]
    fit = fit_curve(pts(curve))
    best = best_throughput(curve)
    assert fit.latency(256) == pytest.approx(11.5 + 252 * 0.5)
    assert float(fit.throughput(256)) > 5 * best
    assert float(fit.throughput(1 << 20)) == pytest.approx(2000.0, rel=1e-3)
    assert any("levels off towards 2,000 frames/s" in s for s in fit.assumptions)


def test_super_linear_curve_keeps_getting_worse_per_frame_on_the_pessimistic_edge() -> None:
    fit = fit_curve(pts(LAPTOP_FP16[:4]))
    per_frame = fit.time_per_frame(np.array([4, 8, 16, 32]), "pessimistic")
    assert np.all(np.diff(per_frame) > 0)
    assert any("batching hurts" in sentence for sentence in fit.assumptions)


def test_bad_points_are_rejected_with_reasons() -> None:
    with pytest.raises(BadInput, match="above zero"):
        fit_curve([Point(1, 0.0)])
    with pytest.raises(BadInput, match="above zero"):
        fit_curve([Point(1, -3.0), Point(2, 4.0)])
    with pytest.raises(BadInput, match="above zero"):
        fit_curve([Point(1, float("nan"))])
    with pytest.raises(BadInput, match="at least 1"):
        fit_curve([Point(0, 3.0)])
    with pytest.raises(BadInput, match="twice"):
        fit_curve([Point(2, 3.0), Point(2, 4.0)])
    with pytest.raises(BadInput, match="at least one point"):
        fit_curve([])


def test_evaluating_outside_batch_one_or_an_unknown_edge_is_an_error() -> None:
    fit = fit_curve(pts(SERVER))
    with pytest.raises(ValueError, match="at least 1"):
        fit.latency(0)
    with pytest.raises(ValueError, match="edge"):
        fit.edge(2, "median")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="upto"):
        fit.table(0)


def test_a_fitted_curve_is_immutable() -> None:
    fit = fit_curve(pts(SERVER))
    with pytest.raises(dataclasses.FrozenInstanceError):
        fit.description = "changed"  # type: ignore[misc]
    with pytest.raises(ValueError):
        fit._shape.latencies[0] = 1.0
    assert hash(fit) == hash(fit_curve(pts(SERVER)))


# -- the straight-line method ------------------------------------------------------------


def test_straight_line_is_exactly_the_specified_baseline() -> None:
    line = straight_line(pts([(1, 10.0), (4, 16.0), (8, 40.0)]))
    assert line(np.array([1.0, 2.0, 4.0, 6.0, 8.0])) == pytest.approx([10, 12, 16, 28, 40])
    assert line(np.array([16.0]))[0] == pytest.approx(40 + 6 * 8)  # last two points
    below = straight_line(pts([(4, 16.0), (8, 40.0)]))
    assert below(np.array([2.0]))[0] == pytest.approx(16 - 6 * 2)  # first two points
    one = straight_line(pts([(2, 10.0)]))
    assert one(np.array([1.0, 6.0])) == pytest.approx([5.0, 30.0])  # proportional
    falling = straight_line(pts([(1, 10.0), (2, 9.0)]))
    assert falling(np.array([4.0]))[0] == pytest.approx(7.0)  # as measured, not reconciled


# -- leave one out -----------------------------------------------------------------------


def test_leave_one_out_compares_fit_and_straight_line_on_the_same_points() -> None:
    fit = fit_curve(pts(LAPTOP_FP16))
    loo = fit.loo
    assert loo is not None
    assert [p.batch for p in loo.points] == [b for b, _ in LAPTOP_FP16]
    held = loo.points[4]  # batch 8, predicted from the other five
    rest = pts(LAPTOP_FP16[:4] + LAPTOP_FP16[5:])
    assert held.predicted_ms == pytest.approx(float(fit_curve(rest).latency(8)))
    assert held.straight_line_ms == pytest.approx(float(straight_line(rest)(np.array([8.0]))[0]))
    assert loo.fit == pytest.approx(np.mean([p.error for p in loo.points]))
    assert loo.straight_line == pytest.approx(np.mean([p.straight_line_error for p in loo.points]))
    assert fit_curve(pts(LAPTOP_FP16[:2])).loo is None
    assert fit_curve(pts(LAPTOP_FP16[:3])).loo is not None


# -- measure next ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pairs",
    [
        [(1, 12.78), (64, 23.18)],  # flat, then saturating (ResNet-50, V100, mixed precision)
        [(1, 10.7), (64, 152.73)],  # saturating early (ResNet-50, T4, FP32)
        [(1, 8.0), (64, 200.0)],
        [(1, 10.0), (64, 640.0)],  # proportional: nothing to learn, so the middle
    ],
)
def test_measure_next_between_two_far_points_picks_a_batch_between_them(
    pairs: list[tuple[int, float]],
) -> None:
    choice = fit_curve(pts(pairs)).measure_next(64)
    assert choice is not None and 4 <= choice <= 32


@pytest.mark.parametrize("pairs", [LAPTOP_FP16[:4], [(1, 4.69), (2, 5.0), (3, 5.5), (4, 9.29)]])
def test_measure_next_after_small_batches_goes_beyond_them(
    pairs: list[tuple[int, float]],
) -> None:
    choice = fit_curve(pts(pairs)).measure_next(64)
    assert choice is not None and choice > 4


def test_measure_next_follows_the_weights_and_stops_when_all_is_measured() -> None:
    fit = fit_curve(pts([(1, 10.0), (64, 200.0)]))
    weights = np.zeros(64)
    weights[:3] = 1.0  # only batch sizes 1..3 matter
    assert fit.measure_next(64, weights) in (2, 3)
    assert fit_curve(pts([(1, 5.0), (2, 8.0)])).measure_next(2) is None
    with pytest.raises(ValueError, match="weights"):
        fit.measure_next(64, np.ones(10))


# -- acceptance on the built-in curves -----------------------------------------------------


def test_builtin_curves_beat_the_straight_line_and_the_band_holds_every_held_out_point(
    store,
) -> None:
    multi = [c for c in store.curves() if len(c.points) >= 3]
    assert len(multi) >= 2
    for curve in multi:
        loo = fit_curve(curve.points).loo
        assert loo is not None
        assert loo.fit <= loo.straight_line, curve.label
        assert all(p.inside for p in loo.points), curve.label


@pytest.mark.parametrize("pairs", [LAPTOP_FP16, LAPTOP_FP32])
def test_laptop_curve_fitted_on_small_batches_holds_8_and_16_in_its_band(
    pairs: list[tuple[int, float]],
) -> None:
    fit = fit_curve(pts([p for p in pairs if p[0] <= 4]))
    for b, ms in pairs:
        if b in (8, 16):
            assert fit.optimistic(b) <= ms <= fit.pessimistic(b), b


# -- properties over random plausible curves ---------------------------------------------


@st.composite
def curves(draw: st.DrawFn, noisy: bool = False) -> list[Point]:
    """1-8 points of a rising curve: a fixed cost, a per-frame cost and a knee between them,
    optionally worse per frame at large batches (super-linear), optionally noisy."""
    batches = draw(st.lists(st.integers(1, 256), min_size=1, max_size=8, unique=True))
    fixed = draw(st.floats(0.2, 500))
    per_frame = draw(st.floats(0.001, 50))
    knee = draw(st.floats(0.5, 6))
    spill = draw(st.sampled_from([0.0, 0.0, draw(st.floats(0.0, 0.4))]))
    out = []
    for b in sorted(batches):
        ms = (fixed**knee + (per_frame * b) ** knee) ** (1 / knee) * b**spill
        if noisy:
            ms *= draw(st.floats(0.97, 1.03))
        out.append(Point(batch=b, latency_ms=float(ms)))
    return out


GRID = np.arange(1, 4097, dtype=np.float64)
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(curves(noisy=True))
def test_fit_honours_each_point_within_noise_unless_reconciled(points: list[Point]) -> None:
    fit = fit_curve(points)
    for p in points:
        if p.batch not in fit.reconciled:
            assert abs(float(fit.latency(p.batch)) - p.latency_ms) <= HONOUR * p.latency_ms
        band = float(fit.pessimistic(p.batch) - fit.optimistic(p.batch))
        assert band <= 0.02 * float(fit.latency(p.batch)) + 1e-12
    if fit.reconciled:
        assert any("reconciled" in s for s in fit.assumptions)


@PROPERTY
@given(curves(noisy=True))
def test_latency_never_decreases_and_the_band_contains_it(points: list[Point]) -> None:
    fit = fit_curve(points)
    central, low, high = fit.band(GRID)
    assert np.all(np.isfinite(central)) and np.all(central > 0)
    assert np.all(np.diff(central) >= 0)
    assert np.all(np.diff(low) >= 0) and np.all(np.diff(high) >= 0)
    assert np.all(low <= central) and np.all(central <= high)


@PROPERTY
@given(curves())
def test_between_measured_points_there_is_no_overshoot(points: list[Point]) -> None:
    fit = fit_curve(points)
    measured = np.array([p.batch for p in points], dtype=np.float64)
    at_points = fit.latency(measured)
    for i in range(len(measured) - 1):
        inside = np.linspace(measured[i], measured[i + 1], 50)
        values = fit.latency(inside)
        assert values.min() >= at_points[i] - 1e-9
        assert values.max() <= at_points[i + 1] + 1e-9


@PROPERTY
@given(curves(noisy=True))
def test_the_band_grows_with_distance_beyond_the_measured_range(points: list[Point]) -> None:
    fit = fit_curve(points)
    last = points[-1].batch
    above = last * 2 ** np.arange(0.25, 12, 0.25)
    central, low, high = fit.band(above)
    width = high - low
    assert np.all(np.diff(width) >= -1e-9 * width[:-1])
    assert np.all(np.diff(width / central) >= -1e-9)
    first = points[0].batch
    if first >= 4:
        below = first / 2 ** np.arange(0.25, math.log2(first), 0.25)
        central, low, high = fit.band(below)
        width = high - low
        assert np.all(np.diff(width / central) >= -1e-9)


@PROPERTY
@given(curves(noisy=True))
def test_throughput_cannot_grow_without_bound(points: list[Point]) -> None:
    fit = fit_curve(points)
    best = max(1000.0 * p.batch / p.latency_ms for p in points)
    central = float(fit.throughput(4096))
    assert math.isfinite(central)
    assert central <= GAIN_CAP * best
    assert float(fit.throughput(4096, "optimistic")) <= GAIN_CAP * best


@PROPERTY
@given(curves(noisy=True))
def test_leave_one_out_exists_from_three_points(points: list[Point]) -> None:
    fit = fit_curve(points)
    if len(points) < 3:
        assert fit.loo is None
        return
    loo = fit.loo
    assert loo is not None and len(loo.points) == len(points)
    assert math.isfinite(loo.fit) and math.isfinite(loo.straight_line)
    assert all(p.low_ms <= p.predicted_ms <= p.high_ms for p in loo.points)


@settings(max_examples=25, deadline=None)
@given(curves())
def test_measure_next_names_an_unmeasured_batch(points: list[Point]) -> None:
    choice = fit_curve(points).measure_next(64)
    measured = {p.batch for p in points}
    if set(range(1, 65)) <= measured:
        assert choice is None
    else:
        assert choice is not None and 1 <= choice <= 64 and choice not in measured


def test_the_assumptions_write_large_throughputs_as_people_read_them() -> None:
    fitted = fit_curve([Point(1, 0.05), Point(2, 0.06)])  # 33,333 frames/s at batch 2
    text = " ".join(fitted.assumptions)
    assert "e+" not in text
    assert "best measured (33,333 frames/s, so at most 533,333 frames/s)" in text
