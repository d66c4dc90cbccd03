"""A calibration of a server's curve from its load test's runs (SPEC §5.2's a, c and d).

A server's records say when each request was sent and answered, not which batch ran it,
so the reference worker's fit (``planner.sim.calibration.fit``: batch durations against
the curve) has nothing to fit. Here the same three figures are fitted to what the runs
measured instead: ``a`` (ms per batch) and ``c`` (ms per request of a batch), both at
least 0, and ``d`` (ms per frame outside the device, either sign), chosen to minimise the
squared log errors of each run's p50 and p99 end-to-end latency and its slowest session's
frame rate, the simulator predicting every run (``scipy.optimize.minimize``, Powell's
method within the bounds, from no correction). The fit and the judgement use the same
runs' scenarios, so it is judged on other runs (``planner.validate.accuracy``: odd session
counts fitted, even ones judged).

The runs' scenarios carry the curve's per-request cost in their tables (``L(b) + b p``);
a calibration's ``c`` is that cost as the load test measured it and replaces it, as it
does in a plan (``planner.plan.request.model_table``). So the fit starts from ``c = p`` on
the tables without it (``without_requests``), and a calibrated prediction is made there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from planner.errors import BadInput
from planner.sim.calibration import Calibration
from planner.sim.scenario import Scenario
from planner.sim.simulate import simulate
from planner.validate.measured_vs_predicted import Summary
from planner.validate.runs import Run

BOUND_MS = 100.0
"""The largest correction considered per batch, per request and per frame (ms)."""


def without_requests(scenario: Scenario, per_request_ms: float) -> Scenario:
    """``scenario`` with the per-request cost taken out of its table again."""
    if not per_request_ms:
        return scenario
    table = tuple(v - b * per_request_ms for b, v in enumerate(scenario.latency_ms, start=1))
    return scenario.with_(latency_ms=table)


def calibrated(calibration: Calibration, scenario: Scenario, per_request_ms: float) -> Scenario:
    """A server run's scenario as ``calibration`` predicts it."""
    return calibration.apply(without_requests(scenario, per_request_ms))


def _error(runs: Sequence[Run], per_request: float, a: float, c: float, d: float) -> float:
    trial = Calibration("fit", a_ms=a, c_ms=c, d_ms=d)
    total = 0.0
    for run in runs:
        predicted = Summary.of(simulate(calibrated(trial, run.scenario, per_request)))
        for name in ("e2e_p50_ms", "e2e_p99_ms", "min_fps"):
            measured, model = getattr(run.measured, name), getattr(predicted, name)
            if measured and model and measured > 0 and model > 0:
                total += math.log(model / measured) ** 2
            elif measured:
                total += 25.0  # nothing delivered where the server delivered: far off
    return total


def fit_server(runs: Sequence[Run], curve_id: str, per_request_ms: float = 0.0) -> Calibration:
    """The calibration of ``curve_id`` (whose per-request cost is ``per_request_ms``) that
    best predicts ``runs`` (see the module docstring); BadInput when no run measured
    latencies to fit to."""
    from scipy.optimize import minimize

    usable = [r for r in runs if r.measured.e2e_p50_ms and r.measured.e2e_p99_ms]
    if not usable:
        raise BadInput("no run measured latencies to fit a calibration to")
    found = minimize(
        lambda x: _error(usable, per_request_ms, *x),
        np.array([0.0, per_request_ms, 0.0]),
        method="Powell",
        bounds=[(0.0, BOUND_MS), (0.0, BOUND_MS), (-BOUND_MS, BOUND_MS)],
        options={"xtol": 1e-2, "ftol": 1e-4, "maxfev": 400},
    )
    a, c, d = (float(v) for v in found.x)
    return Calibration(
        curve_id,
        a_ms=max(a, 0.0),
        c_ms=max(c, 0.0),
        d_ms=d,
        frames=sum(r.measured.frames for r in usable),
        note=(
            "fitted to the runs' p50, p99 and slowest-session frame rate (a server's records "
            "hold no batches)"
        ),
    )
