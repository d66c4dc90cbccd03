"""A synchronous cascade of models per frame (SPEC §6.3), as the engines run it.

A batch of b frames runs the first model on the b frames, then the second on the K crops
those frames produced, then the third on its input, and so on; the batch is answered when
the last model finishes: ``T = L1(b) + L2(K2) + L3(K3) + …`` with ``L(0) = 0`` (no call).
A model whose input exceeds its largest batch ``B`` (its table's length) runs
``ceil(K / B)`` calls: ``K // B`` full ones and one of the rest. The first model's time is
``batch_time.batch_ms`` (with the run's spread); the later models take their table values.

``CascadeModel`` is one model after the first, as a scenario holds it: its latency table
(batch 1..B, exclusive card) and its crops per input (``planner.sim.crops``). A ``Chain``
is what the compiled loops take: the first model's effective table, the later models'
effective tables as rows, their largest batches and fixed factors, and each frame's
inputs to each model (drawn per frame from the scenario's crop stream; empty when every
count is fixed, when ``K`` is a multiple of b). A scenario without a cascade has the
empty chain, and ``work_ms`` then returns ``batch_ms`` itself: its records are bit for
bit those of a run before cascades existed.

The policies see one table (``latency``): the first model's time plus the later models'
at the expected input (``view``), exact when every count is fixed; only a policy that
predicts batch times (``deadline``) reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from planner import limits
from planner.errors import BadInput
from planner.sim.batch_time import batch_ms
from planner.sim.crops import ONE_CROP, Crops, chain_items
from planner.sim.jit import jit
from planner.sim.sharing import Sharing, effective_table


@dataclass(frozen=True)
class CascadeModel:
    """A model after the first: ``latency_ms[b - 1]`` is a call of b inputs on the card
    as measured (its length is the model's largest batch), ``crops`` how many inputs each
    input of the model before gives it; ``name`` says which model it is (not simulated)."""

    latency_ms: tuple[float, ...]
    crops: Crops = ONE_CROP
    name: str = ""

    def __post_init__(self) -> None:
        problems = model_problems(self)
        if problems:
            raise BadInput(problems)
        object.__setattr__(self, "latency_ms", tuple(float(v) for v in self.latency_ms))

    @property
    def largest(self) -> int:
        return len(self.latency_ms)


def model_problems(model: object) -> list[str]:
    """What is wrong with a cascade model."""
    if not isinstance(model, CascadeModel):
        return ["each model of a cascade must be a CascadeModel value (planner.sim.cascade)"]
    if not isinstance(model.crops, Crops):
        return ["a cascade model's crops must be a Crops value (planner.sim.crops)"]
    try:
        table = np.asarray(model.latency_ms, dtype=np.float64)
    except (TypeError, ValueError):
        return ["a cascade model's latency table must be numbers"]
    if table.ndim != 1 or not limits.MAX_BATCH.holds(table.size):
        return [f"a cascade model's largest batch must be {limits.MAX_BATCH.words()}"]
    if not (np.all(np.isfinite(table)) and np.all(table > 0)):
        return ["every latency of a cascade model must be a finite number above zero"]
    if np.any(np.diff(table) < 0):
        return ["a cascade model's latency must not decrease with batch size"]
    return []


class Chain(NamedTuple):
    """The compiled loops' view of a cascade (see the module docstring)."""

    first: np.ndarray  # the first model's effective table, index = batch (0: unused)
    tables: np.ndarray  # (models, widest + 1): row j = model j+2's table, index = batch
    sizes: np.ndarray  # (models, 2) int64: largest batch, inputs per frame when fixed
    items: np.ndarray  # (models, frames) int32: each frame's inputs; (models, 0) when fixed


NO_CHAIN = Chain(
    np.zeros(0), np.zeros((0, 1)), np.zeros((0, 2), np.int64), np.zeros((0, 0), np.int32)
)
"""The chain of a scenario without a cascade."""


def effective_tables(cascade: tuple[CascadeModel, ...], sharing: Sharing) -> list[np.ndarray]:
    """Each later model's table under the sharing mode (index 0 = batch 1), a derived
    mode's best throughput taken over the model's own table."""
    return [effective_table(np.asarray(m.latency_ms), sharing) for m in cascade]


def prepared(scenario: Any, latency: np.ndarray, frames: int) -> tuple[np.ndarray, Chain]:
    """The table the policies see and the chain of a run of ``scenario`` (a ``Scenario``)
    with ``frames`` frames, ``latency`` being its first model's effective table (index =
    batch): ``latency`` itself and the empty chain without a cascade."""
    if not scenario.cascade:
        return latency, NO_CHAIN
    tables = effective_tables(scenario.cascade, scenario.sharing)
    chain = chain_of(scenario.cascade, latency, tables, scenario.seed, frames)
    return view(scenario.cascade, latency, tables), chain


def reach_table(
    scenario: Any, table: np.ndarray, batch: int, stretch: float
) -> tuple[np.ndarray, int, float]:
    """``(table, batch, stretch)`` for ``sharing.horizon``: as given without a cascade;
    with one, the longest a batch of up to ``batch`` frames can take (the first model
    stretched, each later one at the most inputs its crops can give)."""
    if not scenario.cascade:
        return table, batch, stretch
    total = float(table[batch - 1]) * stretch
    per = 1
    for model, row in zip(scenario.cascade, effective_tables(scenario.cascade, scenario.sharing),
                          strict=True):  # fmt: skip
        per *= model.crops.most
        total += float(model_ms(np.r_[0.0, row], row.size, per * batch))
    return np.array([total]), 1, 1.0


def chain_of(
    cascade: tuple[CascadeModel, ...],
    first: np.ndarray,
    tables: list[np.ndarray],
    seed: int,
    frames: int,
) -> Chain:
    """The chain of a run of ``frames`` frames: ``first`` is the first model's effective
    table with index = batch, ``tables`` the later models' effective tables (index 0 =
    batch 1)."""
    if not cascade:
        return NO_CHAIN
    widest = max(t.size for t in tables)
    rows = np.full((len(cascade), widest + 1), np.nan)
    sizes = np.zeros((len(cascade), 2), np.int64)
    factor = 1
    for j, (model, table) in enumerate(zip(cascade, tables, strict=True)):
        rows[j, 0] = 0.0
        rows[j, 1 : table.size + 1] = table
        factor *= model.crops.k
        sizes[j] = (table.size, factor)
    if all(m.crops.fixed for m in cascade):
        items = np.zeros((len(cascade), 0), np.int32)
    else:
        items = chain_items(tuple(m.crops for m in cascade), seed, frames)
    return Chain(first, rows, sizes, items)


def view(
    cascade: tuple[CascadeModel, ...], first: np.ndarray, tables: list[np.ndarray]
) -> np.ndarray:
    """The table the policies see (index = batch): the first model's time plus each later
    model's at its expected input (rounded up), exact when every count is fixed."""
    if not cascade:
        return first
    out = first.copy()
    expected = np.arange(first.size, dtype=np.float64)
    for model, table in zip(cascade, tables, strict=True):
        expected = expected * model.crops.expected
        inputs = np.ceil(expected - 1e-9).astype(np.int64)
        row, largest = np.r_[0.0, table], table.size
        calls = inputs // largest
        split = calls * row[largest] + row[inputs - calls * largest]
        out[1:] += np.where(inputs <= largest, row[np.minimum(inputs, largest)], split)[1:]
    return out


@jit()
def model_ms(table, largest, k):  # type: ignore[no-untyped-def]
    """A model's time for ``k`` inputs: ``table[k]``, or past its largest batch
    ``k // largest`` full calls and one of the rest (``table[0]`` is 0: no call)."""
    if k <= largest:
        return table[k]
    calls = k // largest
    return calls * table[largest] + table[k - calls * largest]


@jit()
def work_ms(latency, sigma, z, k, count, chain, source, shift, chosen):  # type: ignore[no-untyped-def]
    """The k-th batch's work in exclusive-card ms: ``batch_ms`` of the table without a
    cascade; with one, the first model's (spread) time plus each later model's at the
    inputs of the batch's frames, frame ``source[chosen[c]] + shift`` for c < count."""
    first, tables, sizes, items = chain
    if tables.shape[0] == 0:
        return batch_ms(latency, sigma, z, k, count)
    took = batch_ms(first, sigma, z, k, count)
    for j in range(tables.shape[0]):
        if items.shape[1] == 0:
            inputs = sizes[j, 1] * count
        else:
            inputs = 0
            for c in range(count):
                inputs += items[j, source[chosen[c]] + shift]
        took += model_ms(tables[j], sizes[j, 0], inputs)
    return took


def reference_ms(latency: np.ndarray, sigma: np.ndarray, z: np.ndarray, k: int, chain: Chain,
                 frames: list[int]) -> float:  # fmt: skip
    """``work_ms`` written plainly, for the reference engine: the k-th batch, of the
    frames with these global indices."""
    if chain.tables.shape[0] == 0:
        return float(batch_ms(latency, sigma, z, k, len(frames)))
    took = float(batch_ms(chain.first, sigma, z, k, len(frames)))
    for j in range(chain.tables.shape[0]):
        if chain.items.shape[1] == 0:
            inputs = int(chain.sizes[j, 1]) * len(frames)
        else:
            inputs = sum(int(chain.items[j, g]) for g in frames)
        largest = int(chain.sizes[j, 0])
        calls, rest = divmod(inputs, largest)
        if inputs <= largest:
            took += float(chain.tables[j, inputs])
        else:
            took += calls * float(chain.tables[j, largest]) + float(chain.tables[j, rest])
    return took
