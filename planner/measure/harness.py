"""Measuring a batch curve on the local device, the way the reference curves were measured.

Method (SPEC §2.3, §3.7), per precision and batch size, in ascending batch order:

1. Build the model (the built-in reference network, or a TorchScript / ``torch.export``
   file), move it to the device, convert it to the precision; cuDNN autotuning on,
   inference mode, optionally channels-last memory layout.
2. Make a random input of the batch size and call the model ``warmup`` times untimed
   (autotuning picks its kernels for this shape here).
3. Time ``rounds`` x ``repetitions`` calls one at a time: the device is synchronised
   before the clock starts and again before it stops, so each figure is the wall time of
   one batched call as a serving worker waits for it (host-side launch work included).
4. The point's latency is the median of the round medians (robust to one disturbed
   round); p10/p50/p90 come from all timed calls, ``n`` is their number, and on CUDA the
   device's used memory after the batch's calls is recorded (``device_memory_mb``: what
   the serving process holds at that batch, CUDA context and the allocator's cache
   included, SPEC §5.1; elsewhere memory is not measured and the curve says so).

After the last batch, the first batch is measured again (the drift check): a change of
more than 5% means clocks or load moved during the sweep, and the curve says so.

Out-of-memory at a batch ends that precision's sweep with the points already measured.
Ctrl-C ends the whole measurement with the points already measured. Neither is an error:
the result carries them with messages (``warnings``) and ``interrupted``.

This module imports PyTorch only inside its functions; the library works without it.
Nothing here prints or stores: callers get a ``MeasureResult`` and a progress callback.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from planner.curves.cards import Card, builtin_catalogue
from planner.curves.curve import Curve, Point, make_curve
from planner.errors import BadInput
from planner.measure.devices import (
    METAL,
    default_card_name,
    describe,
    mig_profile_in_name,
    nvidia_smi,
    require_torch,
    resolve_device,
)
from planner.measure.options import (
    DEFAULT_BATCHES,
    DEFAULT_REPETITIONS,
    DEFAULT_RESOLUTION,
    DEFAULT_ROUNDS,
    DEFAULT_WARMUP,
    MEASURABLE_PRECISIONS,
    REFERENCE_MODEL_NAME,
    MeasurementFailed,
    MeasureOptions,
    MeasureProgress,
    MeasureResult,
    ModelSpec,
    Progress,
    parse_batches,
    parse_input_shape,
    parse_precisions,
)
from planner.measure.timing import Clock, synchronizer, time_calls

__all__ = [
    "DEFAULT_BATCHES",
    "DEFAULT_REPETITIONS",
    "DEFAULT_RESOLUTION",
    "DEFAULT_ROUNDS",
    "DEFAULT_WARMUP",
    "DRIFT_LIMIT",
    "MEASURABLE_PRECISIONS",
    "MeasureOptions",
    "MeasureProgress",
    "MeasureResult",
    "MeasurementFailed",
    "ModelSpec",
    "load_model",
    "measure_curves",
    "parse_batches",
    "parse_input_shape",
    "parse_precisions",
]

DRIFT_LIMIT = 0.05
"""Largest relative change of the first point between the start and the end of a sweep
that is not reported (the study's own check moved 0.5%: 9.82 then 9.77 ms)."""


# ---------------------------------------------------------------------------------------
# Models


def load_model(spec: ModelSpec, device: str) -> Any:
    """The model to measure as a callable module on ``device`` (FP32, evaluation mode).

    The reference network is built fresh; a file is read as TorchScript or as a
    ``torch.export`` archive (a ``.pt2`` file is tried as the latter first). Loading a
    file runs code from it. Raises BadInput when the file is missing or in neither format.
    """
    torch = require_torch()
    if spec.path is None:
        from planner.measure.refmodel import build_reference_model

        return build_reference_model().to(device)
    path = spec.path
    if not path.is_file():
        raise BadInput(f"model file {path} does not exist")
    loaders: list[tuple[str, Callable[[], Any]]] = [
        ("TorchScript", lambda: torch.jit.load(str(path), map_location=device).eval()),
        ("torch.export", lambda: torch.export.load(str(path)).module().to(device)),
    ]
    if path.suffix.lower() == ".pt2":
        loaders.reverse()
    failures = []
    for name, load in loaders:
        try:
            return load()
        except Exception as exc:  # a loader failing only means "not in this format"
            failures.append(f"as {name}: {_first_line(exc)}")
    raise BadInput(
        f"model file {path} is neither a TorchScript file nor a torch.export archive "
        f"({'; '.join(failures)})"
    )


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__)[:300]


# ---------------------------------------------------------------------------------------
# The sweep


def measure_curves(
    options: MeasureOptions,
    progress: Progress | None = None,
    *,
    module: Any = None,
    clock: Clock = time.perf_counter_ns,
) -> MeasureResult:
    """Measure one batch curve per precision on the local device.

    Model assumptions: latency depends on the network's shape, the input size, the
    precision and the device, not on weight or input values (random weights and random
    inputs time the same as real ones), and nothing else runs on the device during the
    sweep (the drift check tests this at the end).

    Parameters
    ----------
    options
        What to measure and how.
    progress
        Called with a ``MeasureProgress`` after each warm-up, round and point, outside
        the timed region. Raising ``KeyboardInterrupt`` from it stops the measurement
        like Ctrl-C, keeping the points measured so far.
    module
        An already-built module (or any callable taking one batch tensor) to measure
        instead of loading ``options.model``; it is moved and converted in place.
    clock
        A monotonic clock in nanoseconds.

    Returns
    -------
    MeasureResult
        Curves with ``source="measured"`` and their environment metadata, warnings
        (out of memory, drift, failures), and whether Ctrl-C stopped the measurement.

    Raises
    ------
    BadInput
        PyTorch is missing, the device is unavailable, the model file is missing or
        unreadable.
    MeasurementFailed
        Not one point could be measured (e.g. out of memory at the first batch).

    Example
    -------
    >>> result = measure_curves(MeasureOptions(batches=(1, 2), resolution="64x36"))
    >>> result.curves[0].batches
    (1, 2)
    """
    torch = require_torch()
    device = resolve_device(options.device)
    sweep = _Sweep(options, torch, device, progress or (lambda _p: None), clock, module)
    previous_benchmark = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True  # autotune convolutions per input shape
    try:
        with torch.inference_mode():
            for precision in sweep.precisions:
                sweep.run(precision)
                if sweep.interrupted:
                    break
    finally:
        torch.backends.cudnn.benchmark = previous_benchmark
    if not sweep.curves and not sweep.interrupted:
        raise MeasurementFailed(sweep.warnings or ["nothing was measured"])
    return MeasureResult(tuple(sweep.curves), tuple(sweep.warnings), sweep.interrupted)


_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


class _OutOfMemory(Exception):
    """The device ran out of memory inside the model."""


class _ModelFailed(Exception):
    """The model raised (an unsupported operator at this precision, a fixed batch size)."""


class _Sweep:
    """One measurement in progress: the device, the call count behind the progress
    fraction, and the curves and warnings collected so far."""

    def __init__(
        self,
        options: MeasureOptions,
        torch: Any,
        device: str,
        report: Progress,
        clock: Clock,
        module: Any,
    ) -> None:
        self.options = options
        self.torch = torch
        self.device = device
        self.report = report
        self.clock = clock
        self.module = module
        self.precisions = options.precisions or (("fp32",) if device == "cpu" else ("fp16",))
        self.synchronize = synchronizer(torch, device)
        self.environment = describe(device)
        self.model_name, self.model_environment = _model_metadata(options, module)
        self.card = options.card or default_card_name(self.environment, _catalogue())
        self.mig_profile = options.mig_profile or mig_profile_in_name(
            str(self.environment.get("device_name", ""))
        )
        per_precision = (len(options.batches) + 1) * options.calls_per_point
        self.total_calls = len(self.precisions) * per_precision
        self.done_calls = 0
        self.curves: list[Curve] = []
        self.warnings: list[str] = []
        self.interrupted = False

    def emit(self, precision: str, batch: int, stage: str, point: Point | None = None) -> None:
        fraction = min(1.0, self.done_calls / self.total_calls)
        self.report(MeasureProgress(fraction, precision, batch, stage, point))

    def run(self, precision: str) -> None:
        """Sweep the batch sizes at one precision, then the drift check; keep the curve."""
        index = self.precisions.index(precision)
        points: list[Point] = []
        notes: dict[str, Any] = {}
        model: Callable[[Any], Any] | None = None
        try:
            model = self.prepare(precision)
            for batch in self.options.batches:
                try:
                    point = self.point(model, precision, batch)
                except (_OutOfMemory, _ModelFailed) as exc:
                    notes["stopped"] = self.failure(precision, f"at batch {batch}", exc, points)
                    self.emit(precision, batch, "stopped")
                    break
                points.append(point)
                self.emit(precision, batch, "done", point)
            if points:
                notes.update(self.drift_check(model, precision, points[0]))
        except KeyboardInterrupt:
            self.interrupted = True
            measured = {p.batch for p in points}
            missing = [b for b in self.options.batches if b not in measured]
            what = (
                f"batches {', '.join(map(str, missing))} not measured"
                if missing
                else "drift check not completed"
            )
            later = self.precisions[index + 1 :]
            if later:
                what += f"; {', '.join(later)} not measured"
            notes["interrupted"] = f"interrupted; {what}"
            self.warnings.append(f"{precision}: interrupted; kept {len(points)} point(s), {what}")
        except (_OutOfMemory, _ModelFailed) as exc:  # from prepare() or the drift check
            where = "in the drift check" if points else "while preparing the model"
            notes["stopped"] = self.failure(precision, where, exc, points)
        finally:
            model = None  # let the memory go before the next precision
            self.release_memory()
        if points:
            self.curves.append(self.curve(precision, points, notes))
        per_precision = (len(self.options.batches) + 1) * self.options.calls_per_point
        self.done_calls = (index + 1) * per_precision

    def prepare(self, precision: str) -> Callable[[Any], Any]:
        """The model on the device at the precision, wrapped so that what the model raises
        is told apart from the harness's own errors (only the former is caught)."""
        torch = self.torch
        dtype = getattr(torch, _DTYPES[precision])
        try:
            model = (
                self.module
                if self.module is not None
                else load_model(self.options.model, self.device)
            )
            if hasattr(model, "to"):
                model = model.to(device=self.device, dtype=dtype)
                if self.options.channels_last:
                    model = model.to(memory_format=torch.channels_last)
        except BadInput:
            raise
        except Exception as exc:
            raise self.classify(exc) from None

        def guarded(x: Any) -> Any:
            try:
                return model(x)
            except Exception as exc:
                raise self.classify(exc) from None

        return guarded

    def classify(self, exc: Exception) -> Exception:
        text = str(exc).lower()
        out_of_memory = isinstance(exc, self.torch.OutOfMemoryError | MemoryError) or (
            # Metal and the CPU allocator raise plain RuntimeErrors for the same condition.
            isinstance(exc, RuntimeError)
            and ("out of memory" in text or "can't allocate memory" in text)
        )
        kind = _OutOfMemory if out_of_memory else _ModelFailed
        return kind(_first_line(exc))

    def point(
        self, model: Callable[[Any], Any], precision: str, batch: int, *, drift: bool = False
    ) -> Point:
        """Warm up and time one batch size; progress is reported after each round."""
        torch, options = self.torch, self.options
        channels, height, width = options.input_shape
        x = torch.randn(
            batch,
            channels,
            height,
            width,
            device=self.device,
            dtype=getattr(torch, _DTYPES[precision]),
        )
        if options.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        self.emit(precision, batch, "drift check" if drift else "warm-up")
        self.done_calls += options.warmup

        def after_round(index: int) -> None:
            self.done_calls += options.repetitions
            stage = "drift check" if drift else f"round {index + 1} of {options.rounds}"
            self.emit(precision, batch, stage)

        timing = time_calls(
            lambda: model(x),
            self.synchronize,
            warmup=options.warmup,
            rounds=options.rounds,
            repetitions=options.repetitions,
            clock=self.clock,
            after_round=after_round,
        )
        return timing.point(batch, device_memory_mb(torch, self.device))

    def drift_check(
        self, model: Callable[[Any], Any], precision: str, first: Point
    ) -> dict[str, str]:
        """Measure the first batch size again and compare (SPEC §2.3: 9.77 vs 9.82 ms)."""
        again = self.point(model, precision, first.batch, drift=True)
        change = again.latency_ms / first.latency_ms - 1
        notes = {
            "drift_check": (
                f"batch {first.batch} measured again at the end of the sweep: "
                f"{again.latency_ms:.2f} ms against {first.latency_ms:.2f} ms ({change:+.1%})"
            )
        }
        if abs(change) > DRIFT_LIMIT:
            warning = (
                f"batch {first.batch} moved {change:+.1%} between the start and the end of "
                f"the sweep ({first.latency_ms:.2f} -> {again.latency_ms:.2f} ms), more than "
                f"{DRIFT_LIMIT:.0%}: clocks or other load changed; measure again on an idle "
                "device"
            )
            notes["drift_warning"] = warning
            self.warnings.append(f"{precision}: {warning}")
        self.emit(precision, first.batch, "drift check", again)
        return notes

    def failure(self, precision: str, where: str, exc: Exception, points: list[Point]) -> str:
        """Record why a sweep stopped as a warning; return it for the curve's notes."""
        kept = ", ".join(str(p.batch) for p in points) or "none"
        if isinstance(exc, _OutOfMemory):
            message = (
                f"out of memory {where}; the sweep stopped there and kept batches {kept} ({exc})"
            )
        else:
            message = f"the model failed {where} on {self.device}: {exc}"
            if points:
                message += f"; kept batches {kept}"
            lowered = str(exc).lower()
            if "guard" in lowered or "size()[0]" in lowered:
                message += (
                    " (a torch.export archive accepts only the batch sizes it was exported "
                    "for: export it with dynamic_shapes=({0: torch.export.Dim('batch', "
                    "max=N)},) covering the batches to measure)"
                )
            elif not points and precision != "fp32":
                message += (
                    f" ({precision} may be unsupported by this model on {self.device}; try fp32)"
                )
        self.warnings.append(f"{precision}: {message}")
        return message

    def release_memory(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.empty_cache()
        elif self.device == METAL:
            self.torch.mps.empty_cache()

    def curve(self, precision: str, points: list[Point], notes: dict[str, Any]) -> Curve:
        environment = {
            **self.environment,
            **self.model_environment,
            **_method(self.options, precision),
            **self.late_device_info(),
            **self.memory_basis(),
            **notes,
        }
        environment["notes"] = _summary(environment, self.options)
        return make_curve(
            model=self.model_name,
            card=self.card,
            precision=precision,
            resolution=self.options.resolution,
            mig_profile=self.mig_profile,
            points=points,
            source="measured",
            created_at=datetime.now(UTC).replace(microsecond=0),
            environment=environment,
        )

    def memory_basis(self) -> dict[str, Any]:
        """What ``memory_mb`` of the points means on this device (or that it is missing)."""
        if self.device == "cuda":
            return {"memory_basis": MEMORY_BASIS}
        return {"memory_basis": f"not measured on {self.device}: the points carry no memory_mb"}

    def late_device_info(self) -> dict[str, Any]:
        """Clocks read right after the sweep, while the card is still under load (an idle
        card reads a fraction of its boost clock)."""
        if self.device != "cuda":
            return {}
        props = self.torch.cuda.get_device_properties(self.torch.cuda.current_device())
        uuid = getattr(props, "uuid", None)
        late = nvidia_smi(None if uuid is None else str(uuid))
        return {"clocks_after_sweep": late["clocks"]} if "clocks" in late else {}


MEMORY_BASIS = (
    "device memory in use after the calls at each batch (torch.cuda.mem_get_info: total - "
    "free), in MB of 2^20 bytes: the model's weights and activations as PyTorch's caching "
    "allocator holds them, and the CUDA context; other processes on the device count too"
)


def device_memory_mb(torch: Any, device: str) -> float | None:
    """The device's used memory in MB (2^20 bytes) on CUDA, read with ``mem_get_info`` so
    the CUDA context counts (``max_memory_allocated`` leaves it out, and the allocator's
    cache); None on other devices, where it is not measured."""
    if device != "cuda":
        return None
    free, total = torch.cuda.mem_get_info()
    return float(total - free) / 2**20


def _model_metadata(options: MeasureOptions, module: Any) -> tuple[str, dict[str, Any]]:
    """The model's name and what identifies it: the reference network, a file and its
    SHA-256, or a module the caller built."""
    channels, height, width = options.input_shape
    meta: dict[str, Any] = {"input_shape": f"{channels},{height},{width}"}
    path = options.model.path
    if module is not None:
        kind = type(module).__name__
        meta["model_source"] = f"a module given to measure_curves ({kind})"
        if hasattr(module, "parameters"):
            meta["parameters"] = sum(p.numel() for p in module.parameters())
        return options.model_name or kind, meta
    if path is None:
        from planner.measure.refmodel import build_reference_model, parameter_count

        meta["model_source"] = (
            "built-in reference network: HRNet-style with squeeze-and-excitation, full "
            "resolution to the output heatmaps, random weights (not the study's trained model)"
        )
        meta["parameters"] = parameter_count(build_reference_model())
        return options.model_name or REFERENCE_MODEL_NAME, meta
    meta["model_file"] = str(path)
    if path.is_file():
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        meta["model_sha256"] = digest.hexdigest()
    return options.model_name or path.stem, meta


def _method(options: MeasureOptions, precision: str) -> dict[str, Any]:
    return {
        "method": (
            f"warm-up {options.warmup} calls, then {options.rounds} rounds x "
            f"{options.repetitions} timed calls per batch; latency = median of round "
            "medians; p10/p50/p90 over all timed calls; wall time between device "
            "synchronisations"
        ),
        "warmup": options.warmup,
        "rounds": options.rounds,
        "repetitions": options.repetitions,
        "precision_mode": f"model and input converted to {precision}",
        "cudnn_benchmark": True,
        "inference_mode": True,
        "channels_last": options.channels_last,
    }


def _summary(environment: dict[str, Any], options: MeasureOptions) -> str:
    """The curve's notes: one line that survives the CSV format (which keeps only notes)."""
    versions = ", ".join(
        f"{label} {environment[key]}"
        for label, key in (("driver", "driver"), ("CUDA", "cuda"), ("torch", "torch"))
        if environment.get(key)
    )
    line = (
        f"measured by planner measure on {environment.get('device_name')} ({versions}), "
        f"{str(environment.get('measured_at', ''))[:10]}: warm-up {options.warmup}, "
        f"{options.rounds} x {options.repetitions} calls per batch, median of round medians"
    )
    extra = [
        str(environment[k]) for k in ("stopped", "drift_warning", "interrupted") if k in environment
    ]
    return "; ".join([line, *extra])


def _catalogue() -> list[Card]:
    try:
        return builtin_catalogue()
    except (OSError, ValueError, KeyError):  # a damaged install: fall back to device slugs
        return []
