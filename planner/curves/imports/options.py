"""What the user gives an import beside its files (``ImportOptions``), and how messages
name it: a command-line flag or a form field (``Wording``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from planner.curves.curve import Source
from planner.errors import BadInput

METADATA_FIELDS = ("model", "card", "precision", "resolution", "mig_profile", "notes")
OVERRIDABLE = ("model", "card")
"""The names a user may put in place of a file's own (``ImportOptions.override``): names
are the user's to choose, whereas precision or resolution are facts of the measurement."""


@dataclass(frozen=True)
class Wording:
    """How a message names what the user gives: a command-line flag or a form field.

    The checks are written once and phrase their advice through this: ``give(field)`` is
    ``give --model`` on the command line and ``fill in “Model”`` on the upload form.
    ``names`` maps each field (``model``, ``card``, ``precision``, ``resolution``,
    ``mig_profile``, ``notes``, ``batch``, ``config``, ``format`` and ``override_model``,
    ``override_card``) to its flag or quoted label.
    """

    names: Mapping[str, str]
    form: bool = False

    def name(self, field: str) -> str:
        """The flag (``--batch``) or the quoted form label (``“Batch size of this run”``)."""
        return self.names.get(field, field)

    def give(self, field: str) -> str:
        """``give --model`` or ``fill in “Model”``."""
        return f"fill in {self.name(field)}" if self.form else f"give {self.name(field)}"

    def give_as(self, field: str, what: str, placeholder: str) -> str:
        """``give the run's -b with --batch B`` or ``fill in “Batch size…” with the run's -b``."""
        if self.form:
            return f"fill in {self.name(field)} with {what}"
        return f"give {what} with {self.name(field)} {placeholder}"

    def give_or_column(self, field: str) -> str:
        """``give --model or a model column`` or ``fill in “Model” or add a model column to
        the file``."""
        if self.form:
            return f"fill in {self.name(field)} or add a {field} column to the file"
        return f"give {self.name(field)} or a {field} column"

    def override(self, field: str, value: str) -> str:
        """How to store a file under the given name instead of its own."""
        if self.form:
            return f"tick {self.name('override_' + field)} to store it as {value!r}"
        return f"add {self.name('override')} {field} to store it as {value!r}"


CLI_WORDING = Wording(
    {
        "model": "--model",
        "card": "--card",
        "precision": "--precision",
        "resolution": "--resolution",
        "mig_profile": "--mig-profile",
        "notes": "--notes",
        "batch": "--batch",
        "config": "--config",
        "format": "--format",
        "override": "--override",
    }
)
"""The command line's wording: options are named by their flags."""


@dataclass(frozen=True)
class ImportOptions:
    """Metadata given on the command line or in the upload form.

    A field given here fills in what a file leaves out; a file that states a different
    value is rejected rather than silently overridden, unless the field is in
    ``override`` (model and card only: the given name then replaces the file's, which is
    kept in the curve's environment as ``file_model`` or ``file_card``). ``batch`` is the
    batch size of perf_analyzer runs (its ``-b``), one value or one per file; ``config``
    picks one model configuration from a Model Analyzer table. ``wording`` phrases the
    messages for where the options came from (command line or upload form).
    """

    model: str | None = None
    card: str | None = None
    precision: str | None = None
    resolution: str | None = None
    mig_profile: str | None = None
    notes: str | None = None
    batch: tuple[int, ...] = ()
    config: str | None = None
    source: Source = "uploaded"
    environment: Mapping[str, Any] = field(default_factory=dict)
    override: frozenset[str] = frozenset()
    wording: Wording = field(default=CLI_WORDING, compare=False)

    def __post_init__(self) -> None:
        wording = self.wording
        unknown = sorted(set(self.override) - set(OVERRIDABLE))
        if unknown:
            raise BadInput(
                f"{wording.name('override')} takes {' and '.join(OVERRIDABLE)}, "
                f"not {', '.join(unknown)}"
            )
        nameless = [f for f in OVERRIDABLE if f in self.override and not getattr(self, f)]
        if nameless:
            raise BadInput(
                [
                    f"{wording.name('override_' + f) if wording.form else wording.name('override')}"
                    f" {'' if wording.form else f + ' '}needs the name to use: "
                    f"{wording.give(f)}"
                    for f in nameless
                ]
            )

    def metadata(self) -> dict[str, str | None]:
        return {name: getattr(self, name) for name in METADATA_FIELDS}
