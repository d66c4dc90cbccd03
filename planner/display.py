"""How the planner writes numbers for people: money, milliseconds, frame rates, fractions.

One rule per kind of number, used by every dashboard page, the report and the command
line's text output, so that ``$2.50`` never stands next to ``$0.600`` and a latency reads
``38.5 ms`` wherever it appears. Each function returns text; ``None`` (a figure that does
not exist, such as the cost of a card without a price) becomes ``-`` everywhere.

- Money: US dollars with two decimals and thousands separators (``$1,382.40``); below ten
  cents, two significant digits (``$0.042``), so that a cheap seat never reads ``$0.00``.
- Milliseconds and other measured quantities: about three significant digits
  (``2,417 ms``, ``38.5 ms``, ``9.82 ms``, ``0.452 ms``), a whole number without
  decimals (``50 ms``).
- Frame rates: one decimal (``28.5 fps``), the floor's own precision; a whole number
  without (``30 fps``).
- Fractions: percentages with about three significant digits (``12.5%``, ``0.40%``); a
  non-zero fraction never reads ``0%``.

The ``PATTERNS`` say the same as regular expressions, so that tests can check that every
figure a front writes is written here.

>>> money(2.5), money(0.6), money(0.0421)
('$2.50', '$0.60', '$0.042')
>>> ms(2417.3), ms(38.46), ms(9.823), ms(0.4521)
('2,417 ms', '38.5 ms', '9.82 ms', '0.452 ms')
>>> fps(11.94), fraction(0.125), fraction(0.004)
('11.9 fps', '12.5%', '0.40%')
"""

from __future__ import annotations

import math
from collections.abc import Callable

from planner.spans import Span

MISSING = "-"
"""What a figure that does not exist is written as."""


def _missing(value: float | None) -> bool:
    return value is None or not math.isfinite(value)


def money(value: float | None) -> str:
    """US dollars: two decimals (``$2.50``), or two significant digits below ten cents
    (``$0.042``), so that a cheap seat never reads ``$0.00``."""
    if _missing(value):
        return MISSING
    assert value is not None
    if value == 0 or abs(value) >= 0.1:
        return f"${value:,.2f}"
    digits = 1 - math.floor(math.log10(abs(value)))  # two significant digits
    return f"${value:.{digits}f}"


def number(value: float | None) -> str:
    """A measured quantity with about three significant digits: ``2,417``, ``38.5``,
    ``9.82``, ``0.452`` (no unit; see ``ms`` and ``fps``)."""
    if _missing(value):
        return MISSING
    assert value is not None
    magnitude = abs(value)
    if magnitude >= 100 or value == round(value):
        return f"{value:,.0f}"
    if magnitude >= 10:
        text = f"{value:.1f}"
    elif magnitude >= 1:
        text = f"{value:.2f}"
    else:
        text = f"{value:.{2 - math.floor(math.log10(magnitude))}f}"  # three significant
    return text.rstrip("0").rstrip(".") if "." in text else text


def ms(value: float | None, *, unit: bool = True, sign: bool = False) -> str:
    """A time in milliseconds: ``38.5 ms`` (``38.5`` with ``unit=False``, for a table
    whose header names the unit; ``+1.75 ms`` with ``sign=True``, for a change)."""
    text = number(value)
    if sign and text != MISSING and value is not None and value > 0:
        text = "+" + text
    return f"{text} ms" if unit and text != MISSING else text


def ms_column(value: float | None, width: int = 8) -> str:
    """``ms`` right-aligned in ``width`` characters, for a text table's column:
    ``'    38.5 ms'``."""
    text = number(value)
    return f"{text:>{width}} ms" if text != MISSING else f"{text:>{width}}"


def fps(value: float | None, *, unit: bool = True, decimal: bool = False) -> str:
    """A frame rate with one decimal: ``28.5 fps`` (the floor's own precision); a whole
    number without one (``30 fps``, a setting), unless ``decimal`` asks for it (``30.0``,
    in a column whose other rows have one, so that ``30`` never stands beside ``30.0``)."""
    if _missing(value):
        return MISSING
    assert value is not None
    text = f"{value:.0f}" if value == round(value) and not decimal else f"{value:.1f}"
    return f"{text} fps" if unit else text


def fraction(value: float | None, *, sign: bool = False) -> str:
    """A fraction as a percentage: ``12%``, ``12.5%``, ``0.40%``; a non-zero fraction
    never reads ``0%``. ``sign=True`` writes a change: ``+12.5%``."""
    if _missing(value):
        return MISSING
    assert value is not None
    if sign and value > 0:
        return "+" + fraction(value)
    percent = 100 * value
    magnitude = abs(percent)
    if magnitude == 0:
        return "0%"
    if magnitude >= 10:
        return f"{percent:.3g}%" if magnitude < 100 else f"{percent:.0f}%"
    if magnitude >= 0.995:  # 0.996% is 1.0%, not 1.00%
        return f"{percent:.1f}%"
    if magnitude >= 0.01:
        return f"{percent:.2f}%"
    return f"{percent:.{-math.floor(math.log10(magnitude))}f}%"  # one significant digit


def batches(values: tuple[int, ...] | list[int]) -> str:
    """Measured batch sizes as a range for a sentence: ``batch 1`` for one, ``batches
    1–16`` for several (never ``1–1``)."""
    if not values:
        return "no batch"
    low, high = min(values), max(values)
    return f"batch {low}" if low == high else f"batches {low}–{high}"


def count(value: float | None) -> str:
    """A whole number with thousands separators: ``1,382`` (GPUs, seats, sessions)."""
    if _missing(value):
        return MISSING
    assert value is not None
    return f"{round(value):,}"


def span(value: Span | None, write: Callable[[float | None], str] = count, unit: str = "") -> str:
    """A figure that follows from a seat range: ``18–22 seats, likely 20`` (``write``
    writes each figure, ``unit`` follows the range), or ``20 seats`` when the range is
    one value. None (no such figure) is ``MISSING``.

    >>> span(Span(18, 20, 22), unit=" seats"), span(Span(0.2, 0.22, 0.25), money)
    ('18–22 seats, likely 20', '$0.20–$0.25, likely $0.22')
    """
    if value is None:
        return MISSING
    low, likely, high = write(value.low), write(value.likely), write(value.high)
    if low == high:
        return f"{likely}{unit}"
    return f"{low}–{high}{unit}, likely {likely}"


_NUMBER = (  # never a trailing zero after the point: ``50 ms``, not ``50.0 ms``
    r"-?(?:\d{1,3}(?:,\d{3})+|\d{3}|\d{1,2}(?:\.[1-9])?|\d\.\d?[1-9]"
    r"|0\.\d{0,2}[1-9]|0\.0\d{0,2}[1-9]|0\.00\d*[1-9])"
)
PATTERNS = {
    "money": r"-?\$(?:\d{1,3}(?:,\d{3})*\.\d{2}|0\.0\d{1,}|0)",
    "ms": _NUMBER + " ms",
    "fps": r"-?\d+(?:\.\d)? fps",
    "percent": r"[-+]?(?:[1-9]\d{2,}|[1-9]\d(?:\.\d)?|[1-9]\.\d|0\.\d{2}|0\.0\d+|0)%",
}
"""What ``money``, ``ms``, ``fps`` and ``fraction`` write, as regular expressions (with
their units): a figure of that kind written anywhere else does not match."""
