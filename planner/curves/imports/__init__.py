"""Reading batch curves from files: the planner's own CSV and JSON, and real tool output.

``read_files`` is the one entry point. It detects or takes the format of each file,
parses every file completely, reports every problem of every file in one pass (with the
line of each bad row; see ``ImportProblems``), and returns curves ready to store; it
stores nothing. Messages name options as the caller's ``ImportOptions.wording`` does: a
command-line flag (``--model``) or a form field (``“Model”``). Formats:

- ``csv`` / ``json``: the planner's own (see :mod:`planner.curves.imports.native`).
- ``perf-analyzer``: Triton perf_analyzer's ``-f`` CSV; needs ``--batch``
  (see :mod:`planner.curves.imports.perf_analyzer`).
- ``model-analyzer``: Triton Model Analyzer's ``metrics-model-inference.csv``
  (see :mod:`planner.curves.imports.model_analyzer`).
- ``nexus``: a Nexus model profile (see :mod:`planner.curves.imports.nexus`).

Detection looks at content only (file names are not trusted): a JSON document, a Nexus
profile's ``Forward latency`` section, a perf_analyzer header (``Concurrency`` or
``Request Rate`` first, then ``Inferences/Second``), a Model Analyzer header (``Model``
first, with ``Model Config Path`` or ``GPU UUID``), or the planner's CSV header.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from planner.curves.curve import Curve
from planner.curves.imports import model_analyzer, native, nexus, perf_analyzer
from planner.curves.imports.base import (
    CLI_WORDING,
    FORMAT_NAMES,
    MAX_FILE_BYTES,
    OVERRIDABLE,
    FileProblems,
    ImportOptions,
    ImportResult,
    ParsedFile,
    Problems,
    Wording,
    decode_text,
    first_row,
    rows_to_curves,
)
from planner.errors import BadInput

Parser = Callable[[str, str, ImportOptions], ParsedFile]

PARSERS: dict[str, Parser] = {
    "csv": native.parse_csv,
    "json": native.parse_json,
    perf_analyzer.FORMAT: perf_analyzer.parse,
    model_analyzer.FORMAT: model_analyzer.parse,
    nexus.FORMAT: nexus.parse,
}
FORMATS = ("auto", *PARSERS)

NEEDS: dict[str, tuple[str, ...]] = {
    "csv": (),
    "json": (),
    perf_analyzer.FORMAT: ("model", "card", "batch"),
    model_analyzer.FORMAT: ("card",),
    nexus.FORMAT: (),
}
"""The options each format cannot do without: perf_analyzer files name neither the model,
the card nor the batch size; a Model Analyzer table does not name the card. The planner's
CSV and JSON need a model and a card too, from a column or from the options."""

__all__ = [
    "CLI_WORDING",
    "FORMATS",
    "FORMAT_NAMES",
    "MAX_FILE_BYTES",
    "NEEDS",
    "OVERRIDABLE",
    "FileReport",
    "ImportOptions",
    "ImportProblems",
    "ImportResult",
    "Wording",
    "detect_format",
    "fields_needed",
    "read_files",
]

_CONSOLE_BATCH = re.compile(r"^\s*Batch size:\s*(\d+)\s*$", re.MULTILINE)


def detect_format(name: str, text: str, wording: Wording = CLI_WORDING) -> str:
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
        import_it = "upload" if wording.form else "import"
        if wording.form:
            hint = f" with {wording.name('batch')} {batch[1]}" if batch else ""
        else:
            hint = (
                f" with {wording.name('batch')} {batch[1]}" if batch else " with its -b as --batch"
            )
        raise BadInput(
            f"{name}: this is perf_analyzer's console output, not its CSV; rerun it with "
            f"-f FILE.csv and {import_it} that file{hint}"
        )
    first = stripped.splitlines()[0][:60] if stripped else ""
    choose = (
        f"choose one under {wording.name('format')}"
        if wording.form
        else f"choose one with {wording.name('format')}"
    )
    raise BadInput(
        f"{name}: not a format the planner reads (first line {first!r}); expected the "
        "planner's CSV (batch,latency_ms) or JSON, a perf_analyzer CSV (Concurrency,"
        "Inferences/Second,...), a Model Analyzer metrics-model-inference.csv (Model,Batch,"
        "Concurrency,...) or a Nexus profile; "
        f"{choose} ({', '.join(FORMATS)})"
    )


def fields_needed(kind: str, text: str) -> tuple[str, ...]:
    """The options a file of format ``kind`` needs from the user (``NEEDS``), and for the
    planner's CSV, model and card when its header has no such column."""
    if kind == "csv":
        header = {h.strip().lower() for h in first_row(text.lstrip())}
        return tuple(f for f in ("model", "card") if f not in header)
    return NEEDS.get(kind, ())


@dataclass(frozen=True)
class FileReport:
    """One file's part of an import's problems: its name, its format (None when it could
    not be read or recognised), the report lines (at most the per-file limit and one line
    counting the rest) and how many problems there were in all."""

    name: str
    format: str | None
    lines: tuple[str, ...]
    count: int


class ImportProblems(BadInput):
    """Every problem of an import, general ones (about the options) first, then each
    file's. ``problems`` holds them all as lines, as the command line prints them."""

    def __init__(self, general: Sequence[str], files: Sequence[FileReport]) -> None:
        super().__init__([*general, *(line for f in files for line in f.lines)])
        self.general = list(general)
        self.files = list(files)

    @property
    def count(self) -> int:
        """How many problems in all (the lines count the overflow of a file in one)."""
        return len(self.general) + sum(f.count for f in self.files)


def read_files(
    files: Sequence[tuple[str, bytes]], options: ImportOptions | None = None, fmt: str = "auto"
) -> ImportResult:
    """Parse files (name, bytes) into curves; ``ImportProblems`` lists every problem in
    every file, found in one pass.

    ``options.batch`` holds the batch size of perf_analyzer runs: one value for every
    perf_analyzer file, or one per perf_analyzer file in the order given. It and
    ``options.config`` are refused when no file of their format is being read, so an
    option that would do nothing is not silently ignored. A file that cannot be read is
    reported and the others are still checked; a file that lacks an option its format
    needs (``NEEDS``) says so before its rows' problems.
    """
    options = options or ImportOptions()
    wording = options.wording
    if fmt not in FORMATS:
        raise BadInput(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if not files:
        raise BadInput("no files to import")
    report: dict[str, Problems] = {name: Problems(name) for name, _ in files}
    kinds: dict[str, str] = {}
    texts: list[tuple[str, str, str]] = []
    for name, data in files:
        try:
            text = decode_text(name, data)
            kind = detect_format(name, text, wording) if fmt == "auto" else fmt
        except BadInput as exc:
            report[name].extend(exc.problems)
            continue
        kinds[name] = kind
        texts.append((name, text, kind))
    general, per_file = _options_per_file(texts, options)
    parsed: list[ParsedFile] = []
    for (name, text, kind), file_options in zip(texts, per_file, strict=True):
        found = report[name]
        # What the file's format needs from the options comes first; but a file the
        # parser refuses as a whole (not of this format, no rows) says only why.
        lacking = _missing(name, kind, file_options)
        try:
            result = PARSERS[kind](name, text, file_options)
        except FileProblems as exc:
            found.extend(lacking)
            found.absorb(exc.found)
            continue
        except BadInput as exc:
            found.extend(exc.problems)
            continue
        found.extend(lacking)
        if result.problems is not None:
            found.absorb(result.problems)
        if not lacking:  # rows without their model or card would only say so again
            parsed.append(result)
    curves: list[Curve] = []
    with contextlib.suppress(BadInput):  # what it finds goes into the report
        curves = rows_to_curves((row for f in parsed for row in f.rows), options, report)
    if general or any(report.values()):
        raise ImportProblems(
            general,
            [
                FileReport(name, kinds.get(name), tuple(found.lines()), len(found))
                for name, found in report.items()
                if found
            ],
        )
    return ImportResult(curves=curves, files=parsed)


def _missing(name: str, kind: str, options: ImportOptions) -> list[str]:
    """What a file of format ``kind`` needs from the options and did not get."""
    wording = options.wording
    out = []
    for field in NEEDS.get(kind, ()):
        if field == "batch":
            if len(options.batch) != 1:
                out.append(perf_analyzer.missing_batch(name, wording))
        elif not (getattr(options, field) or "").strip():
            out.append(
                f"{name}: a {FORMAT_NAMES[kind]} does not name the {field}; {wording.give(field)}"
            )
    return out


def _options_per_file(
    texts: Sequence[tuple[str, str, str]], options: ImportOptions
) -> tuple[list[str], list[ImportOptions]]:
    """Problems with the options as a whole, and each file's options: a perf_analyzer
    file gets its own one ``batch`` value (as many files as there are values get one,
    in order, when the count is wrong)."""
    wording = options.wording
    batch, config = wording.name("batch"), wording.name("config")
    kinds = [kind for _, _, kind in texts]
    perf_files = kinds.count(perf_analyzer.FORMAT)
    problems = []
    if options.batch and not perf_files:
        problems.append(
            f"{batch} is the batch size of perf_analyzer runs, and none of the files is a "
            "perf_analyzer CSV (the other formats record their batch sizes)"
        )
    if options.batch and perf_files and len(options.batch) not in (1, perf_files):
        problems.append(
            f"{batch} has {len(options.batch)} values for {perf_files} perf_analyzer files; "
            "give one value for all of them or one per file, in the order of the files"
        )
    if options.config is not None and model_analyzer.FORMAT not in kinds:
        problems.append(
            f"{config} picks a model configuration of a Model Analyzer table, and none of the "
            "files is one"
        )
    values = options.batch * perf_files if len(options.batch) == 1 else options.batch
    batches = iter(values)
    per_file = []
    for kind in kinds:
        if kind == perf_analyzer.FORMAT:
            given = next(batches, None)
            per_file.append(replace(options, batch=() if given is None else (given,)))
        else:
            per_file.append(replace(options, batch=()))
    return problems, per_file
