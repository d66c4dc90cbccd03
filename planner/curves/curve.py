"""Batch curves: what a measurement of one model on one card is, and what makes it valid.

A *curve* is the latency of one batched call as a function of batch size, measured for one
model, card, precision and input resolution (optionally on one MIG profile). A *point* is
one measured batch size. Curves are immutable values: editing a curve's points makes a new
curve with a new id, so saved plans that use the old one keep working.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import Any, Literal

from planner import limits
from planner.errors import BadInput
from planner.limits import MIN_LATENCY_MS
from planner.units import Megabytes, Milliseconds

MAX_BATCH = 4096
MAX_LATENCY_MS: Milliseconds = 1e6  # a thousand seconds per call is not a serving curve
"""The physical floor of a latency: one microsecond. Launching a single kernel on a GPU
takes a few microseconds, so no batched call, budget or objective is shorter; a smaller
figure is a unit mistake (seconds written as milliseconds) or a broken export."""
MAX_TEXT = 200
PRECISIONS = ("fp32", "fp16", "bf16", "int8")
SOURCES = ("built-in", "uploaded", "measured")
Source = Literal["built-in", "uploaded", "measured"]
PERCENTILE_FIELDS = ("p10_ms", "p50_ms", "p90_ms", "p99_ms")
SPREAD_FIELDS = (*PERCENTILE_FIELDS, "std_ms")
OPTIONAL_POINT_FIELDS = (*SPREAD_FIELDS, "n", "memory_mb")
_OPTIONAL_FIELD_SET = frozenset(OPTIONAL_POINT_FIELDS)

PER_REQUEST_KEY = "per_request_ms"
"""The environment key that holds a curve's per-request cost (``Curve.per_request_ms``)."""
BATCHER_KEY = "batcher"
"""The environment key that holds the batcher settings of the server a curve was measured
on (``Curve.batcher``): ``{"max_batch": 8, "max_queue_delay_us": 2000}``."""
BATCHER_BOUNDS = {"max_batch": limits.MAX_BATCH, "max_queue_delay_us": limits.MAX_QUEUE_DELAY_US}

_RESOLUTION = re.compile(r"^\s*(\d{1,5})\s*[xX×]\s*(\d{1,5})\s*$")


@dataclass(frozen=True, order=True)
class Point:
    """One measured batch size: latency of one batched call, with optional spread.

    ``latency_ms`` is the central value (a median, normally). Spread fields are in
    milliseconds too; ``n`` is how many timed calls stand behind the point and
    ``memory_mb`` the device memory the call used, where known.
    """

    batch: int
    latency_ms: Milliseconds
    p10_ms: Milliseconds | None = None
    p50_ms: Milliseconds | None = None
    p90_ms: Milliseconds | None = None
    p99_ms: Milliseconds | None = None
    std_ms: Milliseconds | None = None
    n: int | None = None
    memory_mb: Megabytes | None = None

    def as_dict(self) -> dict[str, Any]:
        """The point as JSON-ready data, leaving out spread fields that are unknown."""
        out: dict[str, Any] = {"batch": self.batch, "latency_ms": self.latency_ms}
        for name in OPTIONAL_POINT_FIELDS:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


@dataclass(frozen=True)
class Curve:
    """A measured batch curve with the metadata that identifies it.

    ``environment`` holds free-form metadata (driver and framework versions, device name,
    notes); it is not part of the id. ``id`` is derived from the identifying fields and
    the sorted (batch, latency) pairs, so the same measurement stored twice is one curve.

    ``flag`` says why the curve should not be trusted like the others (a measurement whose
    drift check failed: the device was busy or its clocks changed); flagged curves are
    shown with the flag and left out of comparisons and default choices. ``renamed_from``
    is the id of the curve this one renames (same points, another model or card name).
    Neither is part of the id.

    ``per_request_ms`` is what a server spends on each request of a batch beyond the
    batched call (``planner.curves.batch_cost``): a batch of b requests costs ``L(b) + b *
    per_request_ms``. It is kept in the environment under ``per_request_ms`` (so a curve
    file's environment carries it, and the store keeps it without a column of its own),
    and unlike the rest of the environment it is part of the id when it is not 0: a plan
    that pins a curve keeps the cost it was made with.
    """

    model: str
    card: str
    precision: str | None
    resolution: str | None
    points: tuple[Point, ...]
    mig_profile: str | None = None
    source: Source = "uploaded"
    created_at: datetime | None = None
    environment: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    flag: str | None = field(default=None, compare=False)
    renamed_from: str | None = field(default=None, compare=False)

    @cached_property
    def id(self) -> str:
        # Cached: a curve is immutable, and imports ask for the id of thousands of curves.
        return curve_id(
            self.model,
            self.card,
            self.precision,
            self.resolution,
            self.mig_profile,
            self.points,
            self.per_request_ms,
        )

    @property
    def per_request_ms(self) -> Milliseconds:
        """The per-request cost of a batch (ms per request; 0 when not given)."""
        value = self.environment.get(PER_REQUEST_KEY)
        return float(value) if isinstance(value, int | float) and value > 0 else 0.0

    @property
    def batcher(self) -> dict[str, float]:
        """The batcher settings of the server this curve was measured on (``planner
        loadtest --target`` reads them from the model's configuration): the defaults of a
        plan on the curve that leaves them unset. Empty for every other curve."""
        return dict(self.environment.get(BATCHER_KEY) or {})

    @property
    def label(self) -> str:
        """A short human name, e.g. ``ball-detector on laptop-8gb, 512x288 FP16``."""
        parts = [p for p in (self.resolution, (self.precision or "").upper()) if p]
        where = self.card + (f" ({self.mig_profile})" if self.mig_profile else "")
        detail = f", {' '.join(parts)}" if parts else ""
        return f"{self.model} on {where}{detail}"

    @property
    def batches(self) -> tuple[int, ...]:
        return tuple(p.batch for p in self.points)

    @property
    def latencies(self) -> tuple[float, ...]:
        return tuple(p.latency_ms for p in self.points)

    def with_points(self, points: Iterable[Point], source: Source | None = None) -> Curve:
        """A new curve (new id) with other points; the rest of the metadata is kept (the
        flag too: editing a point does not make a drifting measurement sound)."""
        return replace(
            self,
            points=normalise_points(points),
            source=source or self.source,
            created_at=None,
            renamed_from=None,
        )

    def renamed(self, *, model: object = None, card: object = None) -> Curve:
        """The same points under another model or card name: a new curve (new id) that
        records ``renamed_from``; BadInput for a name that is not valid or no change."""
        problems: list[str] = []
        names: dict[str, str] = {}
        for what, value in (("model", model), ("card", card)):
            if value is None or (isinstance(value, str) and not value.strip()):
                continue
            try:
                names[what] = clean_text(value, what) or ""
            except BadInput as exc:
                problems.extend(exc.problems)
        if problems:
            raise BadInput(problems)
        renamed = replace(self, **names, created_at=None, renamed_from=self.id)  # type: ignore[arg-type]
        if renamed.id == self.id:
            raise BadInput("the new names are the curve's own; there is nothing to rename")
        return renamed

    def summary(self) -> dict[str, Any]:
        """The fields ``planner curves list --json`` prints for one curve."""
        return {
            "id": self.id,
            "model": self.model,
            "card": self.card,
            "precision": self.precision,
            "resolution": self.resolution,
            "mig_profile": self.mig_profile,
            "source": self.source,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "n_points": len(self.points),
            "batches": list(self.batches),
            "flag": self.flag,
            "renamed_from": self.renamed_from,
        }

    def as_dict(self) -> dict[str, Any]:
        """Everything about the curve as JSON-ready data (``curves show --json``)."""
        return {
            **self.summary(),
            "environment": dict(self.environment),
            "points": [p.as_dict() for p in self.points],
        }


def curve_id(
    model: str,
    card: str,
    precision: str | None,
    resolution: str | None,
    mig_profile: str | None,
    points: Iterable[Point],
    per_request_ms: float = 0.0,
) -> str:
    """Short URL-safe id: a hash of the identifying metadata and sorted (batch, latency),
    and the per-request cost when it is not 0 (so every curve without one keeps its id).

    Latencies enter with microsecond resolution so that the same file parsed twice, or a
    value that went through JSON, gives the same id.
    """
    pairs = sorted((p.batch, f"{p.latency_ms:.6f}") for p in points)
    parts: list[Any] = [model, card, precision or "", resolution or "", mig_profile or "", pairs]
    if per_request_ms:
        parts.append(f"{per_request_ms:.6f}")
    key = json.dumps(parts, separators=(",", ":"))
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return base64.b32encode(digest).decode("ascii").lower()[:12]


# ---------------------------------------------------------------------------------------
# Validation. Each function raises BadInput with a message a user can act on.


def clean_text(value: object, what: str, *, required: bool = True) -> str | None:
    """A single line of plain text: trimmed, no control characters, bounded length.

    Text is stored exactly as given otherwise; in particular a spreadsheet formula such
    as ``=HYPERLINK(...)`` is kept as plain text (it is escaped on CSV export).
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise BadInput(f"{what} is missing")
        return None
    if not isinstance(value, str):
        value = str(value)
    text = value.strip()
    # isprintable() is False for every control or format character (and for some
    # harmless spaces, which the exact check below lets through).
    if not text.isprintable() and any(unicodedata.category(ch).startswith("C") for ch in text):
        raise BadInput(f"{what} contains control characters")
    if len(text) > MAX_TEXT:
        raise BadInput(f"{what} is longer than {MAX_TEXT} characters")
    return text


def clean_precision(value: object) -> str | None:
    """``fp32``, ``fp16``, ``bf16`` or ``int8`` (any case), or None when not given."""
    text = clean_text(value, "precision", required=False)
    if text is None:
        return None
    lowered = text.lower()
    if lowered not in PRECISIONS:
        raise BadInput(f"precision {text!r} is not one of {', '.join(PRECISIONS)}")
    return lowered


def clean_resolution(value: object) -> str | None:
    """``WIDTHxHEIGHT`` such as ``512x288``, or None when not given."""
    text = clean_text(value, "resolution", required=False)
    if text is None:
        return None
    match = _RESOLUTION.match(text)
    if not match or int(match[1]) < 1 or int(match[2]) < 1:
        raise BadInput(f"resolution {text!r} is not WIDTHxHEIGHT, e.g. 512x288")
    return f"{int(match[1])}x{int(match[2])}"


def parse_resolution(text: str) -> tuple[int, int]:
    """(width, height) from ``WIDTHxHEIGHT``."""
    clean = clean_resolution(text)
    if clean is None:
        raise BadInput("resolution is missing")
    width, height = clean.split("x")
    return int(width), int(height)


def clean_batch(value: object) -> int:
    """A batch size: a whole number from 1 to MAX_BATCH."""
    number = _number(value, "batch")
    if not number.is_integer():
        raise BadInput(f"batch {_show(value)} is not a whole number")
    if number < 1:
        raise BadInput(f"batch {_show(value)} is below 1")
    if number > MAX_BATCH:
        raise BadInput(f"batch {_show(value)} is above the largest supported batch {MAX_BATCH}")
    return int(number)


def clean_latency(value: object, what: str = "latency_ms") -> float:
    """A latency in ms: finite, at least MIN_LATENCY_MS (1 µs), below a thousand seconds."""
    number = _number(value, what)
    if number <= 0:
        raise BadInput(f"{what} {_show(value)} must be above zero")
    if number < MIN_LATENCY_MS:
        raise BadInput(
            f"{what} {_show(value)} is below {MIN_LATENCY_MS:g} ms (1 µs), faster than any GPU "
            "call can be; is the unit right?"
        )
    if number > MAX_LATENCY_MS:
        raise BadInput(f"{what} {_show(value)} is implausibly large (over {MAX_LATENCY_MS:g} ms)")
    return number


def clean_optional(value: object, what: str) -> float | None:
    """An optional non-negative finite number (spread, memory); empty means unknown."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    number = _number(value, what)
    if number < 0:
        raise BadInput(f"{what} {_show(value)} is negative")
    return number


def _show(value: object, longest: int = 40) -> str:
    """``repr(value)`` for a message, cut short: a 5,000-digit cell needs no echo."""
    text = repr(value)
    return text if len(text) <= longest else text[: longest - 1] + "…"


def _number(value: object, what: str) -> float:
    if type(value) is str:  # the common case first: a cell of a file
        try:
            number = float(value)
        except ValueError:
            raise BadInput(f"{what} {_show(value)} is not a number") from None
    elif isinstance(value, bool):
        raise BadInput(f"{what} {_show(value)} is not a number")
    elif isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise BadInput(f"{what} {_show(value)} is not a number") from None
    else:
        raise BadInput(f"{what} {_show(value)} is not a number")
    if not math.isfinite(number):
        raise BadInput(f"{what} {_show(value)} is not a finite number")
    return number


def make_point(raw: Mapping[str, object]) -> Point:
    """A validated point from a mapping with ``batch``, ``latency_ms`` and optional fields."""
    problems: list[str] = []
    batch: int | None = None
    latency: float | None = None
    try:
        batch = clean_batch(raw.get("batch"))
    except BadInput as exc:
        problems.extend(exc.problems)
    try:
        latency = clean_latency(raw.get("latency_ms"))
    except BadInput as exc:
        problems.extend(exc.problems)
    optional: dict[str, Any] = {}
    later: dict[str, list[str]] = {}
    for name in _OPTIONAL_FIELD_SET.intersection(raw):
        given = raw[name]
        if given is None or given == "":
            continue  # unknown
        try:
            value = clean_optional(given, name)
            if value and name in PERCENTILE_FIELDS and value < MIN_LATENCY_MS:
                clean_latency(value, name)  # a percentile is a latency: the same floor
            if value is not None and name == "n":
                if not value.is_integer():
                    raise BadInput(f"n {_show(given)} is not a whole number")
                optional[name] = int(value)
            else:
                optional[name] = value
        except BadInput as exc:
            later[name] = exc.problems
    if problems or later:
        # The optional fields' problems in their column order, after batch and latency.
        raise BadInput(problems + [p for n in OPTIONAL_POINT_FIELDS for p in later.get(n, [])])
    assert batch is not None and latency is not None  # else a problem was reported
    return Point(batch, latency, **optional)


def normalise_points(points: Iterable[Point]) -> tuple[Point, ...]:
    """Points sorted by batch; the same batch twice is allowed only with the same value."""
    by_batch: dict[int, Point] = {}
    problems = []
    for point in points:
        seen = by_batch.get(point.batch)
        if seen is not None and not math.isclose(seen.latency_ms, point.latency_ms, rel_tol=1e-9):
            problems.append(
                f"batch {point.batch} appears twice with different latencies "
                f"({seen.latency_ms:g} and {point.latency_ms:g} ms)"
            )
        by_batch.setdefault(point.batch, point)
    if problems:
        raise BadInput(problems)
    if not by_batch:
        raise BadInput("a curve needs at least one point")
    return tuple(by_batch[b] for b in sorted(by_batch))


def make_curve(
    *,
    model: object,
    card: object,
    precision: object = None,
    resolution: object = None,
    points: Iterable[Point],
    mig_profile: object = None,
    source: Source = "uploaded",
    created_at: datetime | None = None,
    environment: Mapping[str, Any] | None = None,
    flag: str | None = None,
) -> Curve:
    """A validated curve; every problem found is reported at once. Without a ``flag``, a
    drift warning in the environment (``planner measure``'s) flags the curve."""
    problems: list[str] = []

    def attempt(fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BadInput as exc:
            problems.extend(exc.problems)
            return None

    curve_model = attempt(clean_text, model, "model")
    curve_card = attempt(clean_text, card, "card")
    curve_precision = attempt(clean_precision, precision)
    curve_resolution = attempt(clean_resolution, resolution)
    curve_mig = attempt(clean_text, mig_profile, "MIG profile", required=False)
    curve_points = attempt(normalise_points, points)
    environment = dict(environment or {})
    if PER_REQUEST_KEY in environment:
        per_request = attempt(clean_per_request, environment[PER_REQUEST_KEY])
        if per_request:
            environment[PER_REQUEST_KEY] = per_request
        else:
            del environment[PER_REQUEST_KEY]  # 0 or a problem: no cost
    if BATCHER_KEY in environment:
        batcher = attempt(clean_batcher, environment[BATCHER_KEY])
        if batcher:
            environment[BATCHER_KEY] = batcher
        else:
            del environment[BATCHER_KEY]
    if source not in SOURCES:
        problems.append(f"source {source!r} is not one of {', '.join(SOURCES)}")
    if problems:
        raise BadInput(problems)
    return Curve(
        model=curve_model,
        card=curve_card,
        precision=curve_precision,
        resolution=curve_resolution,
        points=curve_points,
        mig_profile=curve_mig,
        source=source,
        created_at=created_at,
        environment=environment,
        flag=flag if flag is not None else flag_of(environment),
    )


def clean_per_request(value: object) -> float | None:
    """A per-request cost in ms: a finite number from 0 to a minute; empty means none."""
    number = clean_optional(value, PER_REQUEST_KEY)
    if number is not None and not limits.PER_REQUEST_MS.holds(number):
        raise BadInput(f"{PER_REQUEST_KEY} {_show(value)} must be {limits.PER_REQUEST_MS.words()}")
    return number


def clean_batcher(value: object) -> dict[str, float] | None:
    """A server's batcher settings: ``max_batch`` (a whole number) and/or
    ``max_queue_delay_us``, each in the range a plan takes; empty means none."""
    if value is None or value == {}:
        return None
    if not isinstance(value, Mapping) or not set(value) <= set(BATCHER_BOUNDS):
        raise BadInput(f"{BATCHER_KEY} must be a table of {' and '.join(BATCHER_BOUNDS)}")
    out: dict[str, float] = {}
    for name, number in value.items():
        bound = BATCHER_BOUNDS[name]
        if isinstance(number, bool) or not bound.holds(number):
            raise BadInput(f"{BATCHER_KEY} {name} {_show(number)} must be {bound.words()}")
        out[name] = int(number) if bound.whole else float(number)
    return out


def flag_of(environment: Mapping[str, Any]) -> str | None:
    """The flag an environment implies: a failed drift check (``drift_warning``)."""
    warning = environment.get("drift_warning")
    return f"drift check failed: {warning}" if isinstance(warning, str) and warning else None


def parse_points_option(text: str) -> tuple[Point, ...]:
    """Points from the command-line form ``"1:9.82,2:20.36"`` (any order)."""
    if not text or not text.strip():
        raise BadInput("--points is empty; expected e.g. 1:9.82,2:20.36")
    points = []
    problems = []
    for item in text.split(","):
        batch, sep, latency = item.partition(":")
        if not sep:
            problems.append(f"{item.strip()!r} is not BATCH:LATENCY_MS, e.g. 4:46.15")
            continue
        try:
            points.append(make_point({"batch": batch, "latency_ms": latency}))
        except BadInput as exc:
            problems.extend(exc.problems)
    if problems:
        raise BadInput(problems)
    return normalise_points(points)
