"""Load tests: the reference worker against the simulator's prediction on the same device
(SPEC §5.2).

``run_loadtest`` measures the batch curve on the device first (or takes a stored one),
runs each (session count, policy) on the reference worker for real
(``planner.validate.worker.serve``), simulates exactly the same scenarios on that curve, and
returns both side by side, with a calibration fitted from the runs
(``planner.sim.calibration``). ``find_cap`` (``planner.validate.judge``) searches upward on
the real worker with the recommendation's own criteria and stopping rule and puts the
measured seat cap beside the predicted one. The options are ``planner.validate.options``,
what a test produced ``planner.validate.runs``. Nothing here prints or stores: callers
(``planner loadtest``, the Validate page) do.

The scenario each run serves is the simulator's: the curve's latency table, the source's
frame rate, the phase model and seed (so the same capture times, bit for bit), the
network delay and overhead, and, with ``camera``, real CPU work on the options' CPU
threads whose cost per job is measured on this machine before the runs and given to the
simulator as the stages' ``pre_ms`` and ``post_ms``.

PyTorch is imported only when a load test runs on a device.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from planner.curves.curve import Curve
from planner.curves.fit import fit_curve
from planner.errors import BadInput
from planner.measure.options import MeasureOptions
from planner.plan.request import Criteria, model_spread
from planner.sim.calibration import Calibration, Sample, fit
from planner.sim.results import e2e_latencies
from planner.sim.scenario import Scenario
from planner.sim.simulate import simulate
from planner.units import Milliseconds
from planner.validate.judge import find_cap
from planner.validate.measured_vs_predicted import (
    Summary,
)
from planner.validate.options import LoadTestOptions, default_batches
from planner.validate.runs import Cap, LoadTest, Progress, ProgressFn, Run
from planner.validate.worker.backends import Backend
from planner.validate.worker.serve import Tick, serve


def measurement_options(options: LoadTestOptions) -> MeasureOptions:
    """The curve measurement a load test makes first: the options' model, device and
    precision, at the batch sizes the runs can form (unless given)."""
    m = options.measure
    if m.batches == MeasureOptions().batches:
        m = replace(m, batches=default_batches(options.sessions))
    return m


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """PyTorch's CPU threads set to ``threads`` for the block, then restored (the
    library also runs inside the dashboard's process)."""
    if threads is None:
        yield
        return
    from planner.measure.devices import require_torch

    torch = require_torch()
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def torch_backend(options: LoadTestOptions, largest: int) -> Any:
    """The reference model on the options' device, warmed up for batches up to
    ``largest``, with the options' camera work (``planner.validate.worker.backends``)."""
    from planner.measure.devices import resolve_device
    from planner.measure.harness import load_model
    from planner.validate.worker.backends import TorchBackend

    m = options.measure
    device = resolve_device(m.device)
    precision = m.precisions[0] if m.precisions else ("fp32" if device == "cpu" else "fp16")
    backend = TorchBackend(
        load_model(m.model, device),
        device,
        precision,
        m.input_shape,
        largest,
        camera=options.camera_size,
        seed=options.seed,
    )
    backend.warm_up(largest)
    return backend


def environment(device: str | None = None) -> dict[str, Any]:
    """What a load test runs on: the machine, the load average now, PyTorch and its
    threads, the device."""
    from planner.measure.devices import host

    env: dict[str, Any] = {"machine": host(), "started_at": _now().isoformat()}
    with contextlib.suppress(OSError):
        env["load_average_start"] = list(os.getloadavg())
    try:
        import torch

        env["torch"] = torch.__version__
        env["torch_threads"] = torch.get_num_threads()
    except ModuleNotFoundError:
        pass
    if device is not None:
        from planner.measure.devices import describe

        with contextlib.suppress(Exception):
            env["device"] = describe(device).get("device_name")
    return env


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def run_loadtest(
    options: LoadTestOptions,
    *,
    curve: Curve | None = None,
    calibration: Calibration | None = None,
    backend: Backend | None = None,
    progress: ProgressFn | None = None,
    criteria: Criteria | None = None,
    find_cap_upto: int | None = None,
    stage_ms: tuple[Milliseconds, Milliseconds] | None = None,
    hold: Callable[[], contextlib.AbstractContextManager[object]] | None = None,
) -> LoadTest:
    """Measure the curve (unless ``curve`` is given), run every (sessions, policy, seed)
    on the reference worker, predict each with the simulator, and fit a calibration.

    ``calibration`` adds a calibrated prediction of each run beside the plain one.
    ``backend`` replaces the PyTorch backend (``planner.validate.worker.backends.SleepBackend`` in
    tests; then ``curve`` and ``stage_ms`` must be given). With ``find_cap_upto``, each
    policy's seat cap is also searched on the worker up to that many sessions under
    ``criteria`` (``find_cap``). ``hold`` gives a context each run (and the curve's
    measurement) is made inside: the dashboard's turn, so that no simulation of another
    visitor competes with a measurement for the cores. Ctrl-C (KeyboardInterrupt) ends
    the test early and returns the runs finished before it, with ``interrupted`` set.

    Raises BadInput (PyTorch missing, a device that is not there, a scenario the worker
    cannot serve) and ``planner.measure.harness.MeasurementFailed``.
    """
    report = progress or (lambda _p: None)
    measuring = curve is None
    units = options.runs + (1 if measuring else 0)
    warnings: list[str] = []
    if backend is None:
        from planner.measure.devices import require_torch, resolve_device

        require_torch()
        device: str | None = resolve_device(options.measure.device)
    else:
        device = None
        if curve is None:
            raise BadInput("a load test with its own backend needs the curve to predict with")
    runs: list[Run] = []
    caps: list[Cap] = []
    interrupted = False
    with torch_threads(options.threads):
        env = environment(device)
        held = hold or contextlib.nullcontext
        if curve is None:
            with held():
                curve, measured_warnings, interrupted = _measure(options, report, units)
            warnings += measured_warnings
        fitted = fit_curve(curve.points)
        largest = max(max(options.sessions), find_cap_upto or 0)
        table = tuple(float(v) for v in fitted.table(max(64, largest)))
        spread = model_spread(fitted, max(64, largest), None, True)
        if not interrupted:
            report(Progress((1 if measuring else 0) / units, "preparing the worker"))
            if backend is None:
                backend = torch_backend(options, largest)
            if stage_ms is None:
                stage_ms = backend.stage_costs() if hasattr(backend, "stage_costs") else (0.0, 0.0)
            pre, post = stage_ms
            done = 1 if measuring else 0
            planned = [
                options.scenario(table, n, policy, options.seed + k, pre, post, spread)
                for n in options.sessions
                for policy in options.policies
                for k in range(options.seeds)
            ]
            try:
                for scenario in planned:
                    label = (
                        f"{scenario.sessions} session{'s' if scenario.sessions != 1 else ''}, "
                        f"{scenario.policy}, seed {scenario.seed}"
                    )

                    def tick(fraction: float, done: int = done, label: str = label) -> None:
                        report(Progress((done + fraction) / units, label))

                    report(Progress(done / units, label))
                    with held():
                        runs.append(measure_run(scenario, backend, calibration, tick))
                    done += 1
                if find_cap_upto is not None:
                    for policy in options.policies:
                        caps.append(
                            find_cap(
                                options, policy, backend, fitted, criteria or Criteria(),
                                find_cap_upto, stage_ms, calibration, report,
                            )
                        )  # fmt: skip
            except KeyboardInterrupt:
                interrupted = True
    with contextlib.suppress(OSError):
        env["load_average_end"] = list(os.getloadavg())
    env["finished_at"] = _now().isoformat()
    fitted_calibration = None
    samples = [sample(r) for r in runs if r.records is not None and r.predicted_results]
    if samples and any(s.sizes.size for s in samples) and any(s.outside_ms.size for s in samples):
        fitted_calibration = fit(samples, curve.id, created_at=_now().replace(tzinfo=None))
    report(Progress(1.0, "done"))
    return LoadTest(
        curve=curve,
        options=options,
        runs=tuple(runs),
        pre_ms=stage_ms[0] if stage_ms else 0.0,
        post_ms=stage_ms[1] if stage_ms else 0.0,
        environment=env,
        calibration=fitted_calibration,
        applied=calibration,
        caps=tuple(caps),
        interrupted=interrupted,
        warnings=tuple(warnings),
    )


def _measure(
    options: LoadTestOptions, report: ProgressFn, units: int
) -> tuple[Curve, list[str], bool]:
    from planner.measure.harness import MeasureProgress, measure_curves

    def step(event: MeasureProgress) -> None:
        report(Progress(event.fraction / units, f"measuring the curve: {event.message}"))

    result = measure_curves(measurement_options(options), step)
    if not result.curves:
        raise BadInput("the measurement of the curve was interrupted; nothing was run")
    return result.curves[0], list(result.warnings), result.interrupted


def measure_run(
    scenario: Scenario,
    backend: Backend,
    calibration: Calibration | None = None,
    tick: Tick | None = None,
) -> Run:
    """Serve one scenario on the worker and predict it; the pair as a ``Run``."""
    records = serve(scenario, backend, on_tick=tick)
    measured = Summary.of(records.results(), records.lateness_ms)
    predicted = simulate(scenario)
    calibrated = None
    if calibration is not None:
        calibrated = Summary.of(simulate(calibration.apply(scenario)))
    return Run(
        scenario=scenario,
        measured=measured,
        predicted=Summary.of(predicted),
        records=records,
        calibrated=calibrated,
        predicted_results=predicted,
    )


def sample(run: Run) -> Sample:
    """What a measured run contributes to a calibration (``planner.sim.calibration``)."""
    if run.records is None:
        raise BadInput("a calibration needs the worker's per-frame records")
    records = run.records.records()
    sizes = records.batch_size
    durations = records.batch_end - records.batch_start
    outside = e2e_latencies(run.scenario, records) - records.frame_latency
    predicted = run.predicted_results or simulate(run.scenario)
    predicted_outside = (
        e2e_latencies(run.scenario, predicted.records) - predicted.records.frame_latency
    )
    model = float(predicted_outside.mean()) if predicted_outside.size else run.scenario.non_gpu_ms
    return Sample(sizes, durations, run.scenario.latency_ms, outside, model)


def calibrate(runs: Sequence[Run], curve_id: str, **metadata: Any) -> Calibration:
    """A calibration fitted from ``runs`` (the worker's records of each)."""
    return fit([sample(r) for r in runs if r.records is not None], curve_id, **metadata)
