"""Turning a user's choice of sharing mode into a ``Sharing`` value, with its checks.

MIG is offered only on cards whose catalogue entry supports it, with that card's own
profiles; a curve measured on the chosen profile is used as it is, otherwise the
profile's curve is derived from the whole-card curve (and says so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from planner.curves.cards import Card
from planner.errors import BadInput
from planner.sim.scenario import MAX_MEMORY_MB, MODES, Sharing


def sharing_for(
    mode: str,
    *,
    cotenants: Sequence[float] = (),
    busy_period_ms: float = 50.0,
    mps_share: float | None = None,
    mig_profile: str | None = None,
    card: Card | None = None,
    measured_on_profile: bool = False,
    cotenant_memory_mb: Sequence[float] = (),
    mps_memory_mb: float | None = None,
) -> Sharing:
    """The ``Sharing`` for ``mode`` with its parameters; BadInput says what is missing.
    Co-tenant memory applies under time-slicing and the MPS memory limit under MPS; each
    is ignored by the other modes, so one plan can name both and compare modes."""
    if mode not in MODES:
        raise BadInput(f"sharing mode {mode!r} is not one of {', '.join(MODES)}")
    if mode == "exclusive":
        return Sharing()
    if mode == "time-slicing":
        if not cotenants:
            raise BadInput("time-slicing needs co-tenants: their duty cycles, e.g. 0.9,0.9")
        return Sharing(
            mode="time-slicing",
            cotenants=tuple(cotenants),
            busy_period_ms=busy_period_ms,
            cotenant_memory_mb=tuple(cotenant_memory_mb),
        )
    if mode == "mps":
        return Sharing(
            mode="mps",
            mps_share=50.0 if mps_share is None else mps_share,
            mps_memory_mb=mps_memory_mb,
        )
    if card is None:
        raise BadInput("MIG needs a card: give the card the curve was measured on (--card)")
    if not card.mig:
        supported = "A30, A100, H100, H200 and similar"
        raise BadInput(f"card {card.name} does not support MIG (only {supported} do)")
    if not mig_profile:
        choices = ", ".join(p.name for p in card.mig_profiles)
        raise BadInput(f"MIG needs a profile of {card.name}: one of {choices}")
    profile = card.profile(mig_profile)
    return Sharing(
        mode="mig",
        mig_profile=profile.name,
        mig_slices=profile.slices,
        mig_total=card.mig_slices,
        mig_derived=not measured_on_profile,
        mig_instances=profile.max_instances,
        mig_memory_gb=profile.memory_gb,
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
