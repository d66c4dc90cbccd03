"""The card catalogue's video decoders: how many NVDEC engines a card, or one instance of
a MIG profile, has (SPEC §6.3).

The figures live in ``measurements/decoders.json``, each with its source; a figure not
found in a source is not there, and ``engines`` returns None for it (unknown: the plan
asks for the count). Kept apart from ``cards.json`` so that a card's stored record and
its schema stay as they were.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from typing import Any

from planner.paths import measurements_dir


@dataclass(frozen=True)
class DecoderCount:
    """``nvdec`` engines, as ``source`` (its short name, ``decoders.json`` has the full
    reference and how far it was checked) gives them."""

    nvdec: int
    source: str


@functools.cache
def _catalogue() -> dict[str, Any]:
    doc = json.loads((measurements_dir() / "decoders.json").read_text(encoding="utf-8"))
    return dict(doc)


def decoder_count(card: str | None, profile: str | None = None) -> DecoderCount | None:
    """The decoders of ``card`` (a MIG ``profile`` of it when given), or None if unknown."""
    if card is None:
        return None
    doc = _catalogue()
    entry = doc["cards"].get(card.strip().lower())
    if entry is None:
        return None
    raw = entry.get("card") if profile is None else entry.get("profiles", {}).get(profile)
    if raw is None:
        return None
    key, _, note = str(raw["source"]).partition(" ")
    source = doc["sources"][key]["short"]
    return DecoderCount(int(raw["nvdec"]), f"{source} {note}".strip())
