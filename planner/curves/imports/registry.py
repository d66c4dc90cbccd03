"""The import formats the planner reads, one ``ImportFormat`` each (``IMPORT_FORMATS``),
and detection by content (``detect_format``).

``FORMATS`` (``auto`` and every format's name), ``FORMAT_NAMES`` (each name as a sentence
says it) and ``NEEDS`` (what each format needs from the options) are views of the
registry: they read it each time, so a format registered later is in them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TypeVar, overload

from planner.curves.imports.base import ImportFormat
from planner.curves.imports.options import CLI_WORDING, Wording
from planner.errors import BadInput

T = TypeVar("T")

IMPORT_FORMATS: dict[str, ImportFormat] = {}
"""The registered formats by name, in the order they are offered."""


def register(kind: ImportFormat) -> ImportFormat:
    """Add ``kind`` to ``IMPORT_FORMATS`` (its name must be new) and return it."""
    if kind.name in IMPORT_FORMATS or kind.name == "auto":
        raise ValueError(f"an import format named {kind.name!r} is already registered")
    IMPORT_FORMATS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    """Remove the format named ``name`` (a test's toy format) from ``IMPORT_FORMATS``."""
    del IMPORT_FORMATS[name]


def import_format(name: str) -> ImportFormat:
    """The registered format called ``name``; BadInput naming the choices otherwise."""
    kind = IMPORT_FORMATS.get(name)
    if kind is None:
        raise BadInput(f"unknown format {name!r}; choose one of {', '.join(FORMATS)}")
    return kind


class _Formats(Sequence[str]):
    """``auto`` and the registered formats' names, read from the registry each time."""

    def _names(self) -> tuple[str, ...]:
        return ("auto", *IMPORT_FORMATS)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return self._names()[index]

    def __len__(self) -> int:
        return len(IMPORT_FORMATS) + 1

    def __contains__(self, name: object) -> bool:
        return name == "auto" or name in IMPORT_FORMATS

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __repr__(self) -> str:
        return f"FORMATS({list(self._names())!r})"


class _ByFormat(Mapping[str, T]):
    """A value of every registered format by its name, read from the registry each time."""

    def __init__(self, value: Callable[[ImportFormat], T]) -> None:
        self._value = value

    def __getitem__(self, name: str) -> T:
        return self._value(IMPORT_FORMATS[name])

    def __len__(self) -> int:
        return len(IMPORT_FORMATS)

    def __iter__(self) -> Iterator[str]:
        return iter(list(IMPORT_FORMATS))


FORMATS: Sequence[str] = _Formats()
"""``auto`` and every registered format's name: the choices of ``--format``."""
FORMAT_NAMES: Mapping[str, str] = _ByFormat(lambda kind: kind.title)
"""Each format as a sentence names it (``perf_analyzer CSV``)."""
NEEDS: Mapping[str, tuple[str, ...]] = _ByFormat(lambda kind: kind.needs)
"""The options each format cannot do without."""


def detect_format(name: str, text: str, wording: Wording = CLI_WORDING) -> str:
    """The format of a file from its content (names are not trusted); BadInput if none
    fits, naming what the registered formats look like.

    Formats are tried in the order they were registered, a loose ``fallback`` one last.
    """
    ordered = sorted(IMPORT_FORMATS.values(), key=lambda kind: kind.fallback)
    for kind in ordered:
        if kind.detect(text):
            return kind.name
    for kind in ordered:
        reason = kind.near_miss(name, text, wording)
        if reason:
            raise BadInput(reason)
    stripped = text.lstrip()
    first = stripped.splitlines()[0][:60] if stripped else ""
    choose = (
        f"choose one under {wording.name('format')}"
        if wording.form
        else f"choose one with {wording.name('format')}"
    )
    expected = [kind.expected for kind in IMPORT_FORMATS.values()]
    listed = " or ".join(filter(None, [", ".join(expected[:-1]), expected[-1]]))
    raise BadInput(
        f"{name}: not a format the planner reads (first line {first!r}); expected {listed}; "
        f"{choose} ({', '.join(FORMATS)})"
    )


def fields_needed(kind: str, text: str) -> tuple[str, ...]:
    """The options a file of format ``kind`` with this content needs from the user (its
    format's ``fields_needed``: for the planner's CSV, model and card when its header
    has no such column)."""
    registered = IMPORT_FORMATS.get(kind)
    return registered.fields_needed(text) if registered is not None else ()
