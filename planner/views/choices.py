"""What a front end offers to choose from, read off the simulator's registries: the
scheduling policies, the sharing modes (those a card offers, and the parameters a choice
of them asks for) and every MIG profile at once. The page and the command line take these
names from here rather than from the simulator."""

from __future__ import annotations

from collections.abc import Iterable

from planner.sim.policies import POLICIES
from planner.sim.scenario import MODES
from planner.sim.sharing import offered_modes, parameters_of, sharing_mode
from planner.sim.sharing.mig import ALL_PROFILES

__all__ = [
    "ALL_PROFILES",
    "MODES",
    "POLICIES",
    "offered_modes",
    "parameters_of",
    "several_per_card",
]


def several_per_card(modes: Iterable[str]) -> bool:
    """Whether any of ``modes`` runs several instances of the worker on one card (MIG,
    MPS), so that whether the card's other instances are ours is worth asking."""
    return any(sharing_mode(m).several_per_card for m in modes)
