"""Shared pieces of every importer: options, results, decoding and row grouping.

An importer turns the bytes of one file into *rows*: a point plus the metadata that file
gives for it, each with the line it came from. Rows from all files of one import are then
grouped by metadata into curves, so several files with the same metadata merge into one
curve. Nothing is stored here; the caller stores the curves in one transaction.
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from planner.curves.curve import (
    Curve,
    Point,
    Source,
    clean_precision,
    clean_resolution,
    clean_text,
    make_curve,
)
from planner.errors import BadInput

MAX_FILE_BYTES = 5 * 1024 * 1024
"""Largest file accepted (5 MiB): real benchmark exports are a few kilobytes."""
MAX_COLUMNS = 256
"""Most columns a table may have: the widest tool export has a few dozen."""
MAX_PROBLEMS_PER_FILE = 50
"""Problems reported word for word per file; the rest are counted by kind."""
MAX_JSON_DEPTH = 32
"""Deepest nesting of JSON arrays and objects accepted (the planner's own JSON has 4)."""

METADATA_FIELDS = ("model", "card", "precision", "resolution", "mig_profile", "notes")
OVERRIDABLE = ("model", "card")
"""The names a user may put in place of a file's own (``ImportOptions.override``): names
are the user's to choose, whereas precision or resolution are facts of the measurement."""


@dataclass(frozen=True)
class Wording:
    """How a message names what the user gives: a command-line flag or a form field.

    The checks are written once and phrase their advice through this: ``give(field)`` is
    ``give --model`` on the command line and ``fill in “Model”`` on the upload form.
    ``names`` maps each field (``model``, ``card``, ``precision``, ``resolution``,
    ``mig_profile``, ``notes``, ``batch``, ``config``, ``format`` and ``override_model``,
    ``override_card``) to its flag or quoted label.
    """

    names: Mapping[str, str]
    form: bool = False

    def name(self, field: str) -> str:
        """The flag (``--batch``) or the quoted form label (``“Batch size of this run”``)."""
        return self.names.get(field, field)

    def give(self, field: str) -> str:
        """``give --model`` or ``fill in “Model”``."""
        return f"fill in {self.name(field)}" if self.form else f"give {self.name(field)}"

    def give_as(self, field: str, what: str, placeholder: str) -> str:
        """``give the run's -b with --batch B`` or ``fill in “Batch size…” with the run's -b``."""
        if self.form:
            return f"fill in {self.name(field)} with {what}"
        return f"give {what} with {self.name(field)} {placeholder}"

    def give_or_column(self, field: str) -> str:
        """``give --model or a model column`` or ``fill in “Model” or add a model column to
        the file``."""
        if self.form:
            return f"fill in {self.name(field)} or add a {field} column to the file"
        return f"give {self.name(field)} or a {field} column"

    def override(self, field: str, value: str) -> str:
        """How to store a file under the given name instead of its own."""
        if self.form:
            return f"tick {self.name('override_' + field)} to store it as {value!r}"
        return f"add {self.name('override')} {field} to store it as {value!r}"


CLI_WORDING = Wording(
    {
        "model": "--model",
        "card": "--card",
        "precision": "--precision",
        "resolution": "--resolution",
        "mig_profile": "--mig-profile",
        "notes": "--notes",
        "batch": "--batch",
        "config": "--config",
        "format": "--format",
        "override": "--override",
    }
)
"""The command line's wording: options are named by their flags."""

FORMAT_NAMES = {
    "csv": "planner CSV",
    "json": "planner JSON file",
    "perf-analyzer": "perf_analyzer CSV",
    "model-analyzer": "Model Analyzer table",
    "nexus": "Nexus profile",
}
"""Each format as a sentence names it."""


@dataclass(frozen=True)
class ImportOptions:
    """Metadata given on the command line or in the upload form.

    A field given here fills in what a file leaves out; a file that states a different
    value is rejected rather than silently overridden, unless the field is in
    ``override`` (model and card only: the given name then replaces the file's, which is
    kept in the curve's environment as ``file_model`` or ``file_card``). ``batch`` is the
    batch size of perf_analyzer runs (its ``-b``), one value or one per file; ``config``
    picks one model configuration from a Model Analyzer table. ``wording`` phrases the
    messages for where the options came from (command line or upload form).
    """

    model: str | None = None
    card: str | None = None
    precision: str | None = None
    resolution: str | None = None
    mig_profile: str | None = None
    notes: str | None = None
    batch: tuple[int, ...] = ()
    config: str | None = None
    source: Source = "uploaded"
    environment: Mapping[str, Any] = field(default_factory=dict)
    override: frozenset[str] = frozenset()
    wording: Wording = field(default=CLI_WORDING, compare=False)

    def __post_init__(self) -> None:
        wording = self.wording
        unknown = sorted(set(self.override) - set(OVERRIDABLE))
        if unknown:
            raise BadInput(
                f"{wording.name('override')} takes {' and '.join(OVERRIDABLE)}, "
                f"not {', '.join(unknown)}"
            )
        nameless = [f for f in OVERRIDABLE if f in self.override and not getattr(self, f)]
        if nameless:
            raise BadInput(
                [
                    f"{wording.name('override_' + f) if wording.form else wording.name('override')}"
                    f" {'' if wording.form else f + ' '}needs the name to use: "
                    f"{wording.give(f)}"
                    for f in nameless
                ]
            )

    def metadata(self) -> dict[str, str | None]:
        return {name: getattr(self, name) for name in METADATA_FIELDS}


@dataclass(frozen=True)
class Row:
    """One point read from a file, with the metadata that file states for it.

    ``variant`` separates rows whose metadata is equal but which belong to different
    curves, such as two model configurations in one Model Analyzer table.
    """

    point: Point
    metadata: Mapping[str, str | None]
    where: str  # "file.csv line 3"
    environment: Mapping[str, Any] = field(default_factory=dict)
    variant: str | None = None


@dataclass
class ParsedFile:
    """What an importer read from one file: rows, plus notes for the validation report.

    ``problems`` holds what was wrong with the file when the importer could still read
    its other rows (the planner's CSV), so that the checks that need the rows (a missing
    model, a batch given twice) report in the same pass.
    """

    name: str
    format: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: Problems | None = None


@dataclass
class ImportResult:
    """Curves ready to store, and the report a user sees before saving."""

    curves: list[Curve]
    files: list[ParsedFile]

    @property
    def notes(self) -> list[str]:
        return [f"{f.name}: {note}" for f in self.files for note in f.notes]


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


def read_limited(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a file, refused once more than ``limit`` have been read.

    The limit is enforced while reading, not from the file's size: ``/dev/zero``, a pipe
    or a file that grows report a size of 0 or less than they hold.
    """
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise BadInput(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise BadInput(
            f"{path}: file is larger than the {limit // 1024 // 1024} MiB limit for imports"
        )
    return data


def decode_text(name: str, data: bytes) -> str:
    """UTF-8 text (a byte-order mark is accepted); BadInput for anything else."""
    if len(data) > MAX_FILE_BYTES:
        raise BadInput(
            f"{name}: file is {len(data):,} bytes, over the {MAX_FILE_BYTES // 1024 // 1024} MiB "
            "limit for imports"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadInput(
            f"{name}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "save the file as UTF-8"
        ) from None
    if not text.strip():
        raise BadInput(f"{name}: file is empty")
    if "\x00" in text:
        raise BadInput(f"{name}: file contains NUL bytes; it is not a text table")
    return text


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


def resolve_metadata(
    stated: Mapping[str, str | None], options: ImportOptions, where: str
) -> dict[str, str | None]:
    """Metadata for one row: the file's values, with options filling what the file omits
    (and replacing the file's model or card where ``options.override`` says so).

    Raises BadInput when the file and an option disagree.
    """
    merged, problems = _merge(stated, options)
    if problems:
        raise BadInput([f"{where}: {p}" for p in problems])
    return merged


def _merge(
    stated: Mapping[str, str | None], options: ImportOptions
) -> tuple[dict[str, str | None], list[str]]:
    """The merged metadata, and each disagreement between the file and the options."""
    given = options.metadata()
    wording = options.wording
    merged: dict[str, str | None] = {}
    problems = []
    for name in METADATA_FIELDS:
        file_value = stated.get(name)
        file_value = unescape_formula(file_value.strip()) if file_value else None
        option_value = given.get(name)
        if option_value and name in options.override:
            merged[name] = option_value
            continue
        if (
            file_value
            and option_value
            and _canonical(name, file_value) != _canonical(name, option_value)
        ):
            advice = f"; {wording.override(name, option_value)}" if name in OVERRIDABLE else ""
            if wording.form:
                problems.append(
                    f"{name} is {file_value!r} in the file but {wording.name(name)} says "
                    f"{option_value!r}{advice}"
                )
            else:
                problems.append(
                    f"{name} is {file_value!r} in the file but {option_value!r} was given"
                    + (f" ({wording.name(name)}){advice}" if advice else "")
                )
        merged[name] = file_value or option_value
    return merged, problems


class MetadataCheck:
    """The metadata of a file's rows, each combination checked once.

    A file states the same model and card on every row; a disagreement with the options
    is reported once for the file, with the lines it is on (``a.csv lines 2–7: …``), not
    once per line. Where the options override the file's model or card, the file's own
    name goes into the rows' environment (``file_model``, ``file_card``) and into a note.
    """

    def __init__(self, options: ImportOptions) -> None:
        self.options = options
        self._good: dict[tuple[str | None, ...], tuple[dict[str, str | None], dict[str, str]]] = {}
        self._bad: dict[tuple[str | None, ...], tuple[list[str], list[str]]] = {}

    def resolve(
        self, stated: Mapping[str, str | None], where: str
    ) -> tuple[dict[str, str | None], dict[str, str]] | None:
        """(metadata, environment) for a row at ``where``; None when it disagrees with the
        options (reported by ``problems``)."""
        return self.resolve_cells(tuple(stated.get(name) for name in METADATA_FIELDS), where)

    def resolve_cells(
        self, key: tuple[str | None, ...], where: str
    ) -> tuple[dict[str, str | None], dict[str, str]] | None:
        """``resolve`` for metadata given as a tuple in ``METADATA_FIELDS`` order (a CSV
        row's cells: the usual case, a repeat of the row before, is one lookup)."""
        good = self._good.get(key)
        if good is not None:
            return good
        bad = self._bad.get(key)
        if bad is not None:
            bad[1].append(where)
            return None
        stated = dict(zip(METADATA_FIELDS, key, strict=True))
        merged, problems = _merge(stated, self.options)
        if problems:
            self._bad[key] = (problems, [where])
            return None
        environment = {}
        for name in self.options.override:
            own = (stated.get(name) or "").strip()
            if own and own != merged.get(name):
                environment[f"file_{name}"] = unescape_formula(own)
        self._good[key] = (merged, environment)
        return self._good[key]

    def problems(self) -> list[str]:
        """One line per disagreement, naming every line it is on."""
        return [
            f"{places(wheres)}: {p}" for problems, wheres in self._bad.values() for p in problems
        ]

    def notes(self) -> list[str]:
        """One note per name the options put in place of the file's."""
        label = self.options.wording.name
        return [
            f"{name} {own!r} in the file stored as {merged[name]!r} "
            f"({label('override_' + name) if self.options.wording.form else label(name)})"
            for merged, environment in self._good.values()
            for key, own in environment.items()
            for name in [key.removeprefix("file_")]
        ]


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


def tool_metadata(
    named: Mapping[str, str | None],
    stated: Mapping[str, str | None],
    options: ImportOptions,
    where: str,
) -> dict[str, str | None]:
    """Metadata for a row of a benchmark tool's file.

    ``named`` holds the tool's own identifiers (a Triton model name, a Nexus device name):
    they name the curve only where the options leave the field empty, because a tool's
    naming is not the planner's (``Tesla_T4`` versus the catalogue's ``t4``). ``stated``
    holds facts the file records (an input resolution): like a column of the planner's
    own CSV, they are checked against the options by :func:`resolve_metadata`.
    """
    given = options.metadata()
    defaults = {k: v for k, v in named.items() if v and not (given.get(k) or "").strip()}
    return resolve_metadata({**stated, **defaults}, options, where)


def _canonical(name: str, value: str) -> str | None:
    try:
        if name == "precision":
            return clean_precision(value)
        if name == "resolution":
            return clean_resolution(value)
    except BadInput:
        return value
    return value.strip()


def rows_to_curves(
    rows: Iterable[Row],
    options: ImportOptions,
    problems: dict[str, Problems] | None = None,
) -> list[Curve]:
    """Group rows by metadata into validated curves (rows with equal metadata merge).

    Problems are collected per file into ``problems`` (a report the caller keeps adding
    to) and raised together; BadInput when any file has one.
    """
    groups: dict[tuple[Any, ...], list[Row]] = {}
    problems = {} if problems is None else problems
    missing: set[str] = set()
    # Rows share a handful of metadata combinations: validate each combination once, and
    # report a bad one once, with every line that states it.
    keys: dict[tuple[str | None, ...], tuple[Any, ...]] = {}
    invalid: dict[tuple[str | None, ...], list[str]] = {}  # the problems of a combination
    invalid_at: dict[tuple[str, tuple[str | None, ...]], list[str]] = {}  # its places, by file
    wording = options.wording

    def report(row: Row) -> Problems:
        file = _file_of(row.where)
        return problems.setdefault(file, Problems(file))

    # The rows of one curve mostly follow each other with one metadata mapping (importers
    # share it between rows): such a row joins the group of the row before at once.
    previous: tuple[Mapping[str, str | None], str | None, list[Row]] | None = None
    for row in rows:
        meta = row.metadata
        if previous is not None and previous[0] is meta and previous[1] == row.variant:
            previous[2].append(row)
            continue
        absent = [
            f"{_file_of(row.where)}: {name} is missing ({wording.give_or_column(name)})"
            for name in ("model", "card")
            if not (meta.get(name) or "").strip()
        ]
        if absent:
            for problem in absent:
                if problem not in missing:  # once per file, not once per row
                    missing.add(problem)
                    report(row).append(problem)
            continue
        stated = tuple(meta.get(name) for name in METADATA_FIELDS[:5])
        key = keys.get(stated)
        if key is None:
            if stated in invalid:
                invalid_at.setdefault((_file_of(row.where), stated), []).append(row.where)
                continue
            try:
                key = (
                    clean_text(meta.get("model"), "model"),
                    clean_text(meta.get("card"), "card"),
                    clean_precision(meta.get("precision")),
                    clean_resolution(meta.get("resolution")),
                    clean_text(meta.get("mig_profile"), "MIG profile", required=False),
                )
            except BadInput as exc:
                invalid[stated] = exc.problems
                invalid_at.setdefault((_file_of(row.where), stated), []).append(row.where)
                continue
            keys[stated] = key
        group = groups.setdefault((*key, row.variant), [])
        group.append(row)
        previous = (meta, row.variant, group)
    for (file, stated), wheres in invalid_at.items():
        found = problems.setdefault(file, Problems(file))
        found.extend(f"{places(wheres)}: {p}" for p in invalid[stated])
    curves: dict[str, Curve] = {}
    for (model, card, precision, resolution, mig, _variant), group in groups.items():
        seen: dict[int, Row] = {}
        for row in group:
            earlier = seen.get(row.point.batch)
            if earlier and earlier.point.latency_ms != row.point.latency_ms:
                report(row).append(
                    f"{row.where}: batch {row.point.batch} was already given as "
                    f"{earlier.point.latency_ms:g} ms ({earlier.where}) and now as "
                    f"{row.point.latency_ms:g} ms"
                )
            seen.setdefault(row.point.batch, row)
        if any(problems.values()):
            continue
        environment: dict[str, Any] = dict(options.environment)
        notes = [r.metadata.get("notes") for r in group if r.metadata.get("notes")]
        if notes:
            environment["notes"] = "; ".join(dict.fromkeys(n for n in notes if n))
        for row in group:
            if row.environment:
                environment = merge_environment(environment, row.environment)
        curve = make_curve(
            model=model,
            card=card,
            precision=precision,
            resolution=resolution,
            mig_profile=mig,
            points=[r.point for r in seen.values()],
            source=options.source,
            environment=environment,
        )
        # Two variants that measured exactly the same points are one curve (its id is the
        # same); keep one and let its environment name both.
        earlier_curve = curves.get(curve.id)
        if earlier_curve is not None:
            curve = replace(
                earlier_curve,
                environment=merge_environment(earlier_curve.environment, curve.environment),
            )
        curves[curve.id] = curve
    _check(problems)
    return list(curves.values())


def _file_of(where: str) -> str:
    """The file part of a row's place (``f.csv line 3`` -> ``f.csv``, ``f.json curve 2
    point 1`` -> ``f.json``)."""
    return re.sub(r" curve \d+$", "", where.split(" line ")[0].split(" point ")[0])


def _check(problems: Mapping[str, Problems]) -> None:
    lines = [line for found in problems.values() for line in found.lines()]
    if lines:
        raise BadInput(lines)


def merge_environment(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` updated with ``extra``; text values that differ are joined with "; ".

    Rows merged into one curve can come from different files or table rows; each row's
    account of itself (which row was used, which configuration) is kept, not overwritten.
    """
    merged = dict(base)
    for key, value in extra.items():
        old = merged.get(key)
        if isinstance(old, str) and isinstance(value, str) and old and value:
            parts = list(dict.fromkeys([*old.split("; "), *value.split("; ")]))
            merged[key] = "; ".join(parts)
        else:
            merged[key] = value
    return merged


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
