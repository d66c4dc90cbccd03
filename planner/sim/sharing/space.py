"""The memory a sharing mode leaves our worker (SPEC §5.1), in the store's MB.

Card and MIG profile memory are GB of 2^30 bytes, 1024 MB each, the unit the store's MB
use. ``planner.sim.memory`` compares it with what a batch needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.units import Megabytes

USABLE = 0.9
"""The fraction of the available memory a batch may use (SPEC §5.1)."""
MB_PER_GB = 1024.0
"""Card and MIG profile memory are GB of 2^30 bytes; the store's MB are 2^20 bytes."""


def gb(mb: Megabytes) -> str:
    """``8704`` MB as ``8.5 GB``."""
    return f"{mb / MB_PER_GB:.1f} GB"


@dataclass(frozen=True)
class Available:
    """The memory our worker may use under a sharing mode: ``mb`` (None: unknown), where
    that is said in a sentence (``where``), and how it was derived (``derivation``)."""

    mb: Megabytes | None
    where: str
    derivation: str

    @property
    def usable_mb(self) -> Megabytes | None:
        return None if self.mb is None else USABLE * self.mb


def on_card(card_mb: Megabytes | None) -> Available:
    """The whole card's memory (when the catalogue knows it)."""
    if card_mb is None:
        return Available(None, "on the card", "the card's memory is unknown")
    return Available(card_mb, "on the card", f"the card's {gb(card_mb)}")
