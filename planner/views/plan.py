"""A plan's view (SPEC §3.5, §5.3): everything the Plan page, the report and ``planner
recommend`` show of one plan, written once.

``plan_view`` composes it from the plan's parameters, its inputs and its recommendation:
the answer in words (``planner.plan.answer``), the figures at the cap, the cost sentence,
the table of every option (one wording of isolation), the table of every MIG profile
(``planner.plan.mig_profiles``) where the plan asks for them all, the latency by stage at
the cap, the run behind the headline (a link to the Simulate page), the assumptions, the
links that reopen the plan and the command line that reproduces it. Each front end only
renders these cells and sentences, escaping them as its format needs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from planner import display
from planner.demand.profiles import HOURS_PER_MONTH
from planner.errors import BadInput
from planner.links.urls import saved_plan_url, self_contained, url
from planner.plan.answer import Answer, plan_answer
from planner.plan.mig_profiles import plans_every_profile, result_rows
from planner.plan.outcomes import Fleet, Option, Recommendation, fleet
from planner.plan.params import PlanParams, SimulateParams
from planner.plan.pareto import dominated
from planner.plan.resolve import PlanInputs, command_line, plan_simulation
from planner.sim.pipeline import PART_LABELS, PARTS
from planner.views.table import Link, Metric, Table

DEFAULT_BASE = "http://localhost:8501"
"""Where the dashboard answers when nothing else is known (links in a report)."""

OPTIONS_NOTE = (
    "Ranked by seats on the fitted curve, then on the pessimistic edge, then by latency. "
    "Isolation is what the sharing mode guarantees between jobs on the card."
)
PROFILES_NOTE = (
    "Each profile's best option, from one plan of them all under the same criteria. "
    "Seats per card count every instance of the profile a card holds."
)


@dataclass(frozen=True)
class DetailRun:
    """The run behind the headline: the first failing session count of the recommended
    option, on the phase draw where its slowest session did worst, as the Simulate page's
    parameters (``plan_simulation``); and every draw's slowest session. ``reason`` is None
    when the count fails on the frame-rate floor (the worst draw is what fails), else why
    it fails over all the draws together (the latency percentile pools them). Under
    ``queue = all`` a count can fail the stability condition before any run
    (``planner.plan.stability``): then ``draws`` is empty, ``reason`` says why, and the
    link opens one draw of that count."""

    label: str
    params: SimulateParams
    sessions: int
    seed: int
    slowest: str  # the worst draw's slowest session, ``12.2 fps`` (``-``: no draw)
    draws: tuple[tuple[int, str, bool], ...]  # (seed, slowest fps, the worst?); none ran
    reason: str | None = None

    def sentence(self, strong: Callable[[str], str] = str) -> str:
        """What the link opens, the worst draw's figure marked with ``strong``."""
        if not self.draws:
            # The stability condition failed the count: the plan ran no draw of it.
            return (
                f"The plan judged {self.sessions} sessions without running them: "
                f"{self.reason}. The link opens seed {self.seed}, one random phase draw of "
                "that count, to watch the queue."
            )
        draws = ", ".join(
            f"{strong(fps)} (seed {seed}, the worst)" if worst else fps
            for seed, fps, worst in self.draws
        )
        each = f"The slowest session on each of the {len(self.draws)} draws, in fps: {draws}."
        if self.reason is not None:
            return (
                f"The link opens seed {self.seed}, one of the {len(self.draws)} random phase "
                f"draws of {self.sessions} sessions, which fail over all the draws together: "
                f"{self.reason}. {each}"
            )
        return (
            f"The link opens seed {self.seed}, the random phase draw where the slowest of "
            f"{self.sessions} sessions gets {self.slowest}: the plan judges a session count "
            f"by its worst draw. {each}"
        )


@dataclass(frozen=True)
class PlanView:
    """One plan as every front end shows it (see the module docstring). ``cost``,
    ``profiles``, ``stages`` and ``detail`` are None where the plan has none."""

    answer: Answer
    figures: tuple[Metric, ...]
    cost: str | None
    options: Table
    profiles: Table | None
    stages: Table | None
    stages_note: str
    detail: DetailRun | None
    links: tuple[Link, ...]
    command: tuple[str, ...]
    curve_upto: int  # the largest batch the curve's chart draws

    @property
    def assumptions(self) -> tuple[str, ...]:
        return self.answer.assumptions

    @property
    def options_note(self) -> str:
        return OPTIONS_NOTE

    @property
    def profiles_note(self) -> str:
        return PROFILES_NOTE


def plan_view(
    params: PlanParams,
    inputs: PlanInputs,
    result: Recommendation,
    *,
    base: str = DEFAULT_BASE,
    plan_id: str | None = None,
) -> PlanView:
    """The view of the plan ``params`` resolved to ``inputs`` and answered by ``result``;
    ``base`` is where the dashboard answers and ``plan_id`` the id it is saved under."""
    best = result.recommended
    stages, stages_note = stage_table(result)
    return PlanView(
        answer=plan_answer(result),
        figures=figures(result),
        cost=None if result.fleet is None else cost_sentence(result.fleet),
        options=options_table(result),
        profiles=Table.of(result_rows(result)) if plans_every_profile(result) else None,
        stages=stages,
        stages_note=stages_note,
        detail=None if best is None else detail_run(params, result, best),
        links=links(params, inputs, base, plan_id),
        command=tuple(command_line("recommend", params)),
        curve_upto=curve_upto(inputs, result),
    )


def curve_upto(inputs: PlanInputs, result: Recommendation) -> int:
    """How far the curve's chart and band table reach: past the largest measured batch
    and every option's first failing count, from 8 up to 256."""
    measured = [p.batch for p in inputs.curve.points]
    return max(8, min(256, max(measured + [o.cap + 1 for o in result.options])))


def figures(result: Recommendation) -> tuple[Metric, ...]:
    """The recommended option's figures: seats, latency and the slowest session at the
    cap, and the GPUs for the peak (none when nothing is recommended)."""
    best = result.recommended
    if best is None:
        return ()
    out = [
        Metric(
            "Seats per card",
            best.seats,
            "A range when the fitted curve's band makes the cap uncertain. With MIG or MPS: "
            "the seats of one instance times the instances one card holds.",
        )
    ]
    at = best.at_cap
    where = str(best.cap) if best.per_card == 1 else f"{best.cap} per instance"
    if at is not None and at.e2e_latency_ms is not None:
        out.append(Metric(f"p{at.percentile:g} latency at {where}", display.ms(at.e2e_latency_ms)))
        out.append(Metric(f"Slowest session at {where}", display.fps(at.min_fps)))
    sized = result.fleet
    if sized is not None and sized.gpus_span is not None:
        out.append(
            Metric(
                f"GPUs for {sized.peak_sessions:,} at peak",
                display.span(sized.gpus_span),
                f"ceil(peak × (1 + {sized.headroom:g}) / seats per card), over the range of "
                "seats per card; likely: on the fitted curve's",
            )
        )
    return tuple(out)


def cost_sentence(sized: Fleet) -> str | None:
    """What a seat costs per hour and per month, how, and what the peak's fleet costs:
    ``Cost: $0.50 per seat-hour, $360 per seat-month ($2.00 per card-hour ÷ 4 seats; a
    month is 720 hours, 30 days around the clock); the fleet costs $24.00 per hour.``
    None without a price."""
    if sized.cost_per_seat_hour_span is None:
        return None
    price = f"{display.money(sized.price_per_hour)} per card-hour"
    if sized.card_share < 1:
        price += f" × our {display.fraction(sized.card_share)} of the card"
    hourly = sized.cost_per_hour_span
    return (
        "Cost: "
        + display.span(sized.cost_per_seat_hour_span, display.money, " per seat-hour")
        + ", "
        + display.span(sized.cost_per_seat_month_span, display.money, " per seat-month")
        + f" ({price} ÷ {display.span(sized.seats, unit=' seats')}"
        + f"; a month is {HOURS_PER_MONTH} hours, 30 days around the clock)"
        + (
            f"; the fleet costs {display.span(hourly, display.money, ' per hour')}."
            if hourly is not None
            else "."
        )
    )


def isolation(option: Option) -> str:
    """What the option's sharing mode isolates, ``memory; faults`` (one word when both
    say the same)."""
    iso = option.sharing.kind.isolation
    return iso.memory if iso.memory == iso.fault else f"{iso.memory}; {iso.fault}"


def options_table(result: Recommendation) -> Table:
    """Every option of the plan, best first (``option_rows``, under the plan's peak,
    headroom and price)."""
    request = result.request
    return Table.of(
        option_rows(
            result.options,
            dominated(result.options),
            peak_sessions=request.peak_sessions,
            headroom=request.headroom,
            price_per_hour=request.price_per_hour,
        )
    )


def option_rows(
    options: Sequence[Option],
    beaten_by: Sequence[Option | None],
    *,
    peak_sessions: int | None = None,
    headroom: float = 0.2,
    price_per_hour: float | None = None,
) -> list[dict[str, str]]:
    """One row per (policy, sharing mode), best first, as text to read: the option, its
    seats per card, GPUs for the peak and cost per seat first (what a reader compares,
    kept in view on a narrow screen), then latency and slowest frame rate at the cap,
    isolation, which option dominates it, and last why the next seat fails (the one
    sentence, which a narrow screen gives its width to at the end of the row). Columns
    that would be empty in every row are left out, so the table fits the page."""
    known = next((o.at_cap.percentile for o in options if o.at_cap is not None), None)
    latency = f"p{known:g} latency at cap (ms)" if known is not None else "latency at cap (ms)"
    # One precision down the column: 29.98 fps is 30.0, so an even 30 is 30.0 beside it.
    rates = [o.at_cap.min_fps for o in options if o.at_cap is not None]
    decimal = any(r != round(r) for r in rates)
    rows = []
    for option, beaten in zip(options, beaten_by, strict=True):
        at = option.at_cap
        row = {"option": option.label, "seats per card": option.seats}
        sized = fleet(
            option, peak_sessions=peak_sessions, headroom=headroom, price_per_hour=price_per_hour
        )
        if peak_sessions is not None:
            row["GPUs for peak"] = display.span(None if sized is None else sized.gpus_span)
        if price_per_hour is not None:
            row["cost per seat-hour"] = display.span(
                None if sized is None else sized.cost_per_seat_hour_span, display.money
            )
        row[latency] = display.ms(at.e2e_latency_ms if at else None, unit=False)
        row["slowest session at cap (fps)"] = display.fps(
            at.min_fps if at else None, unit=False, decimal=decimal
        )
        row["seats per instance"] = option.seats_per_instance if option.per_card > 1 else ""
        row["isolation (memory; faults)"] = isolation(option)
        row["dominated by"] = beaten.label if beaten is not None else ""
        row["extrapolated"] = "yes" if option.extrapolated else ""
        # The row names the option already: its reason need not repeat the policy.
        row["next seat fails because"] = option.binding_constraint.replace(
            f" under {option.policy}", ""
        )
        rows.append(row)
    empty = [k for k in ("seats per instance", "dominated by", "extrapolated")
             if not any(r[k] for r in rows)]  # fmt: skip
    return [{k: v for k, v in r.items() if k not in empty} for r in rows]


def stage_table(result: Recommendation) -> tuple[Table | None, str]:
    """Where a frame's end-to-end time goes at the recommended option's cap, part by part
    (mean and the mean over the tail), and a sentence on the CPU threads and memory there.
    None (and an empty sentence) when the run at the cap has no stages."""
    best = result.recommended
    at = best.at_cap if best is not None else None
    if best is None or at is None or at.stages is None or at.stages.mean is None:
        return None, ""
    stages = at.stages
    mean, tail = at.stages.mean, at.stages.tail
    rows = [
        (
            PART_LABELS[part],
            display.ms(getattr(mean, part), unit=False),
            display.ms(None if tail is None else getattr(tail, part), unit=False),
        )
        for part in PARTS
    ]
    rows.append(
        (
            "total",
            display.ms(mean.total, unit=False),
            display.ms(None if tail is None else tail.total, unit=False),
        )
    )
    pct = f"p{stages.percentile:g}"
    header = ("stage", "mean (ms)", f"{pct} and beyond, mean (ms)")
    notes = []
    if at.cpu is not None:
        threads = "thread" if at.cpu.workers == 1 else "threads"
        wait = at.cpu.total.wait_mean_ms
        notes.append(
            f"{at.cpu.workers} CPU {threads} {display.fraction(at.cpu.busy_fraction)} busy"
            + ("" if wait is None else f", a job waits {display.ms(wait)} for one on average")
        )
    limit = result.request.memory(best.sharing).batch_limit
    if limit is not None:
        notes.append(f"no batch larger than {limit} fits in GPU memory")
    # The tail's total is a mean of the slowest frames, so it is at least the percentile
    # the criteria judge (and may pass the budget while that percentile does not): say both.
    note = (
        f"At {best.cap} sessions under {best.label}"
        + (": " + "; ".join(notes) if notes else "")
        + f". The {pct} latency there is {display.ms(at.e2e_latency_ms)}, what the "
        f"{display.ms(result.request.criteria.budget_ms)} budget is judged on. The last "
        f"column is the mean over the frames at or beyond that {pct}, so its total is at "
        f"least that: it shows where the slowest frames' time goes (the {pct}s of the parts "
        "would not add up)."
    )
    return Table(header, tuple(rows)), note


def detail_run(params: PlanParams, result: Recommendation, best: Option) -> DetailRun:
    """The run behind the headline's reason (see ``DetailRun``), with the plan's
    calibration."""
    failing = best.history[-1]  # the first failing count (or the cap, when none failed)
    if best.failures and failing.sessions == best.cap:
        # No run of cap + 1: the stability condition failed it (planner.plan.stability).
        sessions, seed = best.cap + 1, failing.seeds[0]
        return DetailRun(
            label=f"See {sessions} sessions under {best.policy} in detail",
            params=plan_simulation(params, result.request, best, sessions, seed=seed),
            sessions=sessions,
            seed=seed,
            slowest=display.MISSING,
            draws=(),
            reason=best.binding_constraint,
        )
    worst = min(range(len(failing.seeds)), key=lambda i: failing.min_fps_by_seed[i])
    seed = failing.seeds[worst]
    simulation = plan_simulation(params, result.request, best, failing.sessions, seed=seed)
    below_floor = failing.min_fps < result.request.criteria.min_fps
    return DetailRun(
        label=f"See {failing.sessions} sessions under {best.policy} in detail",
        params=simulation,
        sessions=failing.sessions,
        seed=seed,
        slowest=display.fps(failing.min_fps),
        draws=tuple(
            (s, display.fps(v, unit=False), i == worst)
            for i, (s, v) in enumerate(zip(failing.seeds, failing.min_fps_by_seed, strict=True))
        ),
        reason=None if below_floor or not best.failures else best.binding_constraint,
    )


def links(
    params: PlanParams, inputs: PlanInputs, base: str, plan_id: str | None
) -> tuple[Link, ...]:
    """The links that reopen the plan: its saved short link when it is saved (else the
    link with its parameters, which then follows it), and one that embeds the curve
    (where the plan names a stored curve)."""
    out = []
    if plan_id is None:
        out.append(Link("Link to this plan", url(base, params)))
    else:
        # The saved plan's short link is the one to pass on; the long one stays too.
        out.append(Link("Link to this plan (saved; opens on this server)",
                        saved_plan_url(base, plan_id)))  # fmt: skip
        out.append(Link("Link with every input in it", url(base, params)))
    try:
        embedded = self_contained(params, inputs.curve)
    except BadInput:
        pass
    else:
        if params.points is None:
            out.append(
                Link(
                    "Self-contained link (embeds the curve; opens on any server)",
                    url(base, embedded),
                )
            )
    return tuple(out)
