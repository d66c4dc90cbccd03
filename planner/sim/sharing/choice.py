"""Turning a user's choice of sharing mode into a ``Sharing`` value, with its checks.

Each mode says what it needs (``SharingMode.sharing``): time-slicing its co-tenants, MIG a
card that supports it and one of that card's profiles; a curve measured on the chosen
profile is used as it is, otherwise the profile's curve is derived from the whole-card
curve (and says so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from planner import limits
from planner.curves.cards import Card
from planner.errors import BadInput
from planner.sim.sharing.mode import MAX_MEMORY_MB, Choice, Sharing, sharing_mode


def sharing_for(
    mode: str,
    *,
    cotenants: Sequence[float] = (),
    busy_period_ms: float = limits.DEFAULT_BUSY_PERIOD_MS,
    mps_share: float | None = None,
    mig_profile: str | None = None,
    card: Card | None = None,
    measured_on_profile: bool = False,
    cotenant_memory_mb: Sequence[float] = (),
    mps_memory_mb: float | None = None,
    cotenant_workloads: Sequence[Any] = (),
) -> Sharing:
    """The ``Sharing`` for ``mode`` with its parameters; BadInput says what is missing
    (or that no mode has that name). Each mode reads its own parameters and ignores the
    others', so one plan can name them all and compare modes."""
    return sharing_mode(mode).sharing(
        Choice(
            cotenants=tuple(cotenants),
            busy_period_ms=busy_period_ms,
            mps_share=mps_share,
            mig_profile=mig_profile,
            cotenant_memory_mb=tuple(cotenant_memory_mb),
            mps_memory_mb=mps_memory_mb,
            card=card,
            measured_on_profile=measured_on_profile,
            cotenant_workloads=tuple(cotenant_workloads),
        )
    )


def parse_memory(text: str, option: str) -> tuple[float, ...]:
    """Memory figures in MB from ``"2048,4096"`` (each a non-negative number)."""
    values = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        try:
            value = float(item)
        except ValueError:
            raise BadInput(f"{option}: {item!r} is not a number of MB") from None
        if not (math.isfinite(value) and 0.0 <= value <= MAX_MEMORY_MB):
            raise BadInput(f"{option}: {item!r} must be between 0 and {MAX_MEMORY_MB:g} MB")
        values.append(value)
    if not values:
        raise BadInput(f"{option} is empty; give MB figures such as 4096")
    return tuple(values)


def parse_duties(text: str) -> tuple[float, ...]:
    """Co-tenant duty cycles from ``"0.9,0.9"`` (each 0..1)."""
    duties = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        try:
            value = float(item)
        except ValueError:
            raise BadInput(f"co-tenant duty cycle {item!r} is not a number") from None
        if not 0.0 <= value <= 1.0:
            raise BadInput(f"co-tenant duty cycle {item!r} must be between 0 and 1")
        duties.append(value)
    if not duties:
        raise BadInput("--cotenants is empty; give duty cycles such as 0.9,0.9")
    return tuple(duties)
