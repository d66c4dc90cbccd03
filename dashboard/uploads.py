"""The upload form: metadata typed by a user, checked before any file is read.

The importers check metadata too, but per row; checking the form first gives one message
per field ("Input resolution: ...") instead of one per row of every file. The importers'
messages name the form's fields (``FORM_WORDING``) where the command line names its
flags: the checks are the library's, only the wording is the form's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planner.curves.curve import clean_batch, clean_precision, clean_resolution, clean_text
from planner.curves.imports import (
    FORMAT_NAMES,
    ImportOptions,
    ImportResult,
    Wording,
    detect_format,
    fields_needed,
    read_files,
)
from planner.curves.imports.base import decode_text
from planner.errors import BadInput

LABELS = {
    "model": "Model",
    "card": "Card",
    "precision": "Precision",
    "resolution": "Input resolution",
    "mig_profile": "MIG profile measured on",
    "notes": "Notes",
    "batch": "Batch size of this run",
    "config": "Model Analyzer config to import",
    "format": "Format",
    "override_model": "Use this model name instead of the file's",
    "override_card": "Use this card name instead of the file's",
}
"""The form's field labels, by the importers' field names."""

FORM_WORDING = Wording({field: f"“{label}”" for field, label in LABELS.items()}, form=True)
"""How the importers' messages name what the user gives, on this form."""

REQUIRED_MARK = " *"
"""Appended to the label of a field the chosen files cannot do without."""


@dataclass(frozen=True)
class UploadForm:
    """What the upload form holds, as typed; empty text means "as the file says"."""

    model: str | None = None
    card: str | None = None
    precision: str | None = None
    resolution: str | None = None
    mig_profile: str | None = None
    notes: str | None = None
    batch: str | None = None
    config: str | None = None
    override_model: bool = False
    override_card: bool = False

    def options(self) -> ImportOptions:
        """The import options; BadInput names every field that is not valid, by its label."""
        problems: list[str] = []
        checked: dict[str, object] = {}
        checks = {
            "model": lambda v: clean_text(v, "model", required=False),
            "card": lambda v: clean_text(v, "card", required=False),
            "precision": clean_precision,
            "resolution": clean_resolution,
            "mig_profile": lambda v: clean_text(v, "MIG profile", required=False),
            "notes": lambda v: clean_text(v, "notes", required=False),
            "config": lambda v: clean_text(v, "Model Analyzer config", required=False),
        }
        for name, check in checks.items():
            try:
                checked[name] = check(getattr(self, name))
            except BadInput as exc:
                problems.extend(f"{LABELS[name]}: {p}" for p in exc.problems)
        batches: list[int] = []
        for item in (self.batch or "").split(","):
            if item.strip():
                try:
                    batches.append(clean_batch(item.strip()))
                except BadInput as exc:
                    problems.extend(f"{LABELS['batch']}: {p}" for p in exc.problems)
        if problems:
            raise BadInput(problems)
        override = frozenset(
            f for f, ticked in (("model", self.override_model), ("card", self.override_card))
            if ticked
        )  # fmt: skip
        return ImportOptions(
            batch=tuple(batches),
            override=override,
            wording=FORM_WORDING,
            **checked,  # type: ignore[arg-type]
        )


def preview(files: Sequence[tuple[str, bytes]], form: UploadForm, fmt: str) -> ImportResult:
    """Parse uploaded files into curves without storing anything; BadInput lists every
    problem in the form, and ``ImportProblems`` every problem in every file."""
    return read_files(files, form.options(), fmt)


def needed(files: Sequence[tuple[str, bytes]], fmt: str) -> dict[str, list[str]]:
    """Which form fields the chosen files need, and the files that need each:
    ``{"model": ["b1.csv (perf_analyzer CSV)"], ...}``. Files that cannot be read are
    left to the preview's report."""
    out: dict[str, list[str]] = {}
    for name, data in files:
        try:
            text = decode_text(name, data)
            kind = detect_format(name, text) if fmt == "auto" else fmt
        except BadInput:
            continue
        for field in fields_needed(kind, text):
            out.setdefault(field, []).append(f"{name} ({FORMAT_NAMES.get(kind, kind)})")
    return out


def label(field: str, needs: dict[str, list[str]]) -> str:
    """A field's label, marked when the chosen files need it."""
    return LABELS[field] + (REQUIRED_MARK if field in needs else "")
