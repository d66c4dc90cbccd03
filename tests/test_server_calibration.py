"""The calibration of a server's curve fitted to its runs' figures
(``planner.validate.server.calibration``), and how a server's load test is judged."""

from __future__ import annotations

import pytest

from planner.errors import BadInput
from planner.sim.calibration import Calibration
from planner.sim.scenario import Scenario
from planner.sim.simulate import simulate
from planner.validate.measured_vs_predicted import Summary
from planner.validate.runs import Run
from planner.validate.server.calibration import _error, calibrated, fit_server

TABLE = tuple(4.0 + 1.5 * b for b in range(1, 65))
PER_REQUEST = 0.5


def _runs(truth: Calibration, sessions: range) -> list[Run]:
    """Runs whose 'measured' figures are the simulator's under a known calibration, on a
    curve carrying a per-request cost."""
    runs = []
    for n in sessions:
        table = tuple(v + b * PER_REQUEST for b, v in enumerate(TABLE, start=1))
        scenario = Scenario(latency_ms=table, sessions=n, policy="triton", duration_s=6.0,
                            queue="all")  # fmt: skip
        measured = Summary.of(simulate(calibrated(truth, scenario, PER_REQUEST)))
        runs.append(Run(scenario, measured, Summary.of(simulate(scenario))))
    return runs


def test_the_fit_recovers_what_a_known_calibration_did() -> None:
    truth = Calibration("c", a_ms=3.0, c_ms=1.2, d_ms=2.0)
    # Up to 13 sessions: below saturation every session gets its full 30 fps (the frame in
    # flight at the end no longer counts against it), so the runs past saturation are
    # where the frame rate tells the per-request cost from the per-frame overhead.
    runs = _runs(truth, range(1, 14, 2))
    found = fit_server(runs, "c", PER_REQUEST)
    for run in _runs(truth, range(2, 12, 2)):  # judged on counts it did not see
        predicted = Summary.of(simulate(calibrated(found, run.scenario, PER_REQUEST)))
        assert predicted.e2e_p50_ms == pytest.approx(run.measured.e2e_p50_ms, rel=0.1)
    uncalibrated = [abs(r.predicted.e2e_p50_ms / r.measured.e2e_p50_ms - 1) for r in runs]
    assert max(uncalibrated) > 0.1  # the correction was needed


def test_a_calibration_swaps_the_measured_per_request_cost_for_its_own() -> None:
    scenario = Scenario(latency_ms=(3.0, 4.0, 5.0), sessions=3, overhead_ms=1.0)
    swapped = calibrated(Calibration("c", a_ms=1.0, c_ms=0.25, d_ms=0.5), scenario, 0.5)
    assert swapped.latency_ms == (3.75, 4.5, 5.25)  # + a, then 0.25 instead of 0.5 per frame
    assert swapped.overhead_ms == 1.5
    unchanged = calibrated(Calibration("c", 0.0, 0.0, 0.0), scenario, 0.0)
    assert unchanged.latency_ms == scenario.latency_ms


def test_a_table_that_would_fall_without_the_per_request_cost_stays_a_table() -> None:
    """A measured curve whose neighbouring points are closer than the per-request cost
    (batch 8 a little slower than 7, less than a request's cost) minus that cost falls;
    the calibrated table keeps each size at least as slow as the smaller ones."""
    scenario = Scenario(latency_ms=(19.4, 19.6, 21.3, 24.8, 26.3, 29.9, 35.7, 35.9), sessions=8)
    swapped = calibrated(Calibration("c", a_ms=0.0, c_ms=0.0, d_ms=0.0), scenario, 0.98)
    assert list(swapped.latency_ms) == sorted(swapped.latency_ms)
    assert swapped.latency_ms[0] == pytest.approx(19.4 - 0.98)
    assert swapped.latency_ms[7] == swapped.latency_ms[6] == pytest.approx(35.7 - 7 * 0.98)


def test_no_latencies_no_fit() -> None:
    run = Run(Scenario(latency_ms=(1.0,), sessions=1), Summary(), Summary())
    with pytest.raises(BadInput, match="no run measured latencies"):
        fit_server([run], "c")


def test_a_trial_a_rounding_error_outside_the_bounds_is_judged_at_the_bound() -> None:
    """Powell's method keeps to its bounds only up to rounding: a load test of a Triton
    server had its line search try c = -1.39e-17 ms, which no calibration may hold, and
    the whole fit was refused, so the server's load test stored no calibration. Such a
    trial is judged as the point on the bound."""
    runs = _runs(Calibration("c", a_ms=0.0, c_ms=0.0, d_ms=3.0), range(2, 9, 3))
    at_bound = _error(runs, PER_REQUEST, 0.04, 0.0, 6.1)
    assert _error(runs, PER_REQUEST, 0.04, -1.3877787807814457e-17, 6.1) == at_bound
    assert _error(runs, PER_REQUEST, -1e-18, 0.0, 6.1) == _error(runs, PER_REQUEST, 0.0, 0.0, 6.1)
