"""The recommendation: seat caps per policy and sharing mode under a latency budget
(SPEC §3.5), with ranges from the fit's band, plain-language reasons, and fleet size.

An option (policy, sharing mode) *meets* the criteria at n sessions when, over all seeds,
the pooled latency percentile (end to end) is within the budget, the slowest session's
frame rate is at or above the floor on every seed, and the pooled overwritten fraction is
within its limit. Its *seat cap* is the largest N such that it meets them at every
n <= N: passing is not monotone in n, so the search goes upward one n at a time and stops
at the first failure. The search runs on the fitted curve (``cap``) and on both edges of
its band (``cap_high`` on the optimistic edge, ``cap_low`` on the pessimistic one), all
options in lockstep, so it runs no more simulations than those searches need.

The worker beyond the GPU (SPEC §5.1) takes part in every run: its network delay, CPU
stages and threads, and the largest batch that fits in the GPU memory the sharing mode
leaves (``planner.sim.memory``). Two of them can be what stops the next seat, and are then
named as the binding constraint with their numbers: the CPU pool, when at cap + 1 its
threads are at least 95% busy and the same option with unlimited threads meets the
criteria there; and memory, when the cap without the memory limit would be higher (or
when not even batch 1 fits, so the option holds no seat).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

import numpy as np

from planner import display, limits
from planner.curves import measure_next
from planner.curves.fit import EDGES, Edge, FittedCurve
from planner.curves.measure_next import Advice
from planner.demand.fleet import gpus_for
from planner.errors import BadInput
from planner.sim.calibration import Calibration
from planner.sim.memory import MemoryLimit, available, memory_limit, memory_model
from planner.sim.policies import POLICIES
from planner.sim.scenario import Phases, Scenario, Sharing
from planner.sim.sharing import card_fraction, derived, instances_per_card
from planner.sim.stages import NO_STAGES, WorkerStages
from planner.sim.sweep import PoolCache, Pooled, pooled_runs
from planner.sim.work import Work
from planner.units import FramesPerSecond, Milliseconds, UsdPerHour, is_finite


@dataclass(frozen=True)
class Criteria:
    """What a user asks of every seat (SPEC §3.5 defaults)."""

    budget_ms: Milliseconds = limits.DEFAULT_BUDGET_MS
    percentile: float = limits.DEFAULT_PERCENTILE
    min_fps: FramesPerSecond = limits.DEFAULT_MIN_FPS
    max_overwritten: float | None = None
    overhead_ms: Milliseconds = limits.DEFAULT_OVERHEAD_MS

    def __post_init__(self) -> None:
        problems = []
        if not limits.BUDGET_MS.holds(self.budget_ms):
            problems.append(f"the latency budget must be {limits.BUDGET_MS.words()} ms")
        if not limits.PERCENTILE.holds(self.percentile):
            problems.append(f"the percentile must be {limits.PERCENTILE.words()}")
        if not limits.MIN_FPS.holds(self.min_fps):
            problems.append(f"the frame-rate floor must be {limits.MIN_FPS.words()} fps")
        if self.max_overwritten is not None and not limits.MAX_OVERWRITTEN.holds(
            self.max_overwritten
        ):
            problems.append(
                f"the overwritten limit must be a fraction {limits.MAX_OVERWRITTEN.words()}"
            )
        if not limits.OVERHEAD_MS.holds(self.overhead_ms):
            problems.append(f"the overhead must be {limits.OVERHEAD_MS.words()} ms")
        elif is_finite(self.budget_ms):
            # The overhead alone; a request adds its worker's stages to it.
            problem = NO_STAGES.budget_problem(self.overhead_ms, self.budget_ms)
            if problem:
                problems.append(problem)
        if problems:
            raise BadInput(problems)


@dataclass(frozen=True)
class Request:
    """Everything a recommendation depends on; frozen, so it can be cached and linked.

    ``curve`` is the fitted whole-card curve. ``profile_curves`` maps a MIG profile name to
    a curve measured on that profile, used instead of deriving one. ``slo_ms`` fixes the
    objective of the ``aimd`` and ``deadline`` policies; by default it is the budget minus
    the frame's expected time outside the GPU (``non_gpu_ms``). ``price_per_hour`` is the
    card's hourly price, if known. ``other_jobs`` says the rest of the card goes to other
    jobs: a card then holds one instance of our worker, and a seat is charged our fraction
    of the card (otherwise the card's other MIG instances or MPS clients are assumed to run
    the same worker).

    The worker (SPEC §5.1): ``stages``, its network delay each way and CPU work per frame
    before and after the GPU on its CPU threads (``planner.sim.stages``).
    ``card_memory_gb`` is the card's memory, for the memory check (with the curve's
    ``memory_mb`` figures).
    ``calibration`` (SPEC §5.2, ``planner.sim.calibration``) is what a load test of a real
    worker added to the curve: every run's batches take its ``a + c*b`` more and every
    frame its ``d`` more overhead.
    """

    curve: FittedCurve
    criteria: Criteria = field(default_factory=Criteria)
    policies: tuple[str, ...] = tuple(POLICIES)
    sharings: tuple[Sharing, ...] = (Sharing(),)
    seeds: int = limits.DEFAULT_SEEDS
    duration_s: float = limits.DEFAULT_DURATION_S
    max_sessions: int = limits.DEFAULT_MAX_SESSIONS
    fps: FramesPerSecond = limits.DEFAULT_FPS
    phases: Phases = "random"
    jitter_ms: Milliseconds = 0.0
    max_batch: int | None = None
    max_queue_delay_us: float | None = None
    slo_ms: Milliseconds | None = None
    profile_curves: tuple[tuple[str, FittedCurve], ...] = ()
    peak_sessions: int | None = None
    headroom: float = limits.DEFAULT_HEADROOM
    price_per_hour: UsdPerHour | None = None
    other_jobs: bool = False
    stages: WorkerStages = NO_STAGES
    card_memory_gb: float | None = None
    calibration: Calibration | None = None

    def __post_init__(self) -> None:
        problems = []
        unknown = [p for p in self.policies if p not in POLICIES]
        if unknown or not self.policies:
            problems.append(
                f"policies must be some of {', '.join(POLICIES)}"
                + (f" (not {', '.join(unknown)})" if unknown else "")
            )
        if len(set(self.policies)) != len(self.policies):
            problems.append("a policy is listed twice")
        if not self.sharings:
            problems.append("at least one sharing mode is needed")
        if len(set(self.sharings)) != len(self.sharings):
            problems.append("a sharing mode is listed twice")
        measured = {name for name, _ in self.profile_curves}
        for sharing in self.sharings:
            profile = sharing.kind.profile_used(sharing)
            if profile is not None and profile not in measured:
                problems.append(
                    f"no curve measured on MIG profile {sharing.mig_profile} was given; "
                    "derive it from the whole-card curve instead"
                )
        if not (isinstance(self.seeds, int) and limits.SEEDS.holds(self.seeds)):
            problems.append(f"seeds must be {limits.SEEDS.words()}")
        if not (
            isinstance(self.max_sessions, int) and limits.MAX_SESSIONS.holds(self.max_sessions)
        ):
            problems.append(f"the largest session count must be {limits.MAX_SESSIONS.words()}")
        if self.peak_sessions is not None and not (
            isinstance(self.peak_sessions, int) and limits.PEAK_SESSIONS.holds(self.peak_sessions)
        ):
            problems.append(f"peak sessions must be {limits.PEAK_SESSIONS.words()}")
        if not limits.HEADROOM.holds(self.headroom):
            problems.append(f"headroom must be a fraction {limits.HEADROOM.words()} (0.2 = 20%)")
        if self.price_per_hour is not None and not limits.PRICE_PER_HOUR.holds(self.price_per_hour):
            problems.append(f"the price must be {limits.PRICE_PER_HOUR.words()} USD per hour")
        if self.card_memory_gb is not None and not (
            is_finite(self.card_memory_gb) and 0 < self.card_memory_gb <= 16_384
        ):
            problems.append("the card's memory must be a positive number of GB")
        if not isinstance(self.stages, WorkerStages):
            problems.append("stages must be a WorkerStages value (planner.sim.stages)")
        elif self.slo_ms is None:
            problem = self.stages.budget_problem(self.overhead_ms, self.criteria.budget_ms)
            if problem:
                problems.append(problem)
        if problems:
            raise BadInput(problems)
        # Scenario validates duration, fps, phases, jitter, stages, policy parameters and
        # how busy the co-tenants are: every sharing mode at the largest count considered.
        for sharing in self.sharings:
            self.scenario("oldest-first", sharing, "central", self.max_sessions, 0, memory=False)

    @property
    def overhead_ms(self) -> Milliseconds:
        """The per-frame overhead the runs add: the criteria's, plus the calibration's
        ``d`` when there is one."""
        overhead = self.criteria.overhead_ms
        return overhead if self.calibration is None else self.calibration.overhead(overhead)

    @property
    def non_gpu_ms(self) -> Milliseconds:
        """A frame's expected time outside the GPU: ``2*network + pre + post + overhead``."""
        return self.stages.outside_ms(self.overhead_ms)

    @property
    def objective_ms(self) -> Milliseconds:
        """The GPU-side objective of ``aimd`` and ``deadline``."""
        if self.slo_ms is not None:
            return self.slo_ms
        return self.criteria.budget_ms - self.non_gpu_ms

    def curve_for(self, sharing: Sharing) -> FittedCurve:
        """The curve a sharing mode runs on: a measured MIG profile's, else the card's."""
        profile = sharing.kind.profile_used(sharing)
        if profile is not None:
            return dict(self.profile_curves)[profile]
        return self.curve

    def table(self, sharing: Sharing, edge: Edge) -> tuple[float, ...]:
        table = _table(self.curve_for(sharing), max(64, self.max_sessions), edge)
        return table if self.calibration is None else self.calibration.table(table)

    def memory(self, sharing: Sharing) -> MemoryLimit:
        """The largest batch that fits in the memory ``sharing`` leaves (``planner.sim.memory``)."""
        return _memory(self.curve_for(sharing), sharing, self.card_memory_gb, self.max_sessions)

    def scenario(
        self,
        policy: str,
        sharing: Sharing,
        edge: Edge,
        sessions: int,
        seed: int,
        *,
        memory: bool = True,
        cpu: bool = True,
    ) -> Scenario:
        """One run of an option. ``memory=False`` lifts the memory limit on the batch and
        ``cpu=False`` makes the CPU threads unlimited (to tell whether they bind)."""
        limit = self.memory(sharing).batch_limit if memory else None
        if limit == 0:
            raise BadInput(f"{sharing.label}: {self.memory(sharing).needs(1)}; no batch fits")
        return Scenario(
            latency_ms=self.table(sharing, edge),
            sessions=sessions,
            policy=policy,
            fps=(self.fps,),
            duration_s=self.duration_s,
            phases=self.phases,
            seed=seed,
            jitter_ms=self.jitter_ms,
            overhead_ms=self.overhead_ms,
            max_batch=self.max_batch,
            max_queue_delay_us=self.max_queue_delay_us,
            slo_ms=self.objective_ms,
            sharing=sharing,
            stages=self.stages if cpu else replace(self.stages, cpu_workers=0),
            memory_batch_limit=limit,
        )


@dataclass(frozen=True)
class Failure:
    """One criterion an option fails at some session count, in plain words."""

    constraint: str  # "latency", "fps", "overwritten", or what stops it: "cpu", "memory"
    sessions: int
    detail: str  # e.g. "the slowest session gets 9.3 fps under oldest-first, below ..."

    @property
    def sentence(self) -> str:
        return f"at {self.sessions} session{'s' if self.sessions != 1 else ''} {self.detail}"


@dataclass(frozen=True)
class Option:
    """One (policy, sharing mode) with its seat caps and why the next seat fails.

    ``cap`` (with ``cap_low`` and ``cap_high`` from the band's edges) is the simulated cap
    of one instance of the worker: the whole card, or one MIG instance or MPS client.
    ``per_card`` is how many such instances a card holds for us: the mode's instance
    count (MIG: the profile's maximum on the card; MPS: floor(100 / share)), or 1 when the
    rest of the card goes to other jobs; ``card_share`` is the part of the card's price a
    card's seats carry (1, or our fraction of the card when it is shared with other jobs).
    Options are ranked, sized and priced on seats per card.
    """

    policy: str
    sharing: Sharing
    cap: int
    cap_low: int
    cap_high: int
    at_cap: Pooled | None  # central curve, at the cap
    failures: tuple[Failure, ...]  # at cap + 1 on the central curve; empty at the limit
    binding_constraint: str
    extrapolated: bool
    history: tuple[Pooled, ...]  # central curve, n = 1 .. cap + 1
    deciding_batches: tuple[int, ...] = ()  # frames per batch size in the deciding runs
    per_card: int = 1
    card_share: float = 1.0
    edge_constraints: tuple[tuple[Edge, str], ...] = ()  # (edge, why its next seat fails)

    def edge_constraint(self, edge: Edge) -> str | None:
        """Why the next seat fails on one edge of the band (``pessimistic`` at
        ``cap_low + 1``, ``optimistic`` at ``cap_high + 1``), in the words of
        ``binding_constraint``; None where that edge's cap equals the central one."""
        return dict(self.edge_constraints).get(edge)

    @property
    def mode(self) -> str:
        return self.sharing.mode

    @property
    def derived(self) -> bool:
        """Whether this mode's curve is derived from the whole-card curve by a model."""
        return derived(self.sharing)

    @property
    def label(self) -> str:
        return f"{self.policy}, {self.sharing.label}" + (" (derived)" if self.derived else "")

    @property
    def seats_per_card(self) -> int:
        return self.cap * self.per_card

    @property
    def seats_per_card_low(self) -> int:
        """Seats per card on the band's worse edge (the smaller of the two caps)."""
        return min(self.cap_low, self.cap) * self.per_card

    @property
    def seats_per_card_high(self) -> int:
        return max(self.cap_high, self.cap) * self.per_card

    @property
    def seats_per_instance(self) -> str:
        """``"3"`` or ``"4–5"`` when the band makes the cap a range."""
        return _range(self.cap, self.cap_low, self.cap_high)

    @property
    def seats(self) -> str:
        """Seats per card: ``"21"``, or ``"21–28"`` when the band makes the cap a range."""
        k = self.per_card
        return _range(self.cap * k, self.cap_low * k, self.cap_high * k)

    @property
    def instances_note(self) -> str:
        """How seats per card follow from the cap, e.g. "3 per instance x 7 instances"."""
        if self.per_card == 1:
            return ""
        unit = self.sharing.kind.instance_name
        return f"{self.seats_per_instance} per {unit} x {self.per_card} {unit}s"

    def as_dict(self) -> dict[str, Any]:
        isolation = self.sharing.kind.isolation
        at = self.at_cap
        return {
            "policy": self.policy,
            "mode": self.sharing.mode,
            "sharing": self.sharing.label,
            "derived": self.derived,
            "cap": self.cap,
            "cap_low": self.cap_low,
            "cap_high": self.cap_high,
            "seats_per_instance": self.seats_per_instance,
            "instances_per_card": self.per_card,
            "seats_per_card": self.seats_per_card,
            "seats_per_card_low": self.seats_per_card_low,
            "seats_per_card_high": self.seats_per_card_high,
            "seats": self.seats,
            "card_share": self.card_share,
            "binding_constraint": self.binding_constraint,
            "failures": [f.sentence for f in self.failures],
            "extrapolated": self.extrapolated,
            "isolation": {"memory": isolation.memory, "fault": isolation.fault},
            "percentile": at.percentile if at else None,
            "latency_ms_at_cap": at.e2e_latency_ms if at else None,
            "frames_at_cap": at.frames if at else 0,
            "low_confidence": at.low_confidence if at else False,
            "min_fps_at_cap": at.min_fps if at else None,
            "cpu_busy_fraction_at_cap": at.cpu.busy_fraction if at and at.cpu else None,
            "stages_ms_at_cap": at.stages.as_dict() if at and at.stages else None,
            "edge_constraints": dict(self.edge_constraints),
        }


def _range(central: int, low: int, high: int) -> str:
    lo, hi = min(low, central, high), max(low, central, high)
    return str(central) if lo == hi else f"{lo}–{hi}"


@dataclass(frozen=True)
class Fleet:
    """GPUs for a peak of concurrent sessions, and what a seat costs (SPEC §3.5): both
    on seats per card."""

    peak_sessions: int | None
    headroom: float
    seats_per_card: int
    seats_per_card_low: int
    gpus: int | None
    gpus_worst: int | None  # on the pessimistic cap
    price_per_hour: UsdPerHour | None
    cost_per_seat_hour: float | None
    card_share: float = 1.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "peak_sessions": self.peak_sessions,
            "headroom": self.headroom,
            "seats_per_card": self.seats_per_card,
            "gpus": self.gpus,
            "gpus_at_cap_low": self.gpus_worst,
            "price_per_hour": self.price_per_hour,
            "card_share": self.card_share,
            "cost_per_seat_hour": self.cost_per_seat_hour,
            "cost_per_hour": None
            if self.gpus is None or self.price_per_hour is None
            else self.gpus * self.price_per_hour * self.card_share,
        }


@dataclass(frozen=True)
class Recommendation:
    """Ranked options, the recommended one (or None), a one-sentence summary, the batch
    size to measure next, fleet and cost, and the assumptions behind it all."""

    request: Request
    options: tuple[Option, ...]
    recommended: Option | None
    summary: str
    measure_next: int | None
    fleet: Fleet | None
    assumptions: tuple[str, ...]
    simulations: int
    measure_next_basis: str = ""

    @property
    def closest(self) -> Option | None:
        """The recommended option; with none, the option that came closest at one session
        (the one ``summary`` describes and the batch to measure next is advised for)."""
        if self.recommended is not None or not self.options:
            return self.recommended
        return _closest(self.options, self.request.criteria)

    def as_dict(self) -> dict[str, Any]:
        """The document ``planner recommend --json`` prints."""
        return {
            "recommended": self.recommended.as_dict() if self.recommended else None,
            "summary": self.summary,
            "options": [o.as_dict() for o in self.options],
            "measure_next": self.measure_next,
            "measure_next_basis": self.measure_next_basis,
            "fleet": self.fleet.as_dict() if self.fleet else None,
            "assumptions": list(self.assumptions),
            "simulations": self.simulations,
            "calibration": None
            if self.request.calibration is None
            else self.request.calibration.as_dict(),
        }


def failures(pooled: Pooled, criteria: Criteria) -> tuple[Failure, ...]:
    """The criteria ``pooled`` fails, latency budget first, then fps floor, then overwriting."""
    n, policy = pooled.sessions, pooled.policy
    out = []
    p = f"p{pooled.percentile:g}"
    if pooled.e2e_latency_ms is None:
        out.append(Failure("latency", n, f"no frame is delivered under {policy}"))
    elif pooled.e2e_latency_ms > criteria.budget_ms:
        out.append(
            Failure(
                "latency",
                n,
                f"the {p} latency is {pooled.e2e_latency_ms:.1f} ms under {policy}, "
                f"over the {criteria.budget_ms:g} ms budget",
            )
        )
    if pooled.min_fps < criteria.min_fps:
        out.append(
            Failure(
                "fps",
                n,
                f"the slowest session gets {pooled.min_fps:.1f} fps under {policy}, "
                f"below the {criteria.min_fps:g} fps floor",
            )
        )
    limit = criteria.max_overwritten
    if limit is not None and pooled.overwritten_fraction > limit:
        out.append(
            Failure(
                "overwritten",
                n,
                f"{pooled.overwritten_fraction:.1%} of frames are overwritten under {policy}, "
                f"over the {limit:.1%} limit",
            )
        )
    return tuple(out)


def recommend(
    request: Request, cache: PoolCache | None = None, work: Work | None = None
) -> Recommendation:
    """Search every option's seat cap on the fitted curve and both band edges, rank them,
    and explain the result (see the module docstring for the rules).

    ``cache`` reuses runs already simulated (by an earlier request that differs only in
    its criteria, say); ``simulations`` counts the runs this call's searches simulated
    (the recommended option's runs at its cap are made once more, in detail, for the
    stage breakdown; those repeats are not counted). Under ``work`` the simulations count
    against its budget and stop at its checkpoints (``planner.sim.work``: OverBudget,
    Cancelled).
    """
    options = [(p, s) for s in request.sharings for p in request.policies]
    memory = {s: request.memory(s) for s in request.sharings}
    searches: list[tuple[tuple[str, Sharing], str]] = [
        (o, edge) for o in options if memory[o[1]].fits_one for edge in EDGES
    ]
    # Where memory caps the batch of a policy that batches, the cap without that limit
    # tells whether memory is what binds: one more search, on the fitted curve (its runs
    # up to the limit are the same runs, simulated once).
    searches += [
        ((p, s), UNLIMITED)
        for p, s in options
        if memory[s].fits_one and memory[s].batch_limit is not None
        and not POLICIES[p].one_at_a_time
    ]  # fmt: skip
    history: dict[tuple[tuple[str, Sharing], str], list[Pooled]] = {k: [] for k in searches}
    caps: dict[tuple[tuple[str, Sharing], str], int] = {}
    simulations = 0
    for n in range(1, request.max_sessions + 1):
        alive = [k for k in searches if k not in caps]
        if not alive:
            break
        templates = [
            request.scenario(
                policy, sharing, "central" if edge == UNLIMITED else cast(Edge, edge), n, 0,
                memory=edge != UNLIMITED,
            )
            for (policy, sharing), edge in alive
        ]  # fmt: skip
        rows, ran = pooled_runs(templates, request.seeds, request.criteria.percentile, cache, work)
        simulations += ran
        for key, pooled in zip(alive, rows, strict=True):
            history[key].append(pooled)
            if failures(pooled, request.criteria):
                caps[key] = n - 1
    for key in searches:
        caps.setdefault(key, request.max_sessions)

    cpu_free, ran = _without_cpu_limit(request, options, caps, history, cache, work)
    simulations += ran
    built = [_option(request, o, caps, history, memory[o[1]], cpu_free.get(o)) for o in options]
    order = {p: i for i, p in enumerate(request.policies)}
    modes = {s: i for i, s in enumerate(request.sharings)}
    ranked = sorted(
        built,
        key=lambda o: (
            -o.seats_per_card,
            -o.seats_per_card_low,
            o.at_cap.e2e_latency_ms
            if o.at_cap and o.at_cap.e2e_latency_ms is not None
            else math.inf,
            order[o.policy],
            modes[o.sharing],
        ),
    )
    best = ranked[0]
    recommended = best if best.cap >= 1 else None
    if recommended is not None:
        # Where its end-to-end latency goes at the cap, stage by stage (the same runs).
        recommended = _with_stages(request, recommended, work)
        ranked[0] = best = recommended
    if recommended is None:
        # Nothing holds one session: describe the option that came closest at one session.
        best = _closest(ranked, request.criteria)
    advice = _measure_next(request, best)
    measure = advice.batch
    sized = _fleet(request, recommended)
    return Recommendation(
        request=request,
        options=tuple(ranked),
        recommended=recommended,
        summary=_summary(request, best, recommended is not None, measure),
        measure_next=measure,
        measure_next_basis=advice.basis,
        fleet=sized,
        assumptions=_assumptions(request),
        simulations=simulations,
    )


UNLIMITED = "unlimited"
"""The search of an option on the fitted curve without the memory limit on its batch."""
CPU_BUSY_BINDS = 0.95
"""The CPU pool can bind when its threads are at least this busy at cap + 1 (SPEC §5.1)."""


def _without_cpu_limit(
    request: Request,
    options: Sequence[tuple[str, Sharing]],
    caps: dict[tuple[tuple[str, Sharing], str], int],
    history: dict[tuple[tuple[str, Sharing], str], list[Pooled]],
    cache: PoolCache | None,
    work: Work | None = None,
) -> tuple[dict[tuple[str, Sharing], Pooled], int]:
    """The options whose CPU pool binds, with their runs at cap + 1 on unlimited threads:
    those whose threads are at least 95% busy there and that meet the criteria without
    the limit. Also returns the number of runs simulated."""
    if request.stages.cpu_workers == 0:
        return {}, 0
    candidates = []
    for option in options:
        key = (option, "central")
        if key not in caps or caps[key] >= len(history[key]):
            continue
        failing = history[key][caps[key]]
        if failing.cpu is not None and failing.cpu.busy_fraction >= CPU_BUSY_BINDS:
            candidates.append(option)
    templates = [
        request.scenario(p, s, "central", caps[((p, s), "central")] + 1, 0, cpu=False)
        for p, s in candidates
    ]
    rows, ran = pooled_runs(templates, request.seeds, request.criteria.percentile, cache, work)
    free = {
        option: row
        for option, row in zip(candidates, rows, strict=True)
        if not failures(row, request.criteria)
    }
    return free, ran


def _with_stages(request: Request, option: Option, work: Work | None = None) -> Option:
    """``option`` with its runs at the cap made again in detail: the same figures, with
    the end-to-end latency broken down by stage. (Repeated runs, so not counted among the
    recommendation's ``simulations``.)"""
    template = request.scenario(option.policy, option.sharing, "central", option.cap, 0)
    rows, _ = pooled_runs(
        [template], request.seeds, request.criteria.percentile, work=work, detail=True
    )
    history = list(option.history)
    history[option.cap - 1] = rows[0]
    return replace(option, at_cap=rows[0], history=tuple(history))


def _threads(workers: int) -> str:
    return "the one CPU thread is" if workers == 1 else f"the {workers} CPU threads are"


def _option(
    request: Request,
    option: tuple[str, Sharing],
    caps: dict[tuple[tuple[str, Sharing], str], int],
    history: dict[tuple[tuple[str, Sharing], str], list[Pooled]],
    limit: MemoryLimit | None = None,
    cpu_free: Pooled | None = None,
) -> Option:
    policy, sharing = option
    if limit is not None and not limit.fits_one:
        nothing = Failure("memory", 1, f"{limit.needs(1)}: no batch fits")
        return Option(
            policy=policy, sharing=sharing, cap=0, cap_low=0, cap_high=0, at_cap=None,
            failures=(nothing,), binding_constraint=nothing.sentence, extrapolated=False,
            history=(),
        )  # fmt: skip
    cap = caps[(option, "central")]
    rows = history[(option, "central")]
    at_cap = rows[cap - 1] if cap >= 1 else None
    fails = failures(rows[cap], request.criteria) if cap < len(rows) else ()
    # What stops the next seat besides the criteria (SPEC §5.1): memory, the CPU pool.
    stops: list[Failure] = []
    unlimited = caps.get((option, UNLIMITED))
    limited = limit.batch_limit if limit is not None else None
    if fails and limit is not None and limited is not None and (unlimited or 0) > cap:
        stops.append(
            Failure(
                "memory",
                cap + 1,
                f"{limit.needs(limited + 1)}, so no batch holds more than {limited} frames "
                f"(without that limit {unlimited} sessions would fit)",
            )
        )
    if fails and cpu_free is not None and rows[cap].cpu is not None:
        busy = rows[cap].cpu.busy_fraction  # type: ignore[union-attr]
        stops.append(
            Failure(
                "cpu",
                cap + 1,
                f"{_threads(request.stages.cpu_workers)} busy {busy:.0%} and {fails[0].detail} "
                "(with unlimited threads it would meet the criteria)",
            )
        )
    if stops:
        # The CPU sentence already says which criterion fails first.
        said = 1 if any(f.constraint == "cpu" for f in stops) else 0
        rest = [f.detail for f in stops[1:]] + [f.detail for f in fails[said:]]
        binding = stops[0].sentence + ("; also " + "; ".join(rest) if rest else "")
        fails = (*stops, *fails)
    else:
        binding = _binding(fails) if fails else _limit_reached(request)
    edges: list[tuple[Edge, str]] = []
    for edge in ("pessimistic", "optimistic"):
        edge_cap, edge_rows = caps[(option, edge)], history[(option, edge)]
        if edge_cap == cap:
            continue
        edge_fails = (
            failures(edge_rows[edge_cap], request.criteria) if edge_cap < len(edge_rows) else ()
        )
        edges.append((edge, _binding(edge_fails) if edge_fails else _limit_reached(request)))
    # What decided the cap: the runs at the cap and at the first failing count.
    deciding = rows[max(cap - 1, 0) : cap + 1]
    width = max(len(r.batch_sizes) for r in deciding)
    frames = np.zeros(width, np.int64)
    for r in deciding:
        sizes = np.asarray(r.batch_sizes)
        frames[: sizes.size] += sizes * np.arange(sizes.size)
    curve = request.curve_for(sharing)
    if derived(sharing):
        # Under these models every batch's latency also depends on the batch where the
        # curve's throughput peaks (thr_max), so that batch decides the cap too.
        table = np.asarray(request.table(sharing, "central"))
        peak = int(np.argmax(np.arange(1, table.size + 1) / table)) + 1
        if peak >= frames.size:
            frames = np.pad(frames, (0, peak + 1 - frames.size))
        frames[peak] += max(int(frames.sum()), 1)
    used = np.flatnonzero(frames)
    extrapolated = bool(used.size and np.any(curve.extrapolated(used)))
    return Option(
        policy=policy,
        sharing=sharing,
        cap=cap,
        cap_low=caps[(option, "pessimistic")],
        cap_high=caps[(option, "optimistic")],
        at_cap=at_cap,
        failures=fails,
        binding_constraint=binding,
        extrapolated=extrapolated,
        history=tuple(rows),
        deciding_batches=tuple(int(v) for v in frames),
        per_card=1 if request.other_jobs else instances_per_card(sharing),
        card_share=card_fraction(sharing) if request.other_jobs else 1.0,
        edge_constraints=tuple(edges),
    )


def _binding(fails: Sequence[Failure]) -> str:
    """The first failure in words, and the others after "also"."""
    text = fails[0].sentence
    if len(fails) > 1:
        text += "; also " + "; ".join(f.detail for f in fails[1:])
    return text


def _limit_reached(request: Request) -> str:
    return (
        f"meets every criterion up to {request.max_sessions} sessions, the largest count considered"
    )


def _closest(options: Sequence[Option], criteria: Criteria) -> Option:
    """The option that misses the criteria by least at one session."""
    return min(
        options,
        key=lambda o: _shortfall(o.history[0], criteria) if o.history else math.inf,
    )


def _shortfall(pooled: Pooled, criteria: Criteria) -> float:
    """How far a run misses the criteria, as relative excesses added up (0 = meets)."""
    if pooled.e2e_latency_ms is None:
        return math.inf
    miss = max(pooled.e2e_latency_ms / criteria.budget_ms - 1.0, 0.0)
    if criteria.min_fps > 0:
        miss += max(1.0 - pooled.min_fps / criteria.min_fps, 0.0)
    if criteria.max_overwritten is not None:
        miss += max(pooled.overwritten_fraction - criteria.max_overwritten, 0.0)
    return miss


def _measure_next(request: Request, option: Option) -> Advice:
    """The batch size to measure next for this plan (``planner.curves.measure_next.for_plan``):
    weighted by the frames each batch size carried in the runs that decided the option's
    cap, and only when that cap is a range or rests on extrapolated batch sizes."""
    settled = len({option.cap, option.cap_low, option.cap_high}) == 1 and not option.extrapolated
    return measure_next.for_plan(
        request.curve_for(option.sharing),
        max(64, request.max_sessions),
        option.deciding_batches,
        settled=settled,
    )


def fleet(
    option: Option | None,
    *,
    peak_sessions: int | None,
    headroom: float,
    price_per_hour: UsdPerHour | None,
) -> Fleet | None:
    """GPUs and cost per seat for ``option`` (None when it holds no seat, or when neither a
    peak nor a price is given). The dashboard calls this on a cached recommendation, so
    changing the peak or the price needs no new simulations."""
    if option is None or option.cap < 1 or (peak_sessions is None and price_per_hour is None):
        return None
    peak, price = peak_sessions, price_per_hour
    seats, low = option.seats_per_card, option.seats_per_card_low
    return Fleet(
        peak_sessions=peak,
        headroom=headroom,
        seats_per_card=seats,
        seats_per_card_low=low,
        gpus=None if peak is None else gpus_for(peak, headroom, seats),
        gpus_worst=None if peak is None or low < 1 else gpus_for(peak, headroom, low),
        price_per_hour=price,
        cost_per_seat_hour=None if price is None else price * option.card_share / seats,
        card_share=option.card_share,
    )


def _fleet(request: Request, option: Option | None) -> Fleet | None:
    return fleet(
        option,
        peak_sessions=request.peak_sessions,
        headroom=request.headroom,
        price_per_hour=request.price_per_hour,
    )


def option_sweep(
    request: Request,
    sharing: Sharing,
    sessions: Iterable[int],
    known: Sequence[Option] = (),
    cache: PoolCache | None = None,
    work: Work | None = None,
) -> list[Pooled]:
    """Every policy of ``request`` under ``sharing`` at each session count, seeds pooled
    exactly as the recommendation judges them (rows by policy, then session count).

    Unlike ``planner.sim.sweep.sweep`` with one template, each policy keeps the request's
    objective and batch parameters (a scenario drops the parameters its policy does not
    use, so one template cannot carry them to every policy). Rows the recommendation
    already computed (``known``: its options, whose ``history`` holds n = 1..cap+1) are
    reused rather than simulated again, and so are rows in ``cache``; they are the same
    runs. Raises BadInput when a count is outside 1..max(64, max_sessions), the range the
    request's curve table covers, or when not even batch 1 fits in the memory ``sharing``
    leaves (nothing can run).
    """
    counts = sorted(set(sessions))
    upto = max(64, request.max_sessions)
    if not counts or counts[0] < 1 or counts[-1] > upto:
        raise BadInput(f"session counts must lie within 1..{upto}")
    done = {
        (row.policy, row.sessions): row
        for option in known
        if option.sharing == sharing
        for row in option.history
    }
    missing = [(p, n) for p in request.policies for n in counts if (p, n) not in done]
    templates = [request.scenario(policy, sharing, "central", n, 0) for policy, n in missing]
    rows, _ = pooled_runs(templates, request.seeds, request.criteria.percentile, cache, work)
    done.update(zip(missing, rows, strict=True))
    return [done[(p, n)] for p in request.policies for n in counts]


def _summary(request: Request, best: Option, recommended: bool, measure: int | None) -> str:
    if not recommended:
        return (
            f"No option holds even one session within the criteria; the closest is "
            f"{best.label}: {best.binding_constraint}."
        )
    seats = best.seats
    plural = "seat" if seats == "1" else "seats"
    text = f"{seats} {plural} per card — {best.label}"
    if best.instances_note:
        text += f" ({best.instances_note})"
    if best.failures:
        nxt = "the next seat" if best.per_card == 1 else "one more session per instance"
        text += f"; {nxt} fails: {best.binding_constraint}"
    else:
        text += f"; {best.binding_constraint}"
    if best.extrapolated:
        measured = [p.batch for p in request.curve_for(best.sharing).points]
        text += f". It rests on batch sizes beyond the measured {display.batches(measured)}"
    if measure is not None:
        text += f"; measuring batch {measure} next would settle it best"
    if request.calibration is not None:
        text += f". Calibrated by {request.calibration.source}"
    return text + "."


def _assumptions(request: Request) -> tuple[str, ...]:
    notes = list(request.curve.assumptions)
    for sharing in dict.fromkeys(request.sharings):
        notes.append(f"{sharing.label}: {sharing.kind.assumption}")
        notes.extend(sharing.kind.notes(sharing))
    shared = [s for s in dict.fromkeys(request.sharings) if s.kind.several_per_card]
    if shared and request.other_jobs:
        notes.append(
            "The rest of the card goes to other jobs: a card holds one instance of this "
            "worker, and a seat is charged our fraction of the card (one MIG instance of "
            "as many as fit, the MPS share, or an equal turn among time-sliced contexts)."
        )
    elif shared:
        notes.append(
            "Seats per card count every instance of the worker one card holds (MIG: the "
            "profile's maximum instance count on the card; MPS: floor(100 / share) "
            "clients), assuming the card's other instances run the same worker; say the "
            "rest of the card goes to other jobs to count and charge one instance instead."
        )
    notes.append(_worker_assumption(request))
    if request.calibration is not None:
        notes.append(request.calibration.description)
    for sharing in dict.fromkeys(request.sharings):
        for sentence in request.memory(sharing).assumptions:
            notes.append(f"{sharing.label}: {sentence}" if len(request.sharings) > 1 else sentence)
    notes.append(
        f"{request.seeds} random phase draws of {request.duration_s:g} s each at "
        f"{request.fps:g} fps per session; the {request.criteria.percentile:g}th percentile "
        "is over all their delivered frames."
    )
    return tuple(notes)


def _worker_assumption(request: Request) -> str:
    """What the plan assumes about the worker beyond the GPU (SPEC §5.1)."""
    overhead = request.criteria.overhead_ms
    stages = request.stages
    if not stages.takes_time:
        return (
            "Latency is GPU-side plus a fixed per-frame overhead for network, decode and "
            f"post-processing ({overhead:g} ms), which does not occupy the GPU."
        )
    text = (
        f"End-to-end latency is the network both ways ({stages.network_ms:g} ms each, "
        f"constant), CPU work before the GPU ({stages.pre_ms:g} ms) and after it "
        f"({stages.post_ms:g} ms), the GPU's queue and batch, and a fixed "
        f"{overhead:g} ms overhead."
    )
    if stages.cpu_workers:
        threads = "one thread" if stages.cpu_workers == 1 else f"{stages.cpu_workers} threads"
        text += (
            f" The CPU work runs on {threads} from one first-in-first-out queue (a newer frame "
            "replaces its session's waiting one); every job of a stage takes the same time."
        )
    else:
        text += " CPU threads are unlimited, so the CPU stages only delay frames."
    return (
        text + f" The objectives of aimd and deadline are the budget less "
        f"{request.non_gpu_ms:g} ms outside the GPU."
    )


@functools.lru_cache(maxsize=512)
def _memory(
    curve: FittedCurve, sharing: Sharing, card_memory_gb: float | None, upto: int
) -> MemoryLimit:
    """The memory limit of a curve under a sharing mode (cached: asked for every run)."""
    return memory_limit(memory_model(curve.points), available(sharing, card_memory_gb), upto)


@functools.lru_cache(maxsize=512)
def _table(curve: FittedCurve, upto: int, edge: Edge) -> tuple[float, ...]:
    """Latency for batch 1..upto on one edge of a fitted curve (cached: a search builds
    thousands of scenarios from a handful of tables)."""
    return tuple(float(v) for v in curve.table(upto, edge))
