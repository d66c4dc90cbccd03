"""A calibration of a server's curve from its load test's runs (SPEC §5.2's a, c and d).

A server's records say when each request was sent and answered, not which batch ran it,
so the reference worker's fit (``planner.sim.calibration.fit``: batch durations against
the curve) has nothing to fit. Here the same three figures are fitted to what the runs
measured instead: ``a`` (ms per batch) and ``c`` (ms per request of a batch), both at
least 0, and ``d`` (ms per frame outside the device, either sign, but not below minus the
runs' overhead, where it would change nothing), chosen to minimise the squared log
errors of each run's p50 and p99 end-to-end latency and its slowest session's frame
rate, the simulator predicting every run (``scipy.optimize.minimize``, Powell's method
within the bounds, from no correction). The fit and the judgement use the same
runs' scenarios, so it is judged on other runs (``planner.validate.accuracy``: odd session
counts fitted, even ones judged).

The runs' scenarios carry the curve's per-request cost in their tables (``L(b) + b p``);
a calibration's ``c`` is that cost as the load test measured it and replaces it, as it
does in a plan (``planner.plan.request.model_table``). So the fit starts from ``c = p``,
and a calibrated prediction swaps ``p`` for ``c`` (``calibrated``).
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


def calibrated(calibration: Calibration, scenario: Scenario, per_request_ms: float) -> Scenario:
    """A server run's scenario as ``calibration`` predicts it: the measured per-request
    cost replaced by the calibration's ``c`` and ``a`` added, in one step.

    Taking the measured cost out alone can leave a table that falls with batch size
    (where the curve's own steps are smaller than that cost, as a measured curve's
    neighbouring points can be); if the calibrated table still falls somewhere, each size
    takes the largest time of the sizes up to it: a batch never runs faster than a
    smaller one.
    """
    table = np.asarray(scenario.latency_ms, dtype=np.float64)
    sizes = np.arange(1, table.size + 1, dtype=np.float64)
    table = table + calibration.a_ms + sizes * (calibration.c_ms - per_request_ms)
    table = np.maximum.accumulate(table)
    return scenario.with_(
        latency_ms=tuple(float(v) for v in table),
        overhead_ms=calibration.overhead(scenario.overhead_ms),
    )


def _within(value: float, low: float) -> float:
    """``value`` held in ``[low, BOUND_MS]``: Powell's method keeps to its bounds only up
    to rounding, and its line search can try a point a hair outside them (a c of
    -1e-17), which no calibration may hold."""
    return min(max(float(value), low), BOUND_MS)


def _error(runs: Sequence[Run], per_request: float, a: float, c: float, d: float) -> float:
    trial = Calibration("fit", a_ms=_within(a, 0.0), c_ms=_within(c, 0.0), d_ms=d)
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
    # A per-frame overhead never falls below 0 (``Calibration.overhead``): a d below the
    # runs' smallest overhead would change nothing and only read as a large negative time.
    lowest_d = -min(BOUND_MS, min(float(r.scenario.overhead_ms) for r in usable))
    found = minimize(
        lambda x: _error(usable, per_request_ms, *x),
        np.array([0.0, per_request_ms, 0.0]),
        method="Powell",
        bounds=[(0.0, BOUND_MS), (0.0, BOUND_MS), (lowest_d, BOUND_MS)],
        options={"xtol": 1e-2, "ftol": 1e-4, "maxfev": 400},
    )
    a, c, d = (float(v) for v in found.x)
    return Calibration(
        curve_id,
        a_ms=_within(a, 0.0),
        c_ms=_within(c, 0.0),
        d_ms=_within(d, lowest_d),
        frames=sum(r.measured.frames for r in usable),
        note=(
            "fitted to the runs' p50, p99 and slowest-session frame rate (a server's records "
            "hold no batches)"
        ),
    )
