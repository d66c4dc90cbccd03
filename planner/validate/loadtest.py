"""Load tests: the reference worker against the simulator's prediction on the same device
(SPEC §5.2).

``run_loadtest`` measures the batch curve on the device first (or takes a stored one),
runs each (session count, policy) on the reference worker for real
(``planner.validate.worker.serve``), simulates exactly the same scenarios on that curve, and
returns both side by side, with a calibration fitted from the runs
(``planner.sim.calibration``). ``find_cap`` searches upward on the real worker with the
recommendation's own criteria and stopping rule and puts the measured seat cap beside the
predicted one. Nothing here prints or stores: callers (``planner loadtest``, the
Validate page) do.

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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np

from planner import limits
from planner.curves.curve import Curve, parse_resolution
from planner.curves.fit import FittedCurve, fit_curve
from planner.errors import BadInput
from planner.measure.options import MeasureOptions, ModelSpec
from planner.plan.recommend import Criteria, Request, failures, recommend
from planner.sim.calibration import Calibration, Sample, fit
from planner.sim.policies import POLICIES
from planner.sim.results import Results, e2e_latencies
from planner.sim.scenario import PHASES, Scenario
from planner.sim.simulate import simulate
from planner.sim.stages import WorkerStages
from planner.sim.sweep import Pooled, pool
from planner.units import FramesPerSecond, Milliseconds, Seconds
from planner.validate.measured_vs_predicted import (
    METRICS,
    Figure,
    Interval,
    Summary,
    compare,
    loaded,
    point,
)
from planner.validate.worker.backends import Backend
from planner.validate.worker.frames import WorkerRun
from planner.validate.worker.serve import Tick, serve

MAX_LOADTEST_SESSIONS = 256
"""The most sessions one load test serves (the table covers batch 1..max(64, this))."""
LOADTEST_STAGES = WorkerStages(cpu_workers=1)
"""A load test's stages unless told: no network delay, and one CPU thread for the camera
work (the CPU work itself is measured, not given)."""


@dataclass(frozen=True)
class LoadTestOptions:
    """What a load test runs: the session counts and policies, the scenario they share,
    the CPU work, and how the curve is measured (``measure``; its precision list holds at
    most one precision, the one the worker runs at).

    ``seeds`` runs each (sessions, policy) on seeds ``seed .. seed + seeds - 1`` (phases
    drawn from each). ``stages`` gives the network delay each way and the CPU threads
    (``cpu_workers``) of the camera work: ``camera`` (``WIDTHxHEIGHT``) turns on real pre
    work (a uint8 camera frame resized and normalised) and post work (the heatmap's
    arg-max) on those threads; without it the worker does no CPU work. What that work
    costs is measured on the machine (``stages_for``), so the stages' ``pre_ms`` and
    ``post_ms`` stay 0 here. ``threads`` sets PyTorch's CPU threads for the test (None:
    leave PyTorch's setting).
    """

    sessions: tuple[int, ...] = (1, 2, 3, 4)
    policies: tuple[str, ...] = ("batch-all", "oldest-first")
    fps: FramesPerSecond = 30.0
    duration_s: Seconds = 10.0
    phases: str = "random"
    seed: int = 0
    seeds: int = 1
    jitter_ms: Milliseconds = 0.0
    stages: WorkerStages = LOADTEST_STAGES
    overhead_ms: Milliseconds = 0.0
    max_batch: int | None = None
    max_queue_delay_us: float | None = None
    slo_ms: Milliseconds | None = None
    camera: str | None = None
    threads: int | None = None
    measure: MeasureOptions = field(default_factory=MeasureOptions)

    def __post_init__(self) -> None:
        problems = []
        sessions = tuple(self.sessions)
        if not sessions:
            problems.append("give at least one session count")
        elif not all(isinstance(n, int) and 1 <= n <= MAX_LOADTEST_SESSIONS for n in sessions):
            problems.append(
                f"session counts must be whole numbers from 1 to {MAX_LOADTEST_SESSIONS}"
            )
        unknown = [p for p in self.policies if p not in POLICIES]
        if unknown or not self.policies:
            problems.append(
                f"policies must be some of {', '.join(POLICIES)}"
                + (f" (not {', '.join(unknown)})" if unknown else "")
            )
        if not limits.FPS.holds(self.fps):
            problems.append(f"fps must be {limits.FPS.words()}")
        if not limits.DURATION_S.holds(self.duration_s):
            problems.append(f"the duration must be {limits.DURATION_S.words()} s")
        if self.phases not in PHASES:
            problems.append(f"phases must be one of {', '.join(PHASES)}")
        if not (isinstance(self.seeds, int) and limits.SEEDS.holds(self.seeds)):
            problems.append(f"seeds must be {limits.SEEDS.words()}")
        if not (isinstance(self.seed, int) and limits.SEED.holds(self.seed)):
            problems.append(f"the seed must be {limits.SEED.words()}")
        elif isinstance(self.seeds, int) and not limits.SEED.holds(self.seed + self.seeds - 1):
            problems.append(
                f"the runs take seeds {self.seed} to {self.seed + self.seeds - 1}; the last "
                f"must be at most {int(limits.SEED.high)}"
            )
        if not isinstance(self.stages, WorkerStages):
            problems.append("stages must be a WorkerStages value (planner.sim.stages)")
        elif self.stages.pre_ms or self.stages.post_ms:
            problems.append(
                "a load test measures what its CPU work costs (give camera and cpu_workers); "
                "pre_ms and post_ms are not options"
            )
        if self.camera is not None:
            try:
                parse_resolution(self.camera)
            except BadInput:
                problems.append(
                    f"the camera must be WIDTHxHEIGHT, e.g. 1280x720, not {self.camera!r}"
                )
            workers = getattr(self.stages, "cpu_workers", None)
            if not limits.LOADTEST_CPU_WORKERS.holds(workers):
                low, high = limits.LOADTEST_CPU_WORKERS.low, limits.LOADTEST_CPU_WORKERS.high
                problems.append(f"CPU work needs {low:g} to {high:g} CPU threads (cpu_workers)")
        threads = self.threads
        if threads is not None and not (
            isinstance(threads, int) and limits.TORCH_THREADS.holds(threads)
        ):
            problems.append(f"PyTorch threads must be {limits.TORCH_THREADS.words()}")
        if len(self.measure.precisions) > 1:
            problems.append("a load test runs at one precision; give one")
        if problems:
            raise BadInput(problems)
        object.__setattr__(self, "sessions", tuple(sorted(set(sessions))))
        object.__setattr__(self, "policies", tuple(dict.fromkeys(self.policies)))
        # Every (policy, count) must make a valid scenario: checked on a stand-in table.
        for policy in self.policies:
            self.scenario((1.0,) * max(64, max(self.sessions)), max(self.sessions), policy, 0)

    @property
    def camera_size(self) -> tuple[int, int] | None:
        return None if self.camera is None else parse_resolution(self.camera)

    @property
    def runs(self) -> int:
        return len(self.sessions) * len(self.policies) * self.seeds

    def stages_for(self, pre_ms: Milliseconds, post_ms: Milliseconds) -> WorkerStages:
        """The stages the runs serve and the simulator predicts, given what the CPU work
        was measured to cost per job: with ``camera``, that work on the options' threads;
        without, no CPU work (and so no threads)."""
        if self.camera is None:
            return replace(self.stages, cpu_workers=0)
        return replace(self.stages, pre_ms=pre_ms, post_ms=post_ms)

    def scenario(
        self,
        table: Sequence[float],
        sessions: int,
        policy: str,
        seed: int,
        pre_ms: Milliseconds = 0.0,
        post_ms: Milliseconds = 0.0,
    ) -> Scenario:
        """The scenario one run serves and the simulator predicts."""
        return Scenario(
            latency_ms=tuple(table[: max(64, sessions)]),
            sessions=sessions,
            policy=policy,
            fps=(self.fps,),
            duration_s=self.duration_s,
            phases=self.phases,  # type: ignore[arg-type]
            seed=seed,
            jitter_ms=self.jitter_ms,
            overhead_ms=self.overhead_ms,
            max_batch=self.max_batch,
            max_queue_delay_us=self.max_queue_delay_us,
            slo_ms=self.slo_ms,
            stages=self.stages_for(pre_ms, post_ms),
        )

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> LoadTestOptions:
        """Options as ``as_dict`` wrote them (a stored load test, a bundle's manifest);
        BadInput when they are not valid options."""
        try:
            model = values.get("model_file")
            shape = values.get("input_shape")
            measure = MeasureOptions(
                model=ModelSpec(
                    path=None if model is None else Path(model),
                    input_shape=None if shape is None else (int(shape[0]), int(shape[1]),
                                                            int(shape[2])),
                ),
                precisions=(values["precision"],) if values.get("precision") else (),
                resolution=values.get("resolution") if model is None else None,
                device=values.get("device"),
            )  # fmt: skip
            return cls(
                sessions=tuple(values["sessions"]),
                policies=tuple(values["policies"]),
                fps=values["fps"],
                duration_s=values["duration_s"],
                phases=values["phases"],
                seed=values["seed"],
                seeds=values["seeds"],
                jitter_ms=values["jitter_ms"],
                # Stored without camera work as 0 threads: the default then.
                stages=WorkerStages(
                    network_ms=values["network_ms"],
                    cpu_workers=values.get("cpu_workers") or LOADTEST_STAGES.cpu_workers,
                ),
                overhead_ms=values["overhead_ms"],
                max_batch=values.get("max_batch"),
                max_queue_delay_us=values.get("max_queue_delay_us"),
                slo_ms=values.get("slo_ms"),
                camera=values.get("camera"),
                threads=values.get("threads"),
                measure=measure,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise BadInput(f"not the options of a load test ({exc})") from None

    def as_dict(self) -> dict[str, Any]:
        m = self.measure
        return {
            "sessions": list(self.sessions),
            "policies": list(self.policies),
            "fps": self.fps,
            "duration_s": self.duration_s,
            "phases": self.phases,
            "seed": self.seed,
            "seeds": self.seeds,
            "jitter_ms": self.jitter_ms,
            "network_ms": self.stages.network_ms,
            "overhead_ms": self.overhead_ms,
            "max_batch": self.max_batch,
            "max_queue_delay_us": self.max_queue_delay_us,
            "slo_ms": self.slo_ms,
            "camera": self.camera,
            "cpu_workers": self.stages.cpu_workers if self.camera else 0,
            "threads": self.threads,
            "device": m.device,
            "precision": m.precisions[0] if m.precisions else None,
            "resolution": m.resolution,
            "model_file": None if m.model.path is None else str(m.model.path),
            "input_shape": None if m.model.input_shape is None else list(m.model.input_shape),
        }


def default_batches(sessions: Sequence[int]) -> tuple[int, ...]:
    """Batch sizes to measure for a load test up to ``max(sessions)``: every size up to
    8, then a few more up to the largest (batches never exceed the session count)."""
    largest = max(sessions)
    sizes = {*range(1, min(largest, 8) + 1), largest}
    sizes |= {b for b in (12, 16, 24, 32, 48, 64, 96, 128, 192) if b < largest}
    return tuple(sorted(sizes))


@dataclass(frozen=True)
class Run:
    """One (sessions, policy, seed): what the worker measured and the simulator predicted
    for the same scenario. ``records`` are the worker's per-frame records (None for an
    imported summary); ``calibrated`` the prediction with a calibration applied, where
    one was asked for."""

    scenario: Scenario
    measured: Summary
    predicted: Summary
    records: WorkerRun | None = None
    calibrated: Summary | None = None
    predicted_results: Results | None = field(default=None, repr=False, compare=False)
    ranges: tuple[tuple[str, Interval], ...] = ()

    @property
    def sessions(self) -> int:
        return self.scenario.sessions

    @property
    def policy(self) -> str:
        return self.scenario.policy

    @property
    def loaded(self) -> bool:
        return loaded(self.measured, self.scenario.session_fps[0])

    def figures(self, calibrated: bool = False) -> list[Figure]:
        """Each figure measured against predicted (with ``calibrated``, against the
        calibrated prediction where there is one). An imported summary's ranges stand
        for the measured values they give."""
        prediction = self.calibrated if calibrated and self.calibrated else self.predicted
        if self.ranges:
            given = dict(self.ranges)
            measured = {
                m.name: given.get(m.name, point(getattr(self.measured, m.name))) for m in METRICS
            }
            return compare(measured, prediction)
        return compare(self.measured, prediction)


@dataclass(frozen=True)
class Cap:
    """The seat cap of one policy measured on the real worker against the predicted one
    (with the prediction's range from the curve's band)."""

    policy: str
    measured: int
    predicted: int
    predicted_low: int
    predicted_high: int
    largest: int  # the largest session count searched
    measured_reason: str
    predicted_reason: str

    @property
    def agrees(self) -> bool:
        """The measured cap equals the predicted one, or lies inside its range."""
        low = min(self.predicted, self.predicted_low, self.predicted_high)
        high = max(self.predicted, self.predicted_low, self.predicted_high)
        return low <= self.measured <= high

    @property
    def predicted_text(self) -> str:
        low = min(self.predicted, self.predicted_low, self.predicted_high)
        high = max(self.predicted, self.predicted_low, self.predicted_high)
        return str(self.predicted) if low == high else f"{self.predicted} ({low}–{high})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "measured": self.measured,
            "predicted": self.predicted,
            "predicted_low": self.predicted_low,
            "predicted_high": self.predicted_high,
            "largest": self.largest,
            "agrees": self.agrees,
            "measured_reason": self.measured_reason,
            "predicted_reason": self.predicted_reason,
        }


@dataclass(frozen=True)
class LoadTest:
    """A finished (or interrupted) load test: the curve the predictions used, the stage
    costs measured for them, the runs, the calibration fitted from the runs, measured
    seat caps, and what it ran on (``environment``: machine, load average before and
    after, PyTorch and its threads, the device)."""

    curve: Curve
    options: LoadTestOptions
    runs: tuple[Run, ...]
    pre_ms: Milliseconds = 0.0
    post_ms: Milliseconds = 0.0
    environment: dict[str, Any] = field(default_factory=dict)
    calibration: Calibration | None = None
    applied: Calibration | None = None
    caps: tuple[Cap, ...] = ()
    interrupted: bool = False
    warnings: tuple[str, ...] = ()
    id: int | None = None
    source: str = "measured"
    description: str = ""
    created_at: datetime | None = None

    @property
    def lateness_ms(self) -> np.ndarray:
        """The lateness of every arrival the worker handled, over all runs (ms)."""
        parts = [r.records.lateness_ms for r in self.runs if r.records is not None]
        return np.concatenate(parts) if parts else np.zeros(0)


@dataclass(frozen=True)
class Progress:
    """Where a load test is: ``fraction`` of the whole from 0 to 1, and what it does."""

    fraction: float
    message: str


ProgressFn = Callable[[Progress], None]


# ---------------------------------------------------------------------------------------
# Running


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
        if not interrupted:
            report(Progress((1 if measuring else 0) / units, "preparing the worker"))
            if backend is None:
                backend = torch_backend(options, largest)
            if stage_ms is None:
                stage_ms = backend.stage_costs() if hasattr(backend, "stage_costs") else (0.0, 0.0)
            pre, post = stage_ms
            done = 1 if measuring else 0
            planned = [
                options.scenario(table, n, policy, options.seed + k, pre, post)
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


# ---------------------------------------------------------------------------------------
# The measured seat cap


def outcome(run: WorkerRun) -> Any:
    """A measured run as the simulator's per-run outcome (``planner.sim.ensemble.Outcome``),
    so that seeds are pooled exactly as the recommendation pools simulated ones."""
    from planner.sim.ensemble import Outcome
    from planner.sim.pipeline import job_sums

    s = run.scenario
    r = run.records()
    sizes = np.bincount(r.batch_size, minlength=1) if r.batch_size.size else np.zeros(1, np.int64)
    busy = float(np.sum(np.minimum(r.batch_end, s.duration_ms) - r.batch_start))
    cpu_sums = None
    if s.cpu_pool:
        cpu_sums = job_sums(
            r.job_kind,
            r.job_ready,
            r.job_start,
            s.stages.pre_ms,
            s.stages.post_ms,
            s.duration_ms,
        )
    return Outcome(
        scenario=s,
        fps=r.delivered / s.duration_s,
        arrived=int(r.arrived.sum()),
        delivered=int(r.delivered.sum()),
        overwritten=int(r.overwritten.sum()),
        expired=int(r.expired.sum()),
        busy_ms=busy,
        latency_ms=r.frame_latency,
        batch_sizes=sizes.astype(np.int64),
        worker_ms=r.frame_done - r.frame_arrival,
        cpu_sums=cpu_sums,
        job_waits=(r.job_kind, r.job_start - r.job_ready) if s.cpu_pool else None,
    )


def pooled(runs: Sequence[WorkerRun], percentile: float) -> Pooled:
    """The measured runs of one option at one session count (one per seed), pooled as
    the recommendation pools simulations (``planner.sim.sweep.pool``)."""
    return pool([outcome(r) for r in runs], percentile)


def cap_of(rows: Sequence[Pooled], criteria: Criteria) -> tuple[int, str]:
    """The seat cap over rows for n = 1, 2, …: the largest n such that every count up to
    it meets the criteria (stop at the first failure), and why the next one fails."""
    for index, row in enumerate(rows):
        failed = failures(row, criteria)
        if failed:
            return index, "; ".join(f.sentence for f in failed)
    return len(rows), f"meets every criterion up to {len(rows)} sessions, the largest tried"


def find_cap(
    options: LoadTestOptions,
    policy: str,
    backend: Backend,
    fitted: FittedCurve,
    criteria: Criteria,
    upto: int,
    stage_ms: tuple[Milliseconds, Milliseconds],
    calibration: Calibration | None = None,
    report: ProgressFn | None = None,
) -> Cap:
    """Search ``policy``'s seat cap on the real worker: n = 1, 2, … sessions, each on
    ``options.seeds`` seeds pooled, judged by the recommendation's criteria, stopping at
    the first failure (at most ``upto``); and the recommendation's cap for the same
    scenarios on the curve (with ``calibration`` where given)."""
    table = tuple(float(v) for v in fitted.table(max(64, upto)))
    pre, post = stage_ms
    rows = []
    measured = upto
    reason = f"meets every criterion up to {upto} sessions, the largest tried"
    for n in range(1, upto + 1):
        seeds = [
            options.scenario(table, n, policy, options.seed + k, pre, post)
            for k in range(options.seeds)
        ]
        if report is not None:
            what = f"{n} session{'s' if n != 1 else ''}"
            report(Progress(0.99, f"finding the cap of {policy}: {what}"))
        row = pooled([serve(s, backend) for s in seeds], criteria.percentile)
        rows.append(row)
        failed = failures(row, criteria)
        if failed:
            measured = n - 1
            reason = "; ".join(f.sentence for f in failed)
            break
    request = prediction_request(options, fitted, policy, criteria, upto, stage_ms, calibration)
    option = recommend(request).options[0]
    return Cap(
        policy=policy,
        measured=measured,
        predicted=option.cap,
        predicted_low=option.cap_low,
        predicted_high=option.cap_high,
        largest=upto,
        measured_reason=reason,
        predicted_reason=option.binding_constraint,
    )


def prediction_request(
    options: LoadTestOptions,
    fitted: FittedCurve,
    policy: str,
    criteria: Criteria,
    upto: int,
    stage_ms: tuple[Milliseconds, Milliseconds],
    calibration: Calibration | None = None,
) -> Request:
    """The recommendation request that predicts the cap of ``policy`` for the scenarios
    the load test serves (same seeds, duration, stages and criteria)."""
    pre, post = stage_ms
    if options.seed != 0:
        raise BadInput("a predicted cap draws seeds from 0, as the recommendation does; use seed 0")
    return Request(
        curve=fitted,
        criteria=replace(criteria, overhead_ms=options.overhead_ms),
        policies=(policy,),
        seeds=options.seeds,
        duration_s=options.duration_s,
        max_sessions=upto,
        fps=options.fps,
        phases=options.phases,  # type: ignore[arg-type]
        jitter_ms=options.jitter_ms,
        max_batch=options.max_batch,
        max_queue_delay_us=options.max_queue_delay_us,
        slo_ms=options.slo_ms,
        stages=options.stages_for(pre, post),
        calibration=calibration,
    )


def command_for(options: LoadTestOptions) -> list[str]:
    """The ``planner loadtest`` command that runs ``options`` (join with ``shlex.join``),
    for the machine that has the device."""
    m = options.measure
    argv = ["planner", "loadtest", "--sessions", ",".join(map(str, options.sessions)),
            "--policies", ",".join(options.policies)]  # fmt: skip
    defaults = LoadTestOptions(measure=MeasureOptions())
    named = ("fps", "duration_s", "phases", "seed", "seeds", "jitter_ms", "stages.network_ms",
             "overhead_ms", "max_batch", "max_queue_delay_us", "slo_ms", "threads")  # fmt: skip
    for name in named:
        value, default = attrgetter(name)(options), attrgetter(name)(defaults)
        if value is not None and value != default:
            flag = name.rpartition(".")[2].replace("_", "-")
            argv += [f"--{flag}", _text(value)]
    if options.camera is not None:
        argv += ["--camera", options.camera, "--cpu-workers", str(options.stages.cpu_workers)]
    if m.model.path is not None:
        argv += ["--model-file", str(m.model.path)]
        if m.model.input_shape is not None:
            argv += ["--input-shape", ",".join(map(str, m.model.input_shape))]
    elif m.resolution != MeasureOptions().resolution:
        argv += ["--resolution", str(m.resolution)]
    if m.device:
        argv += ["--device", m.device]
    if m.precisions:
        argv += ["--precision", m.precisions[0]]
    return argv


def _text(value: object) -> str:
    if isinstance(value, float):
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def runs_at(test: LoadTest, policy: str) -> list[Run]:
    """The runs of one policy, by session count."""
    return sorted((r for r in test.runs if r.policy == policy), key=lambda r: r.sessions)
