"""Output helpers shared by the sub-commands."""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from planner.limits import Bound
    from planner.validate.runs import Progress


def print_json(document: Any) -> None:
    """One JSON document on standard output (and nothing else goes there).

    A number that is not finite (an inf or NaN an older planner stored) is written as
    ``null``: JSON has no such numbers, and the document is made whole before any of it
    is printed, so it is never cut off half-way. Every other float is rounded to what it
    means (``plain``): no ``57.599999999999994``.
    """
    text = json.dumps(plain(document), indent=2, allow_nan=False)
    sys.stdout.write(text + "\n")


SIGNIFICANT = 12
"""Significant digits JSON keeps of a float whose key says nothing finer: all a measured
figure holds, and none of a binary fraction's noise (``57.599999999999994`` is 57.6)."""

DECIMALS = (
    (("cost", "price", "usd"), 4),  # US dollars: a hundredth of a cent
    (("_ms", "latency", "ms_"), 3),  # milliseconds: a microsecond
    (("fps",), 3),
    (("fraction", "utilisation", "share", "error", "headroom"), 4),
)
"""Decimals kept of a float by what its key names (the first rule that fits)."""


def plain(value: Any, keys: tuple[str, ...] = ()) -> Any:
    """``value`` for JSON, at any depth: every non-finite float None, every other float
    rounded to what its key means (``DECIMALS``: its own key first, then the keys it lies
    under, so ``stages_ms.mean.gpu`` is in milliseconds), else ``SIGNIFICANT`` digits."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        for name in reversed(keys):
            for words, decimals in DECIMALS:
                if any(w in name.lower() for w in words):
                    if value != 0 and abs(value) < 1:  # keep a small figure's digits
                        return float(f"{value:.{max(decimals, 1) + 1}g}")
                    return round(value, decimals)
        return float(f"{value:.{SIGNIFICANT}g}")
    if isinstance(value, dict):
        return {k: plain(item, (*keys, str(k))) for k, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item, keys) for item in value]
    return value


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


def open_store(args: Any) -> Any:
    """The store named by ``--db``, else ``PLANNER_DB``, else the per-user default."""
    from planner.store.repository import Store

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
    from planner.curves.curve import parse_points_option

    if getattr(args, "points", None) is not None:
        return parse_points_option(args.points), None
    with open_store(args) as store:
        curve = store.curve(args.curve)
    return curve.points, curve


def number(text: str, what: str, bound: Bound) -> float:
    """A number option checked against its range in the library (``planner.limits``);
    BadInput says which option and why. Whole numbers are read as integers, never through
    a float (which would make 2**53 and 2**53 + 1 the same seed); ``1e3`` and ``4.0`` are
    accepted where a float holds them exactly."""
    from planner.errors import BadInput

    stripped = str(text).strip()
    shown = repr(stripped[:40])
    if bound.whole and _DIGITS.match(stripped):
        value: float = int(stripped)
    else:
        try:
            value = float(stripped) if len(stripped) <= 40 else math.nan
        except ValueError:
            raise BadInput(f"{what} {shown} is not a number") from None
        if bound.whole and math.isfinite(value):
            if not value.is_integer():
                raise BadInput(f"{what} {shown} is not a whole number")
            if abs(value) >= 2**53:
                raise BadInput(f"{what} {shown} is not exact as written; give its digits")
            value = int(value)
    if not bound.holds(value):
        raise BadInput(f"{what} {shown} must be {bound.words()}")
    return value


_DIGITS = re.compile(r"^[+-]?[0-9]{1,30}$")


def option(parser: argparse.ArgumentParser, name: str, help: str, **extra: Any) -> None:
    """``--NAME`` for the link parameter ``name``, with the library's default (shown in the
    help), so the command line, links and the library cannot disagree on it."""
    from planner.links.parameters import PARAMETERS

    parameter = PARAMETERS[name]
    default = None if parameter.default is None else parameter.codec.format(parameter.default)
    shown = f" (default {default})" if default else ""
    parser.add_argument(
        f"--{name.replace('_', '-')}", default=default, help=f"{help}{shown}", **extra
    )


def link_values(args: Any, names: Sequence[str]) -> dict[str, Any]:
    """The options named by link parameters, read by the parameters' own codecs (so the
    command line accepts exactly what links and the library accept); BadInput lists
    every option that does not read, by its flag."""
    from planner.errors import BadInput
    from planner.links.parameters import PARAMETERS

    values: dict[str, Any] = {}
    problems: list[str] = []
    for name in names:
        text = getattr(args, name, None)
        if text is None:
            continue
        try:
            values[name] = PARAMETERS[name].codec.parse(str(text))
        except BadInput as exc:
            problems.extend(option_name(f"{name}: {p}") for p in exc.problems)
    if problems:
        raise BadInput(problems)
    return values


def option_name(problem: str) -> str:
    """``budget_ms: ...`` reads ``--budget-ms: ...`` on the command line."""
    name, sep, rest = problem.partition(": ")
    return f"--{name.replace('_', '-')}: {rest}" if sep and name.isidentifier() else problem


class StatusLine:
    """Progress on a stream (standard error): on a terminal, one line redrawn in place at
    most every ``interval_s``; ``log`` writes a line that stays (above the redrawn one).
    ``terminal`` says which, so callers can log less where nothing is redrawn (a log
    file, CI)."""

    WIDTH = 28

    def __init__(self, stream: TextIO, interval_s: float = 0.1) -> None:
        self.stream = stream
        self.terminal = bool(getattr(stream, "isatty", lambda: False)())
        self.interval_s = interval_s
        self.last = 0.0
        self.drawn = False

    @classmethod
    def bar(cls, fraction: float) -> str:
        """``[#######.....]  40%``."""
        filled = round(fraction * cls.WIDTH)
        return f"[{'#' * filled}{'.' * (cls.WIDTH - filled)}] {fraction:4.0%}"

    def due(self, interval_s: float | None = None, final: bool = False) -> bool:
        """Whether ``interval_s`` (default: the line's own) has passed since the last
        time this said yes; always yes for the ``final`` update."""
        now = time.monotonic()
        if not final and now - self.last < (self.interval_s if interval_s is None else interval_s):
            return False
        self.last = now
        return True

    def draw(self, text: str) -> None:
        """Redraw the line in place (on a terminal; elsewhere nothing)."""
        if not self.terminal:
            return
        columns = shutil.get_terminal_size((80, 20)).columns
        self.stream.write("\r" + text[: columns - 1] + "\x1b[K")
        self.stream.flush()
        self.drawn = True

    def log(self, text: str) -> None:
        """A line that stays."""
        self.clear()
        print(text, file=self.stream, flush=True)

    def clear(self) -> None:
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.drawn = False

    def close(self, keep: bool = False) -> None:
        """End the redrawn line: erased, or with ``keep`` left on the screen."""
        if self.drawn and keep:
            self.stream.write("\n")
            self.drawn = False
        self.clear()
        self.stream.flush()


class Bar(StatusLine):
    """A load test's progress on standard error: a bar redrawn in place on a terminal,
    one line per run elsewhere; a context manager that closes it."""

    message = ""

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __call__(self, event: Progress) -> None:
        if not self.terminal:
            if event.message != self.message:
                self.message = event.message
                self.log(f"[{event.fraction:4.0%}] {event.message}")
        elif self.due(final=event.fraction >= 1):
            self.draw(f"{self.bar(event.fraction)}  {event.message}")
