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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from planner.curve import (
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

METADATA_FIELDS = ("model", "card", "precision", "resolution", "mig_profile", "notes")


@dataclass(frozen=True)
class ImportOptions:
    """Metadata given on the command line or in the upload form.

    A field given here fills in what a file leaves out; a file that states a different
    value is rejected rather than silently overridden. ``batch`` is the batch size of
    perf_analyzer runs (its ``-b``), one value or one per file; ``config`` picks one model
    configuration from a Model Analyzer table.
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
    """What an importer read from one file: rows, plus notes for the validation report."""

    name: str
    format: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class ImportResult:
    """Curves ready to store, and the report a user sees before saving."""

    curves: list[Curve]
    files: list[ParsedFile]

    @property
    def notes(self) -> list[str]:
        return [f"{f.name}: {note}" for f in self.files for note in f.notes]


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
    """Metadata for one row: the file's values, with options filling what the file omits.

    Raises BadInput when the file and an option disagree, or a value is invalid.
    """
    given = options.metadata()
    merged: dict[str, str | None] = {}
    problems = []
    for name in METADATA_FIELDS:
        file_value = stated.get(name)
        file_value = unescape_formula(file_value.strip()) if file_value else None
        option_value = given.get(name)
        if (
            file_value
            and option_value
            and _canonical(name, file_value) != _canonical(name, option_value)
        ):
            problems.append(
                f"{where}: {name} is {file_value!r} in the file but {option_value!r} was given"
            )
        merged[name] = file_value or option_value
    if problems:
        raise BadInput(problems)
    return merged


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


def rows_to_curves(rows: Iterable[Row], options: ImportOptions) -> list[Curve]:
    """Group rows by metadata into validated curves (rows with equal metadata merge)."""
    groups: dict[tuple[Any, ...], list[Row]] = {}
    problems: list[str] = []
    for row in rows:
        meta = row.metadata
        row_problems: list[str] = []
        for name, flag in (("model", "--model"), ("card", "--card")):
            if not (meta.get(name) or "").strip():
                file = row.where.split(" line ")[0].split(" point ")[0]
                row_problems.append(f"{file}: {name} is missing (give {flag} or a {name} column)")
        if row_problems:
            problems.extend(row_problems)
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
            problems.extend(f"{row.where}: {p}" for p in exc.problems)
            continue
        groups.setdefault((*key, row.variant), []).append(row)
    if problems:
        raise BadInput(_dedupe(problems))
    curves: dict[str, Curve] = {}
    for (model, card, precision, resolution, mig, _variant), group in groups.items():
        seen: dict[int, Row] = {}
        for row in group:
            earlier = seen.get(row.point.batch)
            if earlier and earlier.point.latency_ms != row.point.latency_ms:
                problems.append(
                    f"{row.where}: batch {row.point.batch} was already given as "
                    f"{earlier.point.latency_ms:g} ms ({earlier.where}) and now as "
                    f"{row.point.latency_ms:g} ms"
                )
            seen.setdefault(row.point.batch, row)
        environment: dict[str, Any] = dict(options.environment)
        notes = [r.metadata.get("notes") for r in group if r.metadata.get("notes")]
        if notes:
            environment["notes"] = "; ".join(dict.fromkeys(n for n in notes if n))
        for row in group:
            environment = merge_environment(environment, row.environment)
        if problems:
            continue
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
    if problems:
        raise BadInput(problems)
    return list(curves.values())


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


def _dedupe(problems: list[str]) -> list[str]:
    return list(dict.fromkeys(problems))


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
    problems: list[str]

    def index(self, *names: str) -> int | None:
        """Position of the first column called one of ``names`` (any case), or None."""
        lowered = [h.strip().lower() for h in self.header]
        for wanted in names:
            if wanted.lower() in lowered:
                return lowered.index(wanted.lower())
        return None


def read_table(name: str, text: str) -> Table:
    """The header and records of a CSV table; BadInput if it is empty or not CSV."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    header_line = 0
    records: list[tuple[int, list[str]]] = []
    problems: list[str] = []
    try:
        for record in reader:
            cells = [c.strip() for c in record]
            if not any(cells):
                continue
            if header is None:
                while cells and not cells[-1]:
                    cells.pop()
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
