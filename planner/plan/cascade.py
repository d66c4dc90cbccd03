"""The models a plan's worker runs after the first on each batch (SPEC §6.3).

A ``CascadeStep`` is one later model as a plan knows it: its fitted curve, its crops per
input (``planner.sim.crops``) and its largest batch (by default the batch sizes the
curve's throughput peak is taken over, max(64, the largest measured), the way a server
is built for a model's measured range). ``models`` turns the steps into the scenario's
``CascadeModel`` values on one edge of the band: band edges add model by model, the
optimistic edge of every model together and the pessimistic edge likewise.

Memory adds every model's weights and activations: each later model is counted at its
largest batch (a server allocates for the largest batch it accepts), a fixed amount
beside the first model's memory(b).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from planner import limits
from planner.curves.fit import Edge, FittedCurve
from planner.errors import BadInput
from planner.sim.cascade import CascadeModel
from planner.sim.crops import ONE_CROP, Crops, parse_shares
from planner.sim.memory import MemoryLimit, MemoryModel, gb, memory_model
from planner.sim.sharing.mps import peak_range

__all__ = ["CascadeStep", "binding_stage", "chain_clause", "models", "parse_shares"]


@dataclass(frozen=True)
class CascadeStep:
    """One model after the first: ``curve``, ``crops`` per input of the model before,
    ``largest`` batch (None: ``default_largest``), ``name`` as the answer says it."""

    curve: FittedCurve
    crops: Crops = ONE_CROP
    largest: int | None = None
    name: str = "the next model"

    def __post_init__(self) -> None:
        if self.largest is not None and not limits.MAX_BATCH.holds(self.largest):
            raise BadInput(f"a cascade model's largest batch must be {limits.MAX_BATCH.words()}")

    @property
    def batch(self) -> int:
        """Its largest batch."""
        if self.largest is not None:
            return self.largest
        return default_largest(self.curve)


def default_largest(curve: FittedCurve) -> int:
    """A later model's largest batch when none is given: max(64, its largest measured)."""
    return peak_range(max(p.batch for p in curve.points))


def models(steps: tuple[CascadeStep, ...], edge: Edge) -> tuple[CascadeModel, ...]:
    """The scenario's cascade on one edge of every model's band."""
    return tuple(_model(step, edge) for step in steps)


@functools.lru_cache(maxsize=256)
def _model(step: CascadeStep, edge: Edge) -> CascadeModel:
    table = tuple(float(v) for v in step.curve.table(step.batch, edge))
    return CascadeModel(table, step.crops, step.name)


def with_cascade_memory(
    limit_of: MemoryModel | None, steps: tuple[CascadeStep, ...]
) -> tuple[MemoryModel | None, str | None]:
    """The first model's memory model with every later model's memory at its largest
    batch added to its fixed part, and a sentence saying so (None, None without a
    cascade). A later model without memory figures is not counted, and the sentence
    says that too."""
    if not steps or limit_of is None:
        return limit_of, None
    added = 0.0
    counted, missing = [], []
    for step in steps:
        own = memory_model(step.curve.points)
        if own is None:
            missing.append(step.name)
            continue
        mb = own.at(step.batch)
        added += mb
        counted.append(f"{step.name} {gb(mb)} at batch {step.batch}")
    words = "GPU memory adds the later models at their largest batch"
    if counted:
        words += ": " + ", ".join(counted)
    if missing:
        words += f"; not counted (no memory figures): {', '.join(missing)}"
    model = replace(limit_of, fixed_mb=limit_of.fixed_mb + added)
    if limit_of.per_frame_mb is None:
        batch, mb = limit_of.measured[0]
        model = replace(limit_of, measured=((batch, mb + added),))
    return model, words + "."


def describe(steps: tuple[CascadeStep, ...], first: str) -> str:
    """The chain in words: 'yolo, then resnet on 3 crops per input'."""
    parts = [first] + [f"{s.name} on {s.crops.words}" for s in steps]
    return ", then ".join(parts)


def stage_times(steps: tuple[CascadeStep, ...], first: FittedCurve, batch: int) -> list[float]:
    """Each model's time (central edge) for a batch of ``batch`` frames at the expected
    crops: the first model's, then each later one's."""
    times = [float(first.latency(batch)[()])]
    inputs = float(batch)
    for step in steps:
        inputs *= step.crops.expected
        k = int(np.ceil(inputs - 1e-9))
        if k == 0:
            times.append(0.0)
            continue
        largest = step.batch
        calls, rest = divmod(k, largest)
        one = float(step.curve.latency(largest)[()])
        times.append(calls * one + (float(step.curve.latency(rest)[()]) if rest else 0.0))
    return times


def binding_stage(
    steps: tuple[CascadeStep, ...], first: FittedCurve, first_name: str, batch: int
) -> str:
    """Which model of the chain takes most of a batch of ``batch`` frames, in a clause:
    'the chain binds: at batch 8, yolo 20 ms + resnet on 3 crops per input 31 ms; resnet
    takes most'."""
    times = stage_times(steps, first, batch)
    names = [first_name] + [s.name for s in steps]
    split = " + ".join(f"{n} {t:.3g} ms" for n, t in zip(names, times, strict=True))
    most = names[int(np.argmax(times))]
    return f"the chain of models binds: a batch of {batch} takes {split}; {most} takes most"


def memory_note(memory: MemoryLimit, note: str | None) -> MemoryLimit:
    """``memory`` with the cascade's sentence among its assumptions."""
    if note is None:
        return memory
    return replace(memory, assumptions=(*memory.assumptions, note))


def chain_clause(request: Any, sharing: Any, batch_sizes: tuple[int, ...], sessions: int) -> str:
    """Which model of the request's chain takes most of the GPU's time at the failing
    count (``binding_stage`` at the batch size that carried the most frames there; at a
    batch of ``sessions`` where no run was made, as when the queue would grow)."""
    frames = np.asarray(batch_sizes, dtype=np.float64) * np.arange(len(batch_sizes))
    batch = int(np.argmax(frames)) if frames.size and frames.max() > 0 else sessions
    return binding_stage(request.cascade, request.curve_for(sharing), request.model_name, batch)
