"""``mig``: a hardware partition of g of the card's S compute slices (SPEC §3.4).

Only on cards whose catalogue entry supports MIG, with that card's own profiles. A curve
measured on the profile is used as it is; otherwise the profile's curve is derived from
the whole card's, ``L(b) * max(1, u(b) * S / g)`` (the MPS model with the instance's share
of slices), and says so. Instances do not affect each other; memory is the profile's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from planner.curves.cards import Card
from planner.errors import BadInput
from planner.sim.sharing.deployment import DeployFile, Target, comment
from planner.sim.sharing.mode import Choice, Isolation, Sharing, SharingMode
from planner.sim.sharing.mps import slowed
from planner.sim.sharing.space import MB_PER_GB, Available, gb
from planner.units import Megabytes, is_finite

ALL_PROFILES = "all"
"""The MIG profile a plan names to plan every profile of its card at once
(``planner.plan.mig_profiles``); one run (the Simulate page) takes one profile."""
CONFIG_NAME = "seat-planner"
"""The name of the configuration inside the MIG file (``nvidia-mig-parted -c``)."""
SUPPORTED = "A30, A100, H100, H200 and similar"


class Mig(SharingMode):
    """A hardware partition: the profile's slices and memory, isolated from the rest."""

    name = "mig"
    title = "MIG"
    isolation = Isolation(memory="yes", fault="yes")
    assumption = (
        "Unless a curve measured on the profile is stored, a batch that needs more of the "
        "card than the instance's slices slows down in proportion (the MPS model with the "
        "instance's share of compute slices); instances do not affect each other."
    )
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
            mode=self.name,
            mig_profile=profile.name,
            mig_slices=profile.slices,
            mig_total=card.mig_slices,
            mig_derived=not choice.measured_on_profile,
            mig_instances=profile.max_instances,
            mig_memory_gb=profile.memory_gb,
        )

    def asked_for(self, choice: Choice) -> bool:
        return choice.mig_profile is not None

    def offered_on(self, card: Card | None) -> bool:
        return card is not None and bool(card.mig)

    def lacks(self, choice: Choice) -> str | None:
        return None if choice.mig_profile else "MIG needs a profile (mig_profile=3g.40gb)"

    def profile_wanted(self, choice: Choice) -> str | None:
        return choice.mig_profile or None

    def label(self, sharing: Sharing) -> str:
        return f"MIG {sharing.mig_profile or f'{sharing.mig_slices}/{sharing.mig_total}'}"

    def problems(self, sharing: Sharing) -> list[str]:
        problems = []
        slices, total = sharing.mig_slices, sharing.mig_total
        if not (isinstance(slices, int) and isinstance(total, int) and 0 < slices <= total):
            problems.append("a MIG instance needs its slice count and the card's total")
        instances = sharing.mig_instances
        if instances is not None and not (isinstance(instances, int) and 1 <= instances <= 64):
            problems.append("a MIG profile's instance count must be a whole number from 1")
        if sharing.mig_memory_gb is not None and not (
            is_finite(sharing.mig_memory_gb) and sharing.mig_memory_gb > 0
        ):
            problems.append("a MIG profile's memory must be a positive number of GB")
        return problems

    def table(
        self, table: np.ndarray, sharing: Sharing, peak_upto: int | None = None
    ) -> np.ndarray:
        if not sharing.mig_derived:
            return table
        share = float(sharing.mig_total or 1) / float(sharing.mig_slices or 1)
        return slowed(table, share, peak_upto)

    def derived(self, sharing: Sharing) -> bool:
        return sharing.mig_derived

    def profile_used(self, sharing: Sharing) -> str | None:
        return None if sharing.mig_derived else (sharing.mig_profile or "")

    def notes(self, sharing: Sharing) -> tuple[str, ...]:
        if not sharing.mig_derived:
            return ()
        return (
            f"The {sharing.mig_profile} curve is derived from the whole-card curve, "
            "not measured on that profile.",
        )

    def instances_per_card(self, sharing: Sharing) -> int:
        # The profile's maximum instance count on the card (the vendor's figure; for a card
        # whose catalogue entry lacks it, the card's compute slices over the profile's).
        if sharing.mig_instances is not None:
            return sharing.mig_instances
        return max(1, (sharing.mig_total or 1) // (sharing.mig_slices or 1))

    def card_fraction(self, sharing: Sharing) -> float:
        # One MIG instance of as many as fit.
        return 1.0 / self.instances_per_card(sharing)

    def available(self, sharing: Sharing, card_mb: Megabytes | None) -> Available:
        profile = sharing.mig_profile or "MIG"
        if sharing.mig_memory_gb is None:
            return Available(None, f"in a {profile} instance", "the profile's memory is unknown")
        mb = sharing.mig_memory_gb * MB_PER_GB
        return Available(mb, f"in a {profile} instance", f"the {profile} profile's {gb(mb)}")

    def settings(self, sharing: Sharing) -> dict[str, Any]:
        return {"mig_profile": sharing.mig_profile}

    def deploy_file(self, sharing: Sharing, target: Target) -> DeployFile:
        # The MIG profile and instance count per card, as an nvidia-mig-parted configuration.
        profile = sharing.mig_profile or ""
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
        return DeployFile("mig-parted.yaml", "yaml", "\n".join(lines) + "\n", assumption)
