"""The metadata of a row: what the file states, filled in (or, where the user says so,
replaced) by the options, and every disagreement between the two."""

from __future__ import annotations

from collections.abc import Mapping

from planner.curves.curve import clean_precision, clean_resolution
from planner.curves.imports.options import METADATA_FIELDS, OVERRIDABLE, ImportOptions
from planner.curves.imports.problems import places
from planner.curves.imports.tables import unescape_formula
from planner.errors import BadInput


def resolve_metadata(
    stated: Mapping[str, str | None], options: ImportOptions, where: str
) -> dict[str, str | None]:
    """Metadata for one row: the file's values, with options filling what the file omits
    (and replacing the file's model or card where ``options.override`` says so).

    Raises BadInput when the file and an option disagree.
    """
    merged, problems = _merge(stated, options)
    if problems:
        raise BadInput([f"{where}: {p}" for p in problems])
    return merged


def _merge(
    stated: Mapping[str, str | None],
    options: ImportOptions,
    given: Mapping[str, str | None] | None = None,
) -> tuple[dict[str, str | None], list[str]]:
    """The merged metadata, and each disagreement between the file and the options
    (``given``: ``options.metadata()``, where the caller has it already)."""
    given = options.metadata() if given is None else given
    wording = options.wording
    merged: dict[str, str | None] = {}
    problems = []
    for name in METADATA_FIELDS:
        file_value = stated.get(name)
        file_value = unescape_formula(file_value.strip()) if file_value else None
        option_value = given.get(name)
        if option_value and name in options.override:
            merged[name] = option_value
            continue
        if (
            file_value
            and option_value
            and _canonical(name, file_value) != _canonical(name, option_value)
        ):
            advice = f"; {wording.override(name, option_value)}" if name in OVERRIDABLE else ""
            if wording.form:
                problems.append(
                    f"{name} is {file_value!r} in the file but {wording.name(name)} says "
                    f"{option_value!r}{advice}"
                )
            else:
                problems.append(
                    f"{name} is {file_value!r} in the file but {option_value!r} was given"
                    + (f" ({wording.name(name)}){advice}" if advice else "")
                )
        merged[name] = file_value or option_value
    return merged, problems


class MetadataCheck:
    """The metadata of a file's rows, each combination checked once.

    A file states the same model and card on every row; a disagreement with the options
    is reported once for the file, with the lines it is on (``a.csv lines 2–7: …``), not
    once per line. Where the options override the file's model or card, the file's own
    name goes into the rows' environment (``file_model``, ``file_card``) and into a note.
    """

    def __init__(self, options: ImportOptions) -> None:
        self.options = options
        self._given = options.metadata()
        self._good: dict[tuple[str | None, ...], tuple[dict[str, str | None], dict[str, str]]] = {}
        self._bad: dict[tuple[str | None, ...], tuple[list[str], list[str]]] = {}

    def resolve(
        self, stated: Mapping[str, str | None], where: str
    ) -> tuple[dict[str, str | None], dict[str, str]] | None:
        """(metadata, environment) for a row at ``where``; None when it disagrees with the
        options (reported by ``problems``)."""
        return self.resolve_cells(tuple(stated.get(name) for name in METADATA_FIELDS), where)

    def resolve_cells(
        self, key: tuple[str | None, ...], where: str
    ) -> tuple[dict[str, str | None], dict[str, str]] | None:
        """``resolve`` for metadata given as a tuple in ``METADATA_FIELDS`` order (a CSV
        row's cells: the usual case, a repeat of the row before, is one lookup)."""
        good = self._good.get(key)
        if good is not None:
            return good
        bad = self._bad.get(key)
        if bad is not None:
            bad[1].append(where)
            return None
        stated = dict(zip(METADATA_FIELDS, key, strict=True))
        merged, problems = _merge(stated, self.options, self._given)
        if problems:
            self._bad[key] = (problems, [where])
            return None
        environment = {}
        for name in self.options.override:
            own = (stated.get(name) or "").strip()
            if own and own != merged.get(name):
                environment[f"file_{name}"] = unescape_formula(own)
        self._good[key] = (merged, environment)
        return self._good[key]

    def problems(self) -> list[str]:
        """One line per disagreement, naming every line it is on."""
        return [
            f"{places(wheres)}: {p}" for problems, wheres in self._bad.values() for p in problems
        ]

    def notes(self) -> list[str]:
        """One note per name the options put in place of the file's."""
        label = self.options.wording.name
        return [
            f"{name} {own!r} in the file stored as {merged[name]!r} "
            f"({label('override_' + name) if self.options.wording.form else label(name)})"
            for merged, environment in self._good.values()
            for key, own in environment.items()
            for name in [key.removeprefix("file_")]
        ]


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
