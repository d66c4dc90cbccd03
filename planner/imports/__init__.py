"""Reading batch curves from files: the planner's own CSV and JSON, and real tool output.

``read_files`` is the one entry point. It detects or takes the format of each file,
parses every file completely, reports every bad row with its line, and returns curves
ready to store; it stores nothing. Formats:

- ``csv`` / ``json``: the planner's own (see :mod:`planner.imports.native`).
- ``perf-analyzer``: Triton perf_analyzer's ``-f`` CSV; needs ``--batch``
  (see :mod:`planner.imports.perf_analyzer`).
- ``model-analyzer``: Triton Model Analyzer's ``metrics-model-inference.csv``
  (see :mod:`planner.imports.model_analyzer`).
- ``nexus``: a Nexus model profile (see :mod:`planner.imports.nexus`).

Detection looks at content only (file names are not trusted): a JSON document, a Nexus
profile's ``Forward latency`` section, a perf_analyzer header (``Concurrency`` or
``Request Rate`` first, then ``Inferences/Second``), a Model Analyzer header (``Model``
first, with ``Model Config Path`` or ``GPU UUID``), or the planner's CSV header.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from planner.errors import BadInput
from planner.imports import model_analyzer, native, nexus, perf_analyzer
from planner.imports.base import (
    MAX_FILE_BYTES,
    ImportOptions,
    ImportResult,
    ParsedFile,
    decode_text,
    first_row,
    rows_to_curves,
)

Parser = Callable[[str, str, ImportOptions], ParsedFile]

PARSERS: dict[str, Parser] = {
    "csv": native.parse_csv,
    "json": native.parse_json,
    perf_analyzer.FORMAT: perf_analyzer.parse,
    model_analyzer.FORMAT: model_analyzer.parse,
    nexus.FORMAT: nexus.parse,
}
FORMATS = ("auto", *PARSERS)

__all__ = [
    "FORMATS",
    "MAX_FILE_BYTES",
    "ImportOptions",
    "ImportResult",
    "detect_format",
    "read_files",
]

_CONSOLE_BATCH = re.compile(r"^\s*Batch size:\s*(\d+)\s*$", re.MULTILINE)


def detect_format(name: str, text: str) -> str:
    """The format of a file from its content (names are not trusted); BadInput if none fits."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        return "json"
    if nexus.looks_like(stripped):
        return nexus.FORMAT
    header = first_row(stripped)
    if perf_analyzer.looks_like(header):
        return perf_analyzer.FORMAT
    if model_analyzer.looks_like(header):
        return model_analyzer.FORMAT
    if native.looks_like_native_csv(text):
        return "csv"
    if "*** Measurement Settings ***" in text or "Request concurrency:" in text:
        batch = _CONSOLE_BATCH.search(text)
        hint = f" with --batch {batch[1]}" if batch else " with its -b as --batch"
        raise BadInput(
            f"{name}: this is perf_analyzer's console output, not its CSV; rerun it with "
            f"-f FILE.csv and import that file{hint}"
        )
    first = stripped.splitlines()[0][:60] if stripped else ""
    raise BadInput(
        f"{name}: not a format the planner reads (first line {first!r}); expected the "
        "planner's CSV (batch,latency_ms) or JSON, a perf_analyzer CSV (Concurrency,"
        "Inferences/Second,...), a Model Analyzer metrics-model-inference.csv (Model,Batch,"
        "Concurrency,...) or a Nexus profile; choose one with --format "
        f"({', '.join(FORMATS)})"
    )


def read_files(
    files: Sequence[tuple[str, bytes]], options: ImportOptions | None = None, fmt: str = "auto"
) -> ImportResult:
    """Parse files (name, bytes) into curves; BadInput lists every problem in every file.

    ``options.batch`` holds the batch size of perf_analyzer runs: one value for every
    perf_analyzer file, or one per perf_analyzer file in the order given. It and
    ``options.config`` are refused when no file of their format is being read, so an
    option that would do nothing is not silently ignored.
    """
    options = options or ImportOptions()
    if fmt not in FORMATS:
        raise BadInput(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if not files:
        raise BadInput("no files to import")
    problems: list[str] = []
    texts: list[tuple[str, str, str]] = []
    for name, data in files:
        try:
            text = decode_text(name, data)
            texts.append((name, text, detect_format(name, text) if fmt == "auto" else fmt))
        except BadInput as exc:
            problems.extend(exc.problems)
    if problems:
        raise BadInput(problems)
    per_file = _options_per_file(texts, options)
    parsed: list[ParsedFile] = []
    for (name, text, kind), file_options in zip(texts, per_file, strict=True):
        try:
            parsed.append(PARSERS[kind](name, text, file_options))
        except BadInput as exc:
            problems.extend(exc.problems)
    if problems:
        raise BadInput(problems)
    curves = rows_to_curves((row for f in parsed for row in f.rows), options)
    return ImportResult(curves=curves, files=parsed)


def _options_per_file(
    texts: Sequence[tuple[str, str, str]], options: ImportOptions
) -> list[ImportOptions]:
    """Each file's options: a perf_analyzer file gets its own one ``batch`` value."""
    kinds = [kind for _, _, kind in texts]
    perf_files = kinds.count(perf_analyzer.FORMAT)
    problems = []
    if options.batch and not perf_files:
        problems.append(
            "--batch is the batch size of perf_analyzer runs, and none of the files is a "
            "perf_analyzer CSV (the other formats record their batch sizes)"
        )
    if options.batch and perf_files and len(options.batch) not in (1, perf_files):
        problems.append(
            f"--batch has {len(options.batch)} values for {perf_files} perf_analyzer files; "
            "give one value for all of them or one per file, in the order of the files"
        )
    if options.config is not None and model_analyzer.FORMAT not in kinds:
        problems.append(
            "--config picks a model configuration of a Model Analyzer table, and none of the "
            "files is one"
        )
    if problems:
        raise BadInput(problems)
    batches = iter(options.batch if len(options.batch) != 1 else options.batch * perf_files)
    return [
        replace(options, batch=(next(batches),))
        if kind == perf_analyzer.FORMAT and options.batch
        else replace(options, batch=())
        for kind in kinds
    ]
