"""``time-slicing``: co-tenant jobs take turns with us on the card (SPEC §3.4).

Each co-tenant alternates exponential busy and idle periods; while k of them are busy the
card alternates among k+1 contexts and a running batch progresses at 1/(k+1) of its speed
(``planner.sim.sharing.timeline``). The latency table stays the card's: time-slicing acts
on when a batch ends, not on a fixed multiplier. There is no memory isolation, so the
co-tenants' declared memory is not ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from planner.errors import BadInput
from planner.sim.sharing.deployment import DeployFile, Target, comment
from planner.sim.sharing.exclusive import AS_MEASURED
from planner.sim.sharing.mode import (
    Choice,
    Conflict,
    Isolation,
    Sharing,
    SharingMode,
    memory_figures,
)
from planner.sim.sharing.space import Available, gb
from planner.sim.sharing.timeline import Timeline, cotenant_activity
from planner.units import Megabytes, Milliseconds, Seconds

MAX_COTENANT_CHANGES = 2_000_000  # keeps one run's co-tenant activity within tens of MB


class TimeSlicing(SharingMode):
    """Contexts take turns: co-tenants slow every batch while they are busy."""

    name = "time-slicing"
    title = "time-slicing"
    isolation = Isolation(memory="none", fault="none")
    assumption = (
        "Each co-tenant alternates busy and idle periods drawn from exponential "
        "distributions (mean busy period as set, idle mean chosen to give its duty cycle). "
        "While k co-tenants are busy the card alternates among k+1 contexts, so a running "
        "batch progresses at 1/(k+1) of its speed; context-switch overhead is ignored. "
        "The scheduler does not see co-tenants: policies plan with the exclusive curve."
    )
    parameters = ("cotenants", "busy_period_ms", "cotenant_memory_mb")
    owned: ClassVar[Mapping[str, str]] = {"cotenant_memory_mb": "co-tenant memory"}

    def sharing(self, choice: Choice) -> Sharing:
        if not choice.cotenants:
            raise BadInput("time-slicing needs co-tenants: their duty cycles, e.g. 0.9,0.9")
        return Sharing(
            mode=self.name,
            cotenants=tuple(choice.cotenants),
            busy_period_ms=choice.busy_period_ms,
            cotenant_memory_mb=tuple(choice.cotenant_memory_mb),
        )

    def asked_for(self, choice: Choice) -> bool:
        return bool(choice.cotenants)

    def lacks(self, choice: Choice) -> str | None:
        if choice.cotenants:
            return None
        return "time-slicing needs co-tenants (cotenants=0.9,0.9)"

    def conflicts(self, choice: Choice, duration_s: Seconds) -> list[Conflict]:
        if not choice.cotenants:
            return []
        problem = cotenant_problem(duration_s, tuple(choice.cotenants), choice.busy_period_ms)
        return [(("cotenants", "busy_period_ms"), problem)] if problem else []

    def label(self, sharing: Sharing) -> str:
        duties = ", ".join(f"{d:g}" for d in sharing.cotenants) or "none"
        return f"time-slicing (co-tenants busy {duties})"

    def problems(self, sharing: Sharing) -> list[str]:
        memory, cotenants = sharing.cotenant_memory_mb, sharing.cotenants
        if memory and memory_figures(memory) and len(memory) not in (1, len(cotenants)):
            return [
                f"give one co-tenant memory figure for all or one per co-tenant "
                f"({len(cotenants)}), not {len(memory)}"
            ]
        return []

    def run_problems(self, sharing: Sharing, duration_s: Seconds) -> list[str]:
        problem = cotenant_problem(duration_s, sharing.cotenants, sharing.busy_period_ms)
        return [problem] if problem else []

    def table_key(self, sharing: Sharing) -> tuple[object, ...]:
        return AS_MEASURED

    def horizon(self, sharing: Sharing, duration_ms: Milliseconds, slowest_ms: float) -> float:
        # Past the end of the last batch that can be dispatched before the end of the run,
        # even if every co-tenant is busy throughout.
        slowest = slowest_ms * (len(sharing.cotenants) + 1)
        return duration_ms + 2.0 * slowest + 10.0 * sharing.busy_period_ms

    def timeline_key(self, sharing: Sharing, seed: int) -> tuple[object, ...] | None:
        return (self.name, sharing.cotenants, sharing.busy_period_ms, seed)

    def timeline(self, sharing: Sharing, seed: int, horizon_ms: Milliseconds) -> Timeline | None:
        return cotenant_activity(sharing.cotenants, sharing.busy_period_ms, seed, horizon_ms)

    def card_fraction(self, sharing: Sharing) -> float:
        # An equal turn among the time-sliced contexts.
        return 1.0 / (1 + len(sharing.cotenants))

    def available(self, sharing: Sharing, card_mb: Megabytes | None) -> Available:
        if card_mb is None or not sharing.cotenant_memory_mb:
            return super().available(sharing, card_mb)
        each = sharing.cotenant_memory_mb
        if len(each) == 1:
            each = each * len(sharing.cotenants)
        taken = float(sum(each))
        return Available(
            max(card_mb - taken, 0.0),
            "beside the co-tenants",
            f"the card's {gb(card_mb)} less the co-tenants' {gb(taken)}",
        )

    def settings(self, sharing: Sharing) -> dict[str, Any]:
        return {"cotenant_duty_cycles": list(sharing.cotenants)}

    def deploy_file(self, sharing: Sharing, target: Target) -> DeployFile:
        # The NVIDIA Kubernetes device plugin's sharing config
        # (sharing.timeSlicing.resources[].replicas): replicas = the jobs planned on a card.
        jobs = 1 + len(sharing.cotenants)
        assumption = (
            f"replicas = the jobs planned on one card: this worker and its "
            f"{len(sharing.cotenants)} co-tenant(s), so {jobs}. Time-slicing isolates "
            "neither memory nor faults, and a co-tenant busier than planned slows every seat."
        )
        lines = [
            f"# NVIDIA Kubernetes device plugin configuration for {target.label}.",
            *comment(assumption),
            "version: v1",
            "sharing:",
            "  timeSlicing:",
            "    failRequestsGreaterThanOne: true",
            "    resources:",
            "      - name: nvidia.com/gpu",
            f"        replicas: {jobs}",
        ]
        return DeployFile("time-slicing.yaml", "yaml", "\n".join(lines) + "\n", assumption)


def cotenant_problem(
    duration_s: Seconds, duties: tuple[float, ...], busy_period_ms: Milliseconds
) -> str | None:
    """Why co-tenants this busy for this long would switch too often to draw, or None."""
    # Each co-tenant switches twice per busy-and-idle cycle of busy / duty ms.
    changes = sum(2.0 * duration_s * 1000.0 * duty / busy_period_ms for duty in duties)
    if changes <= MAX_COTENANT_CHANGES:
        return None
    return (
        f"co-tenants would switch about {changes:,.0f} times in this run (at most "
        f"{MAX_COTENANT_CHANGES:,}); lengthen their busy period or shorten the run"
    )
