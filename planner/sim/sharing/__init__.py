"""GPU sharing modes (SPEC §2.5, §3.4), one object each, in one registry.

- ``exclusive``: the curve as measured.
- ``time-slicing``: co-tenant jobs alternate exponential busy and idle periods; while k of
  them are busy, the card alternates among k+1 contexts and a running batch progresses at
  1/(k+1) of its speed (``timeline``).
- ``mps``: a batch of size b needs a fraction ``u(b) = min(1, thr(b) / thr_max)`` of the
  card; with a compute share p% its latency becomes ``L(b) * max(1, u(b) * 100 / p)``.
- ``mig``: an instance of g of the card's S compute slices: ``L(b) * max(1, u(b) * S / g)``
  unless the curve was measured on that profile.

Each mode is a ``SharingMode`` in a module of its own, with the frozen dataclass of its
own settings (``MpsSettings``, ...) that validates them, registered in ``SHARING_MODES`` by
name (the order below is the order they are offered in). A ``Sharing`` is a mode's name
and its settings. The registry feeds the link
codecs, the command line's choices and the dashboard's, so a registered mode is offered
everywhere and a name that is not registered is an error everywhere. Isolation travels
with each mode, so a seat cap is never shown without it; all of these are models, and
each says its assumption.

Adding a mode: a subclass of ``SharingMode`` (and of ``Settings`` if it has any) in its own
module, overriding what differs from the card to ourselves, and one line in ``BUILT_IN``.
"""

from __future__ import annotations

import numpy as np

from planner.sim.sharing.deployment import ModeFile, Target
from planner.sim.sharing.exclusive import Exclusive
from planner.sim.sharing.mig import Mig, MigSettings
from planner.sim.sharing.mode import (
    CHOICE_PARAMETERS,
    MODE_NAMES,
    SHARING_MODES,
    Choice,
    Isolation,
    Settings,
    Sharing,
    SharingMode,
    default_modes,
    offered_modes,
    owner_of,
    parameters_of,
    register,
    sharing_mode,
    unregister,
)
from planner.sim.sharing.mps import Mps, MpsSettings
from planner.sim.sharing.time_slicing import TimeSlicing, TimeSlicingSettings
from planner.sim.sharing.timeline import Timeline, finish

__all__ = [
    "CHOICE_PARAMETERS",
    "MODE_NAMES",
    "SHARING_MODES",
    "Choice",
    "Isolation",
    "MigSettings",
    "ModeFile",
    "MpsSettings",
    "Settings",
    "Sharing",
    "SharingMode",
    "Target",
    "TimeSlicingSettings",
    "Timeline",
    "card_fraction",
    "cotenant_timeline",
    "default_modes",
    "derived",
    "effective_table",
    "finish",
    "horizon",
    "instances_per_card",
    "offered_modes",
    "owner_of",
    "parameters_of",
    "register",
    "sharing_mode",
    "unregister",
]

BUILT_IN: tuple[SharingMode, ...] = (Exclusive(), TimeSlicing(), Mps(), Mig())
for _mode in BUILT_IN:
    register(_mode)


def instances_per_card(sharing: Sharing) -> int:
    """How many instances of our worker one card holds in this mode (SPEC §3.5)."""
    return sharing.kind.instances_per_card(sharing)


def card_fraction(sharing: Sharing) -> float:
    """Our fraction of the card when the rest of it goes to other jobs (what a seat is
    charged for then)."""
    return sharing.kind.card_fraction(sharing)


def derived(sharing: Sharing) -> bool:
    """Whether the mode's curve is derived from the whole-card curve by a model."""
    return sharing.kind.derived(sharing)


def effective_table(
    table: np.ndarray, sharing: Sharing, peak_upto: int | None = None
) -> np.ndarray:
    """The latency table (index 0 = batch 1) under ``sharing`` (a derived mode's best
    throughput over batch 1..``peak_upto``; None: the whole table)."""
    return sharing.kind.table(np.asarray(table, dtype=np.float64), sharing, peak_upto)


def horizon(
    sharing: Sharing, duration_ms: float, table: np.ndarray, sessions: int, stretch: float = 1.0
) -> float:
    """How far a speed profile must reach for a run of ``duration_ms`` with ``sessions``
    on ``table`` (the effective one), whose batches take up to ``stretch`` times their
    table value (``planner.sim.batch_time.stretch``)."""
    return sharing.kind.horizon(sharing, duration_ms, float(table[sessions - 1]) * stretch)


def cotenant_timeline(sharing: Sharing, seed: int, horizon_ms: float) -> Timeline | None:
    """The speed profile of a run (None: it runs at full speed), drawn to ``horizon_ms``."""
    return sharing.kind.timeline(sharing, seed, horizon_ms)
