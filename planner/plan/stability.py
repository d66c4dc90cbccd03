"""The stability condition of a server that queues every frame (SPEC §6.1).

Under ``queue = all`` every frame waits in one queue until it is batched, so a server
offered more frames than it can serve builds a queue that grows without end, however
slowly: a finite run at ``lambda / mu = 1.0003`` can still meet a latency budget. So a
session count is judged by the condition first: N sessions offer ``lambda = N x fps``
frames per second, and the most the server can serve is

    mu = max over b <= B of b / E[T(b)]

where ``T(b)`` is a batch of ``b``'s time on the table the runs take (the band edge being
searched, the sharing mode's table, the per-request cost or the calibration applied) and
``B`` the largest batch the policy forms (1 for a policy that sends one frame at a time,
``max_batch`` for one that has it, the session count otherwise; never more than fits in
memory). ``E[T(b)]`` is the table's value times the mean of the batch-time spread's
lognormal multiplier (``planner.sim.batch_time``), whose median the table is. A count
with ``lambda >= mu`` fails; one with ``lambda < mu`` is judged by its runs. No margin is
taken below 1: ``docs/design.md`` (a server that queues every frame) says why.

Under ``queue = newest`` a session holds at most one pending frame, so no queue grows and
every count is stable. Under both, a count whose frames the decoder engines cannot decode
(``planner.plan.decoders``) is not searched either: it fails on the decoders.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from planner import display
from planner.curves.fit import Edge
from planner.plan.decoders import busy_reason, decoders_upto
from planner.plan.request import Request
from planner.sim.batch_time import Z_BOUND
from planner.sim.cascade import effective_tables, view
from planner.sim.policies import POLICIES
from planner.sim.scenario import Sharing
from planner.sim.sharing import effective_table


@dataclass(frozen=True)
class Service:
    """What a server that queues every frame can serve: ``rate`` frames per second, at
    batches of ``batch`` frames (the best of those up to its largest)."""

    rate: float
    batch: int

    def holds(self, sessions: int, fps: float) -> bool:
        """Whether ``sessions`` at ``fps`` each offer strictly less than the rate."""
        return sessions * fps < self.rate

    def reason(self, sessions: int, fps: float) -> str:
        """Why a count the condition fails fails, in plain words."""
        offered = sessions * fps
        return (
            f"the card would be busy {display.fraction(min(offered / self.rate, 1.0))}: the "
            f"queue grows without end ({display.count(offered)} frames/s offered; batches of "
            f"{self.batch} serve at most {display.count(self.rate)} frames/s)"
        )


def mean_stretch(sigma: float) -> float:
    """The mean of ``exp(sigma * z)`` for a standard normal ``z`` clipped to ``±Z_BOUND``
    (the batch-time spread's multiplier, ``planner.sim.batch_time``)."""
    if sigma == 0.0:
        return 1.0
    inside = math.exp(sigma * sigma / 2.0) * (
        norm.cdf(Z_BOUND - sigma) - norm.cdf(-Z_BOUND - sigma)
    )
    tails = norm.sf(Z_BOUND) * (math.exp(sigma * Z_BOUND) + math.exp(-sigma * Z_BOUND))
    return float(inside + tails)


def service_rates(table: Sequence[float] | np.ndarray, spread: Sequence[float]) -> np.ndarray:
    """``rates[B - 1]``: the most frames per second batches of up to ``B`` frames serve,
    for each ``B`` the table covers (``table`` the effective latency table in ms, batch 1
    first; ``spread`` its sigmas, or empty)."""
    times = np.asarray(table, dtype=np.float64)
    if len(spread):
        times = times * np.array([mean_stretch(float(s)) for s in spread[: times.size]])
    per_batch = np.arange(1, times.size + 1) * 1000.0 / times
    return np.maximum.accumulate(per_batch)


def largest_batches(
    request: Request, policy: str, counts: np.ndarray, limit: int | None
) -> np.ndarray:
    """The largest batch ``policy`` forms at each session count under ``queue = all``: 1
    for a policy that sends one frame at a time, its ``max_batch`` where it has one, the
    session count otherwise; at most ``limit`` (what fits in memory; None: no limit)."""
    kind = POLICIES[policy]
    if kind.one_at_a_time:
        largest = np.ones_like(counts)
    elif "max_batch" in kind.params:
        largest = np.full_like(counts, request.max_batch or int(kind.defaults["max_batch"]))
    else:
        largest = counts.copy()
    return largest if limit is None else np.clip(largest, 1, limit)


def stable_upto(request: Request, policy: str, sharing: Sharing, edge: Edge, memory: bool) -> int:
    """The largest count ``n <= request.largest`` such that every count up to it offers
    less than the server serves (``request.largest`` under ``queue = newest``): the cap
    search of the option on ``edge`` goes no further (``planner.plan.recommend``)."""
    decoded = decoders_stable(request, sharing)
    if request.queue != "all":
        return decoded
    rates = _rates(request, sharing, edge)
    limit = request.memory(sharing).batch_limit if memory else None
    counts = np.arange(1, request.largest + 1)
    largest = np.minimum(largest_batches(request, policy, counts, limit), rates.size)
    fails = counts * request.fps >= rates[largest - 1]
    return min(decoded, int(np.argmax(fails)) if fails.any() else request.largest)


def decoders_stable(request: Request, sharing: Sharing) -> int:
    """The largest count whose frames the decoder engines of ``sharing``'s instance can
    decode (``request.largest`` without decoders, or where they never bind)."""
    if request.decoders is None:
        return request.largest
    decoding = request.decoders.decoding(sharing)
    return decoders_upto(
        decoding, request.fps, request.criteria.min_fps, request.queue, request.largest
    )


def decoders_reason(request: Request, sharing: Sharing, sessions: int) -> str | None:
    """Why ``sessions`` fails on the decoders (``planner.plan.decoders``), or None when
    they can decode its frames."""
    if request.decoders is None or sessions <= decoders_stable(request, sharing):
        return None
    decoding = request.decoders.decoding(sharing)
    return busy_reason(decoding, sessions, request.fps, request.criteria.min_fps, request.queue)


def service(
    request: Request, policy: str, sessions: int, rates: np.ndarray, limit: int | None
) -> Service:
    """What the server serves at ``sessions`` (``rates`` from ``service_rates``)."""
    largest = int(largest_batches(request, policy, np.array([sessions]), limit)[0])
    largest = min(largest, rates.size)
    best = int(np.argmax(rates[:largest] >= rates[largest - 1])) + 1
    return Service(float(rates[largest - 1]), best)


def service_at(
    request: Request, policy: str, sharing: Sharing, edge: Edge, sessions: int, memory: bool
) -> Service:
    """What the server serves at ``sessions`` for one option on one edge."""
    limit = request.memory(sharing).batch_limit if memory else None
    return service(request, policy, sessions, _rates(request, sharing, edge), limit)


def _rates(request: Request, sharing: Sharing, edge: Edge) -> np.ndarray:
    """The service rates of an option's runs, from the very scenario they run (its table
    under the sharing mode, per-request cost and calibration applied, and its spread; with
    a cascade, the whole chain's time at the expected crops, ``planner.sim.cascade.view``)."""
    run = request.scenario("oldest-first", sharing, edge, request.largest, 0, memory=False)
    table = effective_table(np.asarray(run.latency_ms), run.sharing, run.peak_upto)
    if run.cascade:
        later = effective_tables(run.cascade, run.sharing)
        table = view(run.cascade, np.r_[0.0, table], later)[1:]
    return service_rates(table, run.spread)
