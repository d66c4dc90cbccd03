"""GPU sharing modes as models of how a batch's latency changes (SPEC §2.5, §3.4).

- ``exclusive``: the curve as measured.
- ``time-slicing``: co-tenant jobs alternate exponential busy and idle periods; while k of
  them are busy, the card alternates among k+1 contexts and a running batch progresses at
  1/(k+1) of its speed. The batch's end is found by integrating that speed from its start
  (``finish``), so it depends on when it runs, not on a fixed multiplier.
- ``mps``: a batch of size b needs a fraction ``u(b) = min(1, thr(b) / thr_max)`` of the
  card; with a compute share p% its latency becomes ``L(b) * max(1, u(b) * 100 / p)``.
- ``mig``: an instance of g of the card's S compute slices: ``L(b) * max(1, u(b) * S / g)``
  unless the curve was measured on that profile.

Isolation (SPEC §2.5) travels with each mode so the seat cap is never shown without it.
All of these are models; their assumptions are listed in ``ASSUMPTIONS``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from planner.sim.streams import COTENANT_STREAM, generators
from planner.sim.jit import jit
from planner.sim.scenario import Scenario, Sharing


@dataclass(frozen=True)
class Isolation:
    memory: str
    fault: str


ISOLATION: dict[str, Isolation] = {
    "exclusive": Isolation(memory="whole card", fault="whole card"),
    "time-slicing": Isolation(memory="none", fault="none"),
    "mps": Isolation(memory="capped", fault="not confirmed by the docs"),
    "mig": Isolation(memory="yes", fault="yes"),
}

ASSUMPTIONS: dict[str, str] = {
    "exclusive": "The card runs only this worker; latency is the curve as measured or fitted.",
    "time-slicing": (
        "Each co-tenant alternates busy and idle periods drawn from exponential "
        "distributions (mean busy period as set, idle mean chosen to give its duty cycle). "
        "While k co-tenants are busy the card alternates among k+1 contexts, so a running "
        "batch progresses at 1/(k+1) of its speed; context-switch overhead is ignored. "
        "The scheduler does not see co-tenants: policies plan with the exclusive curve."
    ),
    "mps": (
        "A batch uses a share of the card in proportion to its throughput relative to the "
        "curve's best throughput; when that exceeds our compute share it slows down in "
        "proportion. Co-tenants do not time-slice us; memory-bandwidth contention is ignored."
    ),
    "mig": (
        "Unless a curve measured on the profile is stored, a batch that needs more of the "
        "card than the instance's slices slows down in proportion (the MPS model with the "
        "instance's share of compute slices); instances do not affect each other."
    ),
}


def instances_per_card(sharing: Sharing) -> int:
    """How many instances of our worker one card holds in this mode (SPEC §3.5).

    MIG: the profile's maximum instance count on the card (the vendor's figure; for a card
    whose catalogue entry lacks it, the card's compute slices over the profile's). MPS:
    ``floor(100 / share)`` clients of our share. Exclusive and time-slicing: one — under
    time-slicing the other contexts are the co-tenants, not more of our worker.
    """
    if sharing.mode == "mig":
        if sharing.mig_instances is not None:
            return sharing.mig_instances
        return max(1, (sharing.mig_total or 1) // (sharing.mig_slices or 1))
    if sharing.mode == "mps":
        return max(1, math.floor(100.0 / float(sharing.mps_share or 100.0) + 1e-9))
    return 1


def card_fraction(sharing: Sharing) -> float:
    """Our fraction of the card when the rest of it goes to other jobs (what a seat is
    charged for then): one MIG instance of as many as fit, the MPS share, an equal turn
    among the time-sliced contexts, or the whole card."""
    if sharing.mode == "mig":
        return 1.0 / instances_per_card(sharing)
    if sharing.mode == "mps":
        return float(sharing.mps_share or 100.0) / 100.0
    if sharing.mode == "time-slicing":
        return 1.0 / (1 + len(sharing.cotenants))
    return 1.0


def derived(sharing: Sharing) -> bool:
    """Whether the mode's curve is derived from the whole-card curve by a model (MPS
    always, MIG unless a curve measured on the profile is used)."""
    return sharing.mode == "mps" or (sharing.mode == "mig" and sharing.mig_derived)


def horizon(scenario: Scenario, table: np.ndarray) -> float:
    """How far co-tenant activity must be drawn: past the end of the last batch that can
    be dispatched before the end of the run, even if every co-tenant is busy throughout."""
    slowest = float(table[scenario.sessions - 1]) * (len(scenario.sharing.cotenants) + 1)
    return scenario.duration_ms + 2.0 * slowest + 10.0 * scenario.sharing.busy_period_ms


def utilisation(table: np.ndarray) -> np.ndarray:
    """``u(b) = min(1, thr(b) / thr_max)`` for every batch of the table (index 0 = batch 1)."""
    batches = np.arange(1, table.size + 1, dtype=np.float64)
    throughput = batches / table
    return np.minimum(1.0, throughput / throughput.max())


def effective_table(table: np.ndarray, sharing: Sharing) -> np.ndarray:
    """The latency table under ``sharing`` (time-slicing acts in ``finish`` instead)."""
    table = np.asarray(table, dtype=np.float64)
    if sharing.mode == "mps":
        share = 100.0 / float(sharing.mps_share or 100.0)
        return table * np.maximum(1.0, utilisation(table) * share)
    if sharing.mode == "mig" and sharing.mig_derived:
        share = float(sharing.mig_total or 1) / float(sharing.mig_slices or 1)
        return table * np.maximum(1.0, utilisation(table) * share)
    return table


@dataclass(frozen=True)
class Timeline:
    """Piecewise-constant speed of our context: ``speed[m]`` on ``[edges[m], edges[m+1])``.

    ``work[m]`` is the work done (in exclusive-card milliseconds) from time 0 to
    ``edges[m]``. The last segment extends to infinity.
    """

    edges: np.ndarray
    speed: np.ndarray
    work: np.ndarray


def cotenant_timeline(sharing: Sharing, seed: int, horizon_ms: float) -> Timeline | None:
    """The time-slicing speed profile for a run, or None when nothing slows us down.

    Each co-tenant gets its own generator spawned from the scenario's co-tenant stream, so
    adding a co-tenant leaves the others' activity (and the phases) unchanged. Activity is
    drawn to at least ``horizon_ms``; drawn further it is the same process, longer (the
    draws come in fixed-size chunks), so one profile serves every run of a seed that
    ends before it, and profiles are kept for reuse.
    """
    if sharing.mode != "time-slicing" or not any(d > 0 for d in sharing.cotenants):
        return None
    # Round the horizon up to a power of two so runs of different lengths share a profile.
    bucket = float(2 ** math.ceil(math.log2(max(horizon_ms, 1.0))))
    return _timeline(sharing.cotenants, sharing.busy_period_ms, seed, bucket)


@functools.lru_cache(maxsize=64)
def _timeline(
    cotenants: tuple[float, ...], busy_ms: float, seed: int, horizon_ms: float
) -> Timeline:
    stream = generators(seed)[COTENANT_STREAM]
    children = np.random.SeedSequence(int(stream.integers(2**63))).spawn(len(cotenants))
    times_list, deltas_list = [], []
    for duty, child in zip(cotenants, children, strict=True):
        if duty <= 0:
            continue
        times, deltas = _busy_changes(np.random.default_rng(child), duty, busy_ms, horizon_ms)
        times_list.append(times)
        deltas_list.append(deltas)
    times = np.concatenate(times_list)
    deltas = np.concatenate(deltas_list)
    order = np.argsort(times, kind="mergesort")
    times, deltas = times[order], deltas[order]
    busy = np.cumsum(deltas)
    # Collapse changes at the same instant; the busy count after the last one holds.
    # Every co-tenant contributes a row at time 0, so the first edge is 0.
    last = np.r_[times[1:] != times[:-1], True]
    edges, counts = times[last], busy[last]
    speed = 1.0 / (counts + 1.0)
    work = np.r_[0.0, np.cumsum(np.diff(edges) * speed[:-1])]
    return Timeline(edges=edges, speed=speed, work=work)


_CHUNK = 4096


def _busy_changes(
    rng: np.random.Generator, duty: float, busy_ms: float, horizon_ms: float
) -> tuple[np.ndarray, np.ndarray]:
    """Times (ms) and +1/-1 steps at which one co-tenant starts and stops being busy,
    from time 0 until past ``horizon_ms``; its state at time 0 is drawn from the
    stationary distribution (busy with probability ``duty``)."""
    if duty >= 1.0:
        return np.zeros(1), np.ones(1)
    idle_ms = busy_ms * (1.0 - duty) / duty
    busy_first = bool(rng.random() < duty)
    first = (busy_ms, idle_ms) if busy_first else (idle_ms, busy_ms)
    scales = np.tile(np.array(first), _CHUNK // 2)
    periods = []
    end = 0.0
    while end < horizon_ms:
        chunk = rng.standard_exponential(_CHUNK) * scales
        periods.append(chunk)
        end += float(chunk.sum())
    ends = np.cumsum(np.concatenate(periods))
    ends = ends[: int(np.searchsorted(ends, horizon_ms, side="right")) + 1]
    # Period i ends a busy period when the first one was busy and i is even (or the
    # first was idle and i is odd): busy ends step down, idle ends step up.
    index = np.arange(ends.size)
    ends_busy = (index % 2 == 0) if busy_first else (index % 2 == 1)
    steps = np.where(ends_busy, -1.0, 1.0)
    start = np.array([1.0 if busy_first else 0.0])
    return np.r_[0.0, ends], np.r_[start, steps]


@jit()
def finish(edges, speed, work, start, amount):  # type: ignore[no-untyped-def]
    """When a batch that needs ``amount`` ms of exclusive-card time, started at ``start``,
    completes under the speed profile."""
    m = np.searchsorted(edges, start, side="right") - 1
    target = work[m] + (start - edges[m]) * speed[m] + amount
    j = np.searchsorted(work, target, side="right") - 1
    if j < m:
        j = m
    return edges[j] + (target - work[j]) / speed[j]
