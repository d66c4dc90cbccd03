"""The base class of an import format (``ImportFormat``).

A format is one object: its name, how a sentence names it, what it needs from the
options, how it is told apart from the others by its content, and how it is parsed into
rows. The registry (:mod:`planner.curves.imports.registry`) holds one instance of each;
detection, the command line's ``--format``, the upload form's format list and the check
that a file got the options it needs all read it.

The pieces every importer shares live in modules named by what they hold (``options``,
``problems``, ``files``, ``tables``, ``metadata``, ``rows``); the names that callers have
always imported from this module are imported here too, so those imports keep working.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from planner.curves.imports.files import MAX_FILE_BYTES, MAX_JSON_DEPTH, decode_text, read_limited
from planner.curves.imports.metadata import MetadataCheck, resolve_metadata, tool_metadata
from planner.curves.imports.options import (
    CLI_WORDING,
    METADATA_FIELDS,
    OVERRIDABLE,
    ImportOptions,
    Wording,
)
from planner.curves.imports.problems import (
    MAX_PROBLEMS_PER_FILE,
    FileProblems,
    Problems,
    capped,
    places,
    problem_kind,
)
from planner.curves.imports.rows import (
    ImportResult,
    ParsedFile,
    Row,
    merge_environment,
    rows_to_curves,
)
from planner.curves.imports.tables import (
    MAX_COLUMNS,
    Table,
    escape_formula,
    first_row,
    read_table,
    table_number,
    unescape_formula,
)

__all__ = [
    "CLI_WORDING",
    "MAX_COLUMNS",
    "MAX_FILE_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_PROBLEMS_PER_FILE",
    "METADATA_FIELDS",
    "OVERRIDABLE",
    "FileProblems",
    "ImportFormat",
    "ImportOptions",
    "ImportResult",
    "MetadataCheck",
    "ParsedFile",
    "Problems",
    "Row",
    "Table",
    "Wording",
    "capped",
    "decode_text",
    "escape_formula",
    "first_row",
    "merge_environment",
    "places",
    "problem_kind",
    "read_limited",
    "read_table",
    "resolve_metadata",
    "rows_to_curves",
    "table_number",
    "tool_metadata",
    "unescape_formula",
]


class ImportFormat(ABC):
    """One kind of file the planner reads curves from.

    Set ``name`` (the ``--format`` value), ``title`` (how a sentence names a file of it:
    ``perf_analyzer CSV``), ``expected`` (how the message for a file no format reads
    describes it: ``a perf_analyzer CSV (Concurrency,Inferences/Second,...)``) and
    ``needs`` (the options a file of it cannot do without: ``model``, ``card``,
    ``batch``); override ``detect`` and ``parse``. ``fallback`` marks a format whose
    detection is loose (the planner's CSV): it is tried after every other one.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    expected: ClassVar[str]
    needs: ClassVar[tuple[str, ...]] = ()
    fallback: ClassVar[bool] = False

    @abstractmethod
    def detect(self, text: str) -> bool:
        """Whether ``text`` (a whole file, decoded) is of this format; from the content
        only, since file names are not trusted."""

    @abstractmethod
    def parse(self, name: str, text: str, options: ImportOptions) -> ParsedFile:
        """The rows of the file ``name``. Every bad row is reported with its line (see
        ``Problems``): as ``FileProblems``, or, where the rows that are good still tell
        something (the planner's CSV), in the result's ``problems``. A file that is not
        of this format at all raises ``BadInput`` with the reason."""

    def fields_needed(self, text: str) -> tuple[str, ...]:
        """The options a file with this content needs from the user (``needs``)."""
        return self.needs

    def lacking(self, name: str, options: ImportOptions) -> list[str]:
        """A problem for each option in ``needs`` that ``options`` leaves without a value."""
        return [
            self.missing(name, field, options.wording)
            for field in self.needs
            if self.lacks(field, options)
        ]

    def lacks(self, field: str, options: ImportOptions) -> bool:
        """Whether ``options`` leaves ``field`` (one of ``needs``) without a value."""
        return not (getattr(options, field) or "").strip()

    def missing(self, name: str, field: str, wording: Wording) -> str:
        """The problem of the file ``name`` that did not get ``field``."""
        return f"{name}: a {self.title} does not name the {field}; {wording.give(field)}"

    def near_miss(self, name: str, text: str, wording: Wording) -> str | None:
        """For a file that no format reads: why it is not of this format although it
        looks close (another output of the same tool), and what to do; else None."""
        return None
