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
from collections.abc import Mapping
from typing import Any

from planner.curve import OPTIONAL_POINT_FIELDS, Curve, make_point
from planner.errors import BadInput
from planner.imports.base import (
    METADATA_FIELDS,
    ImportOptions,
    ParsedFile,
    Row,
    escape_formula,
    resolve_metadata,
)

POINT_FIELDS = ("batch", "latency_ms", *OPTIONAL_POINT_FIELDS)
CSV_COLUMNS = (*POINT_FIELDS, *METADATA_FIELDS)


def looks_like_native_csv(text: str) -> bool:
    """A CSV whose header names ``latency_ms`` or starts with ``batch``."""
    header = _header_names(text)
    return "latency_ms" in header or (bool(header) and header[0] == "batch")


def _header_names(text: str) -> list[str]:
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    return [h.strip().lower() for h in next(csv.reader([first]), [])]


def parse_csv(name: str, text: str, options: ImportOptions) -> ParsedFile:
    """Rows of the planner's CSV format; every bad row is reported with its line number."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    header_line = 0
    parsed = ParsedFile(name=name, format="csv")
    problems: list[str] = []
    for record in reader:
        if not any(cell.strip() for cell in record):
            continue
        if header is None:
            header = [h.strip().lower() for h in record]
            header_line = reader.line_num
            missing = [c for c in ("batch", "latency_ms") if c not in header]
            if missing:
                raise BadInput(
                    f"{name} line {header_line}: missing required column(s) "
                    f"{', '.join(missing)} (the header must include batch,latency_ms)"
                )
            unknown = [h for h in header if h and h not in CSV_COLUMNS]
            if unknown:
                parsed.notes.append(f"ignored unknown column(s): {', '.join(unknown)}")
            duplicated = {h for h in header if h and header.count(h) > 1}
            if duplicated:
                raise BadInput(
                    f"{name} line {header_line}: column(s) {', '.join(sorted(duplicated))} "
                    "appear more than once"
                )
            continue
        where = f"{name} line {reader.line_num}"
        if len(record) > len(header):
            problems.append(f"{where}: {len(record)} cells but the header has {len(header)}")
            continue
        cells = dict(zip(header, (c.strip() for c in record), strict=False))
        try:
            parsed.rows.append(_row(cells, options, where))
        except BadInput as exc:
            problems.extend(f"{where}: {p}" for p in exc.problems)
    if header is None:
        raise BadInput(f"{name}: file is empty")
    if problems:
        raise BadInput(problems)
    if not parsed.rows:
        raise BadInput(f"{name}: has a header but no data rows")
    return parsed


def parse_json(name: str, text: str, options: ImportOptions) -> ParsedFile:
    """Rows of the JSON format (see the module docstring for the accepted shapes)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{name} line {exc.lineno}: not valid JSON ({exc.msg})") from None
    parsed = ParsedFile(name=name, format="json")
    problems: list[str] = []
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
                row = _row(cells, options, where)
            except BadInput as exc:
                problems.extend(f"{where}: {p}" for p in exc.problems)
                continue
            env = {k: v for k, v in (environment or {}).items() if k != "notes"}
            parsed.rows.append(Row(row.point, row.metadata, row.where, env))
    if problems:
        raise BadInput(problems)
    return parsed


def _points_of(label: str, doc: Mapping[str, Any]) -> list[Any]:
    points = doc.get("points")
    if not isinstance(points, list):
        raise BadInput(f"{label}: expected a 'points' list")
    return points


def _row(cells: Mapping[str, Any], options: ImportOptions, where: str) -> Row:
    for required in ("batch", "latency_ms"):
        if cells.get(required) in (None, ""):
            raise BadInput(f"{required} is empty")
    point = make_point({k: cells.get(k) for k in POINT_FIELDS})
    stated = {k: (None if cells.get(k) is None else str(cells.get(k))) for k in METADATA_FIELDS}
    return Row(point=point, metadata=resolve_metadata(stated, options, where), where=where)


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
