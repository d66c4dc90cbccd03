"""What a front end offers to choose from, read off the simulator's registries: the
scheduling policies, the arrival phases, the sharing modes (those a card offers, the
parameters a choice of them asks for, and the ``Sharing`` a choice makes), every MIG
profile at once, the worker's stages and the codecs its streams may use. The page and
the command line take these names from here rather than from the simulator."""

from __future__ import annotations

from collections.abc import Iterable

from planner.sim.decode import CODECS
from planner.sim.policies import POLICIES
from planner.sim.scenario import MODES, PHASES
from planner.sim.sharing import offered_modes, owner_of, parameters_of, sharing_mode
from planner.sim.sharing.choice import parse_duties, parse_memory, sharing_for
from planner.sim.sharing.mig import ALL_PROFILES
from planner.sim.stages import NO_STAGES, STAGE_FIELDS, WorkerStages

__all__ = [
    "ALL_PROFILES",
    "CODECS",
    "MODES",
    "NO_STAGES",
    "PHASES",
    "POLICIES",
    "STAGE_FIELDS",
    "WorkerStages",
    "offered_modes",
    "owner_of",
    "parameters_of",
    "parse_duties",
    "parse_memory",
    "several_per_card",
    "sharing_for",
    "sharing_mode",
]


def several_per_card(modes: Iterable[str]) -> bool:
    """Whether any of ``modes`` runs several instances of the worker on one card (MIG,
    MPS), so that whether the card's other instances are ours is worth asking."""
    return any(sharing_mode(m).several_per_card for m in modes)
