"""Rows, what every importer reads, and how they become curves.

An importer turns the bytes of one file into *rows*: a point plus the metadata that file
gives for it, each with the line it came from. Rows from all files of one import are then
grouped by metadata into curves (``rows_to_curves``), so several files with the same
metadata merge into one curve. Nothing is stored here; the caller stores the curves in
one transaction.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, NamedTuple

from planner.curves.curve import (
    Curve,
    Point,
    clean_precision,
    clean_resolution,
    clean_text,
    make_curve,
)
from planner.curves.imports.options import METADATA_FIELDS, ImportOptions
from planner.curves.imports.problems import Problems, places
from planner.errors import BadInput

_NO_ENVIRONMENT: Mapping[str, Any] = MappingProxyType({})


class Row(NamedTuple):
    """One point read from a file, with the metadata that file states for it.

    ``variant`` separates rows whose metadata is equal but which belong to different
    curves, such as two model configurations in one Model Analyzer table. (A named tuple:
    a 5 MiB file makes 150,000 of them, three times faster than a frozen dataclass.)
    """

    point: Point
    metadata: Mapping[str, str | None]
    where: str  # "file.csv line 3"
    environment: Mapping[str, Any] = _NO_ENVIRONMENT
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
        notes: list[str] = []
        environments: list[Mapping[str, Any]] = []
        for row in group:  # one pass: a 5 MiB file is 150,000 rows
            point = row.point
            earlier = seen.get(point.batch)
            if earlier is None:
                seen[point.batch] = row
            elif earlier.point.latency_ms != point.latency_ms:
                report(row).append(
                    f"{row.where}: batch {point.batch} was already given as "
                    f"{earlier.point.latency_ms:g} ms ({earlier.where}) and now as "
                    f"{point.latency_ms:g} ms"
                )
            note = row.metadata.get("notes")
            if note:
                notes.append(note)
            if row.environment:
                environments.append(row.environment)
        if any(problems.values()):
            continue
        environment: dict[str, Any] = dict(options.environment)
        if notes:
            environment["notes"] = "; ".join(dict.fromkeys(notes))
        for extra in environments:
            environment = merge_environment(environment, extra)
        curve = make_curve(
            model=model,
            card=card,
            precision=precision,
            resolution=resolution,
            mig_profile=mig,
            points=[r.point for r in seen.values()],
            source=options.source,
            environment=environment,
            clean=True,  # the group's key is cleaned above
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
