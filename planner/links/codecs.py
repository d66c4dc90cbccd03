"""Codecs: how each kind of parameter value is validated, written into a link and read back.

``check`` validates and normalises a Python value (used when a parameter set is
constructed); ``parse`` reads the text of a query parameter; ``format`` writes it. Each
raises BadInput with a short reason that does not repeat the value.
"""

from __future__ import annotations

import math
import re
from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from planner.curves.curve import (
    MAX_BATCH,
    Point,
    clean_precision,
    clean_resolution,
    clean_text,
    make_point,
    normalise_points,
    parse_points_option,
)
from planner.errors import BadInput
from planner.limits import CASCADE_MODELS, Bound
from planner.limits import MAX_BATCH as MAX_BATCH_BOUND
from planner.sim.crops import Crops, parse_crops

MAX_LINK_POINTS = 256
"""Most points a self-contained link embeds (keeps a URL well under 8 KB)."""

CURVE_ID = re.compile(r"^[a-z2-7]{12}$")
"""A curve's (or a calibration's) id: 12 characters of base32."""
MIG_PROFILE = re.compile(r"^[1-9]g\.[0-9]{1,4}gb(\+me)?$")
_INTEGER = re.compile(r"^[+-]?[0-9]{1,19}$")
_MAX_NUMBER_TEXT = 40

T = TypeVar("T")


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
    """One of a list of names (any case in a link); a live view such as a registry's
    keys is read when a value is checked."""

    choices: Collection[str]

    def check(self, value: object) -> str:
        if isinstance(value, str) and value.strip().lower() in self.choices:
            return value.strip().lower()
        raise BadInput(f"not one of {', '.join(self.choices)}")

    def describe(self) -> str:
        return "one of " + ", ".join(self.choices)


@dataclass(frozen=True)
class Subset(Codec[tuple[str, ...]]):
    """One or more of a list of names, comma-separated; order kept, repeats dropped (the
    list read when a value is checked, as ``Choice`` reads it)."""

    choices: Collection[str]

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
    """A comma-separated list of numbers, each checked by ``item`` (whole numbers where
    ``item`` is an ``Int``: a batch of 2.5 is refused, not cut to 2)."""

    item: Float | Int
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
                raise BadInput(f"{quoted(item.strip())} is not BATCH:LATENCY_MS, e.g. 4:46.15")
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


def quoted(value: object, limit: int = 40) -> str:
    """A value quoted for a message: control characters escaped, long text cut short."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) > limit:
        text = text[:limit] + "…"
    return repr(text)


@dataclass(frozen=True)
class CascadeEntry:
    """One model after the first in a link: a stored curve's id, its crops per input, and
    its largest batch (None: the default)."""

    curve: str
    crops: Crops
    largest: int | None = None

    @property
    def text(self) -> str:
        """``ID:CROPS`` (``:max=B`` when a largest batch is given)."""
        tail = f":max={self.largest}" if self.largest is not None else ""
        return f"{self.curve}:{self.crops.text}{tail}"


def cascade_entry(text: str) -> CascadeEntry:
    """``ID``, ``ID:3``, ``ID:poisson=2.5`` or ``ID:hist=0:0.2,1:0.8``, each optionally
    followed by ``:max=B`` (BadInput with the reason otherwise)."""
    body = text.strip()
    largest = None
    head, sep, tail = body.rpartition(":max=")
    if sep:
        if not (_INTEGER.match(tail.strip()) and MAX_BATCH_BOUND.holds(int(tail))):
            raise BadInput(f"{quoted(body)}: max= must be {MAX_BATCH_BOUND.words()}")
        body, largest = head, int(tail)
    curve, _, crops = body.partition(":")
    curve = curve.strip().lower()
    if not CURVE_ID.match(curve):
        raise BadInput(f"{quoted(body)} does not start with a 12-character curve id")
    return CascadeEntry(curve, parse_crops(crops) if crops.strip() else Crops(), largest)


@dataclass(frozen=True)
class Cascade(Codec[tuple[str, ...]]):
    """The models after the first, in order, separated by ``;``: ``ID:CROPS[:max=B]``
    each (``cascade_entry``); kept as their canonical texts."""

    max_len: int = int(CASCADE_MODELS.high)

    def check(self, value: object) -> tuple[str, ...]:
        if isinstance(value, str):
            items = [i for i in value.split(";") if i.strip()]
        elif isinstance(value, list | tuple):
            items = list(value)
        else:
            raise BadInput("not a list of models")
        if len(items) > self.max_len:
            raise BadInput(f"has {len(items)} models; at most {self.max_len} after the first")
        out = []
        for item in items:
            entry = item if isinstance(item, CascadeEntry) else cascade_entry(str(item))
            out.append(entry.text)
        return tuple(out)

    def format(self, value: tuple[str, ...]) -> str:
        return ";".join(value)

    def describe(self) -> str:
        return (
            "models after the first, ID:CROPS separated by ';' "
            "(CROPS: K, poisson=MEAN or hist=COUNT:SHARE,...)"
        )


@dataclass(frozen=True)
class CurveIds(Codec[tuple[str, ...]]):
    """Stored curve ids, comma-separated, in order; a repeat is another entry."""

    max_len: int

    def check(self, value: object) -> tuple[str, ...]:
        items = _items(value)
        if items is None:
            raise BadInput("not a list of curve ids")
        if len(items) > self.max_len:
            raise BadInput(f"has {len(items)} curve ids; at most {self.max_len}")
        out = []
        for item in items:
            text = str(item).strip().lower()
            if not CURVE_ID.match(text):
                raise BadInput(f"{quoted(text)} is not a 12-character curve id")
            out.append(text)
        return tuple(out)

    def format(self, value: tuple[str, ...]) -> str:
        return ",".join(value)

    def describe(self) -> str:
        return f"comma-separated list of up to {self.max_len} curve ids"


@dataclass(frozen=True)
class CotenantCurves(Codec[tuple[str, ...]]):
    """Co-tenants' curves, in order: each a stored curve id or its points given inline
    (``BATCH:MS`` pairs, ``1:5,4:12``, kept sorted by batch as their shortest text). Ids
    alone are comma-separated, as links wrote them before points were taken; with points
    among them the entries are separated by ``;`` (a ``;``-separated piece without ``:``
    is a comma-separated list of ids)."""

    max_len: int

    def check(self, value: object) -> tuple[str, ...]:
        if isinstance(value, str):
            pieces: list[Any] = [p for p in value.split(";") if p.strip()]
        elif isinstance(value, list | tuple):
            pieces = list(value)
        else:
            raise BadInput("not a list of curve ids or points")
        items: list[str] = []
        for piece in pieces:
            text = str(piece).strip()
            items += [text] if ":" in text else [i for i in text.split(",") if i.strip()]
        if len(items) > self.max_len:
            raise BadInput(f"has {len(items)} co-tenant curves; at most {self.max_len}")
        out = []
        for item in items:
            if ":" in item:
                out.append(points_text(item))
                continue
            text = item.strip().lower()
            if not CURVE_ID.match(text):
                raise BadInput(
                    f"{quoted(text)} is neither a 12-character curve id nor points such as 1:5,4:12"
                )
            out.append(text)
        return tuple(out)

    def format(self, value: tuple[str, ...]) -> str:
        return (";" if any(is_points(v) for v in value) else ",").join(value)

    def describe(self) -> str:
        return (
            f"up to {self.max_len} co-tenant curves, each a stored curve id or points "
            "BATCH:MS,... (separated by ';' when points are among them)"
        )


def is_points(entry: str) -> bool:
    """Whether a co-tenant's curve entry is its points given inline (not a curve id)."""
    return ":" in entry


def points_text(text: str) -> str:
    """Inline points as their canonical text: ``1:5,4:12``, sorted by batch (BadInput
    with the reason when they do not read as points)."""
    try:
        points = parse_points_option(text)
    except BadInput as exc:
        raise BadInput([f"points {quoted(text)}: {p}" for p in exc.problems]) from None
    return ",".join(f"{p.batch}:{number_text(p.latency_ms)}" for p in points)
