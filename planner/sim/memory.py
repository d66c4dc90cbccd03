"""GPU memory: what a batch needs, what the sharing mode leaves us, and the largest batch
that fits (SPEC §5.1).

- **What a batch needs.** A point's ``memory_mb`` is the device memory the serving process
  uses at that batch (weights, activations and the CUDA context), in MB of 2^20 bytes.
  With memory at two or more batch sizes, memory(b) is the least-squares affine fit
  through them (a fixed part plus a part per frame). With one, batches up to it fit when
  it fits and larger ones are not checked; when it does not fit, it and every larger
  batch do not (memory does not fall with the batch) and smaller ones are assumed to fit.
  Without any, nothing is checked. Each case says so in ``assumptions``.
- **What is available** is the sharing mode's to say (``SharingMode.available``).
  Exclusive use: the card's memory. MIG: the profile's memory (the catalogue's, from the
  vendor's guide). MPS: the client's memory limit if one is set, else the card's memory.
  Time-slicing: the card's memory minus what the co-tenants declare
  (``cotenant_memory_mb``; time-slicing has no memory isolation). Card and profile memory
  are GB of 2^30 bytes, 1024 MB each, the unit the store's MB use.
- **What fits.** A batch fits when memory(b) <= 0.9 x available (``USABLE``: a margin for
  fragmentation and the allocator's reserve). The largest batch from 1 up that fits caps
  every policy's batch; when batch 1 does not fit, nothing does and the option holds no
  seat.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from planner.curves.curve import Point
from planner.sim.sharing import Sharing
from planner.sim.sharing.space import MB_PER_GB, USABLE, Available, gb
from planner.units import Megabytes

__all__ = [
    "MB_PER_GB",
    "NO_LIMIT",
    "USABLE",
    "Available",
    "MemoryLimit",
    "MemoryModel",
    "available",
    "gb",
    "memory_limit",
    "memory_model",
]


@dataclass(frozen=True)
class MemoryModel:
    """memory(b) in MB from a curve's points that carry memory.

    ``measured`` are the (batch, MB) pairs; with two or more distinct batches memory(b) is
    ``fixed_mb + per_frame_mb * b`` (least squares); with one, ``per_frame_mb`` is None
    and memory is known at that batch only.
    """

    measured: tuple[tuple[int, Megabytes], ...]
    fixed_mb: Megabytes
    per_frame_mb: Megabytes | None

    def at(self, batch: int) -> Megabytes:
        """memory(batch): the fit, or the one measured figure (for any batch)."""
        if self.per_frame_mb is None:
            return self.measured[0][1]
        return self.fixed_mb + self.per_frame_mb * batch

    @property
    def description(self) -> str:
        if self.per_frame_mb is None:
            batch, mb = self.measured[0]
            return f"memory measured at batch {batch} only ({gb(mb)})"
        return (
            f"memory(b) = {gb(self.fixed_mb)} + {self.per_frame_mb:.1f} MB x b, the "
            f"least-squares line through {len(self.measured)} measured batches"
        )


def memory_model(points: Iterable[Point]) -> MemoryModel | None:
    """The memory model of a curve's points; None when no point carries memory."""
    pairs = sorted(
        (p.batch, float(p.memory_mb))
        for p in points
        if p.memory_mb is not None and math.isfinite(p.memory_mb)
    )
    if not pairs:
        return None
    batches = np.array([b for b, _ in pairs], dtype=np.float64)
    mbs = np.array([m for _, m in pairs])
    if np.unique(batches).size < 2:
        return MemoryModel(tuple(pairs[-1:]), float(mbs.max()), None)
    slope, intercept = np.polyfit(batches, mbs, 1)
    return MemoryModel(tuple(pairs), float(intercept), float(slope))


def available(sharing: Sharing, card_memory_gb: float | None) -> Available:
    """What the sharing mode leaves our worker, from the card's memory (GB) if known."""
    card = None if card_memory_gb is None else card_memory_gb * MB_PER_GB
    return sharing.kind.available(sharing, card)


@dataclass(frozen=True)
class MemoryLimit:
    """The largest batch that fits (``batch_limit``; None: memory does not limit it, or
    is not checked), whether batch 1 fits, and the sentences behind it."""

    batch_limit: int | None
    fits_one: bool
    model: MemoryModel | None
    space: Available
    assumptions: tuple[str, ...]

    def needs(self, batch: int) -> str:
        """Why ``batch`` does not fit, e.g. 'batch 9 needs 8.6 GB of the 7.2 GB that fit
        beside the co-tenants'."""
        need = self.model.at(batch) if self.model is not None else math.nan
        usable = self.space.usable_mb or 0.0
        return f"batch {batch} needs {gb(need)} of the {gb(usable)} that fit {self.space.where}"


NO_LIMIT = MemoryLimit(None, True, None, Available(None, "on the card", ""), ())


def memory_limit(model: MemoryModel | None, space: Available, upto: int = 4096) -> MemoryLimit:
    """The largest batch from 1 up to ``upto`` whose memory fits in ``USABLE`` x the
    available memory (None when all of them fit or memory is not checked)."""
    if model is None:
        unchecked = "GPU memory is not checked: the curve has no memory figures."
        return MemoryLimit(None, True, None, space, (unchecked,))
    if space.mb is None:
        return MemoryLimit(
            None, True, model, space,
            (f"GPU memory is not checked: {space.derivation}.",),
        )  # fmt: skip
    usable = USABLE * space.mb
    basis = (
        f"GPU memory: {model.description}; a batch fits in {USABLE:.0%} of "
        f"{space.derivation} ({gb(usable)})."
    )
    if model.per_frame_mb is None:
        batch, mb = model.measured[0]
        if mb <= usable:
            note = f"Batches above {batch} are not checked: memory was measured at one batch size."
            return MemoryLimit(None, True, model, space, (basis, note))
        note = (
            f"Batch {batch} does not fit, nor does any larger one; smaller batches are "
            "assumed to fit (memory was measured at one batch size)."
        )
        limit = batch - 1
        return MemoryLimit(limit if limit < upto else None, limit >= 1, model, space, (basis, note))
    fixed, per_frame = model.fixed_mb, model.per_frame_mb
    if fixed + per_frame > usable:
        return MemoryLimit(0, False, model, space, (basis,))
    if per_frame <= 0:
        return MemoryLimit(None, True, model, space, (basis,))
    largest = math.floor((usable - fixed) / per_frame)
    while largest >= 1 and fixed + per_frame * largest > usable:  # rounding
        largest -= 1
    while fixed + per_frame * (largest + 1) <= usable:
        largest += 1
    return MemoryLimit(largest if largest < upto else None, True, model, space, (basis,))
