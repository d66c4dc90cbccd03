"""The problems an import reports: per file, the first few word for word and the rest
counted by kind (``Problems``), and where a problem is, for many rows at once (``places``)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

from planner.errors import BadInput

MAX_PROBLEMS_PER_FILE = 50
"""Problems reported word for word per file; the rest are counted by kind."""


_KIND = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\d[\d,.:]*")


def problem_kind(problem: str) -> str:
    """What a problem says, without where or which value: ``f.csv line 3: batch 'x' is
    not a number`` is of the kind ``batch … is not a number``."""
    _where, sep, reason = problem.partition(": ")
    return _KIND.sub("…", reason if sep else problem)


class Problems:
    """The problems found in one file: the first ``limit`` word for word, the rest
    counted by kind, so a file with a million bad rows gives a report of a few lines.

    Collects like a list (``append``, ``extend``, truth value); ``lines()`` is the report.
    """

    def __init__(self, name: str, limit: int = MAX_PROBLEMS_PER_FILE) -> None:
        self.name = name
        self.limit = limit
        self.kept: list[str] = []
        self.more: Counter[str] = Counter()

    def append(self, problem: str) -> None:
        if len(self.kept) < self.limit:
            if problem not in self.kept:  # two checks that found the same thing say it once
                self.kept.append(problem)
        else:
            self.more[problem_kind(problem)] += 1

    def absorb(self, other: Problems) -> None:
        """Add another collector's problems (its overflow counted as overflow here)."""
        self.extend(other.kept)
        self.more.update(other.more)

    def extend(self, problems: Iterable[str]) -> None:
        for problem in problems:
            self.append(problem)

    def __bool__(self) -> bool:
        return bool(self.kept)

    def __len__(self) -> int:
        return len(self.kept) + sum(self.more.values())

    def __iter__(self) -> Iterator[str]:
        return iter(self.lines())

    def lines(self) -> list[str]:
        """The kept problems, then one line with how many more there were of each kind."""
        if not self.more:
            return list(self.kept)
        total = sum(self.more.values())
        seen = {problem_kind(p) for p in self.kept}
        common = self.more.most_common()
        shown = "; ".join(f"{count:,} × {kind}" for kind, count in common[:5])
        if len(common) > 5:
            shown += f"; and {len(common) - 5} other kinds"
        same = " of the same kinds" if set(self.more) <= seen else ""
        where = f"{self.name}: " if self.name else ""
        return [*self.kept, f"{where}… and {total:,} more{same} ({shown})"]

    def check(self) -> None:
        """Raise BadInput (``FileProblems``) with the report when there is any problem."""
        if self.kept:
            raise FileProblems(self)


def capped(problems: Iterable[str], limit: int = MAX_PROBLEMS_PER_FILE) -> list[str]:
    """Any list of problems as a report that does not grow with it (what the command
    line prints, what the dashboard's problem box shows): every problem when they fit in
    ``limit`` + 1 lines, else the first ``limit`` word for word and one line counting the
    rest by kind, as ``Problems`` reports a file's."""
    items = list(problems)
    if len(items) <= limit + 1:  # a line that counts one more would save nothing
        return items
    report = Problems("", limit)
    report.extend(items)
    return report.lines()


class FileProblems(BadInput):
    """BadInput from one file's ``Problems``, which it carries (``found``) so that a
    report of several files can count them exactly."""

    def __init__(self, found: Problems) -> None:
        super().__init__(found.lines())
        self.found = found


_PLACE = re.compile(r"^(?P<file>.*) (?P<unit>line|point) (?P<number>\d+)$")


def places(wheres: Sequence[str]) -> str:
    """Where a problem is, for many rows at once: ``a.csv lines 2–7, 9`` (``a.csv line 2``
    for one row). Places of different files or kinds are listed as given."""
    parsed = [_PLACE.match(w) for w in wheres]
    if not all(parsed) or len({(m["file"], m["unit"]) for m in parsed if m}) != 1:
        return ", ".join(dict.fromkeys(wheres))
    first = parsed[0]
    assert first is not None
    numbers = sorted({int(m["number"]) for m in parsed if m})
    if len(numbers) == 1:
        return wheres[0]
    spans: list[str] = []
    start = previous = numbers[0]
    for number in [*numbers[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        spans.append(str(start) if start == previous else f"{start}–{previous}")
        if number is not None:
            start = previous = number
    shown = ", ".join(spans[:8]) + (f" and {len(spans) - 8} more spans" if len(spans) > 8 else "")
    return f"{first['file']} {first['unit']}s {shown}"
