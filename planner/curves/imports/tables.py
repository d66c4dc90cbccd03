"""CSV tables as tools write them: the header and records (``read_table``), a cell as
a number, and the guard against spreadsheet formulas in text cells."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

from planner.curves.imports.problems import Problems
from planner.errors import BadInput

MAX_COLUMNS = 256
"""Most columns a table may have: the widest tool export has a few dozen."""


def unescape_formula(text: str) -> str:
    """Undo the CSV export's formula guard (a leading apostrophe before = + - @)."""
    if len(text) > 1 and text[0] == "'" and text[1] in "=+-@\t\r":
        return text[1:]
    return text


def escape_formula(text: str) -> str:
    """Guard text that a spreadsheet would evaluate (``=HYPERLINK(...)``) with an apostrophe."""
    if text and text[0] in "=+-@\t\r":
        return "'" + text
    return text


@dataclass(frozen=True)
class Table:
    """A CSV table from a tool: the header cells and the data records with line numbers.

    Header cells keep their spelling (for messages); ``index`` finds a column by its
    name in any case. Blank lines are skipped, and empty cells that trail past the header
    are dropped (older perf_analyzer versions end every data row with a comma). Records
    wider than the header are left out and described in ``problems``, which a parser
    raises once it has checked the header (a wrong header explains more).
    """

    name: str
    header: list[str]
    header_line: int
    records: list[tuple[int, list[str]]]
    problems: Problems

    def index(self, *names: str) -> int | None:
        """Position of the first column called one of ``names`` (any case), or None."""
        lowered = [h.strip().lower() for h in self.header]
        for wanted in names:
            if wanted.lower() in lowered:
                return lowered.index(wanted.lower())
        return None

    def report(self) -> Problems:
        """A problem list for the rows of this table that starts with the table's own."""
        found = Problems(self.name)
        found.kept = list(self.problems.kept)
        found.more = self.problems.more.copy()
        return found


def first_row(text: str) -> list[str]:
    """The cells of the first non-blank line read as CSV (empty if it is not CSV)."""
    stripped = text.lstrip()
    end = stripped.find("\n")
    first = stripped if end < 0 else stripped[:end]
    try:
        return next(csv.reader([first.rstrip("\r")]), [])
    except csv.Error:
        return []


def read_table(name: str, text: str) -> Table:
    """The header and records of a CSV table; BadInput if it is empty or not CSV."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    header_line = 0
    records: list[tuple[int, list[str]]] = []
    problems = Problems(name)
    try:
        for record in reader:
            cells = [c.strip() for c in record]
            if not any(cells):
                continue
            if header is None:
                while cells and not cells[-1]:
                    cells.pop()
                if len(cells) > MAX_COLUMNS:
                    raise BadInput(
                        f"{name} line {reader.line_num}: the header has {len(cells):,} columns, "
                        f"more than the {MAX_COLUMNS} a table may have"
                    )
                header, header_line = cells, reader.line_num
                continue
            while len(cells) > len(header) and not cells[-1]:
                cells.pop()
            if len(cells) > len(header):
                problems.append(
                    f"{name} line {reader.line_num}: {len(cells)} cells but the header has "
                    f"{len(header)}"
                )
                continue
            records.append((reader.line_num, cells + [""] * (len(header) - len(cells))))
    except csv.Error as exc:
        raise BadInput(f"{name} line {reader.line_num}: not a readable CSV table ({exc})") from None
    if header is None:
        raise BadInput(f"{name}: file is empty")
    return Table(
        name=name, header=header, header_line=header_line, records=records, problems=problems
    )


def table_number(cell: str, column: str, *, positive: bool = False) -> float:
    """A finite, non-negative number from a table cell (above zero when ``positive``)."""
    if not cell:
        raise BadInput(f"{column} is empty")
    try:
        value = float(cell)
    except ValueError:
        raise BadInput(f"{column} {cell!r} is not a number") from None
    if not math.isfinite(value):
        raise BadInput(f"{column} {cell!r} is not a finite number")
    if positive and value <= 0:
        raise BadInput(f"{column} {cell!r} must be above zero")
    if value < 0:
        raise BadInput(f"{column} {cell!r} is negative")
    return value
