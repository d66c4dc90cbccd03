"""What a batch costs beyond the curve's central latency: how its time spreads from one
call to the next, and a cost per request of the batch.

Spread. Model assumption: a batch's duration is lognormal around the curve's median, so a
measured point's spread gives the sigma of ``ln(duration)`` at its batch size: from its
p10 and p90, ``(ln p90 - ln p10) / (2 * 1.2816)``; with only one of them, the distance of
that one from the median (``p50_ms``, else ``latency_ms``) over 1.2816; else from its
standard deviation, ``sqrt(ln(1 + (std / median)^2))`` (exact for a lognormal whose mean
is near its median, which holds for the spreads seen, sigma below about 0.4). Between
measured batch sizes sigma is interpolated linearly in log batch size and beyond them
held at the nearest measured value; points without spread contribute nothing, and a
curve none of whose points has spread has none (an empty table: every batch takes its
median). The simulator applies it (``planner.sim.batch_time``).

Per-request cost. A curve measured with one batched call per batch leaves out what a
server spends on each request of a batch (deserialising it, copying it in, answering it):
measured by timing ``b`` concurrent single-frame requests against one request of batch
``b``, or given by the user. A batch of ``b`` requests then costs ``L(b) + b *
per_request_ms``. It is a property of the curve (``Curve.per_request_ms``) applied to the
table a plan builds, not inside the simulator.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence

import numpy as np

from planner import limits
from planner.curves.curve import Point

Z90 = 1.2815515655446004
"""The standard normal's 90th percentile: p90 = median * exp(Z90 * sigma)."""


def point_sigma(point: Point) -> float | None:
    """The sigma of ``ln(duration)`` at one measured point, or None when it has no spread
    (see the module docstring for which fields are used, in order)."""
    median = point.p50_ms or point.latency_ms
    low, high = point.p10_ms, point.p90_ms
    if low and high and high > low:
        return _bounded((math.log(high) - math.log(low)) / (2.0 * Z90))
    if high and high > median:
        return _bounded((math.log(high) - math.log(median)) / Z90)
    if low and low < median:
        return _bounded((math.log(median) - math.log(low)) / Z90)
    if point.std_ms:
        return _bounded(math.sqrt(math.log1p((point.std_ms / median) ** 2)))
    return None


def has_spread(points: Iterable[Point]) -> bool:
    """Whether any of the points carries a spread (``point_sigma`` is not None)."""
    return any(point_sigma(p) is not None for p in points)


def _bounded(sigma: float) -> float:
    return min(max(sigma, 0.0), float(limits.SPREAD_SIGMA.high))


def spread_table(points: Iterable[Point], upto: int) -> tuple[float, ...]:
    """Sigma for batch 1..``upto`` from the points' spread (interpolated in log batch size,
    held beyond the measured sizes); ``()`` when no point has spread."""
    return _spread_table(tuple(points), int(upto))


@functools.lru_cache(maxsize=256)
def _spread_table(points: tuple[Point, ...], upto: int) -> tuple[float, ...]:
    known = [(p.batch, s) for p in sorted(points) if (s := point_sigma(p)) is not None]
    if not known or upto < 1:
        return ()
    logs = np.log([b for b, _ in known])
    sigmas = np.array([s for _, s in known])
    values = np.interp(np.log(np.arange(1, upto + 1)), logs, sigmas)
    return tuple(float(v) for v in values)


def with_per_request(table: Sequence[float], per_request_ms: float) -> tuple[float, ...]:
    """A latency table (batch 1, 2, …) with ``per_request_ms`` added per request of each
    batch: ``L(b) + b * per_request_ms``."""
    if not per_request_ms:
        return tuple(float(v) for v in table)
    return tuple(float(v) + b * per_request_ms for b, v in enumerate(table, start=1))
