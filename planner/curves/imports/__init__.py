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

Each format is one ``ImportFormat`` (:mod:`planner.curves.imports.base`) in the registry
``IMPORT_FORMATS`` (:mod:`planner.curves.imports.registry`); ``BUILT_IN`` holds those above.
Detection looks at content only (file names are not trusted): a JSON document, a Nexus
profile's ``Forward latency`` section, a perf_analyzer header (``Concurrency`` or
``Request Rate`` first, then ``Inferences/Second``), a Model Analyzer header (``Model``
first, with ``Model Config Path`` or ``GPU UUID``), or, after every other format, the
planner's CSV header.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

from planner import collector
from planner.curves.curve import Curve
from planner.curves.imports import model_analyzer, native, nexus, perf_analyzer
from planner.curves.imports.base import ImportFormat
from planner.curves.imports.files import MAX_FILE_BYTES, decode_text
from planner.curves.imports.options import CLI_WORDING, OVERRIDABLE, ImportOptions, Wording
from planner.curves.imports.problems import FileProblems, Problems
from planner.curves.imports.registry import (
    FORMAT_NAMES,
    FORMATS,
    IMPORT_FORMATS,
    NEEDS,
    detect_format,
    fields_needed,
    import_format,
    register,
    unregister,
)
from planner.curves.imports.rows import ImportResult, ParsedFile, rows_to_curves
from planner.errors import BadInput

BUILT_IN: tuple[ImportFormat, ...] = (
    native.PlannerCsv(),
    native.PlannerJson(),
    perf_analyzer.PerfAnalyzerCsv(),
    model_analyzer.ModelAnalyzerTable(),
    nexus.NexusProfile(),
)
"""The formats the planner reads out of the box, in the order they are offered."""
for _kind in BUILT_IN:
    register(_kind)

__all__ = [
    "BUILT_IN",
    "CLI_WORDING",
    "FORMATS",
    "FORMAT_NAMES",
    "IMPORT_FORMATS",
    "MAX_FILE_BYTES",
    "NEEDS",
    "OVERRIDABLE",
    "FileReport",
    "ImportFormat",
    "ImportOptions",
    "ImportProblems",
    "ImportResult",
    "Wording",
    "detect_format",
    "fields_needed",
    "import_format",
    "read_files",
    "register",
    "unregister",
]


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
    with collector.paused():  # tens of thousands of points and rows: see planner.collector
        return _read_files(files, options or ImportOptions(), fmt)


def _read_files(
    files: Sequence[tuple[str, bytes]], options: ImportOptions, fmt: str
) -> ImportResult:
    wording = options.wording
    if fmt != "auto":
        import_format(fmt)  # BadInput for a name that is not registered
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
            result = import_format(kind).parse(name, text, file_options)
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
    return import_format(kind).lacking(name, options)


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
