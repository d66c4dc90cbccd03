"""How long one batch takes: the latency table's value, spread by a lognormal multiplier.

Model assumption. A batch of ``b`` frames takes ``latency[b] * exp(sigma[b] * z_k)``: its
median is the table's value (the curve's central estimate is a median), ``sigma[b]`` is
the standard deviation of the log of its duration, and ``z_k`` is the k-th standard
normal of the scenario's batch stream (``planner.sim.streams.BATCH_STREAM``), the k-th
batch of the run using the k-th draw whatever its size. Draws are clipped to
``±Z_BOUND`` so that one draw cannot make a batch 50 times its median (a real server
that slow has stalled, which is not what a spread describes); the clip moves about six
draws in a hundred thousand.

The draws are made once per run, before it, as an array as long as the run's frame count
(a run has at most one batch per frame), so both engines, and every engine that calls
``batch_ms``, read the same numbers in the same order. A scenario without spread passes
empty arrays, and ``batch_ms`` then returns the table's value itself: the records are
bit for bit those of a run without this model.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from planner.sim.jit import jit
from planner.sim.streams import BATCH_STREAM, generator

Z_BOUND = 4.0
"""Draws of the batch stream are clipped to this many standard deviations either side."""
NO_SPREAD = np.zeros(0)
"""``sigma`` and ``z`` of a run without spread."""


@jit()
def batch_ms(latency, sigma, z, k, count):  # type: ignore[no-untyped-def]
    """The duration of the run's ``k``-th batch (0 first), of ``count`` frames, in
    exclusive-card milliseconds: ``latency[count]``, times ``exp(sigma[count] * z[k])``
    when the run has spread (``sigma`` and ``z`` not empty)."""
    if sigma.size == 0:
        return latency[count]
    return latency[count] * math.exp(sigma[count] * z[k])


def spread_arrays(spread: Sequence[float], seed: int, frames: int) -> tuple[np.ndarray, np.ndarray]:
    """``sigma`` (index = batch size, 0 unused) and ``z`` for ``batch_ms``: empty arrays
    when ``spread`` is empty."""
    if not spread:
        return NO_SPREAD, NO_SPREAD
    return np.r_[0.0, np.asarray(spread, dtype=np.float64)], draws(seed, frames)


def draws(seed: int, count: int) -> np.ndarray:
    """The first ``count`` standard normals of the seed's batch stream, clipped to
    ``±Z_BOUND``. A longer array starts with the shorter one, so one array serves every
    run of a seed that has at most as many frames."""
    if count > _CACHED:
        return _drawn(seed, count)
    # Rounded up to a power of two, so runs of different lengths share one cached array.
    return _cached(seed, 1 << max(10, int(count - 1).bit_length()))[:count]


_CACHED = 1 << 20  # longer arrays (8 MB and up) are drawn for each run instead of kept


@functools.lru_cache(maxsize=32)
def _cached(seed: int, count: int) -> np.ndarray:
    # (Left writable: Numba compiles a read-only array as another type, so the loop
    # would be compiled twice.)
    return _drawn(seed, count)


def _drawn(seed: int, count: int) -> np.ndarray:
    z = generator(seed, BATCH_STREAM).standard_normal(count)
    np.clip(z, -Z_BOUND, Z_BOUND, out=z)
    return z


def stretch(spread: Sequence[float]) -> float:
    """The most a batch's duration can exceed its table value under ``spread``
    (``exp(Z_BOUND * max sigma)``; 1 without spread): how far past a run's end its
    co-tenant activity must be drawn."""
    return math.exp(Z_BOUND * max(spread)) if spread else 1.0
