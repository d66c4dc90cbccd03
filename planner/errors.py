"""Errors the planner reports to people, as opposed to bugs.

Every error here carries messages a user can act on. The command line prints each
problem on its own line and exits with status 2; the dashboard shows them in a message
box. Anything else that escapes is a bug.
"""

from __future__ import annotations

from collections.abc import Iterable


class PlannerError(Exception):
    """Base class for errors caused by input or environment, not by a bug."""

    def __init__(self, problems: str | Iterable[str]) -> None:
        self.problems: list[str] = [problems] if isinstance(problems, str) else list(problems)
        if not self.problems:
            self.problems = ["unspecified problem"]
        super().__init__("; ".join(self.problems))


class BadInput(PlannerError):
    """Input (a file, an argument, a URL parameter) was rejected; nothing was stored."""


class StoreError(PlannerError):
    """The store file cannot be used as asked: damaged, read-only, or the disk is full.

    Nothing was stored by the operation that raised it.
    """


class StoreLocked(StoreError):
    """Another process kept the DuckDB file busy for longer than this one would wait."""


class NotFound(PlannerError):
    """A curve, card or plan id that is not in the store."""
