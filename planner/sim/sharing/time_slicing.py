"""``time-slicing``: co-tenant jobs take turns with us on the card (SPEC §3.4).

Each co-tenant alternates exponential busy and idle periods; while k of them are busy the
card alternates among k+1 contexts and a running batch progresses at 1/(k+1) of its speed
(``planner.sim.sharing.timeline``). The latency table stays the card's: time-slicing acts
on when a batch ends, not on a fixed multiplier. There is no memory isolation, so the
co-tenants' declared memory is not ours.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from planner import limits
from planner.curves.fit import Edge
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
MAX_COTENANT_RPS = 1_000_000.0


@dataclass(frozen=True)
class CotenantWorkload:
    """A co-tenant described by what it runs (SPEC §6.3): ``name`` (its curve), requests
    of ``batch`` frames at ``rps`` frames per second, each batch taking ``batch_ms`` on
    the card (its curve's fit at that batch), holding ``memory_mb`` (None: not known). It
    is busy ``rps / batch * batch_ms / 1000`` of the time in busy periods of ``batch_ms``:
    exactly a duty-cycle co-tenant with those figures.

    ``optimistic_ms`` and ``pessimistic_ms`` are its curve's band at that batch (None: no
    band, the fit on every edge, as co-tenants given before the band was followed). The
    co-tenant runs on the card the plan judges, so on each band edge of the plan it takes
    that edge's time (``at_edge``): slower on the pessimistic edge, so busier there. It is
    refused where even its pessimistic time keeps it busy all the time."""

    name: str
    batch: int
    rps: float
    batch_ms: Milliseconds
    memory_mb: Megabytes | None = None
    optimistic_ms: Milliseconds | None = None
    pessimistic_ms: Milliseconds | None = None

    def __post_init__(self) -> None:
        problems = []
        if not limits.MAX_BATCH.holds(self.batch):
            problems.append(f"a co-tenant's batch must be {limits.MAX_BATCH.words()}")
        if not (is_finite(self.rps) and 0 < self.rps <= MAX_COTENANT_RPS):
            problems.append(
                f"a co-tenant's request rate must be above 0 and at most {MAX_COTENANT_RPS:,.0f}/s"
            )
        if not (is_finite(self.batch_ms) and self.batch_ms > 0):
            problems.append("a co-tenant's batch time must be a number of ms above 0")
        elif not self._band_holds():
            problems.append(
                "a co-tenant's band must be batch times above 0 ms, the optimistic one no "
                "longer and the pessimistic one no shorter than its fit's"
            )
        if not problems and self.duty_at("pessimistic") >= 1.0:
            problems.append(self._overloaded())
        if problems:
            raise BadInput(problems)

    def _band_holds(self) -> bool:
        """Whether its band is times above 0 ms around its fit's."""
        given = (self.optimistic_ms, self.pessimistic_ms)
        if not all(t is None or (is_finite(t) and t > 0) for t in given):
            return False
        return self.time_at("optimistic") <= self.batch_ms <= self.time_at("pessimistic")

    def _overloaded(self) -> str:
        """Why it cannot share the card: busy all the time on the fit or on its band's
        slow edge."""
        if self.duty >= 1.0:
            return (
                f"co-tenant {self.name} would be busy {self.duty:.0%} of the time "
                f"({self.rps:g} frames/s in batches of {self.batch} at {self.batch_ms:.3g} ms "
                "each): it cannot keep up, so it cannot share the card; lower its rate or "
                "raise its batch"
            )
        slow = self.time_at("pessimistic")
        return (
            f"co-tenant {self.name} would be busy {self.duty_at('pessimistic'):.0%} of the "
            f"time on its curve's pessimistic edge ({self.rps:g} frames/s in batches of "
            f"{self.batch} at {slow:.3g} ms each; {self.duty:.0%} on its fit): where the card "
            "is that slow it cannot keep up, so the plan's low end cannot be judged; lower "
            "its rate, raise its batch or measure its curve at that batch to narrow the band"
        )

    @property
    def duty(self) -> float:
        """Its busy fraction on its curve's fit: r / b x L(b)."""
        return self.duty_at("central")

    def time_at(self, edge: Edge) -> Milliseconds:
        """Its batch time on one band edge (its fit's where it has no band)."""
        given = {"optimistic": self.optimistic_ms, "pessimistic": self.pessimistic_ms}.get(edge)
        return self.batch_ms if given is None else given

    def duty_at(self, edge: Edge) -> float:
        """Its busy fraction on one band edge: r / b x L_edge(b)."""
        return self.rps / self.batch * self.time_at(edge) / 1000.0

    @property
    def banded(self) -> bool:
        """Whether its batch time differs between the band's edges."""
        return self.time_at("optimistic") != self.time_at("pessimistic")

    def at_edge(self, edge: Edge) -> CotenantWorkload:
        """The co-tenant as one band edge of the plan runs it: that edge's batch time, as
        its fit and without a band (itself on the central edge, or without a band)."""
        if edge == "central" or not self.banded:
            return self
        return replace(self, batch_ms=self.time_at(edge), optimistic_ms=None, pessimistic_ms=None)

    @property
    def derivation(self) -> str:
        """How its figures follow from its workload, in one sentence."""
        held = f", holding {gb(self.memory_mb)}" if self.memory_mb is not None else ""
        band = ""
        if self.banded:
            band = (
                f" ({self.duty_at('optimistic'):.1%}–{self.duty_at('pessimistic'):.1%} "
                f"across its curve's band, {self.time_at('optimistic'):.3g}–"
                f"{self.time_at('pessimistic'):.3g} ms per batch, each edge of the plan "
                "taking its own)"
            )
        return (
            f"co-tenant {self.name}: {self.rps:g} frames/s in batches of {self.batch}, "
            f"{self.batch_ms:.3g} ms per batch, is busy {self.rps:g} / {self.batch} x "
            f"{self.batch_ms:.3g} ms = {self.duty:.1%} of the time{band} in busy periods of "
            f"{self.batch_ms:.3g} ms{held}"
        )


@dataclass(frozen=True)
class TimeSlicingSettings(Settings):
    """The other jobs on the card: ``cotenants`` are their duty cycles (0..1), each
    alternating exponential busy and idle periods with a mean busy period of
    ``busy_period_ms``; ``cotenant_memory_mb`` is the memory they declare (SPEC §5.1), one
    figure per co-tenant or one for all (none: not declared). ``workloads`` are more
    co-tenants given by what they run (``CotenantWorkload``), after those: ``duties``,
    ``busy_periods`` and ``memory_each`` are every co-tenant's."""

    cotenants: tuple[float, ...] = field(default=(), metadata={"words": "co-tenants"})
    busy_period_ms: Milliseconds = field(
        default=limits.DEFAULT_BUSY_PERIOD_MS, metadata={"words": "a co-tenant busy period"}
    )
    cotenant_memory_mb: tuple[Megabytes, ...] = field(
        default=(), metadata={"words": "co-tenant memory"}
    )
    workloads: tuple[CotenantWorkload, ...] = field(
        default=(), metadata={"words": "co-tenants by workload", "omitted_at_default": True}
    )

    @property
    def duties(self) -> tuple[float, ...]:
        return self.cotenants + tuple(w.duty for w in self.workloads)

    @property
    def busy_periods(self) -> Milliseconds | tuple[Milliseconds, ...]:
        """The mean busy period of all (without workloads) or of each co-tenant."""
        if not self.workloads:
            return self.busy_period_ms
        return (self.busy_period_ms,) * len(self.cotenants) + tuple(
            w.batch_ms for w in self.workloads
        )

    @property
    def memory_each(self) -> tuple[Megabytes, ...]:
        """What each co-tenant holds, where declared (the duty-cycle ones' as given)."""
        given = self.cotenant_memory_mb
        if len(given) == 1:
            given = given * len(self.cotenants)
        return tuple(given) + tuple(w.memory_mb for w in self.workloads if w.memory_mb is not None)

    def __post_init__(self) -> None:
        problems = []
        # Read back from plain values (``Sharing.as_dict``): each workload as a dict.
        given: Any = self.workloads
        if isinstance(given, list | tuple) and all(isinstance(w, dict) for w in given):
            object.__setattr__(self, "workloads", tuple(CotenantWorkload(**w) for w in given))
        if not isinstance(self.workloads, tuple) or not all(
            isinstance(w, CotenantWorkload) for w in self.workloads
        ):
            problems.append("co-tenants by workload must be CotenantWorkload values")
        elif not limits.COTENANTS.holds(len(self.cotenants) + len(self.workloads)):
            problems.append(f"at most {limits.COTENANTS.high:g} co-tenants")
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
    parameters = (
        "cotenants", "busy_period_ms", "cotenant_memory_mb", "cotenant_curve",
        "cotenant_batch", "cotenant_rps",
    )  # fmt: skip

    def sharing(self, choice: Choice) -> Sharing:
        if not (choice.cotenants or choice.cotenant_workloads):
            raise BadInput("time-slicing needs co-tenants: their duty cycles, e.g. 0.9,0.9")
        if choice.cotenant_curve and not choice.cotenant_workloads:
            raise BadInput("co-tenants given by curve need the store that holds their curves")
        return Sharing(
            self.name,
            TimeSlicingSettings(
                cotenants=tuple(choice.cotenants),
                busy_period_ms=choice.busy_period_ms,
                cotenant_memory_mb=tuple(choice.cotenant_memory_mb),
                workloads=tuple(choice.cotenant_workloads),
            ),
        )

    def asked_for(self, choice: Choice) -> bool:
        return bool(choice.cotenants or choice.cotenant_curve)

    def lacks(self, choice: Choice) -> str | None:
        if choice.cotenants or choice.cotenant_curve:
            return None
        return "time-slicing needs co-tenants (cotenants=0.9,0.9)"

    def conflicts(self, choice: Choice, duration_s: Seconds) -> list[Conflict]:
        if not choice.cotenants:
            return []
        problem = cotenant_problem(duration_s, tuple(choice.cotenants), choice.busy_period_ms)
        return [(("cotenants", "busy_period_ms"), problem)] if problem else []

    def label(self, sharing: Sharing) -> str:
        own = self.settings_of(sharing)
        duties = [f"{d:g}" for d in own.cotenants] + [f"{w.duty:.3g}" for w in own.workloads]
        return f"time-slicing (co-tenants busy {', '.join(duties) or 'none'})"

    def derivations(self, sharing: Sharing) -> tuple[str, ...]:
        """How each co-tenant given by its workload becomes a duty cycle and busy period."""
        return tuple(w.derivation for w in self.settings_of(sharing).workloads)

    def notes(self, sharing: Sharing) -> tuple[str, ...]:
        return tuple(f"{d[0].upper()}{d[1:]}." for d in self.derivations(sharing))

    def at_edge(self, sharing: Sharing, edge: Edge) -> Sharing:
        # A co-tenant by workload runs on the same card: on the band's slow edge its
        # batches are slower too, so it is busier (and its busy periods longer).
        own = self.settings_of(sharing)
        workloads = tuple(w.at_edge(edge) for w in own.workloads)
        if workloads == own.workloads:
            return sharing
        return Sharing(self.name, replace(own, workloads=workloads))

    def run_problems(self, sharing: Sharing, duration_s: Seconds) -> list[str]:
        own = self.settings_of(sharing)
        problem = cotenant_problem(duration_s, own.duties, own.busy_periods)
        return [problem] if problem else []

    def table_key(self, sharing: Sharing) -> tuple[object, ...]:
        return AS_MEASURED

    def horizon(self, sharing: Sharing, duration_ms: Milliseconds, slowest_ms: float) -> float:
        # Past the end of the last batch that can be dispatched before the end of the run,
        # even if every co-tenant is busy throughout.
        own = self.settings_of(sharing)
        slowest = slowest_ms * (len(own.duties) + 1)
        periods = own.busy_periods
        longest = max(periods) if isinstance(periods, tuple) else periods
        return duration_ms + 2.0 * slowest + 10.0 * longest

    def timeline_key(self, sharing: Sharing, seed: int) -> tuple[object, ...] | None:
        own = self.settings_of(sharing)
        return (self.name, own.duties, own.busy_periods, seed)

    def timeline(self, sharing: Sharing, seed: int, horizon_ms: Milliseconds) -> Timeline | None:
        own = self.settings_of(sharing)
        return cotenant_activity(own.duties, own.busy_periods, seed, horizon_ms)

    def card_fraction(self, sharing: Sharing) -> float:
        # An equal turn among the time-sliced contexts.
        return 1.0 / (1 + len(self.settings_of(sharing).duties))

    def available(self, sharing: Sharing, card_mb: Megabytes | None) -> Available:
        own = self.settings_of(sharing)
        each = own.memory_each
        if card_mb is None or not each:
            return super().available(sharing, card_mb)
        taken = float(sum(each))
        return Available(
            max(card_mb - taken, 0.0),
            "beside the co-tenants",
            f"the card's {gb(card_mb)} less the co-tenants' {gb(taken)}",
        )

    def worker_settings(self, sharing: Sharing) -> dict[str, Any]:
        return {"cotenant_duty_cycles": list(self.settings_of(sharing).duties)}

    def deploy_file(self, sharing: Sharing, target: Target) -> ModeFile:
        # The NVIDIA Kubernetes device plugin's sharing config
        # (sharing.timeSlicing.resources[].replicas): replicas = the jobs planned on a card.
        cotenants = len(self.settings_of(sharing).duties)
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
    duration_s: Seconds,
    duties: tuple[float, ...],
    busy_period_ms: Milliseconds | tuple[Milliseconds, ...],
) -> str | None:
    """Why co-tenants this busy for this long would switch too often to draw, or None
    (``busy_period_ms``: every co-tenant's, or one per co-tenant)."""
    periods = (
        busy_period_ms if isinstance(busy_period_ms, tuple) else (busy_period_ms,) * len(duties)
    )
    # Each co-tenant switches twice per busy-and-idle cycle of busy / duty ms.
    changes = sum(
        2.0 * duration_s * 1000.0 * duty / busy for duty, busy in zip(duties, periods, strict=True)
    )
    if changes <= MAX_COTENANT_CHANGES:
        return None
    return (
        f"co-tenants would switch about {changes:,.0f} times in this run (at most "
        f"{MAX_COTENANT_CHANGES:,}); lengthen their busy period or shorten the run"
    )
