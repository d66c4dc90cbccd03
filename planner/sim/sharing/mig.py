"""``mig``: a hardware partition of g of the card's S compute slices (SPEC §3.4).

Only on cards whose catalogue entry supports MIG, with that card's own profiles. A curve
measured on the profile is used as it is; otherwise the profile's curve is derived from
the whole card's, ``L(b) * max(1, u(b) * S / g)`` (the MPS model with the instance's share
of slices), and says so. Instances do not affect each other; memory is the profile's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.curves.cards import Card
from planner.errors import BadInput
from planner.sim.sharing.deployment import ModeFile, Target, comment
from planner.sim.sharing.mode import Choice, Isolation, Settings, Sharing, SharingMode
from planner.sim.sharing.mps import slowed
from planner.sim.sharing.space import MB_PER_GB, Available, gb
from planner.units import Megabytes, is_finite

ALL_PROFILES = "all"
"""The MIG profile a plan names to plan every profile of its card at once
(``planner.plan.mig_profiles``); one run (the Simulate page) takes one profile."""
CONFIG_NAME = "seat-planner"
"""The name of the configuration inside the MIG file (``nvidia-mig-parted -c``)."""
SUPPORTED = "A30, A100, H100, H200 and similar"


@dataclass(frozen=True)
class MigSettings(Settings):
    """An instance of ``mig_slices`` of the card's ``mig_total`` compute slices (profile
    ``mig_profile``), with ``mig_memory_gb`` of memory, of which one card holds at most
    ``mig_instances``. ``mig_derived`` is False when the curve was measured on that
    profile, so it is used as it is."""

    mig_profile: str | None = field(default=None, metadata={"words": "a MIG profile"})
    mig_slices: int | None = None
    mig_total: int | None = None
    mig_derived: bool = True
    mig_instances: int | None = None
    mig_memory_gb: float | None = None

    def __post_init__(self) -> None:
        problems = []
        slices, total = self.mig_slices, self.mig_total
        if not (isinstance(slices, int) and isinstance(total, int) and 0 < slices <= total):
            problems.append("a MIG instance needs its slice count and the card's total")
        instances = self.mig_instances
        if instances is not None and not (isinstance(instances, int) and 1 <= instances <= 64):
            problems.append("a MIG profile's instance count must be a whole number from 1")
        if self.mig_memory_gb is not None and not (
            is_finite(self.mig_memory_gb) and self.mig_memory_gb > 0
        ):
            problems.append("a MIG profile's memory must be a positive number of GB")
        if problems:
            raise BadInput(problems)


class Mig(SharingMode[MigSettings]):
    """A hardware partition: the profile's slices and memory, isolated from the rest."""

    name = "mig"
    title = "MIG"
    isolation = Isolation(memory="yes", fault="yes")
    assumption = (
        "Unless a curve measured on the profile is stored, a batch that needs more of the "
        "card than the instance's slices slows down in proportion (the MPS model with the "
        "instance's share of compute slices); instances do not affect each other."
    )
    settings = MigSettings
    parameters = ("mig_profile",)
    several_per_card = True
    needs_card = True
    worker_unit = "MIG instance"

    def sharing(self, choice: Choice) -> Sharing:
        card = choice.card
        if card is None:
            raise BadInput("MIG needs a card: give the card the curve was measured on (--card)")
        if not card.mig:
            raise BadInput(f"card {card.name} does not support MIG (only {SUPPORTED} do)")
        if not choice.mig_profile:
            choices = ", ".join(p.name for p in card.mig_profiles)
            raise BadInput(f"MIG needs a profile of {card.name}: one of {choices}")
        if choice.mig_profile == ALL_PROFILES:
            choices = ", ".join(p.name for p in card.mig_profiles)
            raise BadInput(
                f"mig_profile={ALL_PROFILES} plans every profile; one run takes one of {choices}"
            )
        profile = card.profile(choice.mig_profile)
        return Sharing(
            self.name,
            MigSettings(
                mig_profile=profile.name,
                mig_slices=profile.slices,
                mig_total=card.mig_slices,
                mig_derived=not choice.measured_on_profile,
                mig_instances=profile.max_instances,
                mig_memory_gb=profile.memory_gb,
            ),
        )

    def asked_for(self, choice: Choice) -> bool:
        return choice.mig_profile is not None

    def offered_on(self, card: Card | None) -> bool:
        return card is not None and bool(card.mig)

    def lacks(self, choice: Choice) -> str | None:
        return None if choice.mig_profile else "MIG needs a profile (mig_profile=3g.40gb)"

    def profile_wanted(self, choice: Choice) -> str | None:
        return choice.mig_profile or None

    def variants(self, choice: Choice) -> tuple[dict[str, Any], ...]:
        card = choice.card
        if choice.mig_profile != ALL_PROFILES or card is None or not card.mig:
            return ({},)  # a card without MIG keeps ``all``, and ``sharing`` says why not
        return tuple({"mig_profile": profile.name} for profile in card.mig_profiles)

    def label(self, sharing: Sharing) -> str:
        mig = self.settings_of(sharing)
        return f"MIG {mig.mig_profile or f'{mig.mig_slices}/{mig.mig_total}'}"

    def short_label(self, sharing: Sharing) -> str:
        return self.label(sharing)

    def table(
        self, table: np.ndarray, sharing: Sharing, peak_upto: int | None = None
    ) -> np.ndarray:
        mig = self.settings_of(sharing)
        if not mig.mig_derived:
            return table
        share = float(mig.mig_total or 1) / float(mig.mig_slices or 1)
        return slowed(table, share, peak_upto)

    def derived(self, sharing: Sharing) -> bool:
        return self.settings_of(sharing).mig_derived

    def profile_used(self, sharing: Sharing) -> str | None:
        mig = self.settings_of(sharing)
        return None if mig.mig_derived else (mig.mig_profile or "")

    def notes(self, sharing: Sharing) -> tuple[str, ...]:
        mig = self.settings_of(sharing)
        if not mig.mig_derived:
            return ()
        return (
            f"The {mig.mig_profile} curve is derived from the whole-card curve, "
            "not measured on that profile.",
        )

    def instances_per_card(self, sharing: Sharing) -> int:
        # The profile's maximum instance count on the card (the vendor's figure; for a card
        # whose catalogue entry lacks it, the card's compute slices over the profile's).
        mig = self.settings_of(sharing)
        if mig.mig_instances is not None:
            return mig.mig_instances
        return max(1, (mig.mig_total or 1) // (mig.mig_slices or 1))

    def card_fraction(self, sharing: Sharing) -> float:
        # One MIG instance of as many as fit.
        return 1.0 / self.instances_per_card(sharing)

    def available(self, sharing: Sharing, card_mb: Megabytes | None) -> Available:
        mig = self.settings_of(sharing)
        profile = mig.mig_profile or "MIG"
        if mig.mig_memory_gb is None:
            return Available(None, f"in a {profile} instance", "the profile's memory is unknown")
        mb = mig.mig_memory_gb * MB_PER_GB
        return Available(mb, f"in a {profile} instance", f"the {profile} profile's {gb(mb)}")

    def worker_settings(self, sharing: Sharing) -> dict[str, Any]:
        return {"mig_profile": self.settings_of(sharing).mig_profile}

    def deploy_file(self, sharing: Sharing, target: Target) -> ModeFile:
        # The MIG profile and instance count per card, as an nvidia-mig-parted configuration.
        profile = self.settings_of(sharing).mig_profile or ""
        ours = target.per_card
        if target.other_jobs:
            assumption = (
                f"one {profile} instance per card runs this worker; the rest of the card is "
                "other jobs', so add their instances to this configuration."
            )
        else:
            assumption = (
                f"every card is split into {ours} {profile} instances, each running this "
                f"worker (the most of this profile one card holds)."
            )
        lines = [
            f"# nvidia-mig-parted configuration for {target.label}; apply with",
            f"#   nvidia-mig-parted apply -f mig-parted.yaml -c {CONFIG_NAME}",
            *comment(assumption),
            "version: v1",
            "mig-configs:",
            f"  {CONFIG_NAME}:",
            "    - devices: all",
            "      mig-enabled: true",
            "      mig-devices:",
            f'        "{profile}": {ours}',
        ]
        return ModeFile("mig-parted.yaml", "\n".join(lines) + "\n", assumption)
