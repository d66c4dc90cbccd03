"""The recommendation's search: seat caps per policy and sharing mode under a latency
budget (SPEC §3.5), with ranges from the fit's band, plain-language reasons, and fleet
size. What it is asked is ``planner.plan.request``; what it answers, option by option,
``planner.plan.outcomes``.

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

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import cast

import numpy as np

from planner import display
from planner.curves import measure_next
from planner.curves.fit import EDGES, Edge
from planner.curves.measure_next import Advice
from planner.errors import BadInput
from planner.plan import margin
from planner.plan.cascade import chain_clause
from planner.plan.decoders import decoders_note
from planner.plan.outcomes import (
    Failure,
    Option,
    Recommendation,
    binding_text,
    closest,
    failures,
    limit_reached,
    sized_fleet,
)
from planner.plan.pareto import rank
from planner.plan.request import Request
from planner.plan.search import FULL, PROBE, Found, Hint, Run, probe_duration, search
from planner.plan.stability import decoders_reason, service_at, stable_upto
from planner.sim.memory import MemoryLimit
from planner.sim.policies import POLICIES
from planner.sim.scenario import Scenario, Sharing
from planner.sim.sharing import card_fraction, derived, instances_per_card
from planner.sim.sweep import PoolCache, Pooled, pooled_runs
from planner.sim.work import Work


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
    # Under queue = all a count the server cannot serve fails before any run (SPEC §6.1):
    # each search stops below the first such count.
    stable = {key: _stable_upto(request, key) for key in searches}
    found, simulations = _search(request, searches, cache, work, stable)
    caps = {key: f.cap for key, f in found.items()}
    history = {key: f.rows for key, f in found.items()}
    cpu_free, ran = _without_cpu_limit(request, options, caps, history, cache, work)
    simulations += ran
    built = [
        _option(request, o, caps, history, memory[o[1]], cpu_free.get(o), stable) for o in options
    ]
    # Uncalibrated, each range also carries the model's measured error (SPEC §6.2).
    built = margin.widen(request, built)
    ranked = rank(built, request.policies, request.sharings)
    best = ranked[0]
    recommended = best if best.cap >= 1 else None
    if recommended is not None:
        # Where its end-to-end latency goes at the cap, stage by stage (the same runs).
        recommended = _with_stages(request, recommended, work)
        ranked[0] = best = recommended
    if recommended is None:
        # Nothing holds one session: describe the option that came closest at one session.
        best = closest(ranked, request.criteria)
    advice = margin.advice(best, _measure_next(request, best, ranked))
    measure = advice.batch
    sized = sized_fleet(request, recommended)
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


Key = tuple[tuple[str, Sharing], str]
"""One search: an option (policy, sharing mode) on one curve (an edge, or ``UNLIMITED``)."""


def _search(
    request: Request,
    keys: Sequence[Key],
    cache: PoolCache | None,
    work: Work | None,
    stable: Mapping[Key, int],
) -> tuple[dict[Key, Found], int]:
    """Every search's cap (``planner.plan.search``) up to the largest count that passes the
    stability condition (``stable``), all in lockstep: each round runs what every search
    still needs in one batch of parallel runs. Also returns the number of runs
    simulated."""
    # The band's edges bracket their boundary from where the fitted curve's probes found
    # it (``planner.plan.search.Hint``): the edges' caps lie near the fitted one's.
    hints = {option: Hint() for option, edge in keys if edge == "central"}
    searches = {
        key: search(
            request.search,
            stable[key],
            request.criteria,
            request.fps,
            seeds=request.seeds,
            tell=hints.get(key[0]) if key[1] == "central" else None,
            follow=hints.get(key[0]) if key[1] in ("pessimistic", "optimistic") else None,
            probe_s=probe_duration(request.duration_s),
        )
        for key in keys
    }
    found: dict[Key, Found] = {}
    wants: dict[Key, list[Run]] = {}
    for key, steps in searches.items():
        try:
            wants[key] = next(steps)
        except StopIteration as stop:
            found[key] = stop.value
    simulations = 0
    while wants:
        got: dict[Key, dict[Run, Pooled]] = {key: {} for key in wants}
        # The round's full runs and probes in one call, so that both share the cores
        # rather than one waiting for the other (full runs first: the longest go first).
        chosen = [
            (key, run)
            for fidelity in (FULL, PROBE)
            for key, runs in wants.items()
            for run in runs
            if run[1] == fidelity
        ]
        short = probe_duration(request.duration_s)
        templates, seeds = [], []
        for key, (n, fidelity) in chosen:
            template = _template(request, key, n)
            if fidelity == PROBE and request.seeds > 1:
                template = template.with_(duration_s=short)
            templates.append(template)
            seeds.append(request.seeds if fidelity == FULL else 1)
        if chosen:
            rows, ran = pooled_runs(templates, seeds, request.criteria.percentile, cache, work)
            simulations += ran
            for (key, run), row in zip(chosen, rows, strict=True):
                got[key][run] = row
        asked, wants = wants, {}
        for key in asked:
            try:
                wants[key] = searches[key].send(got[key])
            except StopIteration as stop:
                found[key] = stop.value
    return found, simulations


def _template(request: Request, key: Key, sessions: int) -> Scenario:
    (policy, sharing), edge = key
    return request.scenario(policy, sharing, _edge(key), sessions, 0, memory=edge != UNLIMITED)


def _edge(key: Key) -> Edge:
    """The band edge a search runs on (its fitted curve for ``UNLIMITED``)."""
    return "central" if key[1] == UNLIMITED else cast(Edge, key[1])


def _stable_upto(request: Request, key: Key) -> int:
    """The largest count a search considers: up to the stability condition's (SPEC §6.1)."""
    (policy, sharing), edge = key
    return stable_upto(request, policy, sharing, _edge(key), memory=edge != UNLIMITED)


def _next_fails(
    request: Request, key: Key, cap: int, rows: Mapping[int, Pooled], stable: Mapping[Key, int]
) -> tuple[Failure, ...]:
    """Why the count after a search's cap fails: its runs' failures, or the stability
    condition when the search stopped below a count the server cannot serve; none at the
    largest count considered."""
    if cap + 1 in rows:
        return failures(rows[cap + 1], request.criteria)
    if cap < request.largest and cap == stable.get(key, request.largest):
        (policy, sharing), edge = key
        decoders = decoders_reason(request, sharing, cap + 1)
        if decoders is not None:
            return (Failure("decoders", cap + 1, decoders),)
        served = service_at(request, policy, sharing, _edge(key), cap + 1, memory=edge != UNLIMITED)
        return (Failure("latency", cap + 1, served.reason(cap + 1, request.fps)),)
    return ()


UNLIMITED = "unlimited"
"""The search of an option on the fitted curve without the memory limit on its batch."""
CPU_BUSY_BINDS = 0.95
"""The CPU pool can bind when its threads are at least this busy at cap + 1 (SPEC §5.1)."""


def _without_cpu_limit(
    request: Request,
    options: Sequence[tuple[str, Sharing]],
    caps: dict[Key, int],
    history: dict[Key, dict[int, Pooled]],
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
        failing = history[key].get(caps[key] + 1) if key in caps else None
        if failing is None:
            continue
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
    history = tuple(rows[0] if row.sessions == option.cap else row for row in option.history)
    return replace(option, at_cap=rows[0], history=history)


def _threads(workers: int) -> str:
    return "the one CPU thread is" if workers == 1 else f"the {workers} CPU threads are"


def _option(
    request: Request,
    option: tuple[str, Sharing],
    caps: dict[Key, int],
    history: dict[Key, dict[int, Pooled]],
    limit: MemoryLimit | None = None,
    cpu_free: Pooled | None = None,
    stable: Mapping[Key, int] | None = None,
) -> Option:
    policy, sharing = option
    if limit is not None and not limit.fits_one:
        nothing = Failure("memory", 1, f"{limit.needs(1)}: no batch fits")
        return Option(
            policy=policy, sharing=sharing, cap=0, cap_low=0, cap_high=0, at_cap=None,
            failures=(nothing,), binding_constraint=nothing.sentence, extrapolated=False,
            history=(),
        )  # fmt: skip
    stable = stable or {}
    cap = caps[(option, "central")]
    rows = history[(option, "central")]
    at_cap = rows[cap] if cap >= 1 else None
    fails = _next_fails(request, (option, "central"), cap, rows, stable)
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
    if fails and cpu_free is not None and rows[cap + 1].cpu is not None:
        busy = rows[cap + 1].cpu.busy_fraction  # type: ignore[union-attr]
        stops.append(
            Failure(
                "cpu",
                cap + 1,
                f"{_threads(request.stages.cpu_workers)} busy {display.fraction(busy)} and "
                f"{fails[0].detail} "
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
        binding = binding_text(fails) if fails else limit_reached(request)
    if request.cascade and fails:
        seen = rows[cap + 1].batch_sizes if cap + 1 in rows else ()
        binding += "; " + chain_clause(request, sharing, seen, cap + 1)
    edges: list[tuple[Edge, str]] = []
    for edge in ("pessimistic", "optimistic"):
        edge_cap, edge_rows = caps[(option, edge)], history[(option, edge)]
        if edge_cap == cap:
            continue
        edge_fails = _next_fails(request, (option, edge), edge_cap, edge_rows, stable)
        edges.append((edge, binding_text(edge_fails) if edge_fails else limit_reached(request)))
    # What decided the cap: the runs at the cap and at the first failing count.
    deciding = [rows[n] for n in (cap, cap + 1) if n in rows]
    width = max((len(r.batch_sizes) for r in deciding), default=0)
    frames = np.zeros(width, np.int64)
    for r in deciding:
        sizes = np.asarray(r.batch_sizes)
        frames[: sizes.size] += sizes * np.arange(sizes.size)
    curve = request.curve_for(sharing)
    if derived(sharing):
        # Under these models every batch's latency also depends on the batch where the
        # curve's throughput peaks (thr_max), so that batch decides the cap too.
        table = np.asarray(request.table(sharing, "central"))
        upto = request.peak_upto(sharing)
        peak = int(np.argmax((np.arange(1, table.size + 1) / table)[:upto])) + 1
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
        history=tuple(rows[n] for n in sorted(rows) if n <= cap + 1),
        deciding_batches=tuple(int(v) for v in frames),
        per_card=1 if request.other_jobs else instances_per_card(sharing),
        card_share=card_fraction(sharing) if request.other_jobs else 1.0,
        edge_constraints=tuple(edges),
    )


def _measure_next(request: Request, option: Option, options: Sequence[Option]) -> Advice:
    """The batch size to measure next for this plan (``planner.curves.measure_next.for_plan``):
    weighted by the frames each batch size carried in the runs that decided the option's
    cap, within the batch sizes the plan's options can run, and only when that cap is a
    range or rests on extrapolated batch sizes."""
    settled = len({option.cap, option.cap_low, option.cap_high}) == 1 and not option.extrapolated
    return measure_next.for_plan(
        request.curve_for(option.sharing),
        largest_batch(request, options),
        option.deciding_batches,
        settled=settled,
    )


def largest_batch(request: Request, options: Sequence[Option]) -> int:
    """The largest batch the plan's options can form: for each option that batches, at the
    most sessions its searches considered (one above its highest cap, at most the request's
    largest count), under its queue and memory limit, and never above its policy's largest
    batch (``max_batch``, however many frames a queue holds); 1 when every option sends
    one frame at a time."""
    largest = 1
    for o in options:
        if POLICIES[o.policy].one_at_a_time or request.memory(o.sharing).batch_limit == 0:
            continue
        sessions = min(request.largest, max(o.cap, o.cap_low, o.cap_high) + 1)
        run = request.scenario(o.policy, o.sharing, "central", sessions, 0)
        formed = run.largest_batch()
        if "max_batch" in POLICIES[o.policy].params:
            formed = min(formed, int(run.param("max_batch")))
        largest = max(largest, formed)
    return largest


CHART_EVERY_COUNT_UPTO = 64
"""Charts draw every session count up to this one; beyond, a sample (``chart_counts``)."""
CHART_POINTS = 12


def chart_counts(options: Sequence[Option], largest: int) -> dict[str, tuple[int, ...]]:
    """The session counts to draw each option's policy at, for one sharing mode's options.

    Every count from 1 to a few past the highest cap when that is at most
    ``CHART_EVERY_COUNT_UPTO``. Beyond it the session axis is sampled: each policy up to a
    little past its own cap (5%, at least 4 counts; at most ``largest``), at every count up
    to 16, at the counts its search already ran in full (the boundary among them) and at
    ``CHART_POINTS`` evenly spaced ones, so a big card's chart costs a few dozen runs per
    policy rather than thousands.
    """
    top = max((max(o.cap_high, o.cap) for o in options), default=0)
    if top + 4 <= CHART_EVERY_COUNT_UPTO:
        upper = min(max(top + 4, 8), largest)
        return {o.policy: tuple(range(1, upper + 1)) for o in options}
    out = {}
    for option in options:
        cap = max(option.cap_high, option.cap)
        upper = min(largest, cap + max(4, math.ceil(0.05 * cap)))
        counts = set(range(1, min(16, upper) + 1))
        counts.update(r.sessions for r in option.history if r.sessions <= upper)
        counts.update(int(v) for v in np.linspace(1, upper, CHART_POINTS).round())
        out[option.policy] = tuple(sorted(counts | {upper}))
    return out


def option_sweep(
    request: Request,
    sharing: Sharing,
    sessions: Iterable[int] | Mapping[str, Iterable[int]],
    known: Sequence[Option] = (),
    cache: PoolCache | None = None,
    work: Work | None = None,
) -> list[Pooled]:
    """Every policy of ``request`` under ``sharing`` at each session count, seeds pooled
    exactly as the recommendation judges them (rows by policy, then session count).

    ``sessions`` is the counts for every policy, or the counts of each policy by name
    (``chart_counts``). Unlike ``planner.sim.sweep.sweep`` with one template, each policy
    keeps the request's objective and batch parameters (a scenario drops the parameters its
    policy does not use, so one template cannot carry them to every policy). Rows the
    recommendation already computed (``known``: its options, whose ``history`` holds the
    full runs its search made up to cap + 1) are reused rather than simulated again, and
    so are rows in ``cache``; they are the same runs. Raises BadInput when a count is
    outside 1..max(64, largest), the range the request's curve table covers, or when not
    even batch 1 fits in the memory ``sharing`` leaves (nothing can run).
    """
    each = (
        {p: sorted(set(sessions.get(p, ()))) for p in request.policies}
        if isinstance(sessions, Mapping)
        else dict.fromkeys(request.policies, sorted(set(sessions)))
    )
    upto = max(64, request.largest)
    every = [n for counts in each.values() for n in counts]
    if not every or min(every) < 1 or max(every) > upto:
        raise BadInput(f"session counts must lie within 1..{upto}")
    done = {
        (row.policy, row.sessions): row
        for option in known
        if option.sharing == sharing
        for row in option.history
    }
    missing = [(p, n) for p in request.policies for n in each[p] if (p, n) not in done]
    templates = [request.scenario(policy, sharing, "central", n, 0) for policy, n in missing]
    rows, _ = pooled_runs(templates, request.seeds, request.criteria.percentile, cache, work)
    done.update(zip(missing, rows, strict=True))
    return [done[(p, n)] for p in request.policies for n in each[p]]


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
    if best.margin is not None:
        text += f"; {margin.uncalibrated_note(best)}"
    if request.calibration is not None:
        text += f". Calibrated by {request.calibration.source}"
    return text + "."


def _assumptions(request: Request) -> tuple[str, ...]:
    notes = list(request.curve.assumptions)
    sharings = list(dict.fromkeys(request.sharings))
    said: set[str] = set()
    for sharing in sharings:
        # A mode planned several times (every MIG profile) states its assumption once.
        several = sum(s.kind is sharing.kind for s in sharings) > 1
        if sharing.kind.name not in said:
            said.add(sharing.kind.name)
            label = f"{sharing.kind.title} (every profile)" if several else sharing.label
            notes.append(f"{label}: {sharing.kind.assumption}")
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
    if request.decoders is not None:
        notes.append(decoders_note(request.decoders, tuple(dict.fromkeys(request.sharings))))
    if request.calibration is not None:
        notes.append(request.calibration.description)
    elif request.per_request_ms:
        notes.append(margin.per_request_note(request.per_request_ms))
    for sharing in dict.fromkeys(request.sharings):
        for sentence in request.memory(sharing).assumptions:
            notes.append(f"{sharing.label}: {sentence}" if len(request.sharings) > 1 else sentence)
    notes.append(
        f"{request.seeds} random phase draws of {request.duration_s:g} s each at "
        f"{display.fps(request.fps)} per session; the {request.criteria.percentile:g}th percentile "
        "is over all their delivered frames."
    )
    return tuple(notes)


def _worker_assumption(request: Request) -> str:
    """What the plan assumes about the worker beyond the GPU (SPEC §5.1)."""
    overhead = request.criteria.overhead_ms
    stages = request.stages
    if not stages.takes_time and request.decoders is None:
        return (
            "Latency is GPU-side plus a fixed per-frame overhead for network, decode and "
            f"post-processing ({display.ms(overhead)}), which does not occupy the GPU."
        )
    text = (
        f"End-to-end latency is the network both ways ({display.ms(stages.network_ms)} each, "
        f"constant), CPU work before the GPU ({display.ms(stages.pre_ms)}) and after it "
        f"({display.ms(stages.post_ms)}), the GPU's queue and batch, and a fixed "
        f"{display.ms(overhead)} overhead."
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
        f"{display.ms(request.non_gpu_ms)} outside the GPU."
    )
