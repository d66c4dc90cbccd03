"""``time-slicing``: co-tenant jobs take turns with us on the card (SPEC §3.4).

Each co-tenant alternates exponential busy and idle periods; while k of them are busy the
card alternates among k+1 contexts and a running batch progresses at 1/(k+1) of its speed
(``planner.sim.sharing.timeline``). The latency table stays the card's: time-slicing acts
on when a batch ends, not on a fixed multiplier. There is no memory isolation, so the
co-tenants' declared memory is not ours.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planner import limits
from planner.errors import BadInput
from planner.sim.sharing.deployment import ModeFile, Target, comment
from planner.sim.sharing.exclusive import AS_MEASURED
from planner.sim.sharing.mode import (
    MAX_MEMORY_MB,
    Choice,
    Conflict,
    Isolation,
    Settings,
    Sharing,
    SharingMode,
)
from planner.sim.sharing.space import Available, gb
from planner.sim.sharing.timeline import Timeline, cotenant_activity
from planner.units import Megabytes, Milliseconds, Seconds, is_finite

MAX_COTENANT_CHANGES = 2_000_000  # keeps one run's co-tenant activity within tens of MB


@dataclass(frozen=True)
class TimeSlicingSettings(Settings):
    """The other jobs on the card: ``cotenants`` are their duty cycles (0..1), each
    alternating exponential busy and idle periods with a mean busy period of
    ``busy_period_ms``; ``cotenant_memory_mb`` is the memory they declare (SPEC §5.1), one
    figure per co-tenant or one for all (none: not declared)."""

    cotenants: tuple[float, ...] = field(default=(), metadata={"words": "co-tenants"})
    busy_period_ms: Milliseconds = field(
        default=limits.DEFAULT_BUSY_PERIOD_MS, metadata={"words": "a co-tenant busy period"}
    )
    cotenant_memory_mb: tuple[Megabytes, ...] = field(
        default=(), metadata={"words": "co-tenant memory"}
    )

    def __post_init__(self) -> None:
        problems = []
        for duty in self.cotenants:
            if not limits.DUTY.holds(duty):
                problems.append(f"co-tenant duty cycle {duty!r} must be {limits.DUTY.words()}")
        if not limits.COTENANTS.holds(len(self.cotenants)):
            problems.append(f"at most {limits.COTENANTS.high:g} co-tenants")
        memory, count = self.cotenant_memory_mb, len(self.cotenants)
        if not memory_figures(memory):
            problems.append(
                f"co-tenant memory must be numbers of MB from 0 to {MAX_MEMORY_MB:g}, one per "
                "co-tenant or one for all"
            )
        elif memory and len(memory) not in (1, count):
            problems.append(
                f"give one co-tenant memory figure for all or one per co-tenant ({count}), "
                f"not {len(memory)}"
            )
        if not limits.BUSY_PERIOD_MS.holds(self.busy_period_ms):
            problems.append(f"the mean busy period must be {limits.BUSY_PERIOD_MS.words()} ms")
        if problems:
            raise BadInput(problems)


class TimeSlicing(SharingMode[TimeSlicingSettings]):
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
    settings = TimeSlicingSettings
    parameters = ("cotenants", "busy_period_ms", "cotenant_memory_mb")

    def sharing(self, choice: Choice) -> Sharing:
        if not choice.cotenants:
            raise BadInput("time-slicing needs co-tenants: their duty cycles, e.g. 0.9,0.9")
        return Sharing(
            self.name,
            TimeSlicingSettings(
                cotenants=tuple(choice.cotenants),
                busy_period_ms=choice.busy_period_ms,
                cotenant_memory_mb=tuple(choice.cotenant_memory_mb),
            ),
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
        duties = ", ".join(f"{d:g}" for d in self.settings_of(sharing).cotenants) or "none"
        return f"time-slicing (co-tenants busy {duties})"

    def run_problems(self, sharing: Sharing, duration_s: Seconds) -> list[str]:
        own = self.settings_of(sharing)
        problem = cotenant_problem(duration_s, own.cotenants, own.busy_period_ms)
        return [problem] if problem else []

    def table_key(self, sharing: Sharing) -> tuple[object, ...]:
        return AS_MEASURED

    def horizon(self, sharing: Sharing, duration_ms: Milliseconds, slowest_ms: float) -> float:
        # Past the end of the last batch that can be dispatched before the end of the run,
        # even if every co-tenant is busy throughout.
        own = self.settings_of(sharing)
        slowest = slowest_ms * (len(own.cotenants) + 1)
        return duration_ms + 2.0 * slowest + 10.0 * own.busy_period_ms

    def timeline_key(self, sharing: Sharing, seed: int) -> tuple[object, ...] | None:
        own = self.settings_of(sharing)
        return (self.name, own.cotenants, own.busy_period_ms, seed)

    def timeline(self, sharing: Sharing, seed: int, horizon_ms: Milliseconds) -> Timeline | None:
        own = self.settings_of(sharing)
        return cotenant_activity(own.cotenants, own.busy_period_ms, seed, horizon_ms)

    def card_fraction(self, sharing: Sharing) -> float:
        # An equal turn among the time-sliced contexts.
        return 1.0 / (1 + len(self.settings_of(sharing).cotenants))

    def available(self, sharing: Sharing, card_mb: Megabytes | None) -> Available:
        own = self.settings_of(sharing)
        if card_mb is None or not own.cotenant_memory_mb:
            return super().available(sharing, card_mb)
        each = own.cotenant_memory_mb
        if len(each) == 1:
            each = each * len(own.cotenants)
        taken = float(sum(each))
        return Available(
            max(card_mb - taken, 0.0),
            "beside the co-tenants",
            f"the card's {gb(card_mb)} less the co-tenants' {gb(taken)}",
        )

    def worker_settings(self, sharing: Sharing) -> dict[str, Any]:
        return {"cotenant_duty_cycles": list(self.settings_of(sharing).cotenants)}

    def deploy_file(self, sharing: Sharing, target: Target) -> ModeFile:
        # The NVIDIA Kubernetes device plugin's sharing config
        # (sharing.timeSlicing.resources[].replicas): replicas = the jobs planned on a card.
        cotenants = len(self.settings_of(sharing).cotenants)
        jobs = 1 + cotenants
        assumption = (
            f"replicas = the jobs planned on one card: this worker and its "
            f"{cotenants} co-tenant(s), so {jobs}. Time-slicing isolates "
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
        return ModeFile("time-slicing.yaml", "\n".join(lines) + "\n", assumption)


def memory_figures(values: object) -> bool:
    """Whether ``values`` is a tuple of MB figures, each from 0 to ``MAX_MEMORY_MB``."""
    return isinstance(values, tuple) and all(
        is_finite(v) and 0 <= v <= MAX_MEMORY_MB for v in values
    )


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
