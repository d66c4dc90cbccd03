"""Output helpers shared by the sub-commands."""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Sequence
from typing import Any


def print_json(document: Any) -> None:
    """One JSON document on standard output (and nothing else goes there)."""
    json.dump(document, sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def note(message: str) -> None:
    """A message for people, on standard error so it never mixes with JSON."""
    print(message, file=sys.stderr)


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    """A plain text table with columns padded to their widest cell."""
    cells = [[str(h) for h in header]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def csv_list(text: str) -> list[str]:
    """Items of a comma-separated option, trimmed, empty items dropped."""
    return [item.strip() for item in text.split(",") if item.strip()]


def stdout_is_terminal() -> bool:
    return sys.stdout.isatty()


def open_store(args: Any) -> Any:
    """The store named by ``--db``, else ``PLANNER_DB``, else the per-user default."""
    from planner.store import Store

    return Store(getattr(args, "db", None))


def add_curve_source(parser: Any) -> None:
    """``--curve ID | --points "1:9.82,2:20.36"``: where a command's batch curve comes from."""
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--curve", metavar="ID", help="a stored curve (see `planner curves list`)")
    source.add_argument(
        "--points", metavar="B:MS,...", help='measured points, e.g. "1:9.82,2:20.36,4:46.15"'
    )


def read_curve_source(args: Any) -> tuple[tuple[Any, ...], Any]:
    """(points, stored curve or None) from ``--curve`` / ``--points``."""
    from planner.curve import parse_points_option

    if getattr(args, "points", None) is not None:
        return parse_points_option(args.points), None
    with open_store(args) as store:
        curve = store.curve(args.curve)
    return curve.points, curve


def number(text: str, what: str, *, low: float, high: float, whole: bool = False) -> float:
    """A number option checked against its range; BadInput says which option and why.
    Whole-number options whose range goes past 2**53 take ``whole_number`` instead."""
    from planner.errors import BadInput

    try:
        value = float(text)
    except (TypeError, ValueError):
        raise BadInput(f"{what} {text!r} is not a number") from None
    if not math.isfinite(value) or not low <= value <= high:
        raise BadInput(f"{what} {text!r} must be between {low:g} and {high:g}")
    if whole and not value.is_integer():
        raise BadInput(f"{what} {text!r} is not a whole number")
    return value


_DIGITS = re.compile(r"^[+-]?[0-9]{1,30}$")


def whole_number(text: str, what: str, *, low: int, high: int) -> int:
    """A whole-number option, read as an integer (never through a float, which would
    make 2**53 and 2**53 + 1 the same seed), checked against its range.

    ``1e3`` and ``4.0`` are accepted where a float holds them exactly (below 2**53).
    """
    from planner.errors import BadInput

    stripped = str(text).strip()
    if _DIGITS.match(stripped):
        value = int(stripped)
    else:
        try:
            number = float(stripped) if len(stripped) <= 40 else math.nan
        except ValueError:
            raise BadInput(f"{what} {stripped[:40]!r} is not a number") from None
        if not (math.isfinite(number) and number.is_integer()):
            raise BadInput(f"{what} {stripped[:40]!r} is not a whole number")
        if abs(number) >= 2**53:
            raise BadInput(f"{what} {stripped[:40]!r} is not exact as written; give its digits")
        value = int(number)
    if not low <= value <= high:
        raise BadInput(f"{what} {stripped[:40]!r} must be between {low} and {high}")
    return value
