"""The scenario's random generators: one seed, independent streams.

Phases, jitter, co-tenant activity, batch-time spread and a cascade's crops each draw from their own
generator spawned from the scenario's seed (``SeedSequence.spawn``), so adding co-tenants
never changes the phases of a seed, and adding jitter never changes them either. A child
of ``spawn`` is keyed by its index alone (``spawn_key=(i,)``), so a stream added at a new
index leaves the draws of the earlier streams exactly as they were (a test checks it).
"""

from __future__ import annotations

import numpy as np

PHASE_STREAM, JITTER_STREAM, COTENANT_STREAM, BATCH_STREAM = 0, 1, 2, 3
_STREAMS = 4
CROP_STREAM = 4
"""The crops per frame of a cascade's models (``planner.sim.crops``): one child per model,
``SeedSequence(seed, spawn_key=(CROP_STREAM, j))``, not among ``generators``."""


def generators(seed: int) -> list[np.random.Generator]:
    """The scenario's independent generators: phases, jitter, co-tenants, batch times (in
    that order)."""
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(_STREAMS)]


def generator(seed: int, stream: int) -> np.random.Generator:
    """One of the scenario's generators (``generators(seed)[stream]``) without making the
    others."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(stream,)))
