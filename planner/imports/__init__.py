"""Reading batch curves from files: the planner's own CSV and JSON, and real tool output.

``read_files`` is the one entry point. It detects or takes the format of each file,
parses every file completely, reports every bad row with its line, and returns curves
ready to store; it stores nothing. Formats:

- ``csv`` / ``json``: the planner's own (see :mod:`planner.imports.native`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from planner.errors import BadInput
from planner.imports import native
from planner.imports.base import (
    MAX_FILE_BYTES,
    ImportOptions,
    ImportResult,
    ParsedFile,
    decode_text,
    rows_to_curves,
)

Parser = Callable[[str, str, ImportOptions], ParsedFile]

PARSERS: dict[str, Parser] = {
    "csv": native.parse_csv,
    "json": native.parse_json,
}
FORMATS = ("auto", *PARSERS)

__all__ = ["FORMATS", "MAX_FILE_BYTES", "ImportOptions", "ImportResult", "read_files"]


def detect_format(name: str, text: str) -> str:
    """The format of a file from its content (names are only a hint)."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        return "json"
    if native.looks_like_native_csv(text):
        return "csv"
    raise BadInput(
        f"{name}: not a format the planner reads (expected a CSV with batch,latency_ms "
        f"columns or JSON); choose one with --format ({', '.join(FORMATS)})"
    )


def read_files(
    files: Sequence[tuple[str, bytes]], options: ImportOptions | None = None, fmt: str = "auto"
) -> ImportResult:
    """Parse files (name, bytes) into curves; BadInput lists every problem in every file."""
    options = options or ImportOptions()
    if fmt not in FORMATS:
        raise BadInput(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if not files:
        raise BadInput("no files to import")
    problems: list[str] = []
    parsed: list[ParsedFile] = []
    for name, data in files:
        try:
            text = decode_text(name, data)
            kind = detect_format(name, text) if fmt == "auto" else fmt
            parsed.append(PARSERS[kind](name, text, options))
        except BadInput as exc:
            problems.extend(exc.problems)
    if problems:
        raise BadInput(problems)
    curves = rows_to_curves((row for f in parsed for row in f.rows), options)
    return ImportResult(curves=curves, files=parsed)
