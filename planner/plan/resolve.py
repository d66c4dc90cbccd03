"""From a plan's parameters (``PlanParams``: the Plan page, a link, ``planner recommend``)
to a recommendation request: the curve, the card, the sharing modes and the price; from
one of a plan's options to the simulation that shows it in detail; and from a
simulation's parameters (``SimulateParams``: the Simulate page) to its scenarios."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

from planner.curves.cards import Card
from planner.curves.curve import Curve
from planner.curves.fit import FittedCurve, fit_curve
from planner.errors import BadInput, NotFound
from planner.links.codecs import cascade_entry, number_text
from planner.links.urls import encode, linked_curve
from planner.plan.cascade import CascadeStep, memory_note, models, with_cascade_memory
from planner.plan.cotenants import WORKLOAD_FIELDS, other_card, workloads_of
from planner.plan.decoders import Decoders
from planner.plan.outcomes import Option
from planner.plan.params import CompareParams, PlanParams, SimulateParams, stage_params
from planner.plan.request import Criteria, Request, run_scenario
from planner.sim.calibration import Calibration
from planner.sim.memory import MemoryLimit, available, memory_limit, memory_model
from planner.sim.policies import POLICIES
from planner.sim.scenario import Scenario, Sharing
from planner.sim.sharing import Choice, default_modes, sharing_mode
from planner.sim.sharing.time_slicing import CotenantWorkload
from planner.store.repository import Store


@dataclass(frozen=True)
class PlanInputs:
    """What a plan runs on: the curve (stored or embedded), its card, and the request;
    ``calibration`` is the one the plan pins (None: uncalibrated) and ``latest`` the
    curve's newest calibration in the store, whether the plan uses it or not."""

    curve: Curve
    fitted: FittedCurve
    card: Card | None
    request: Request
    calibration: Calibration | None = None
    latest: Calibration | None = None


def plan_calibrations(
    params: PlanParams | SimulateParams, curve: Curve, store: Store | None
) -> tuple[Calibration | None, Calibration | None]:
    """The calibration a plan pins (BadInput when the store does not hold it, or when it
    belongs to another curve) and the curve's newest one (None without a store)."""
    pinned_id = params.calibration
    if store is None:
        if pinned_id is not None:
            raise BadInput(f"calibration={pinned_id} needs the store that holds it")
        return None, None
    from planner.store.calibrations import calibration, latest_calibration

    latest = latest_calibration(store, curve.id)
    if pinned_id is None:
        return None, latest
    try:
        pinned = calibration(store, pinned_id)
    except NotFound:
        raise BadInput(f"calibration={pinned_id}: no stored calibration has that id") from None
    if pinned.curve_id != curve.id:
        raise BadInput(
            f"calibration={pinned.id} belongs to the curve {pinned.curve_id}, not to this "
            f"plan's curve {curve.id}"
        )
    return pinned, latest


BATCHER = ("max_batch", "max_queue_delay_us")
"""The batcher settings of the policies that take them (``max-batch``, ``triton``)."""


def batcher_of(params: PlanParams | SimulateParams, curve: Curve) -> dict[str, Any]:
    """The batcher settings a plan (or a run) takes: those it gives, else those of the
    server its curve was measured on (``Curve.batcher``); None where neither gives one
    (each policy's own default)."""
    found = curve.batcher
    out: dict[str, Any] = {}
    for name in BATCHER:
        given = getattr(params, name)
        value = given if given is not None else found.get(name)
        out[name] = int(value) if name == "max_batch" and value is not None else value
    return out


def pin_batcher(params: PlanParams, curve: Curve) -> PlanParams:
    """``params`` with the batcher settings it takes from its curve written in, for those
    a policy of the plan takes: a link, a saved plan and a study's cell pin the values
    they used (a plan on a curve without server settings is returned as it is)."""
    used = {name for policy in params.policies for name in POLICIES[policy].params}
    changes: dict[str, Any] = {
        name: value
        for name, value in batcher_of(params, curve).items()
        if name in used and value is not None and getattr(params, name) is None
    }
    return replace(params, **changes) if changes else params


def default_curve(store: Store) -> Curve:
    """The curve a plan opens with: the laptop 512x288 FP16 reference curve if present,
    else the first stored curve that is not flagged (a failed drift check), else the
    first."""
    curves = store.curves()
    if not curves:
        raise NotFound("the store holds no curves; import one first")
    for curve in curves:
        if (curve.card, curve.precision, curve.resolution, curve.source) == (
            "laptop-8gb", "fp16", "512x288", "built-in"
        ):  # fmt: skip
            return curve
    return next((c for c in curves if not c.flag), curves[0])


def plan_curve(params: PlanParams | SimulateParams, store: Store | None) -> Curve:
    """The curve a plan names: embedded points, a stored id, or the default curve."""
    embedded = linked_curve(params)
    if embedded is not None:
        return embedded
    if store is None:
        raise BadInput("a plan without embedded points needs the store")
    if params.curve is not None:
        return store.curve(params.curve)
    return default_curve(store)


def card_of(curve: Curve, store: Store | None) -> Card | None:
    """The catalogue entry of the curve's card, if the store knows it."""
    if store is None:
        return None
    try:
        return store.card(curve.card)
    except NotFound:
        return None


def modes_of(params: PlanParams) -> tuple[str, ...]:
    """The sharing modes to consider: as given, else exclusive plus each mode whose
    parameters are given (co-tenants, an MPS share, a MIG profile)."""
    if params.modes is not None:
        return params.modes
    return default_modes(Choice.of(vars(params)))


def plan_inputs(params: PlanParams, store: Store | None) -> PlanInputs:
    """Resolve a plan's parameters into a recommendation request (BadInput if they
    do not fit together, e.g. MIG on a card that does not support it).

    What it reads of the store (the curve, its card, the calibrations, the curves measured
    on MIG profiles) it reads in one short read transaction, and fits the curves after."""
    sharings: list[Sharing] = []
    measured_on: list[tuple[str, Curve]] = []
    problems: list[str] = []
    with snapshot(store):
        curve = plan_curve(params, store)
        card = card_of(curve, store)
        calibration, latest = plan_calibrations(params, curve, store)
        cascade = cascade_steps(params.cascade, store, curve.card)
        workloads = workloads_of(params, store, curve.card)
        for mode in modes_of(params):
            for each in _each_profile(mode, params, card):
                try:
                    sharing, measured = _sharing(mode, each, card, curve, store, workloads)
                except BadInput as exc:
                    problems.extend(exc.problems)
                    continue
                sharings.append(sharing)
                profile = sharing.kind.profile_used(sharing)
                if measured is not None and profile:
                    measured_on.append((profile, measured))
    if problems:
        raise BadInput(problems)
    fitted = fit_curve(curve.points)
    profile_curves = [(profile, fit_curve(m.points)) for profile, m in measured_on]
    price = params.price_per_hour
    if price is None and card is not None:
        price = card.price_per_hour
    request = Request(
        curve=fitted,
        criteria=Criteria(
            budget_ms=params.budget_ms,
            percentile=params.percentile,
            min_fps=params.min_fps,
            max_overwritten=params.max_overwritten,
            overhead_ms=params.overhead_ms,
        ),
        policies=params.policies,
        sharings=tuple(sharings),
        seeds=params.seeds,
        duration_s=params.duration_s,
        max_sessions=params.max_sessions,
        fps=params.source_fps,
        search=params.search,
        profile_curves=tuple(profile_curves),
        peak_sessions=params.peak_sessions,
        headroom=params.headroom,
        price_per_hour=price,
        other_jobs=params.other_jobs,
        stages=params.stages,
        card_memory_gb=card.memory_gb if card is not None else None,
        calibration=calibration,
        queue=params.queue,
        max_queue_size=params.max_queue_size,
        queue_timeout_us=params.queue_timeout_us,
        timeout_action=params.timeout_action,
        per_request_ms=curve.per_request_ms,
        spread=params.spread,
        margin=params.margin,
        **batcher_of(params, curve),
        cascade=cascade,
        model_name=curve.model,
        decoders=decoders_of(params, curve.card),
    )
    return PlanInputs(
        curve=curve,
        fitted=fitted,
        card=card,
        request=request,
        calibration=calibration,
        latest=latest,
    )


def decoders_of(params: PlanParams | SimulateParams, card: str | None) -> Decoders | None:
    """The plan's or the run's decode stage (``planner.plan.decoders``): None unless a
    decode time is given, as in every plan before it."""
    return Decoders.given_as(vars(params), card)


def cascade_steps(
    entries: tuple[str, ...], store: Store | None, card: str | None = None
) -> tuple[CascadeStep, ...]:
    """The later models of a cascade from their link entries (``ID:CROPS[:max=B]``), each
    a stored curve fitted (BadInput naming every id the store does not hold, and every
    curve measured on another card than ``card``, the first model's: a chain runs on one
    card, and another card's times would be wrong on this one)."""
    if not entries:
        return ()
    if store is None:
        raise BadInput("a cascade of stored curves needs the store")
    steps, problems = [], []
    for text in entries:
        entry = cascade_entry(text)
        try:
            curve = store.curve(entry.curve)
        except NotFound:
            problems.append(f"cascade: no stored curve has the id {entry.curve}")
            continue
        problems.extend(other_card("cascade", curve, card))
        steps.append(CascadeStep(fit_curve(curve.points), entry.crops, entry.largest, curve.model))
    if problems:
        raise BadInput(problems)
    return tuple(steps)


def workload_params(params: PlanParams, sharing: Sharing) -> dict[str, Any]:
    """The co-tenants by workload a replay of an option under ``sharing`` carries: the
    plan's, where the option's mode took them."""
    if not sharing.kind.derivations(sharing):
        return {}
    return {name: getattr(params, name) for name in WORKLOAD_FIELDS}


def snapshot(store: Store | None) -> AbstractContextManager[None]:
    """The store's ``snapshot`` (one short read transaction), or nothing without a store."""
    return nullcontext() if store is None else store.snapshot()


def _each_profile(mode: str, params: PlanParams, card: Card | None) -> list[PlanParams]:
    """The plan once per MIG profile of the card where it asks for every profile
    (``mig_profile=all``), else the plan as it is (a card without MIG keeps ``all``, and
    the mode says it needs a card that has it)."""
    variants = sharing_mode(mode).variants(Choice.of(vars(params), card=card))
    return [replace(params, **changes) for changes in variants]


def _sharing(
    mode: str,
    params: PlanParams | SimulateParams,
    card: Card | None,
    curve: Curve,
    store: Store | None,
    workloads: tuple[CotenantWorkload, ...] = (),
) -> tuple[Sharing, Curve | None]:
    """The settings of ``mode`` from the parameters (with the co-tenants given by
    workload, ``planner.plan.cotenants``), and the stored curve measured on the profile it
    asks for (MIG), if there is one; BadInput says what the mode lacks."""
    kind = sharing_mode(mode)
    choice = Choice.of(vars(params), card=card)
    profile = kind.profile_wanted(choice)
    measured = None
    if profile and store is not None:
        measured = _profile_curve(store, curve, profile)
    choice = replace(choice, measured_on_profile=measured is not None, cotenant_workloads=workloads)
    return kind.sharing(choice), measured


def _profile_curve(store: Store, curve: Curve, profile: str) -> Curve | None:
    """A stored curve of the same model, card, precision and resolution measured on the
    MIG profile, if there is one (the newest)."""
    candidates = [
        c
        for c in store.curves(model=curve.model, card=curve.card)
        if c.mig_profile == profile.strip().lower()
        and (c.precision, c.resolution) == (curve.precision, curve.resolution)
    ]
    return candidates[-1] if candidates else None


@dataclass(frozen=True)
class SimulationInputs:
    """What a simulation runs on: the curve, its card, the scenario and, when a second
    policy is asked for, the same scenario under that policy; the memory limit on the
    batch (``planner.sim.memory``); the calibration the parameters pin (None: the model's
    figures) and the curve's newest one in the store, whether the run uses it or not."""

    curve: Curve
    fitted: FittedCurve
    card: Card | None
    scenario: Scenario
    compare: Scenario | None
    memory: MemoryLimit | None = None
    calibration: Calibration | None = None
    latest: Calibration | None = None


def simulation_inputs(params: SimulateParams, store: Store | None) -> SimulationInputs:
    """Resolve a simulation's parameters into scenarios (BadInput if they do not fit
    together, e.g. time-slicing without co-tenants, or MIG on a card without it).

    The scenario runs on the fitted curve's central estimate for batch sizes
    1..max(64, sessions), as ``planner simulate`` does; with MIG, on a curve measured on
    the profile when one is stored, else on the whole-card curve with the derived model.
    Its batches are capped by the largest that fits in the memory the mode leaves, where
    the curve carries memory figures; when not even batch 1 fits, BadInput says so. A
    pinned calibration changes the table and the overhead as it does in a plan's runs.
    """
    with snapshot(store):
        curve = plan_curve(params, store)
        card = card_of(curve, store)
        calibration, latest = plan_calibrations(params, curve, store)
        workloads = workloads_of(params, store, curve.card)
        sharing, measured = _sharing(params.mode, params, card, curve, store, workloads)
        cascade = cascade_steps(params.cascade, store, curve.card)
    fitted = fit_curve(curve.points)
    source = fitted if measured is None else fit_curve(measured.points)
    batcher = batcher_of(params, curve)
    queued = int(batcher["max_batch"] or 8) if params.queue == "all" else 1
    model, note = with_cascade_memory(memory_model(source.points), cascade)
    memory = memory_note(
        memory_limit(
            model,
            available(sharing, card.memory_gb if card is not None else None),
            max(params.sessions, queued),
        ),
        note,
    )
    if not memory.fits_one:
        raise BadInput(f"{memory.needs(1)}: no batch fits, so no session can be served")

    def run(policy: str) -> Scenario:
        # The scenario a plan's run of the same option is (``planner.plan.request``).
        return run_scenario(
            source,
            "central",
            policy,
            params.sessions,
            sharing,
            upto=max(64, params.sessions, queued),
            per_request_ms=curve.per_request_ms,
            calibration=calibration,
            spread=params.spread,
            memory_batch_limit=memory.batch_limit,
            overhead_ms=params.overhead_ms,
            fps=params.fps,
            duration_s=params.duration_s,
            phases=params.phases,
            seed=params.seed,
            jitter_ms=params.jitter_ms,
            **batcher,
            slo_ms=params.slo_ms,
            stages=params.stages,
            queue=params.queue,
            max_queue_size=params.max_queue_size,
            queue_timeout_us=params.queue_timeout_us,
            timeout_action=params.timeout_action,
            cascade=models(cascade, "central"),
            decode=None if decoders is None else decoders.decoding(sharing),
        )

    decoders = decoders_of(params, curve.card)
    scenario = run(params.policy)
    compare = None if params.compare_policy is None else run(params.compare_policy)
    return SimulationInputs(
        curve=curve,
        fitted=fitted,
        card=card,
        scenario=scenario,
        compare=compare,
        memory=memory,
        calibration=calibration,
        latest=latest,
    )


def plan_simulation(
    params: PlanParams,
    request: Request,
    option: Option,
    sessions: int,
    *,
    seed: int = 0,
    compare_policy: str | None = None,
) -> SimulateParams:
    """One run of a plan's option in detail: the Simulate page's parameters for ``option``
    at ``sessions`` on phase draw ``seed``, as the recommendation simulated it.

    ``params`` is the plan and ``request`` what it resolved to (``plan_inputs``): the run
    keeps the plan's curve (stored or embedded), its pinned calibration, the duration, the
    per-frame overhead, the worker's stages, the option's sharing mode and the objective
    the plan gives ``aimd`` and ``deadline``; the plan's criteria travel along to be drawn
    on the charts. ``compare_policy`` is a second policy to show beside it.
    """
    sharing = option.sharing
    takes = POLICIES[option.policy].params
    uses_slo = "slo_ms" in takes
    batcher = {name: getattr(request, name) for name in BATCHER if name in takes}
    return SimulateParams(
        curve=params.curve,
        points=params.points,
        model=params.model,
        card=params.card,
        precision=params.precision,
        resolution=params.resolution,
        sessions=sessions,
        policy=option.policy,
        compare_policy=compare_policy,
        seed=seed,
        duration_s=request.duration_s,
        overhead_ms=request.criteria.overhead_ms,  # the calibration adds its own
        slo_ms=request.objective_ms if uses_slo else None,
        **batcher,
        mode=sharing.mode,
        **sharing.parameters(),
        **stage_params(request.stages),
        budget_ms=request.criteria.budget_ms,
        percentile=request.criteria.percentile,
        min_fps=request.criteria.min_fps,
        calibration=params.calibration,
        queue=request.queue,
        max_queue_size=request.max_queue_size,
        queue_timeout_us=request.queue_timeout_us,
        timeout_action=request.timeout_action,
        spread=params.spread,
        cascade=params.cascade,
        **workload_params(params, option.sharing),
    )


LINK_ONLY = ("compare_policy", "flagged")
"""Link parameters that are the page's, not the command's: a second policy to show side
by side, and whether flagged curves are offered."""
DRAWN_ONLY = ("budget_ms", "percentile", "min_fps")
"""A simulation's criteria: drawn on the Simulate page's charts, not simulated."""


def command_line(command: str, params: PlanParams | SimulateParams | CompareParams) -> list[str]:
    """The ``planner recommend`` (``simulate``, ``compare-cards``) command line that runs
    what ``params`` describe, options at their default left out (join with
    ``shlex.join``): for work too large for the dashboard's budget, which the command line
    does not have. Link-only choices (a second policy to compare) are left out."""
    argv = ["planner", command]
    if isinstance(params, CompareParams):
        for name, value in encode(params).items():
            if name == "flagged":
                argv.append("--include-flagged")
            else:
                argv += [f"--{name.replace('_', '-')}", value]
        return argv
    if params.points is not None:
        points = ",".join(f"{p.batch}:{number_text(p.latency_ms)}" for p in params.points)
        argv += ["--points", points]
        if params.card:
            argv += ["--card", params.card]
    elif params.curve is not None:
        argv += ["--curve", params.curve]
    given = encode(params)
    if command == "simulate":
        given.setdefault("sessions", str(params.sessions))  # type: ignore[union-attr]
        given.setdefault("policy", str(params.policy))  # type: ignore[union-attr]
    for name, value in given.items():
        if name in ("curve", "points", "model", "card", "precision", "resolution"):
            continue
        if name in LINK_ONLY or (command == "simulate" and name in DRAWN_ONLY):
            continue
        if name == "other_jobs":
            argv.append("--other-jobs")
            continue
        argv += [f"--{name.replace('_', '-')}", value]
    if params.calibration is None and params.points is None:
        # The command line applies a stored curve's latest calibration unless told not to;
        # this plan has none, and the command must compute the same plan.
        argv += ["--calibration", "none"]
    if isinstance(params, PlanParams) and params.margin is None:
        # The command line pins the current margin unless told not to (SPEC §6.2).
        argv += ["--margin", "none"]
    return argv
