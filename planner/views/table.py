"""The plain pieces a view is made of: a table of text cells, a figure, a link.

Every cell is already written as ``planner.display`` writes figures; a renderer only
escapes and lays it out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Table:
    """A header and rows of text cells, one cell per header column."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, rows: Sequence[Mapping[str, str]]) -> Table:
        """The table of ``rows``, each a mapping of column to cell (the first one's keys
        are the header)."""
        header = tuple(rows[0]) if rows else ()
        return cls(header, tuple(tuple(row[h] for h in header) for row in rows))

    @property
    def records(self) -> list[dict[str, str]]:
        """One mapping of column to cell per row, as a page's table takes them."""
        return [dict(zip(self.header, row, strict=True)) for row in self.rows]

    def column(self, name: str) -> tuple[str, ...]:
        """Every cell of column ``name``, top to bottom."""
        at = self.header.index(name)
        return tuple(row[at] for row in self.rows)


@dataclass(frozen=True)
class Metric:
    """One figure said on its own: what it is, its value, and how it is made (may be
    empty)."""

    label: str
    value: str
    help: str = ""


@dataclass(frozen=True)
class Link:
    """An address and what it opens."""

    what: str
    address: str
