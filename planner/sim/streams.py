"""The scenario's random generators: one seed, independent streams.

Phases, jitter and co-tenant activity each draw from their own generator spawned from the
scenario's seed (``SeedSequence.spawn``), so adding co-tenants never changes the phases of
a seed, and adding jitter never changes them either.
"""

from __future__ import annotations

import numpy as np

PHASE_STREAM, JITTER_STREAM, COTENANT_STREAM = 0, 1, 2
_STREAMS = 3


def generators(seed: int) -> list[np.random.Generator]:
    """The scenario's independent generators: phases, jitter, co-tenants (in that order)."""
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(_STREAMS)]
