"""What a measurement is asked to do and what it reports: the options of ``planner
measure`` as one frozen, validated value, the progress events of a running sweep, and
its result. Plain values only; nothing here imports PyTorch or touches a device.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.curves.curve import Curve, Point, clean_batch, clean_text, parse_resolution
from planner.errors import BadInput, PlannerError
from planner.measure.devices import clean_device

MEASURABLE_PRECISIONS = ("fp32", "fp16", "bf16")
DEFAULT_BATCHES = (1, 2, 3, 4, 8, 16)
DEFAULT_RESOLUTION = "512x288"
DEFAULT_WARMUP = 10
DEFAULT_ROUNDS = 3
DEFAULT_REPETITIONS = 30
REFERENCE_MODEL_NAME = "ball-detector"
MAX_WARMUP = 10_000
MAX_ROUNDS = 1_000
MAX_REPETITIONS = 100_000
MAX_INPUT_SIDE = 65_536


class MeasurementFailed(PlannerError):
    """Nothing could be measured (every precision failed or ran out of memory)."""


@dataclass(frozen=True)
class ModelSpec:
    """Which model to measure: the built-in reference network (``path`` None) or a file.

    A file is a TorchScript archive (``torch.jit.save``) or a ``torch.export`` archive
    (``torch.export.save``, usually ``.pt2``); it needs ``input_shape`` (channels,
    height, width of one input, without the batch axis). Loading a file runs code from
    it: measure only files you trust.
    """

    path: Path | None = None
    input_shape: tuple[int, int, int] | None = None

    @property
    def is_reference(self) -> bool:
        return self.path is None


@dataclass(frozen=True)
class MeasureOptions:
    """Everything a measurement needs, as plain values; validated on construction.

    ``precisions`` empty means FP16 on a GPU and FP32 on the CPU. ``resolution``
    (``WIDTHxHEIGHT``) is the reference model's input size (default 512x288); for a
    model file it follows from ``model.input_shape`` and may be given only if it agrees.
    ``device`` None picks CUDA, else Apple's Metal (``mps``), else the CPU. ``model_name`` defaults
    to ``ball-detector`` for the reference model and to the file's stem otherwise;
    ``card`` to a name derived from the device (see ``planner.measure.devices``).
    """

    model: ModelSpec = field(default_factory=ModelSpec)
    batches: tuple[int, ...] = DEFAULT_BATCHES
    precisions: tuple[str, ...] = ()
    resolution: str | None = None
    device: str | None = None
    warmup: int = DEFAULT_WARMUP
    rounds: int = DEFAULT_ROUNDS
    repetitions: int = DEFAULT_REPETITIONS
    channels_last: bool = False
    model_name: str | None = None
    card: str | None = None
    mig_profile: str | None = None

    def __post_init__(self) -> None:
        problems: list[str] = []

        def check(fn: Callable[[], Any]) -> Any:
            try:
                return fn()
            except BadInput as exc:
                problems.extend(exc.problems)
                return None

        batches = check(lambda: _clean_batches(self.batches))
        precisions = check(lambda: _clean_precisions(self.precisions))
        device = check(lambda: clean_device(self.device))
        check(lambda: _clean_count("warmup", self.warmup, MAX_WARMUP, lowest=0))
        check(lambda: _clean_count("rounds", self.rounds, MAX_ROUNDS))
        check(lambda: _clean_count("repetitions", self.repetitions, MAX_REPETITIONS))
        shape = check(self._input_shape)
        model_name = check(lambda: clean_text(self.model_name, "model name", required=False))
        card = check(lambda: clean_text(self.card, "card", required=False))
        mig = check(lambda: clean_text(self.mig_profile, "MIG profile", required=False))
        if problems:
            raise BadInput(problems)
        # Normalised values: sorted unique batches, lower-case names. A frozen dataclass
        # can only be normalised like this, inside its own constructor.
        object.__setattr__(self, "batches", batches)
        object.__setattr__(self, "precisions", precisions)
        object.__setattr__(self, "device", device)
        object.__setattr__(self, "resolution", f"{shape[2]}x{shape[1]}")
        object.__setattr__(self, "model_name", model_name)
        object.__setattr__(self, "card", card)
        object.__setattr__(self, "mig_profile", mig.lower() if mig else None)

    def _input_shape(self) -> tuple[int, int, int]:
        spec = self.model
        if spec.is_reference:
            if spec.input_shape is not None:
                raise BadInput(
                    "the reference model takes --resolution WIDTHxHEIGHT, not --input-shape "
                    "(its input always has 9 channels)"
                )
            from planner.measure.refmodel import IN_CHANNELS

            width, height = parse_resolution(self.resolution or DEFAULT_RESOLUTION)
            _check_side(width, height)
            return (IN_CHANNELS, height, width)
        if spec.input_shape is None:
            raise BadInput(
                "a model file needs --input-shape C,H,W (one input without the batch axis, "
                "e.g. 9,288,512)"
            )
        channels, height, width = spec.input_shape
        if min(spec.input_shape) < 1:
            raise BadInput(f"input shape {spec.input_shape} has a side below 1")
        _check_side(width, height, channels)
        if self.resolution is not None:
            given = parse_resolution(self.resolution)
            if given != (width, height):
                raise BadInput(
                    f"--resolution {self.resolution} disagrees with --input-shape "
                    f"{channels},{height},{width} (which is {width}x{height}); give one of them"
                )
        return spec.input_shape

    @property
    def input_shape(self) -> tuple[int, int, int]:
        """(channels, height, width) of one input, without the batch axis."""
        return self._input_shape()

    @property
    def calls_per_point(self) -> int:
        return self.warmup + self.rounds * self.repetitions


def _clean_batches(batches: Sequence[object]) -> tuple[int, ...]:
    if not batches:
        raise BadInput("--batches is empty; give batch sizes such as 1,2,4,8")
    problems = []
    clean = set()
    for value in batches:
        try:
            clean.add(clean_batch(value))
        except BadInput as exc:
            problems.extend(exc.problems)
    if problems:
        raise BadInput(problems)
    return tuple(sorted(clean))


def _clean_precisions(precisions: Sequence[str]) -> tuple[str, ...]:
    out: list[str] = []
    for value in precisions:
        text = str(value).strip().lower()
        if text == "int8":
            raise BadInput(
                "precision int8 is not measured by the harness (quantisation is specific to "
                "each model); import int8 curves measured elsewhere"
            )
        if text not in MEASURABLE_PRECISIONS:
            raise BadInput(f"precision {value!r} is not one of {', '.join(MEASURABLE_PRECISIONS)}")
        if text not in out:
            out.append(text)
    return tuple(out)


def _clean_count(name: str, value: object, limit: int, *, lowest: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadInput(f"{name} {value!r} is not a whole number")
    if not lowest <= value <= limit:
        raise BadInput(f"{name} {value} must be from {lowest} to {limit:,}")
    return value


def _check_side(width: int, height: int, channels: int = 1) -> None:
    if max(width, height, channels) > MAX_INPUT_SIDE:
        raise BadInput(f"input sides above {MAX_INPUT_SIDE} are not supported")


def parse_batches(text: str) -> tuple[int, ...]:
    """Batch sizes from ``"1,2,4,8"``: whole numbers from 1 up, sorted, duplicates merged."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise BadInput(f"--batches {text!r} is empty; give batch sizes such as 1,2,4,8")
    try:
        return _clean_batches(items)
    except BadInput as exc:
        raise BadInput([f"--batches: {p}" for p in exc.problems]) from None


def parse_precisions(text: str) -> tuple[str, ...]:
    """Precisions from ``"fp16,fp32"``: each of fp32, fp16, bf16 (one curve each)."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise BadInput(f"--precision {text!r} is empty; give fp32, fp16 or bf16")
    try:
        return _clean_precisions(items)
    except BadInput as exc:
        raise BadInput([f"--precision: {p}" for p in exc.problems]) from None


def parse_input_shape(text: str) -> tuple[int, int, int]:
    """(C, H, W) from ``"9,288,512"`` (also ``9x288x512``)."""
    parts = [p.strip() for p in text.replace("x", ",").replace("X", ",").split(",")]
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise BadInput(f"--input-shape {text!r} is not C,H,W (three whole numbers, e.g. 9,288,512)")
    channels, height, width = (int(p) for p in parts)
    if min(channels, height, width) < 1:
        raise BadInput(f"--input-shape {text!r} has a side below 1")
    return (channels, height, width)


# ---------------------------------------------------------------------------------------
# Progress and results


@dataclass(frozen=True)
class MeasureProgress:
    """Where a running measurement is, for a progress bar.

    ``fraction`` runs from 0 to 1 over all calls of the whole measurement (warm-up
    included). ``stage`` is one of ``warm-up``, ``round R of N``, ``done``, ``drift
    check``, ``out of memory``, ``failed``. ``point`` is set when a point is complete.
    """

    fraction: float
    precision: str
    batch: int
    stage: str
    point: Point | None = None

    @property
    def message(self) -> str:
        """One line for people, e.g. ``fp16 batch 4: 46.15 ms (p10 45.90, p90 46.80)``."""
        if self.point is None:
            return f"{self.precision} batch {self.batch}: {self.stage}"
        p = self.point
        spread = (
            f" (p10 {p.p10_ms:.2f}, p90 {p.p90_ms:.2f}, n {p.n})"
            if p.p10_ms is not None and p.p90_ms is not None
            else ""
        )
        label = "drift check, " if self.stage == "drift check" else ""
        return f"{self.precision} batch {self.batch}: {label}{p.latency_ms:.2f} ms{spread}"


Progress = Callable[[MeasureProgress], None]


@dataclass(frozen=True)
class MeasureResult:
    """The curves measured (one per precision that produced a point) and what went wrong.

    ``warnings`` are sentences for people (out of memory, drift, unsupported precision,
    interruption); each curve's ``environment`` repeats the ones that concern it.
    ``interrupted`` is True when Ctrl-C ended the measurement early.
    """

    curves: tuple[Curve, ...]
    warnings: tuple[str, ...] = ()
    interrupted: bool = False


def command_for(
    options: MeasureOptions, *, out: str | None = "new-card.csv", store: bool = False
) -> list[str]:
    """The ``planner measure`` command line that measures ``options`` (the inverse of
    ``options_from_args``), for running on the machine that has the card.

    Options at their default are left out; ``options.model.path`` is written as given,
    so it must name the file on that machine. Join with ``shlex.join`` for a shell.
    """
    argv = ["planner", "measure"]
    if options.model.path is not None:
        argv += ["--model-file", str(options.model.path)]
        if options.model.input_shape is not None:
            argv += ["--input-shape", ",".join(str(v) for v in options.model.input_shape)]
    elif options.resolution != DEFAULT_RESOLUTION:
        argv += ["--resolution", str(options.resolution)]
    if options.model_name:
        argv += ["--model", options.model_name]
    if options.batches != DEFAULT_BATCHES:
        argv += ["--batches", ",".join(str(b) for b in options.batches)]
    if options.precisions:
        argv += ["--precision", ",".join(options.precisions)]
    if options.device:
        argv += ["--device", options.device]
    for name, default in (
        ("warmup", DEFAULT_WARMUP),
        ("rounds", DEFAULT_ROUNDS),
        ("repetitions", DEFAULT_REPETITIONS),
    ):
        value = getattr(options, name)
        if value != default:
            argv += [f"--{name}", str(value)]
    if options.channels_last:
        argv.append("--channels-last")
    if options.card:
        argv += ["--card", options.card]
    if options.mig_profile:
        argv += ["--mig-profile", options.mig_profile]
    if out:
        argv += ["--out", out]
    if store:
        argv.append("--store")
    return argv
