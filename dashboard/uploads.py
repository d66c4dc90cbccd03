"""The upload form: metadata typed by a user, checked before any file is read.

The importers check metadata too, but per row; checking the form first gives one message
per field ("Resolution: ...") instead of one per row of every file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planner.curve import clean_batch, clean_precision, clean_resolution, clean_text
from planner.errors import BadInput
from planner.imports import ImportOptions, ImportResult, read_files


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

    def options(self) -> ImportOptions:
        """The import options; BadInput names every field that is not valid."""
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
                problems.extend(exc.problems)
        batches: list[int] = []
        for item in (self.batch or "").split(","):
            if item.strip():
                try:
                    batches.append(clean_batch(item.strip()))
                except BadInput as exc:
                    problems.extend(f"perf_analyzer {p}" for p in exc.problems)
        if problems:
            raise BadInput(problems)
        return ImportOptions(batch=tuple(batches), **checked)  # type: ignore[arg-type]


def preview(files: Sequence[tuple[str, bytes]], form: UploadForm, fmt: str) -> ImportResult:
    """Parse uploaded files into curves without storing anything; BadInput lists every
    problem in the form and in every file."""
    return read_files(files, form.options(), fmt)
