"""The card catalogue: GPUs the planner knows, their memory, MIG profiles and price.

The built-in catalogue lives in ``measurements/cards.json`` (memory and MIG profiles as
the vendor documents them). Prices are never shipped: a user sets a card's hourly price,
and cost per seat is only shown where one is set.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from planner.errors import BadInput
from planner.paths import measurements_dir
from planner.units import UsdPerHour


@dataclass(frozen=True)
class MigProfile:
    """A MIG profile such as ``3g.40gb``: ``slices`` of the card's compute slices,
    ``memory_gb`` of its memory, and at most ``max_instances`` of it on one card (the
    vendor's "Number of Instances Available", which is not always the card's slices over
    the profile's: a ``1g.20gb`` fits 4 times on an 80 GB H100, a ``+me`` profile once).
    A card added by hand may leave the last two unknown."""

    name: str
    slices: int
    memory_gb: float | None = None
    max_instances: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "slices": self.slices,
            "memory_gb": self.memory_gb,
            "max_instances": self.max_instances,
        }


@dataclass(frozen=True)
class Card:
    """A GPU model (or a MIG-less card from a study), as the catalogue describes it."""

    name: str
    memory_gb: float | None = None
    description: str = ""
    mig: bool = False
    mig_slices: int | None = None
    mig_profiles: tuple[MigProfile, ...] = ()
    price_per_hour: UsdPerHour | None = None
    builtin: bool = False

    def profile(self, name: str) -> MigProfile:
        """The MIG profile called ``name`` on this card, or BadInput naming the choices."""
        if not self.mig:
            raise BadInput(f"card {self.name} does not support MIG")
        for profile in self.mig_profiles:
            if profile.name == name.strip().lower():
                return profile
        choices = ", ".join(p.name for p in self.mig_profiles)
        raise BadInput(f"MIG profile {name!r} is not offered on {self.name} (choices: {choices})")

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "memory_gb": self.memory_gb,
            "description": self.description,
            "mig": self.mig,
            "mig_slices": self.mig_slices,
            "mig_profiles": [p.as_dict() for p in self.mig_profiles],
            "price_per_hour": self.price_per_hour,
            "builtin": self.builtin,
        }


def card_from_dict(raw: Mapping[str, Any], *, builtin: bool = False) -> Card:
    profiles = tuple(
        MigProfile(
            name=str(p["name"]),
            slices=int(p["slices"]),
            memory_gb=None if p.get("memory_gb") is None else float(p["memory_gb"]),
            max_instances=None if p.get("max_instances") is None else int(p["max_instances"]),
        )
        for p in raw.get("mig_profiles") or ()
    )
    return Card(
        name=str(raw["name"]),
        memory_gb=None if raw.get("memory_gb") is None else float(raw["memory_gb"]),
        description=str(raw.get("description") or ""),
        mig=bool(raw.get("mig")),
        mig_slices=None if raw.get("mig_slices") is None else int(raw["mig_slices"]),
        mig_profiles=profiles,
        price_per_hour=raw.get("price_per_hour"),
        builtin=builtin or bool(raw.get("builtin")),
    )


def builtin_catalogue() -> list[Card]:
    """The cards shipped in ``measurements/cards.json``."""
    doc = json.loads((measurements_dir() / "cards.json").read_text(encoding="utf-8"))
    return [card_from_dict(raw, builtin=True) for raw in doc["cards"]]


def clean_price(value: object) -> float:
    """An hourly price in USD: a finite number from 0 to 10,000."""
    try:
        price = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise BadInput(f"price {value!r} is not a number") from None
    if not (0 <= price <= 10_000):
        raise BadInput(f"price {value!r} must be between 0 and 10000 USD per hour")
    return price
