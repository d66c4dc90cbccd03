"""The worker beyond the GPU (SPEC §5.1) as one frozen, validated value: the network delay
each way, the CPU work before and after the GPU, and the threads that run that work.

``Scenario``, ``Request`` and a load test's options each hold one (``stages``). The link
parameter sets (``planner.plan.params``) keep the four as flat link parameters, named
like these fields, and build one with their ``stages`` property. The one rule that ties
the stages to a plan's latency budget, that the time outside the GPU must leave part of
it (``budget_problem``), is written here and used by the links, the recommendation and
the command line alike.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from planner import limits
from planner.errors import BadInput
from planner.units import Milliseconds

MAX_CPU_WORKERS = int(limits.CPU_WORKERS.high)
"""The most CPU threads a worker's pool may have (0 means unlimited: stages are delays)."""


@dataclass(frozen=True)
class WorkerStages:
    """What a frame meets outside the GPU (SPEC §5.1).

    A frame captured at t reaches the worker at ``t + network_ms``, is decoded on the CPU
    for ``pre_ms``, waits for the GPU, is post-processed for ``post_ms`` and sent back
    (``network_ms`` again). ``cpu_workers`` is K, the threads that run pre and post work
    from one first-in-first-out queue; 0 means unlimited, so the CPU stages are pure
    delays. (Named apart from ``planner.sim.pipeline.Stages``, which is where a run's
    latency went, not what the worker is.)
    """

    network_ms: Milliseconds = limits.DEFAULT_STAGE_MS
    pre_ms: Milliseconds = limits.DEFAULT_STAGE_MS
    post_ms: Milliseconds = limits.DEFAULT_STAGE_MS
    cpu_workers: int = limits.DEFAULT_CPU_WORKERS

    def __post_init__(self) -> None:
        problems = []
        for name, what in _TIMES:
            value = getattr(self, name)
            if not limits.STAGE_MS.holds(value):
                problems.append(f"{what} must be {limits.STAGE_MS.words()} ms, not {value!r}")
        workers = self.cpu_workers
        if not (isinstance(workers, int) and limits.CPU_WORKERS.holds(workers)):
            problems.append(
                f"CPU threads (cpu_workers) must be {limits.CPU_WORKERS.words()} "
                f"(0: unlimited), not {workers!r}"
            )
        if problems:
            raise BadInput(problems)
        # Canonical form: times as floats, so that 2 and 2.0 make equal values.
        for name, _ in _TIMES:
            object.__setattr__(self, name, float(getattr(self, name)))

    @property
    def takes_time(self) -> bool:
        """Whether a frame spends any time outside the GPU in these stages (a network
        delay or CPU work); without, the worker's latency is the GPU-side latency."""
        return bool(self.network_ms or self.pre_ms or self.post_ms)

    @property
    def cpu_pool(self) -> bool:
        """Whether CPU work queues for a finite pool of threads (K >= 1 and a stage > 0)."""
        return self.cpu_workers > 0 and (self.pre_ms > 0 or self.post_ms > 0)

    def outside_ms(self, overhead_ms: Milliseconds) -> Milliseconds:
        """A frame's expected time outside the GPU when nothing waits for a CPU thread:
        ``2 * network_ms + pre_ms + post_ms + overhead_ms`` (SPEC §5.1)."""
        return 2.0 * self.network_ms + self.pre_ms + self.post_ms + overhead_ms

    def budget_problem(self, overhead_ms: Milliseconds, budget_ms: Milliseconds) -> str | None:
        """Why the time outside the GPU (``outside_ms``) leaves nothing of a latency budget
        for the GPU, in words that name each part; None when it leaves some."""
        outside = self.outside_ms(overhead_ms)
        if outside < budget_ms:
            return None
        terms = [
            text
            for value, text in (
                (self.network_ms, f"2 x {self.network_ms:g} ms network"),
                (self.pre_ms, f"{self.pre_ms:g} ms pre"),
                (self.post_ms, f"{self.post_ms:g} ms post"),
                (overhead_ms, f"{overhead_ms:g} ms overhead"),
            )
            if value
        ]
        shown = " + ".join(terms)
        if len(terms) != 1 or self.network_ms:
            shown = f"{shown} = {outside:g} ms" if terms else f"{outside:g} ms"
        return (
            f"the time outside the GPU ({shown}) leaves nothing of the {budget_ms:g} ms "
            "budget for the GPU"
        )

    def as_array(self) -> np.ndarray:
        """``[network_ms, pre_ms, post_ms, cpu_workers]``, as the engines take them."""
        return np.array(
            [self.network_ms, self.pre_ms, self.post_ms, float(self.cpu_workers)], np.float64
        )


_TIMES = (
    ("network_ms", "the network delay (network_ms)"),
    ("pre_ms", "the CPU work before the GPU (pre_ms)"),
    ("post_ms", "the CPU work after the GPU (post_ms)"),
)

STAGE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(WorkerStages))
"""The stages' field names, which are also their link parameters' names."""

NO_STAGES = WorkerStages()
"""No network delay and no CPU work: the worker of SPEC §3.3, whose latency is the GPU's."""
