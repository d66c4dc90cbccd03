"""Share links: the parameters of a plan, a simulation or a card comparison as a URL.

Each page's parameters are a frozen dataclass (``PlanParams``, ``SimulateParams``,
``CompareParams``) whose fields carry their *codec* in the field metadata: how the value
is written in a query string, how it is read back, and what range or choices are valid.
The dataclass is validated on construction, so an instance is always a valid plan, and
the same object is encoded into a link, saved under a short id, and decoded again:
``decode(type(p), encode(p)) == (p, [])``.

Links are written for people as well as machines: parameter names are the command-line
option names with underscores (``budget_ms=40``), lists are comma-separated
(``policies=oldest-first,batch-all``), embedded points are ``batch:latency_ms`` pairs
(``points=1:9.82,2:20.36``), and parameters at their default are left out so links stay
short. Reading a link never fails: an unknown, malformed or out-of-range parameter falls
back to its default and produces one plain message saying what was ignored.

A plan's calibration (SPEC §5.2) is pinned by id (``calibration=ID``). A link without the
parameter is an uncalibrated plan: every link written before calibrations existed keeps
its figures, and a calibration made later never changes what an older link shows.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Generic, TypeAlias, TypeVar
from urllib.parse import quote, urlencode

from planner import limits
from planner.curve import (
    MAX_BATCH,
    Curve,
    Point,
    clean_precision,
    clean_resolution,
    clean_text,
    make_curve,
    make_point,
    normalise_points,
)
from planner.demand import LEAD_TIME_MIN, PROFILE_NAME
from planner.errors import BadInput, NotFound
from planner.limits import Bound
from planner.policies import POLICIES as _POLICIES
from planner.recommend import Criteria, Request
from planner.scenario import (
    MODES,
    PHASES,
    Scenario,
    Sharing,
    cotenant_problem,
    frames_problem,
)
from planner.units import FramesPerSecond, Microseconds, Milliseconds, Seconds, UsdPerHour

POLICIES: tuple[str, ...] = tuple(_POLICIES)
"""Scheduling policies, in the order the recommendation lists them (``planner.policies``)."""

MAX_LINK_POINTS = 256
"""Most points a self-contained link embeds (keeps a URL well under 8 KB)."""
PLAN_KEY = "plan"
"""The query parameter of a saved plan's short id: ``/?plan=ID``."""
RESERVED = frozenset({PLAN_KEY, "embed", "embed_options"})
"""Query parameters that are not plan fields but are not errors either (``embed`` and
``embed_options`` are Streamlit's own)."""

Query: TypeAlias = Mapping[str, str | Sequence[str]]
"""Query parameters as a web framework hands them over: one value or all values per key."""

_CURVE_ID = re.compile(r"^[a-z2-7]{12}$")
_PLAN_ID = re.compile(r"^[0-9a-f]{10}$")
_MIG_PROFILE = re.compile(r"^[1-9]g\.[0-9]{1,4}gb(\+me)?$")
_INTEGER = re.compile(r"^[+-]?[0-9]{1,19}$")
_MAX_NUMBER_TEXT = 40

T = TypeVar("T")


# ---------------------------------------------------------------------------------------
# Codecs: one per kind of value. ``check`` validates and normalises a Python value (used
# on construction); ``parse`` reads the text of a query parameter; ``format`` writes it.
# Both raise BadInput with a short reason that does not repeat the value.


class Codec(ABC, Generic[T]):
    """How one kind of value is validated, written into a link and read back."""

    @abstractmethod
    def check(self, value: object) -> T:
        """The value, validated and normalised; BadInput with a short reason otherwise."""

    def parse(self, text: str) -> T:
        return self.check(text)

    def format(self, value: T) -> str:
        return str(value)

    @abstractmethod
    def describe(self) -> str:
        """The valid values in words, for documentation and messages."""


def number_text(value: float) -> str:
    """The shortest text that reads back as exactly this number (``50`` not ``50.0``)."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


@dataclass(frozen=True)
class Int(Codec[int]):
    """A whole number from ``low`` to ``high``."""

    low: int
    high: int

    def check(self, value: object) -> int:
        if isinstance(value, str):
            text = value.strip()
            if not _INTEGER.match(text):
                raise BadInput("not a whole number")
            number = int(text)
        elif isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, float) and value.is_integer():
            number = int(value)
        else:
            raise BadInput("not a whole number")
        if not self.low <= number <= self.high:
            raise BadInput(f"must be from {self.low} to {self.high}")
        return number

    def describe(self) -> str:
        return f"whole number, {self.low} to {self.high}"

    @classmethod
    def of(cls, bound: Bound) -> Int:
        """The codec of a library range of whole numbers (``planner.limits``)."""
        return cls(int(bound.low), int(bound.high))


@dataclass(frozen=True)
class Float(Codec[float]):
    """A finite number in ``[low, high]`` (open at ``low`` when ``above_low``, at ``high``
    when ``below_high``)."""

    low: float
    high: float
    above_low: bool = False
    below_high: bool = False

    @classmethod
    def of(cls, bound: Bound) -> Float:
        """The codec of a library range (``planner.limits``)."""
        return cls(bound.low, bound.high, bound.above_low, bound.below_high)

    def check(self, value: object) -> float:
        if isinstance(value, str):
            text = value.strip()
            if len(text) > _MAX_NUMBER_TEXT:
                raise BadInput("not a number")
            try:
                number = float(text)
            except ValueError:
                raise BadInput("not a number") from None
        elif isinstance(value, int | float) and not isinstance(value, bool):
            number = float(value)
        else:
            raise BadInput("not a number")
        if not math.isfinite(number):
            raise BadInput("not a finite number")
        if not self._bound().holds(number):
            raise BadInput(f"must be {self._range()}")
        return number

    def _bound(self) -> Bound:
        return Bound(self.low, self.high, self.above_low, self.below_high)

    def format(self, value: float) -> str:
        return number_text(value)

    def _range(self) -> str:
        return self._bound().words()

    def describe(self) -> str:
        return f"number, {self._range()}"


class Bool(Codec[bool]):
    """Yes or no: written ``1`` (a link leaves a default no out); reads 1/0, true/false,
    yes/no in any case."""

    _TRUE = frozenset({"1", "true", "yes", "on"})
    _FALSE = frozenset({"0", "false", "no", "off"})

    def check(self, value: object) -> bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            text = value.strip().lower()
            if text in self._TRUE:
                return True
            if text in self._FALSE:
                return False
        raise BadInput("not yes or no (1 or 0)")

    def format(self, value: bool) -> str:
        return "1" if value else "0"

    def describe(self) -> str:
        return "1 (yes) or 0 (no)"


@dataclass(frozen=True)
class Choice(Codec[str]):
    """One of a fixed list of names (any case in a link)."""

    choices: tuple[str, ...]

    def check(self, value: object) -> str:
        if isinstance(value, str) and value.strip().lower() in self.choices:
            return value.strip().lower()
        raise BadInput(f"not one of {', '.join(self.choices)}")

    def describe(self) -> str:
        return "one of " + ", ".join(self.choices)


@dataclass(frozen=True)
class Subset(Codec[tuple[str, ...]]):
    """One or more of a fixed list of names, comma-separated; order kept, repeats dropped."""

    choices: tuple[str, ...]

    def check(self, value: object) -> tuple[str, ...]:
        items = _items(value)
        if items is None:
            raise BadInput(f"not a list of {', '.join(self.choices)}")
        names = [i.strip().lower() if isinstance(i, str) else i for i in items]
        unknown = [str(n) for n in names if n not in self.choices]
        if unknown:
            raise BadInput(
                f"{', '.join(repr(u) for u in unknown[:3])} not among {', '.join(self.choices)}"
            )
        if not names:
            raise BadInput("needs at least one name")
        return tuple(dict.fromkeys(str(n) for n in names))

    def format(self, value: tuple[str, ...]) -> str:
        return ",".join(value)

    def describe(self) -> str:
        return "comma-separated, some of " + ", ".join(self.choices)


@dataclass(frozen=True)
class Numbers(Codec[tuple[float, ...]]):
    """A comma-separated list of numbers, each checked by ``item``."""

    item: Float
    min_len: int
    max_len: int

    def check(self, value: object) -> tuple[float, ...]:
        items = _items(value)
        if items is None:
            raise BadInput("not a list of numbers")
        if not self.min_len <= len(items) <= self.max_len:
            raise BadInput(f"needs {self.min_len} to {self.max_len} numbers, not {len(items)}")
        numbers = []
        for position, item in enumerate(items, start=1):
            try:
                numbers.append(self.item.check(item))
            except BadInput as exc:
                raise BadInput(f"item {position} {exc.problems[0]}") from None
        return tuple(numbers)

    def format(self, value: tuple[float, ...]) -> str:
        return ",".join(number_text(v) for v in value)

    def describe(self) -> str:
        return f"comma-separated list of {self.min_len} to {self.max_len} numbers, each " + (
            self.item.describe().removeprefix("number, ")
        )


@dataclass(frozen=True)
class Text(Codec[str]):
    """One line of plain text (the rules of curve metadata), optionally without commas."""

    what: str
    commas: bool = True

    def check(self, value: object) -> str:
        if not isinstance(value, str):
            raise BadInput("not text")
        try:
            text = clean_text(value, self.what)
        except BadInput as exc:
            raise BadInput(exc.problems[0].removeprefix(f"{self.what} ")) from None
        if text is None:  # pragma: no cover - clean_text(required=True) never returns None
            raise BadInput("is missing")
        if not self.commas and "," in text:
            raise BadInput("contains a comma, which a link cannot carry here")
        return text

    def describe(self) -> str:
        return "text, one line, at most 200 characters"


@dataclass(frozen=True)
class Texts(Codec[tuple[str, ...]]):
    """A comma-separated list of names (no name may contain a comma); repeats dropped."""

    item: Text
    max_len: int

    def check(self, value: object) -> tuple[str, ...]:
        items = _items(value)
        if items is None:
            raise BadInput("not a list of names")
        if len(items) > self.max_len:
            raise BadInput(f"has {len(items)} names; at most {self.max_len}")
        return tuple(dict.fromkeys(self.item.check(i) for i in items))

    def format(self, value: tuple[str, ...]) -> str:
        return ",".join(value)

    def describe(self) -> str:
        return f"comma-separated list of up to {self.max_len} names"


@dataclass(frozen=True)
class Pattern(Codec[str]):
    """A short identifier matching ``pattern`` (lower-cased first)."""

    pattern: re.Pattern[str]
    example: str

    def check(self, value: object) -> str:
        if isinstance(value, str):
            text = value.strip().lower()
            if self.pattern.match(text):
                return text
        raise BadInput(f"not of the form {self.example}")

    def describe(self) -> str:
        return f"like {self.example}"


class Precision(Codec[str]):
    """``fp32``, ``fp16``, ``bf16`` or ``int8``."""

    def check(self, value: object) -> str:
        if not isinstance(value, str):
            raise BadInput("not text")
        precision = clean_precision(value)
        if precision is None:
            raise BadInput("is empty")
        return precision

    def describe(self) -> str:
        return "fp32, fp16, bf16 or int8"


class Resolution(Codec[str]):
    """``WIDTHxHEIGHT``, e.g. ``512x288``."""

    def check(self, value: object) -> str:
        if not isinstance(value, str):
            raise BadInput("not text")
        resolution = clean_resolution(value)
        if resolution is None:
            raise BadInput("is empty")
        return resolution

    def describe(self) -> str:
        return "WIDTHxHEIGHT, e.g. 512x288"


class Points(Codec[tuple[Point, ...]]):
    """Measured points as ``batch:latency_ms`` pairs: ``1:9.82,2:20.36``.

    Only batch size and latency travel in a link; spread, counts and memory stay in the
    store. A value is a tuple of ``Point`` (or of ``(batch, latency_ms)`` pairs).
    """

    def check(self, value: object) -> tuple[Point, ...]:
        if isinstance(value, str):
            return self.parse(value)
        items = _items(value)
        if items is None:
            raise BadInput("not a list of points")
        points = []
        for item in items:
            if isinstance(item, Point):
                batch, latency = item.batch, item.latency_ms
            elif isinstance(item, Sequence) and not isinstance(item, str) and len(item) == 2:
                batch, latency = item
            else:
                raise BadInput("not a list of (batch, latency_ms) points")
            points.append(make_point({"batch": batch, "latency_ms": latency}))
        return self._bounded(normalise_points(points))

    def parse(self, text: str) -> tuple[Point, ...]:
        items = [i for i in text.split(",") if i.strip()]
        if len(items) > MAX_LINK_POINTS:
            raise BadInput(f"has {len(items)} points; a link carries at most {MAX_LINK_POINTS}")
        points = []
        for item in items:
            batch, sep, latency = item.partition(":")
            if not sep:
                raise BadInput(f"{_show(item.strip())} is not BATCH:LATENCY_MS, e.g. 4:46.15")
            points.append(make_point({"batch": batch, "latency_ms": latency}))
        return self._bounded(normalise_points(points))

    @staticmethod
    def _bounded(points: tuple[Point, ...]) -> tuple[Point, ...]:
        if len(points) > MAX_LINK_POINTS:
            raise BadInput(f"has {len(points)} points; a link carries at most {MAX_LINK_POINTS}")
        return points

    def format(self, value: tuple[Point, ...]) -> str:
        return ",".join(f"{p.batch}:{number_text(p.latency_ms)}" for p in value)

    def describe(self) -> str:
        return f"comma-separated BATCH:LATENCY_MS pairs (batch 1 to {MAX_BATCH})"


@dataclass(frozen=True)
class Maybe(Codec[T | None]):
    """``inner``, or None for "not set" (written by leaving the parameter out)."""

    inner: Codec[T]

    def check(self, value: object) -> T | None:
        return None if value is None else self.inner.check(value)

    def parse(self, text: str) -> T | None:
        return self.inner.parse(text)

    def format(self, value: T | None) -> str:
        return "" if value is None else self.inner.format(value)

    def describe(self) -> str:
        return self.inner.describe() + " (optional)"


@dataclass(frozen=True)
class NoneOr(Maybe[T]):
    """``inner``, or None, also written as the word ``none`` (a calibration: ``none``
    and leaving the parameter out mean the same, an uncalibrated plan)."""

    def check(self, value: object) -> T | None:
        if isinstance(value, str) and value.strip().lower() == "none":
            return None
        return super().check(value)

    def parse(self, text: str) -> T | None:
        return self.check(text)


def _items(value: object) -> list[Any] | None:
    """The items of a comma-separated string or of a list/tuple; None for anything else."""
    if isinstance(value, str):
        return [i for i in value.split(",") if i.strip()]
    if isinstance(value, list | tuple):
        return list(value)
    return None


# ---------------------------------------------------------------------------------------
# The parameters. One table defines each parameter once (default, codec, meaning); the
# parameter sets below pick their fields from it, so a name means the same on every page.


@dataclass(frozen=True)
class Parameter:
    """One link parameter: its default, its codec and what it means."""

    default: Any
    codec: Codec[Any]
    doc: str


PARAMETERS: dict[str, Parameter] = {
    # The curve: a stored curve's id, or embedded points with the labels describing them.
    "curve": Parameter(
        None, Maybe(Pattern(_CURVE_ID, "a 12-character curve id")), "stored curve id"
    ),
    "points": Parameter(None, Maybe(Points()), "embedded points, batch:latency_ms (ms per call)"),
    "model": Parameter(None, Maybe(Text("model")), "model name"),
    "card": Parameter(None, Maybe(Text("card")), "card name"),
    "precision": Parameter(None, Maybe(Precision()), "precision of the curve"),
    "resolution": Parameter(None, Maybe(Resolution()), "input resolution of the curve"),
    # A calibration of the curve from a load test (SPEC §5.2), pinned by id; absent: none.
    "calibration": Parameter(
        None,
        NoneOr(Pattern(_CURVE_ID, "a 12-character calibration id, or none")),
        "calibration of the curve by a load test (unset: none)",
    ),
    # The criteria of a plan: ranges from ``planner.limits``, defaults from the library's
    # own dataclasses, so a link carries exactly what the library accepts.
    "budget_ms": Parameter(
        Criteria.budget_ms, Float.of(limits.BUDGET_MS), "latency budget, ms end-to-end"
    ),
    "percentile": Parameter(
        Criteria.percentile, Float.of(limits.PERCENTILE), "percentile the budget applies to"
    ),
    "min_fps": Parameter(
        Criteria.min_fps, Float.of(limits.MIN_FPS), "frame-rate floor of the slowest session, fps"
    ),
    "max_overwritten": Parameter(
        Criteria.max_overwritten,
        Maybe(Float.of(limits.MAX_OVERWRITTEN)),
        "largest overwritten fraction allowed",
    ),
    "overhead_ms": Parameter(
        Criteria.overhead_ms, Float.of(limits.OVERHEAD_MS), "per-frame overhead outside the GPU, ms"
    ),
    "policies": Parameter(POLICIES, Subset(POLICIES), "candidate scheduling policies"),
    "modes": Parameter(
        None, Maybe(Subset(MODES)), "candidate sharing modes (unset: from the mode parameters)"
    ),
    # Sharing modes.
    "cotenants": Parameter(
        Sharing.cotenants,
        Numbers(Float.of(limits.DUTY), 0, int(limits.COTENANTS.high)),
        "duty cycles of co-tenant jobs, 0-1",
    ),
    "busy_period_ms": Parameter(
        Sharing.busy_period_ms, Float.of(limits.BUSY_PERIOD_MS), "mean co-tenant busy period, ms"
    ),
    "mps_share": Parameter(
        None, Maybe(Float.of(limits.MPS_SHARE)), "MPS compute share, percent (unset: 50)"
    ),
    "mig_profile": Parameter(None, Maybe(Pattern(_MIG_PROFILE, "3g.40gb")), "MIG profile"),
    # Memory (SPEC §5.1): what the co-tenants take, an MPS client's limit.
    "cotenant_memory_mb": Parameter(
        (),
        Numbers(Float.of(limits.MEMORY_MB), 0, int(limits.COTENANTS.high)),
        "GPU memory each co-tenant declares, MB (one for all or one per co-tenant)",
    ),
    "mps_memory_mb": Parameter(
        None,
        Maybe(Float(0, limits.MEMORY_MB.high, above_low=True)),
        "MPS client memory limit, MB",
    ),
    # The worker beyond the GPU (SPEC §5.1).
    "network_ms": Parameter(
        Scenario.network_ms, Float.of(limits.STAGE_MS), "one-way network delay, ms"
    ),
    "pre_ms": Parameter(
        Scenario.pre_ms, Float.of(limits.STAGE_MS), "CPU work per frame before the GPU, ms"
    ),
    "post_ms": Parameter(
        Scenario.post_ms, Float.of(limits.STAGE_MS), "CPU work per frame after the GPU, ms"
    ),
    "cpu_workers": Parameter(
        Scenario.cpu_workers,
        Int.of(limits.CPU_WORKERS),
        "CPU threads for that work (0 = unlimited)",
    ),
    # How hard the search looks.
    "seeds": Parameter(Request.seeds, Int.of(limits.SEEDS), "phase seeds per scenario"),
    "duration_s": Parameter(
        Request.duration_s, Float.of(limits.DURATION_S), "simulated seconds per run"
    ),
    "max_sessions": Parameter(
        Request.max_sessions, Int.of(limits.MAX_SESSIONS), "largest session count considered"
    ),
    # Fleet and cost.
    "peak_sessions": Parameter(
        None, Maybe(Int.of(limits.PEAK_SESSIONS)), "peak concurrent sessions"
    ),
    "headroom": Parameter(
        Request.headroom, Float.of(limits.HEADROOM), "fleet headroom fraction (0.2 = 20%)"
    ),
    "price_per_hour": Parameter(
        None, Maybe(Float.of(limits.PRICE_PER_HOUR)), "hourly price of the card, USD"
    ),
    "other_jobs": Parameter(
        Request.other_jobs,
        Bool(),
        "the rest of the card goes to other jobs: one instance per card, charged our part",
    ),
    # One simulated scenario.
    "sessions": Parameter(3, Int.of(limits.SESSIONS), "concurrent sessions"),
    "policy": Parameter("batch-all", Choice(POLICIES), "scheduling policy"),
    "max_batch": Parameter(
        None, Maybe(Int.of(limits.MAX_BATCH)), "largest batch (max-batch, triton)"
    ),
    "max_queue_delay_us": Parameter(
        None,
        Maybe(Float.of(limits.MAX_QUEUE_DELAY_US)),
        "longest wait for a fuller batch (triton), us",
    ),
    "slo_ms": Parameter(None, Maybe(Float.of(limits.SLO_MS)), "objective of aimd and deadline, ms"),
    "compare_policy": Parameter(None, Maybe(Choice(POLICIES)), "second policy, side by side"),
    "fps": Parameter(
        Scenario.fps,
        Numbers(Float.of(limits.FPS), 1, int(limits.SESSIONS.high)),
        "fps, one or one per session",
    ),
    "phases": Parameter(Scenario.phases, Choice(PHASES), "phase model of the arrivals"),
    "seed": Parameter(Scenario.seed, Int.of(limits.SEED), "random seed of the scenario"),
    "jitter_ms": Parameter(
        Scenario.jitter_ms, Float.of(limits.JITTER_MS), "arrival jitter (standard deviation), ms"
    ),
    "mode": Parameter(Sharing.mode, Choice(MODES), "sharing mode"),
    # Comparing cards.
    "cards": Parameter((), Texts(Text("card", commas=False), 16), "cards (unset: all)"),
    # Browsing a study.
    "study": Parameter(None, Maybe(Text("study")), "stored study (unset: the newest)"),
    "metric": Parameter(
        "seats_per_card",
        Choice(("seats_per_card", "cost_per_seat_hour", "cost_per_day", "day_gpu_hours")),
        "figure shown per cell",
    ),
    "x_axis": Parameter(None, Maybe(Text("axis", commas=False)), "study axis across"),
    "y_axis": Parameter(None, Maybe(Text("axis", commas=False)), "study axis down"),
    "hold": Parameter(
        (), Texts(Text("axis value", commas=False), 64), "other axes held at AXIS=VALUE"
    ),
    # Demand over time (``planner.demand``).
    "profile": Parameter(
        None,
        Maybe(Pattern(PROFILE_NAME, "office-hours")),
        "demand profile: a built-in shape (flat, office-hours, evening-peak) or a stored one",
    ),
    "lead_time_min": Parameter(
        LEAD_TIME_MIN,
        Float.of(limits.LEAD_TIME_MIN),
        "autoscaling lead time: minutes from asking for a GPU to it serving",
    ),
    # Which curves are offered.
    "flagged": Parameter(
        False,
        Bool(),
        "include curves whose measurement was flagged (a failed drift check); they are left "
        "out of comparisons and of the curve choices otherwise",
    ),
}

_CURVE_LABEL_FIELDS = ("model", "card", "precision", "resolution")


def param(name: str) -> Any:
    """The dataclass field of the link parameter ``name`` (see ``PARAMETERS``)."""
    spec = PARAMETERS[name]
    return field(default=spec.default, metadata={"parameter": name})


class LinkParams:
    """Base of the parameter sets: validation on construction, and the page they open."""

    page_path: ClassVar[str]
    """The dashboard page a link opens: ``""`` for the landing page, served at ``/``."""
    views: ClassVar[frozenset[str]] = frozenset()
    """Query parameters of the page's view that are not part of the parameters (what a
    page shows beside them, such as a saved plan to compare with): ``decode`` leaves them
    to the page, and saved plans do not store them."""

    def __post_init__(self) -> None:
        problems: list[str] = []
        for name, parameter in schema(type(self)).items():
            try:
                value = parameter.codec.check(getattr(self, name))
            except BadInput as exc:
                problems.extend(f"{name}: {p}" for p in exc.problems)
            else:
                object.__setattr__(self, name, value)
        if problems:
            raise BadInput(problems)
        conflicts = [message for _, message in self.conflicts(self.__dict__)]
        if conflicts:
            raise BadInput(conflicts)

    @classmethod
    def conflicts(cls, values: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
        """Combinations of valid values that do not go together.

        Each conflict names the fields that ``decode`` resets to settle it, and says why.
        """
        return _curve_conflicts(values)


def _mode_conflicts(
    values: Mapping[str, Any], modes: Sequence[str], field_name: str
) -> list[tuple[tuple[str, ...], str]]:
    """A sharing mode without what it needs, and co-tenants too busy to draw."""
    out: list[tuple[tuple[str, ...], str]] = []
    cotenants = values.get("cotenants") or ()
    if "time-slicing" in modes and not cotenants:
        out.append(((field_name,), "time-slicing needs co-tenants (cotenants=0.9,0.9)"))
    elif "mig" in modes and not values.get("mig_profile"):
        out.append(((field_name,), "MIG needs a profile (mig_profile=3g.40gb)"))
    elif cotenants and ("time-slicing" in modes or (field_name == "modes" and not modes)):
        busy = values.get("busy_period_ms", Sharing.busy_period_ms)
        too_busy = cotenant_problem(values.get("duration_s", 30.0), tuple(cotenants), busy)
        if too_busy:
            out.append((("cotenants", "busy_period_ms"), too_busy))
    return out


def _memory_conflicts(values: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    memory = values.get("cotenant_memory_mb") or ()
    cotenants = values.get("cotenants") or ()
    if memory and len(memory) not in (1, len(cotenants)):
        return [
            (
                ("cotenant_memory_mb",),
                f"cotenant_memory_mb has {len(memory)} values for {len(cotenants)} co-tenants "
                "(needs one for all or one per co-tenant)",
            )
        ]
    return []


def _curve_conflicts(values: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    out: list[tuple[tuple[str, ...], str]] = []
    if values.get("curve") is not None and values.get("points") is not None:
        out.append((("curve",), "curve and points were both given; the points are used"))
    if values.get("points") is None:
        labels = tuple(n for n in _CURVE_LABEL_FIELDS if values.get(n) is not None)
        if labels:
            out.append((labels, f"{', '.join(labels)} only describe embedded points"))
    return out


@dataclass(frozen=True)
class PlanParams(LinkParams):
    """Everything the Plan page (and ``planner recommend``) takes.

    The curve is a stored curve's id (``curve``), or for a self-contained link its points
    with the labels that describe them (``points``, ``model``, ``card``, ``precision``,
    ``resolution``); with neither, the page picks its default curve. ``modes`` None means
    the recommendation's default: exclusive, plus each mode whose parameters are given.
    ``profile`` names a demand profile (a built-in shape or a stored one) and
    ``lead_time_min`` the autoscaling lead time for the fleet over a day. The page's view
    settings beside them (``views``) are the saved plan it is compared with and the option
    whose deployment settings it shows.
    """

    page_path: ClassVar[str] = ""
    views: ClassVar[frozenset[str]] = frozenset({"compare_plan", "deploy_option"})

    @classmethod
    def conflicts(cls, values: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
        out = _curve_conflicts(values)
        budget = values.get("budget_ms", 50.0)
        outside = {
            name: values.get(name, 0.0) * (2 if name == "network_ms" else 1)
            for name in ("overhead_ms", "network_ms", "pre_ms", "post_ms")
        }
        if sum(outside.values()) >= budget:
            names = tuple(n for n, v in outside.items() if v) or ("overhead_ms",)
            out.append(
                (
                    names,
                    f"{sum(outside.values()):g} ms outside the GPU (network both ways, CPU "
                    f"work, overhead) leaves nothing of the {budget:g} ms budget for the GPU",
                )
            )
        modes = values.get("modes")
        out += _mode_conflicts(values, modes or (), "modes")
        out += _memory_conflicts(values)
        duration = values.get("duration_s", 30.0)
        sessions = values.get("max_sessions", 64)
        too_long = frames_problem(sessions * Request.fps, duration)
        if too_long:
            out.append((("duration_s",), f"at {sessions} sessions {too_long}"))
        return out

    curve: str | None = param("curve")
    points: tuple[Point, ...] | None = param("points")
    model: str | None = param("model")
    card: str | None = param("card")
    precision: str | None = param("precision")
    resolution: str | None = param("resolution")
    budget_ms: Milliseconds = param("budget_ms")
    percentile: float = param("percentile")
    min_fps: FramesPerSecond = param("min_fps")
    max_overwritten: float | None = param("max_overwritten")
    overhead_ms: Milliseconds = param("overhead_ms")
    policies: tuple[str, ...] = param("policies")
    modes: tuple[str, ...] | None = param("modes")
    cotenants: tuple[float, ...] = param("cotenants")
    busy_period_ms: Milliseconds = param("busy_period_ms")
    mps_share: float | None = param("mps_share")
    mig_profile: str | None = param("mig_profile")
    seeds: int = param("seeds")
    duration_s: Seconds = param("duration_s")
    max_sessions: int = param("max_sessions")
    peak_sessions: int | None = param("peak_sessions")
    headroom: float = param("headroom")
    price_per_hour: UsdPerHour | None = param("price_per_hour")
    other_jobs: bool = param("other_jobs")
    # Demand over time (SPEC §5.3): the fleet over a day for the recommended option.
    profile: str | None = param("profile")
    lead_time_min: float = param("lead_time_min")
    network_ms: Milliseconds = param("network_ms")
    pre_ms: Milliseconds = param("pre_ms")
    post_ms: Milliseconds = param("post_ms")
    cpu_workers: int = param("cpu_workers")
    cotenant_memory_mb: tuple[float, ...] = param("cotenant_memory_mb")
    mps_memory_mb: float | None = param("mps_memory_mb")
    flagged: bool = param("flagged")
    calibration: str | None = param("calibration")


@dataclass(frozen=True)
class SimulateParams(LinkParams):
    """Everything the Simulate page (and ``planner simulate``) takes: one scenario.

    ``max_batch``, ``max_queue_delay_us`` and ``slo_ms`` left unset mean the policy's own
    defaults. ``compare_policy`` is a second policy shown side by side on the same
    scenario. ``fps`` has one value for every session or one per session. ``budget_ms``
    (at ``percentile``) and ``min_fps`` are a plan's criteria, drawn on the charts to judge
    the run by; they change nothing simulated.
    """

    page_path: ClassVar[str] = "simulate"

    curve: str | None = param("curve")
    points: tuple[Point, ...] | None = param("points")
    model: str | None = param("model")
    card: str | None = param("card")
    precision: str | None = param("precision")
    resolution: str | None = param("resolution")
    sessions: int = param("sessions")
    policy: str = param("policy")
    max_batch: int | None = param("max_batch")
    max_queue_delay_us: Microseconds | None = param("max_queue_delay_us")
    slo_ms: Milliseconds | None = param("slo_ms")
    compare_policy: str | None = param("compare_policy")
    fps: tuple[float, ...] = param("fps")
    duration_s: Seconds = param("duration_s")
    phases: str = param("phases")
    seed: int = param("seed")
    jitter_ms: Milliseconds = param("jitter_ms")
    overhead_ms: Milliseconds = param("overhead_ms")
    mode: str = param("mode")
    cotenants: tuple[float, ...] = param("cotenants")
    busy_period_ms: Milliseconds = param("busy_period_ms")
    mps_share: float | None = param("mps_share")
    mig_profile: str | None = param("mig_profile")
    network_ms: Milliseconds = param("network_ms")
    pre_ms: Milliseconds = param("pre_ms")
    post_ms: Milliseconds = param("post_ms")
    cpu_workers: int = param("cpu_workers")
    cotenant_memory_mb: tuple[float, ...] = param("cotenant_memory_mb")
    mps_memory_mb: float | None = param("mps_memory_mb")
    budget_ms: Milliseconds = param("budget_ms")
    percentile: float = param("percentile")
    min_fps: FramesPerSecond = param("min_fps")

    @classmethod
    def conflicts(cls, values: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
        out = _curve_conflicts(values) + _memory_conflicts(values)
        fps = values.get("fps") or ()
        sessions = values.get("sessions", 3)
        if len(fps) not in (1, sessions):
            out.append(
                (
                    ("fps",),
                    f"fps has {len(fps)} values for {sessions} sessions (needs 1 or {sessions})",
                )
            )
        else:
            total = sum(fps) * (sessions if len(fps) == 1 else 1)
            too_long = frames_problem(total, values.get("duration_s", 30.0))
            if too_long:
                out.append((("duration_s",), too_long))
        out += _mode_conflicts(values, (values.get("mode", "exclusive"),), "mode")
        return out


@dataclass(frozen=True)
class CompareParams(LinkParams):
    """Everything the Compare page takes: one model across cards, under one plan budget.

    ``model`` unset means the page's default model; ``cards`` empty means every card
    with a curve of that model; ``precision`` and ``resolution`` narrow the curves.
    """

    page_path: ClassVar[str] = "compare"

    model: str | None = param("model")
    cards: tuple[str, ...] = param("cards")
    precision: str | None = param("precision")
    resolution: str | None = param("resolution")
    budget_ms: Milliseconds = param("budget_ms")
    percentile: float = param("percentile")
    min_fps: FramesPerSecond = param("min_fps")
    max_overwritten: float | None = param("max_overwritten")
    overhead_ms: Milliseconds = param("overhead_ms")
    policies: tuple[str, ...] = param("policies")
    seeds: int = param("seeds")
    duration_s: Seconds = param("duration_s")
    max_sessions: int = param("max_sessions")
    peak_sessions: int | None = param("peak_sessions")
    headroom: float = param("headroom")
    flagged: bool = param("flagged")

    @classmethod
    def conflicts(cls, values: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
        return []


@dataclass(frozen=True)
class StudyParams(LinkParams):
    """Everything the Study page takes: which stored study, which figure, over which two
    axes, and the values the other axes are held at (``AXIS=VALUE`` items)."""

    page_path: ClassVar[str] = "studies"

    study: str | None = param("study")
    metric: str = param("metric")
    x_axis: str | None = param("x_axis")
    y_axis: str | None = param("y_axis")
    hold: tuple[str, ...] = param("hold")

    @classmethod
    def conflicts(cls, values: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
        return []


P = TypeVar("P", bound=LinkParams)
C = TypeVar("C", "PlanParams", "SimulateParams")


# ---------------------------------------------------------------------------------------
# Encoding and decoding.


def schema(cls: type[LinkParams]) -> dict[str, Parameter]:
    """The parameters of a parameter set, by name, in the order links write them."""
    out = {}
    for spec in fields(cls):  # type: ignore[arg-type]
        name = spec.metadata["parameter"]
        if name != spec.name:  # pragma: no cover - a typo in a class body
            raise TypeError(f"{cls.__name__}.{spec.name} is declared as param({name!r})")
        out[name] = PARAMETERS[name]
    return out


def encode(params: LinkParams, *, include_defaults: bool = False) -> dict[str, str]:
    """Query parameters for ``params``: text values, defaults left out unless asked for.

    Unset optional values are always left out. ``include_defaults=True`` is what a saved
    plan stores, so that a later change of a default does not change a saved plan.
    """
    out: dict[str, str] = {}
    for name, parameter in schema(type(params)).items():
        value = getattr(params, name)
        if value is None or (value == parameter.default and not include_defaults):
            continue
        text = parameter.codec.format(value)
        if text:
            out[name] = text
    return out


def decode(
    cls: type[P],
    query: Query,
    *,
    load_plan: Callable[[str], Mapping[str, Any]] | None = None,
) -> tuple[P, list[str]]:
    """Parameters from a query string, and one message per parameter that was ignored.

    Never raises: an unknown parameter, a value that does not parse or is out of range,
    or a combination that does not go together falls back to the default and adds a
    message such as ``ignored budget_ms='abc': not a number; using the default 50``.
    With ``load_plan`` (e.g. ``Store.plan``), ``plan=ID`` loads a saved plan's parameters
    first; parameters given next to it in the same link take precedence.
    """
    ignored: list[str] = []
    merged: dict[str, Any] = {}
    if load_plan is not None and PLAN_KEY in query:
        merged.update(_saved(query[PLAN_KEY], load_plan, ignored))
    merged.update({k: v for k, v in query.items() if k != PLAN_KEY})

    specs = schema(cls)
    values: dict[str, Any] = {}
    for key, raw in merged.items():
        if not isinstance(key, str):
            ignored.append(f"ignored a parameter whose name is not text: {_show(key)}")
            continue
        if key in RESERVED or key in cls.views:
            continue
        if key not in specs:
            ignored.append(f"ignored unknown parameter {_show(key)}")
            continue
        parameter = specs[key]
        text = _one_value(key, raw, ignored)
        if text is None:
            continue
        try:
            values[key] = parameter.codec.parse(text)
        except BadInput as exc:
            reason = "; ".join(exc.problems)
            ignored.append(f"ignored {key}={_show(text)}: {reason}; {_fallback(parameter)}")

    # Settling one conflict (a value back at its default) can make another: settle again
    # until none is left; each round resets at least one given value, so this ends.
    for _ in range(len(specs)):
        effective = {name: values.get(name, p.default) for name, p in specs.items()}
        found = cls.conflicts(effective)
        if not found:
            break
        for names, message in found:
            for name in names:
                values.pop(name, None)
            ignored.append(f"ignored {', '.join(names)}: {message}")

    try:
        return cls(**values), ignored
    except BadInput as exc:  # pragma: no cover - every field was checked above
        return cls(), [*ignored, f"ignored the whole link: {'; '.join(exc.problems)}"]


def _saved(
    raw: object, load_plan: Callable[[str], Mapping[str, Any]], ignored: list[str]
) -> dict[str, Any]:
    text = _one_value(PLAN_KEY, raw, ignored)
    if text is None:
        return {}
    plan_id = text.strip().lower()
    if not _PLAN_ID.match(plan_id):
        ignored.append(f"ignored plan={_show(text)}: not a saved plan id; using the defaults")
        return {}
    try:
        saved = load_plan(plan_id)
    except NotFound:
        ignored.append(f"ignored plan={_show(text)}: no saved plan with that id on this server")
        return {}
    return dict(saved) if isinstance(saved, Mapping) else {}


def _one_value(key: str, raw: object, ignored: list[str]) -> str | None:
    """The single text value of a parameter; None (with a message) when there is none."""
    if isinstance(raw, str):
        return raw if raw.strip() else None
    if isinstance(raw, list | tuple) and all(isinstance(v, str) for v in raw):
        distinct = list(dict.fromkeys(raw))
        if len(distinct) > 1:
            ignored.append(f"ignored {key}: given {len(raw)} times with different values")
            return None
        return distinct[0] if distinct and distinct[0].strip() else None
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return number_text(raw) if isinstance(raw, float) else str(raw)
    ignored.append(f"ignored {key}: its value is not text")
    return None


def _fallback(parameter: Parameter) -> str:
    if parameter.default is None:
        return "left unset"
    if parameter.default == ():
        return "using the default (none)"
    if isinstance(parameter.codec, Subset) and parameter.default == parameter.codec.choices:
        return "using the default (all)"
    return f"using the default {parameter.codec.format(parameter.default)}"


def _show(value: object, limit: int = 40) -> str:
    """A value quoted for a message: control characters escaped, long text cut short."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) > limit:
        text = text[:limit] + "…"
    return repr(text)


# ---------------------------------------------------------------------------------------
# Links as URLs, saved plans and self-contained links.


def url(base: str, params: LinkParams) -> str:
    """The full link to ``params`` on the dashboard at ``base`` (e.g. ``http://host:8501``).

    The landing page's links are ``/?…``: Streamlit serves the default page at ``/``,
    and its own path answers "page not found".
    """
    query = urlencode(encode(params), quote_via=quote, safe=",:")
    address = f"{base.rstrip('/')}/{type(params).page_path}"
    return f"{address}?{query}" if query else address


def saved_plan_url(base: str, plan_id: str) -> str:
    """The short link of a saved plan: ``BASE/?plan=ID``."""
    if not _PLAN_ID.match(plan_id):
        raise BadInput(f"{_show(plan_id)} is not a saved plan id")
    return f"{base.rstrip('/')}/?{PLAN_KEY}={plan_id}"


def saved_params(params: PlanParams) -> dict[str, str]:
    """What ``Store.save_plan`` stores for a plan: every parameter, defaults included."""
    return encode(params, include_defaults=True)


def self_contained(params: C, curve: Curve) -> C:
    """``params`` with ``curve``'s points and labels embedded in place of its id.

    Such a link opens on any server, whether or not it stores the curve. Raises BadInput
    when the curve has more points than a link carries.
    """
    return replace(
        params,
        curve=None,
        points=tuple(Point(p.batch, p.latency_ms) for p in curve.points),
        model=curve.model,
        card=curve.card,
        precision=curve.precision,
        resolution=curve.resolution,
    )


def linked_curve(params: PlanParams | SimulateParams) -> Curve | None:
    """The curve a self-contained link embeds, or None when the link names a stored one.

    Labels the link leaves out read "unnamed"; the curve's id follows from its labels and
    points, so a link to a stored curve's points finds that curve again.
    """
    if params.points is None:
        return None
    return make_curve(
        model=params.model or "unnamed model",
        card=params.card or "unnamed card",
        precision=params.precision,
        resolution=params.resolution,
        points=params.points,
        source="uploaded",
        environment={"notes": "embedded in a link"},
    )
