"""Calibration: fitting a, c and d from records, and applying them to what the planner
simulates and recommends."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.curves.curve import Point
from planner.curves.fit import fit_curve
from planner.errors import BadInput
from planner.plan.recommend import recommend
from planner.plan.request import Criteria, Request
from planner.sim.calibration import ONE_SIZE, Calibration, Sample, fit
from planner.sim.scenario import Scenario

CURVE = tuple(8.0 + 3.5 * b for b in range(1, 65))


@st.composite
def samples(draw: st.DrawFn) -> tuple[list[Sample], float, float, float]:
    """Runs whose batches take exactly curve + a + c*b and whose frames spend exactly d
    more outside the device than the model says (for each run its own model figure)."""
    a = draw(st.floats(0.0, 20.0))
    c = draw(st.floats(0.0, 5.0))
    d = draw(st.floats(-5.0, 20.0))
    steps = draw(st.lists(st.floats(0.1, 10.0), min_size=16, max_size=16))
    curve = tuple(float(v) for v in np.cumsum([5.0, *steps])[:16])
    out = []
    for _ in range(draw(st.integers(1, 4))):
        sizes = np.array(draw(st.lists(st.integers(1, 16), min_size=1, max_size=30)))
        durations = np.array([curve[b - 1] + a + c * b for b in sizes])
        model = draw(st.floats(0.0, 30.0))
        spread = np.array(draw(st.lists(st.floats(-3.0, 3.0), min_size=1, max_size=20)))
        outside = model + d + (spread - spread.mean())  # zero-mean noise around model + d
        out.append(Sample(sizes, durations, curve, outside, model))
    all_sizes = np.concatenate([s.sizes for s in out])
    if np.unique(all_sizes).size < 2:  # c is only identifiable from two sizes or more
        out.append(Sample(np.array([1, 2]), np.array([curve[0] + a + c, curve[1] + a + 2 * c]),
                          curve, np.zeros(0), 0.0))  # fmt: skip
    return out, a, c, d


@settings(max_examples=200, deadline=None)
@given(samples())
def test_calibration_recovers_known_a_c_and_d(
    case: tuple[list[Sample], float, float, float],
) -> None:
    drawn, a, c, d = case
    calibration = fit(drawn, "abc")
    assert calibration.a_ms == pytest.approx(a, abs=1e-6)
    assert calibration.c_ms == pytest.approx(c, abs=1e-6)
    assert calibration.d_ms == pytest.approx(d, abs=1e-6)
    assert calibration.note == ""
    assert calibration.batches == sum(s.sizes.size for s in drawn)


def test_one_batch_size_fits_a_alone_and_says_so() -> None:
    sample = Sample(np.array([3, 3, 3]), np.array([20.0, 22.0, 24.0]), CURVE, np.array([1.0]), 0.0)
    calibration = fit([sample], "abc")
    assert calibration.c_ms == 0.0
    assert calibration.a_ms == pytest.approx(22.0 - CURVE[2])
    assert calibration.note == ONE_SIZE
    assert "c is not fitted" in calibration.description


def test_a_worker_faster_than_the_curve_is_not_made_faster_still() -> None:
    # Non-negative least squares: batches shorter than the curve give a = c = 0.
    sample = Sample(np.array([1, 2]), np.array([CURVE[0] - 1, CURVE[1] - 2]), CURVE,
                    np.array([0.0]), 0.0)  # fmt: skip
    calibration = fit([sample], "abc")
    assert (calibration.a_ms, calibration.c_ms) == (0.0, 0.0)


def test_nothing_to_fit_is_bad_input() -> None:
    with pytest.raises(BadInput, match="no batch"):
        fit([], "abc")
    empty = Sample(np.array([1]), np.array([10.0]), CURVE, np.zeros(0), 0.0)
    with pytest.raises(BadInput, match="no frame"):
        fit([empty], "abc")


def test_applying_a_calibration_changes_the_table_and_the_overhead_only() -> None:
    calibration = Calibration("abc", a_ms=2.0, c_ms=0.5, d_ms=-3.0)
    s = Scenario(latency_ms=CURVE, sessions=4, overhead_ms=1.0, policy="batch-all")
    applied = calibration.apply(s)
    assert applied.latency_ms[:3] == (CURVE[0] + 2.5, CURVE[1] + 3.0, CURVE[2] + 3.5)
    assert applied.overhead_ms == 0.0  # 1 - 3, never below zero
    assert applied.with_(latency_ms=s.latency_ms, overhead_ms=s.overhead_ms) == s


def test_a_calibrations_id_is_short_stable_and_names_its_figures() -> None:
    when = datetime(2026, 12, 1, 10, 0, 0)
    one = Calibration("abc", 1.0, 0.5, 2.0, loadtest=3, created_at=when)
    assert one.id == Calibration("abc", 1.0, 0.5, 2.0, loadtest=3, created_at=when).id
    assert len(one.id) == 12 and one.id.isalnum()
    assert one.id != Calibration("abc", 1.5, 0.5, 2.0, loadtest=3, created_at=when).id
    assert "load test 3 (2026-12-01)" in one.description


def test_bad_figures_are_refused() -> None:
    with pytest.raises(BadInput) as caught:
        Calibration("abc", a_ms=-1.0, c_ms=float("nan"), d_ms=float("inf"))
    assert len(caught.value.problems) == 3


def test_a_calibrated_request_simulates_the_calibrated_worker() -> None:
    fitted = fit_curve([Point(1, 10.0), Point(2, 14.0), Point(4, 22.0)])
    calibration = Calibration("abc", a_ms=3.0, c_ms=1.0, d_ms=2.0)
    plain = Request(curve=fitted, policies=("batch-all",), seeds=2, duration_s=5.0, max_sessions=8)
    calibrated = Request(
        curve=fitted, policies=("batch-all",), seeds=2, duration_s=5.0, max_sessions=8,
        calibration=calibration,
    )  # fmt: skip
    s0 = plain.scenario("batch-all", plain.sharings[0], "central", 3, 0)
    s1 = calibrated.scenario("batch-all", calibrated.sharings[0], "central", 3, 0)
    assert s1.latency_ms[1] == s0.latency_ms[1] + 3.0 + 2.0
    assert s1.overhead_ms == s0.overhead_ms + 2.0
    # Slower batches and more time outside the GPU can only cost seats.
    before = recommend(plain).options[0].cap
    after = recommend(calibrated)
    assert after.options[0].cap <= before
    assert after.as_dict()["calibration"]["a_ms"] == 3.0
    assert any("Calibrated by" in line for line in after.assumptions)
    assert recommend(plain).as_dict()["calibration"] is None


def test_the_objective_of_aimd_and_deadline_leaves_room_for_the_calibrated_overhead() -> None:
    fitted = fit_curve([Point(1, 10.0), Point(2, 14.0)])
    request = Request(
        curve=fitted, criteria=Criteria(budget_ms=50.0, overhead_ms=5.0),
        calibration=Calibration("abc", 0.0, 0.0, 7.0),
    )  # fmt: skip
    assert request.objective_ms == 50.0 - 12.0
