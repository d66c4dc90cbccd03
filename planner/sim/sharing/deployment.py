"""The text a sharing mode gives for the people who apply a plan (SPEC §5.3): one file
of settings, opening with the assumption it encodes. ``planner.plan.deploy`` adds the
worker's and Triton's files and writes them all.

The text is written by hand (the library needs no YAML package); the tests read every
file back with a parser of its format.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModeFile:
    """The file that applies a mode to a card: its name (its extension says its format),
    its text, and the assumption it encodes."""

    name: str
    text: str
    assumption: str


@dataclass(frozen=True)
class Target:
    """What a mode's file is written for: the option's ``label``, the workers one card
    holds (``per_card``), whether the rest of the card goes to other jobs, and the card's
    memory in GB (None: not in the catalogue)."""

    label: str
    per_card: int
    other_jobs: bool = False
    card_memory_gb: float | None = None


def comment(text: str, width: int = 88) -> list[str]:
    """``text`` as ``# Assumption: ...`` comment lines of at most ``width`` characters."""
    words = f"Assumption: {text}".split()
    lines, line = [], "#"
    for word in words:
        if len(line) + 1 + len(word) > width and line != "#":
            lines.append(line)
            line = "#"
        line += " " + word
    lines.append(line)
    return lines
