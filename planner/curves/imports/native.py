"""The planner's own formats: a CSV table and the same as JSON.

CSV: a header row with ``batch,latency_ms`` (required) and optionally
``p10_ms,p50_ms,p90_ms,p99_ms,std_ms,n,memory_mb`` and the metadata columns
``model,card,precision,resolution,mig_profile,notes``. One row per batch size; rows with
different metadata become different curves.

JSON: a list of point objects with the same field names; or an object with metadata
fields and ``points``; or a list of such objects (what ``planner curves show --json``
prints), so an export reads back as the same curves.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any

import numpy as np

from planner.curves.curve import (
    MAX_BATCH,
    MAX_LATENCY_MS,
    MIN_LATENCY_MS,
    OPTIONAL_POINT_FIELDS,
    Curve,
    Point,
    make_point,
)
from planner.curves.imports.base import (
    MAX_COLUMNS,
    MAX_JSON_DEPTH,
    METADATA_FIELDS,
    ImportFormat,
    ImportOptions,
    MetadataCheck,
    ParsedFile,
    Problems,
    Row,
    escape_formula,
    first_row,
)
from planner.errors import BadInput

POINT_FIELDS = ("batch", "latency_ms", *OPTIONAL_POINT_FIELDS)
CSV_COLUMNS = (*POINT_FIELDS, *METADATA_FIELDS)


def looks_like_native_csv(text: str) -> bool:
    """A CSV whose header names ``latency_ms`` or starts with ``batch``."""
    header = _header_names(text)
    return "latency_ms" in header or (bool(header) and header[0] == "batch")


def _header_names(text: str) -> list[str]:
    return [h.strip().lower() for h in first_row(text)]


def parse_csv(name: str, text: str, options: ImportOptions) -> ParsedFile:
    """Rows of the planner's CSV format; every bad row is reported with its line number
    (the first few word for word, see :class:`Problems`).

    A file whose header is unusable raises BadInput. Bad rows do not stop the others from
    being read: they are listed in the result's ``problems``, so that the checks that
    need the rows (a model that is missing, say) report in the same pass.
    """
    plain = _parse_plain(name, text, options)
    return plain if plain is not None else _parse_by_row(name, text, options)


def _parse_by_row(name: str, text: str, options: ImportOptions) -> ParsedFile:
    """``parse_csv`` row by row, for any file: each row's problems, with its line."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    parsed = ParsedFile(name=name, format="csv")
    problems = Problems(name)
    width = 0
    # Rows of one file mostly repeat the same metadata: check each combination once.
    checked = MetadataCheck(options)
    try:
        for record in reader:
            if header is None:
                if not any(cell.strip() for cell in record):
                    continue
                header = _check_header(name, reader.line_num, record, parsed)
                width = len(header)
                point_names = [f for f in POINT_FIELDS if f in header]
                points_of = _cells([header.index(f) for f in point_names])
                # A metadata column the file lacks reads as the empty cell at `width`.
                metadata_of = _cells(
                    [header.index(f) if f in header else width for f in METADATA_FIELDS]
                )
                continue
            if len(record) != width:
                if len(record) > width:
                    if any(cell.strip() for cell in record):
                        problems.append(
                            f"{name} line {reader.line_num}: {len(record)} cells but the "
                            f"header has {width}"
                        )
                    continue
                record = record + [""] * (width - len(record))
            record.append("")
            if not "".join(record).strip():  # a row of empty cells is no row
                continue
            raw = dict(zip(point_names, points_of(record), strict=True))
            stated = metadata_of(record)
            where = f"{name} line {reader.line_num}"
            try:
                point = make_point(raw)  # the usual row: good as it is, checked once
            except BadInput:
                problems.extend(f"{where}: {p}" for p in _point_problems(raw))
                checked.resolve_cells(stated, where)  # its labels' problems, reported too
                continue
            resolved = checked.resolve_cells(stated, where)
            if resolved is not None:
                metadata, environment = resolved
                parsed.rows.append(Row(point, metadata, where, environment))
    except csv.Error as exc:
        raise BadInput(f"{name} line {reader.line_num}: not a readable CSV table ({exc})") from None
    if header is None:
        raise BadInput(f"{name}: file is empty")
    problems.extend(checked.problems())
    parsed.notes.extend(checked.notes())
    if not parsed.rows and not problems:
        raise BadInput(f"{name}: has a header but no data rows")
    parsed.problems = problems
    return parsed


def _parse_plain(name: str, text: str, options: ImportOptions) -> ParsedFile | None:
    """``parse_csv`` of a file every data row of which is good, with its numbers checked
    column by column (a 5 MiB upload is 150,000 rows); None for any other file, which
    the row-by-row reading then reads and reports on line by line.

    "Good" is what the row-by-row reading accepts without a word: no quoted cell (so
    that a record is a line, and its line number its place in the file), every row as
    wide as the header, a whole batch of 1 to MAX_BATCH, a latency within bounds, and the
    spread columns, where the header has any, empty. The rows it gives are those the
    row-by-row reading gives (a test holds the two to it)."""
    if '"' in text or text.count("\r") != text.count("\r\n"):
        return None
    try:
        records = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error:
        return None
    start = next((i for i, r in enumerate(records) if any(c.strip() for c in r)), None)
    if start is None or start + 1 == len(records):
        return None
    parsed = ParsedFile(name=name, format="csv")
    header = _check_header(name, start + 1, records[start], parsed)
    width = len(header)
    data = records[start + 1 :]
    if any(len(record) != width for record in data):
        return None
    for optional in OPTIONAL_POINT_FIELDS:
        if optional in header:
            column = header.index(optional)
            if any(record[column].strip() for record in data):
                return None
    batch_at, latency_at = header.index("batch"), header.index("latency_ms")
    try:
        batches = np.array([float(record[batch_at]) for record in data])
        latencies = [float(record[latency_at]) for record in data]
    except ValueError:
        return None
    checked_latency = np.array(latencies)
    if not (
        np.all((batches >= 1) & (batches <= MAX_BATCH) & (batches == np.floor(batches)))
        and np.all((checked_latency >= MIN_LATENCY_MS) & (checked_latency <= MAX_LATENCY_MS))
    ):
        return None  # (NaN fails every comparison, an infinite value the bounds)
    metadata_of = _cells([header.index(f) if f in header else width for f in METADATA_FIELDS])
    checked = MetadataCheck(options)
    rows = parsed.rows
    stated: tuple[str, ...] | None = None
    resolved: tuple[dict[str, str | None], dict[str, str]] | None = None
    for line, record, batch, latency in zip(
        range(start + 2, start + 2 + len(data)),
        data,
        batches.astype(int).tolist(),
        latencies,
        strict=True,
    ):
        record.append("")
        where = f"{name} line {line}"
        cells = metadata_of(record)
        if cells != stated or resolved is None:
            stated, resolved = cells, checked.resolve_cells(cells, where)
            if resolved is None:
                continue
        rows.append(Row(Point(batch, latency), resolved[0], where, resolved[1]))
    parsed.problems = Problems(name)
    parsed.problems.extend(checked.problems())
    parsed.notes.extend(checked.notes())
    return parsed


def _check_header(name: str, line: int, record: list[str], parsed: ParsedFile) -> list[str]:
    """The header's column names (lower case); BadInput if a column is missing, repeated,
    or there are too many."""
    if len(record) > MAX_COLUMNS:
        raise BadInput(
            f"{name} line {line}: the header has {len(record):,} columns, more than the "
            f"{MAX_COLUMNS} a table may have"
        )
    header = [h.strip().lower() for h in record]
    missing = [c for c in ("batch", "latency_ms") if c not in header]
    if missing:
        raise BadInput(
            f"{name} line {line}: missing required column(s) {', '.join(missing)} (the header "
            "must include batch,latency_ms)"
        )
    unknown = [h for h in header if h and h not in CSV_COLUMNS]
    if unknown:
        parsed.notes.append(f"ignored unknown column(s): {', '.join(unknown)}")
    duplicated = [h for h, count in Counter(h for h in header if h).items() if count > 1]
    if duplicated:
        raise BadInput(
            f"{name} line {line}: column(s) {', '.join(sorted(duplicated))} appear more than once"
        )
    return header


def _cells(positions: list[int]) -> Callable[[list[str]], tuple[str, ...]]:
    """A function that picks the cells at ``positions`` of a record, as a tuple."""
    if not positions:
        return lambda _record: ()
    if len(positions) == 1:
        only = positions[0]
        return lambda record: (record[only],)
    return itemgetter(*positions)


def _point(raw: Mapping[str, Any]) -> Point:
    """The row's point; BadInput with every problem of the row's point cells at once (an
    empty batch and a bad latency are two problems, not the first of them)."""
    try:
        return make_point(raw)  # the usual row: good as it is, checked once
    except BadInput:
        raise BadInput(_point_problems(raw)) from None


def _point_problems(raw: Mapping[str, Any]) -> list[str]:
    """Every problem of the point cells of a row that ``make_point`` refused."""
    empty = [
        name
        for name in ("batch", "latency_ms")
        if raw.get(name) is None or (isinstance(raw.get(name), str) and not raw[name].strip())
    ]
    problems = [f"{name} is empty" for name in empty]
    filled = {**raw, **dict.fromkeys(empty, "1")}  # a stand-in, to check the other cells
    try:
        make_point(filled)
    except BadInput as exc:
        problems.extend(exc.problems)
    return problems


def parse_json(name: str, text: str, options: ImportOptions) -> ParsedFile:
    """Rows of the JSON format (see the module docstring for the accepted shapes)."""
    doc = load_json(name, text)
    parsed = ParsedFile(name=name, format="json")
    problems = Problems(name)
    checked = MetadataCheck(options)
    curves: list[tuple[str, Mapping[str, Any], list[Any]]] = []
    if isinstance(doc, dict):
        curves.append((name, doc, _points_of(name, doc)))
    elif isinstance(doc, list) and doc and all(isinstance(d, dict) and "points" in d for d in doc):
        for i, item in enumerate(doc, start=1):
            curves.append((f"{name} curve {i}", item, _points_of(f"{name} curve {i}", item)))
    elif isinstance(doc, list):
        curves.append((name, {}, doc))
    else:
        raise BadInput(f"{name}: expected a JSON object or list, not {type(doc).__name__}")
    for label, meta, points in curves:
        if not points:
            problems.append(f"{label}: has no points")
        environment = meta.get("environment") if isinstance(meta.get("environment"), dict) else {}
        for i, raw in enumerate(points, start=1):
            where = f"{label} point {i}"
            if not isinstance(raw, dict):
                problems.append(f"{where}: expected an object with batch and latency_ms")
                continue
            cells = {**{k: meta.get(k) for k in METADATA_FIELDS}, **raw}
            if "notes" not in raw and isinstance(environment, dict) and environment.get("notes"):
                cells["notes"] = environment["notes"]
            try:
                point = _point({k: cells.get(k) for k in POINT_FIELDS})
            except BadInput as exc:
                problems.extend(f"{where}: {p}" for p in exc.problems)
                continue
            stated = {
                k: (None if cells.get(k) is None else str(cells.get(k))) for k in METADATA_FIELDS
            }
            resolved = checked.resolve(stated, where)
            if resolved is None:
                continue
            metadata, renamed = resolved
            env = {k: v for k, v in (environment or {}).items() if k != "notes"}
            parsed.rows.append(Row(point, metadata, where, {**env, **renamed}))
    problems.extend(checked.problems())
    parsed.notes.extend(checked.notes())
    problems.check()
    return parsed


def load_json(name: str, text: str) -> Any:
    """A JSON document; BadInput for invalid JSON, nesting deeper than MAX_JSON_DEPTH, and
    integers too long for Python to read (they are read as floats and checked later)."""
    try:
        doc = json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{name} line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        doc = None
        depth = MAX_JSON_DEPTH + 1
    else:
        depth = _depth(doc)
    if depth > MAX_JSON_DEPTH:
        raise BadInput(
            f"{name}: JSON nested more than {MAX_JSON_DEPTH} levels deep; the planner's JSON "
            "needs four"
        )
    return doc


def _json_int(text: str) -> int | float:
    # Python refuses to convert integers of more than 4300 digits; no count or batch size
    # is that long, so a float (infinite if need be) lets the checks say what is wrong.
    return int(text) if len(text) <= 20 else float(text)


def _depth(doc: Any) -> int:
    """How deeply arrays and objects nest in ``doc`` (0 for a plain value); stops counting
    past MAX_JSON_DEPTH."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, level)
            if level > MAX_JSON_DEPTH:
                break
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, level + 1) for item in items if isinstance(item, dict | list))
    return deepest


def _points_of(label: str, doc: Mapping[str, Any]) -> list[Any]:
    points = doc.get("points")
    if not isinstance(points, list):
        raise BadInput(f"{label}: expected a 'points' list")
    return points


TEMPLATE_ROWS = (
    (1, 9.82, 9.7, 9.95, "ball-detector", "laptop-8gb", "fp16", "512x288"),
    (2, 20.36, 20.1, 20.6, "ball-detector", "laptop-8gb", "fp16", "512x288"),
    (4, 46.15, 45.6, 46.8, "ball-detector", "laptop-8gb", "fp16", "512x288"),
)
TEMPLATE_COLUMNS = ("batch", "latency_ms", "p10_ms", "p90_ms", "model", "card", "precision",
                    "resolution")  # fmt: skip


def template_csv() -> str:
    """An example of the planner's CSV to fill in: the two required columns, two spread
    columns and the metadata columns, with three points of the reference laptop curve."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(TEMPLATE_COLUMNS)
    writer.writerows(TEMPLATE_ROWS)
    return out.getvalue()


def to_csv(curves: list[Curve]) -> str:
    """The planner's CSV for one or more curves; text cells are guarded against formulas."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for curve in curves:
        notes = str(curve.environment.get("notes") or "")
        meta = {
            "model": curve.model,
            "card": curve.card,
            "precision": curve.precision or "",
            "resolution": curve.resolution or "",
            "mig_profile": curve.mig_profile or "",
            "notes": notes,
        }
        for point in curve.points:
            values = point.as_dict()
            writer.writerow(
                [_cell(values.get(c)) for c in POINT_FIELDS]
                + [escape_formula(meta[c]) for c in METADATA_FIELDS]
            )
    return out.getvalue()


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


class PlannerCsv(ImportFormat):
    """The planner's CSV. Its detection is loose (a ``batch`` or ``latency_ms`` column),
    so it is tried after the other formats; model and card come from columns or options."""

    name = "csv"
    title = "planner CSV"
    expected = "the planner's CSV (batch,latency_ms)"
    fallback = True

    def detect(self, text: str) -> bool:
        return looks_like_native_csv(text)

    def parse(self, name: str, text: str, options: ImportOptions) -> ParsedFile:
        return parse_csv(name, text, options)

    def fields_needed(self, text: str) -> tuple[str, ...]:
        """Model and card, where the header has no such column."""
        header = {h.strip().lower() for h in first_row(text.lstrip())}
        return tuple(f for f in ("model", "card") if f not in header)


class PlannerJson(ImportFormat):
    """The planner's JSON: a document that starts with an object or a list."""

    name = "json"
    title = "planner JSON file"
    expected = "the planner's JSON"

    def detect(self, text: str) -> bool:
        return text.lstrip().startswith(("{", "["))

    def parse(self, name: str, text: str, options: ImportOptions) -> ParsedFile:
        return parse_json(name, text, options)
