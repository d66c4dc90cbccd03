"""How each batch of a cascade's run divides between its models (SPEC §6.3).

The engines record when each batch starts and ends, not when each model of the chain
hands over to the next. ``model_ends`` works that out again from the run's scenario and
records, the way the engines worked out the batch's time (``planner.sim.cascade``): the
first model's time (with the run's spread, the batch's draw), then each later model's at
the inputs the batch's frames gave it, added in that order. On a card shared by
time-slicing, co-tenants stretch the work along the speed profile the run drew, so a
model ends when the work up to and including it is done (``finish``). The last model's
end is the batch's recorded end, to the last bit: nothing in the engines' hot loops is
recorded twice to draw the split.

``ModelShare`` is one model's part of every batch, summarised (mean, p99, max and its
share of the time the GPU spent on batches), for ``planner simulate`` and its ``--json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.sim.arrivals import arrivals
from planner.sim.batch_time import batch_ms, spread_arrays, stretch
from planner.sim.cascade import prepared, reach_table
from planner.sim.records import Records
from planner.sim.scenario import Scenario
from planner.sim.sharing import cotenant_timeline, effective_table, finish, horizon

FIRST_MODEL = "the first model"
"""How a chain's first model is named where the caller gives no name."""


def model_work(scenario: Scenario, records: Records) -> np.ndarray:
    """Each batch's work by model in exclusive-card ms: one row per batch, one column per
    model of the chain (the first model first). A run without a cascade has one column,
    its batches' whole work."""
    capture = arrivals(scenario)
    frames = capture.times.size
    table = effective_table(np.asarray(scenario.latency_ms), scenario.sharing, scenario.peak_upto)
    sigma, z = spread_arrays(scenario.spread, scenario.seed, frames)
    latency, chain = prepared(scenario, np.r_[0.0, table], frames)
    batches = records.batch_size.size
    count = records.batch_size.astype(np.int64)
    first = chain.first if scenario.cascade else latency
    work = np.zeros((batches, 1 + len(scenario.cascade)))
    work[:, 0] = first[count]
    if sigma.size:  # the engines' own function, batch by batch: the same bits
        work[:, 0] = [batch_ms(first, sigma, z, k, int(b)) for k, b in enumerate(count)]
    taken = capture.start[records.frame_session] + records.frame_index
    for j in range(len(scenario.cascade)):
        largest = int(chain.sizes[j, 0])
        if chain.items.shape[1] == 0:
            inputs = chain.sizes[j, 1] * count
        else:
            given = chain.items[j, taken].astype(np.int64)
            inputs = np.bincount(records.frame_batch, weights=given, minlength=batches)
            inputs = np.rint(inputs).astype(np.int64)
        row = chain.tables[j]
        calls = inputs // largest
        split = calls * row[largest] + row[inputs - calls * largest]
        work[:, 1 + j] = np.where(inputs <= largest, row[np.minimum(inputs, largest)], split)
    return work


def model_ends(scenario: Scenario, records: Records) -> np.ndarray:
    """When each model of the chain finished each batch (ms since the start): one row per
    batch, one column per model; the last column is the batch's end (``batch_end``)."""
    work = model_work(scenario, records)
    done = np.zeros_like(work)
    for j in range(work.shape[1]):  # summed in the engines' order: first model, then each
        done[:, j] = work[:, j] if j == 0 else done[:, j - 1] + work[:, j]
    timeline = cotenant_timeline(scenario.sharing, scenario.seed, _reach(scenario))
    starts = records.batch_start
    if timeline is None:
        return starts[:, None] + done
    ends = np.empty_like(done)
    edges, speed, amount = timeline.edges, timeline.speed, timeline.work
    for i in range(done.shape[0]):
        for j in range(done.shape[1]):
            ends[i, j] = finish(edges, speed, amount, float(starts[i]), float(done[i, j]))
    return ends


def model_times(scenario: Scenario, records: Records) -> np.ndarray:
    """How long each model of the chain ran in each batch (ms, as the run's clock went,
    co-tenants' stretching included): one row per batch, one column per model."""
    ends = model_ends(scenario, records)
    return np.diff(np.c_[records.batch_start, ends], axis=1)


def _reach(scenario: Scenario) -> float:
    """How far the run's speed profile reached (the engines' own horizon)."""
    table = effective_table(np.asarray(scenario.latency_ms), scenario.sharing, scenario.peak_upto)
    batch = scenario.largest_batch(memory=False) if scenario.queue == "all" else scenario.sessions
    return horizon(scenario.sharing, scenario.duration_ms,
                   *reach_table(scenario, table, batch, stretch(scenario.spread)))  # fmt: skip


def model_names(scenario: Scenario, first: str = FIRST_MODEL) -> tuple[str, ...]:
    """The chain's models as the answer names them, the first one ``first``; models that
    share a name (one detector's curves at two resolutions, say) are told apart by their
    place in the chain, ``ball-detector (model 1)`` and ``ball-detector (model 3)``."""
    later = (m.name or f"a model on {m.crops.words}" for m in scenario.cascade)
    return distinct((first, *later))


def distinct(names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` with each that occurs more than once followed by its place (from 1)."""
    return tuple(
        f"{name} (model {i + 1})" if names.count(name) > 1 else name for i, name in enumerate(names)
    )


@dataclass(frozen=True)
class ModelShare:
    """One model's part of a run's batches: its mean, p99 and largest time per batch and
    its share of the time the GPU spent on batches."""

    model: str
    mean_ms: float
    p99_ms: float
    max_ms: float
    share: float

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "mean_ms": self.mean_ms, "p99_ms": self.p99_ms,
                "max_ms": self.max_ms, "share": self.share}  # fmt: skip


def model_shares(
    scenario: Scenario, records: Records, first: str = FIRST_MODEL
) -> tuple[ModelShare, ...]:
    """Each model's part of the run's batches (empty without a cascade or a batch)."""
    if not scenario.cascade or records.batch_size.size == 0:
        return ()
    times = model_times(scenario, records)
    total = float(times.sum()) or 1.0
    return tuple(
        ModelShare(
            name,
            float(times[:, j].mean()),
            float(np.percentile(times[:, j], 99.0)),
            float(times[:, j].max()),
            float(times[:, j].sum()) / total,
        )
        for j, name in enumerate(model_names(scenario, first))
    )
