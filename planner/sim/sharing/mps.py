"""``mps``: concurrent kernels with our compute share p (SPEC §3.4).

A batch of size b needs a fraction ``u(b) = min(1, thr(b) / thr_max)`` of the card, thr
being the table's throughput and thr_max its best; with a share of p% its latency becomes
``L(b) * max(1, u(b) * 100 / p)``. Co-tenants do not time-slice us. Memory is capped per
client when a limit is set.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner import limits
from planner.errors import BadInput
from planner.sim.sharing.deployment import ModeFile, Target, comment
from planner.sim.sharing.mode import (
    MAX_MEMORY_MB,
    Choice,
    Isolation,
    Settings,
    Sharing,
    SharingMode,
)
from planner.sim.sharing.space import Available, gb
from planner.units import Megabytes, is_finite

DEFAULT_SHARE = 50.0
"""Our compute share in percent when none is given (SPEC §3.4)."""


@dataclass(frozen=True)
class MpsSettings(Settings):
    """Our share of the card's compute, in percent (``mps_share``), and our client's memory
    limit in MB (``mps_memory_mb``; None: no limit set)."""

    mps_share: float | None = field(default=None, metadata={"words": "an MPS compute share"})
    mps_memory_mb: Megabytes | None = field(default=None, metadata={"words": "an MPS memory limit"})

    def __post_init__(self) -> None:
        problems = []
        if not limits.MPS_SHARE.holds(self.mps_share):
            problems.append(f"the MPS compute share must be {limits.MPS_SHARE.words()} (%)")
        limit = self.mps_memory_mb
        if limit is not None and not (is_finite(limit) and 0 < limit <= MAX_MEMORY_MB):
            problems.append(
                f"the MPS memory limit must be above 0 and at most {MAX_MEMORY_MB:g} MB"
            )
        if problems:
            raise BadInput(problems)


class Mps(SharingMode[MpsSettings]):
    """A share of the compute: a batch that needs more of the card than the share slows."""

    name = "mps"
    title = "MPS"
    isolation = Isolation(memory="capped", fault="not confirmed by the docs")
    assumption = (
        "A batch uses a share of the card in proportion to its throughput relative to the "
        "curve's best throughput; when that exceeds our compute share it slows down in "
        "proportion. Co-tenants do not time-slice us; memory-bandwidth contention is ignored."
    )
    settings = MpsSettings
    parameters = ("mps_share", "mps_memory_mb")
    several_per_card = True
    worker_unit = "MPS client"
    instance_name = "MPS client"

    def sharing(self, choice: Choice) -> Sharing:
        share = DEFAULT_SHARE if choice.mps_share is None else choice.mps_share
        return Sharing(self.name, MpsSettings(share, choice.mps_memory_mb))

    def asked_for(self, choice: Choice) -> bool:
        return choice.mps_share is not None or choice.mps_memory_mb is not None

    def label(self, sharing: Sharing) -> str:
        return f"MPS ({share_of(sharing):g}% share)"

    def table(
        self, table: np.ndarray, sharing: Sharing, peak_upto: int | None = None
    ) -> np.ndarray:
        return slowed(table, 100.0 / share_of(sharing), peak_upto)

    def derived(self, sharing: Sharing) -> bool:
        return True

    def instances_per_card(self, sharing: Sharing) -> int:
        # floor(100 / share) clients of our share (a share so small that the count
        # overflows a float is as many clients as an int holds).
        clients = min(100.0 / share_of(sharing) + 1e-9, float(sys.maxsize))
        return max(1, math.floor(clients))

    def card_fraction(self, sharing: Sharing) -> float:
        return share_of(sharing) / 100.0

    def available(self, sharing: Sharing, card_mb: Megabytes | None) -> Available:
        limit = self.settings_of(sharing).mps_memory_mb
        if limit is None:
            return super().available(sharing, card_mb)
        return Available(
            limit, "under the MPS memory limit", f"the MPS memory limit of {gb(limit)}"
        )

    def worker_settings(self, sharing: Sharing) -> dict[str, Any]:
        share = share_of(sharing)
        return {"active_thread_percentage": int(share) if share.is_integer() else share}

    def deploy_file(self, sharing: Sharing, target: Target) -> ModeFile:
        # CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (the planned share) and
        # CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (the same share of the card's memory).
        share = share_of(sharing)
        memory = memory_limit_mb(sharing, target.card_memory_gb)
        assumption = (
            f"each MPS client of this worker gets {share:g}% of the card's compute and the "
            f"same share of its memory; a card holds {target.per_card} such client(s)."
        )
        lines = [
            f"# CUDA MPS client environment for {target.label}.",
            *comment(assumption),
            f"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE={share:g}",
        ]
        if memory is None:
            lines.append(
                "# CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: the card's memory is not in the "
                f"catalogue; set 0=<MB>M to {share:g}% of it."
            )
        else:
            lines.append(f"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0={memory}M")
        return ModeFile("mps.env", "\n".join(lines) + "\n", assumption)


def share_of(sharing: Sharing) -> float:
    """Our compute share in percent (100 where none is set: not under MPS)."""
    settings = sharing.settings
    return float(settings.mps_share or 100.0) if isinstance(settings, MpsSettings) else 100.0


def memory_limit_mb(sharing: Sharing, card_memory_gb: float | None) -> int | None:
    """The MPS client's memory limit in MB: the planned share of the card's memory."""
    if card_memory_gb is None:
        return None
    return math.floor(card_memory_gb * 1024 * share_of(sharing) / 100.0)


PEAK_AT_LEAST = 64
"""The card's best throughput (thr_max) is taken over batch 1..max(64, the largest batch
measured): the batch sizes the curve has evidence for, whatever the session count."""


def peak_range(largest_measured: int) -> int:
    """The batch sizes thr_max is taken over, for a curve measured up to this batch."""
    return max(PEAK_AT_LEAST, int(largest_measured))


def utilisation(table: np.ndarray, upto: int | None = None) -> np.ndarray:
    """``u(b) = min(1, thr(b) / thr_max)`` for every batch of the table (index 0 = batch
    1), thr_max being the best throughput over batch 1..``upto`` (None: the whole table)."""
    batches = np.arange(1, table.size + 1, dtype=np.float64)
    throughput = batches / table
    return np.minimum(1.0, throughput / throughput[:upto].max())


def slowed(table: np.ndarray, share: float, upto: int | None = None) -> np.ndarray:
    """``L(b) * max(1, u(b) * share)``: a batch that needs more of the card than ``1 /
    share`` of it slows down in proportion (MPS, and MIG derived from the whole card)."""
    return table * np.maximum(1.0, utilisation(table, upto) * share)
