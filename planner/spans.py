"""A figure that follows from a seat range: its low and high ends and its likely value.

Where the fitted curve's band makes seats per card a range (say 18–22, 20 on the fitted
curve), every GPU count and cost computed from seats per card is a range too: the GPUs
for a peak run from what 22 seats per card need to what 18 need, the cost per seat from
the price over 22 seats to the price over 18. ``Span`` carries the three figures so that
no front shows the likely one alone.

In JSON a span is written flat, under the figure's own key and two suffixes (see
``fields``): ``gpus`` is the likely value (on the fitted curve), ``gpus_low`` and
``gpus_high`` the smallest and largest figure over the range, whichever seat count gives
them. A figure that does not exist (no price) is None at all three keys.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

LOW, HIGH = "_low", "_high"
"""The suffixes of a span's two ends in JSON, after the figure's own key."""


@dataclass(frozen=True)
class Span:
    """``low <= likely <= high``; all three equal when the range is one value."""

    low: float
    likely: float
    high: float

    def __post_init__(self) -> None:
        if not self.low <= self.likely <= self.high:
            raise ValueError(f"a span's ends enclose its likely value: {self}")

    @classmethod
    def of(cls, likely: float, *ends: float) -> Span:
        """The span of ``likely`` and the other figures it may be (in any order)."""
        values = (likely, *ends)
        return cls(min(values), likely, max(values))

    @property
    def settled(self) -> bool:
        """Whether the range is one value."""
        return self.low == self.high

    def map(self, f: Callable[[float], float]) -> Span:
        """The span of ``f`` over the three figures, for any monotone ``f`` (one that
        reverses the order, such as a price over seats, swaps the ends)."""
        return Span.of(f(self.likely), f(self.low), f(self.high))

    def scaled(self, factor: float) -> Span:
        return self.map(lambda v: v * factor)


def fields(key: str, span: Span | None, digits: int | None = None) -> dict[str, Any]:
    """``{key: likely, key_low: low, key_high: high}`` (None at all three without a
    span), each rounded to ``digits`` decimals when given."""
    if span is None:
        return {key: None, key + LOW: None, key + HIGH: None}

    def r(v: float) -> Any:
        return v if digits is None else round(v, digits)

    return {key: r(span.likely), key + LOW: r(span.low), key + HIGH: r(span.high)}


def int_fields(key: str, span: Span | None) -> dict[str, Any]:
    """``fields`` for a count (GPUs, seats): integers."""
    if span is None:
        return fields(key, None)
    return {key: int(span.likely), key + LOW: int(span.low), key + HIGH: int(span.high)}


def from_fields(doc: dict[str, Any], key: str) -> Span | None:
    """The span ``fields`` wrote under ``key`` in ``doc`` (None where it is None)."""
    likely = doc.get(key)
    if likely is None:
        return None
    return Span.of(likely, doc.get(key + LOW, likely), doc.get(key + HIGH, likely))
