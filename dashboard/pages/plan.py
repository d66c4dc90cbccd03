"""Plan: how many live sessions one card holds under a latency budget and a frame-rate
floor, with which scheduling policy and sharing mode, and what a fleet costs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import streamlit as st

from dashboard import cache, calibration_control, handover, url_state
from dashboard.charts import Fitted, fit_figure
from dashboard.controls import (
    QUEUE_FIELDS,
    Controls,
    chosen_card,
    load_curve,
    name_curve,
    pick_curve,
    queue_controls,
)
from dashboard.plan_charts import pareto_figure, sessions_figure, stages_figure
from dashboard.state import store
from dashboard.tables import option_rows
from dashboard.text import md, md_list
from dashboard.ui import default_curve_or_stop, show_over_budget, show_problems, static_table
from planner import display, limits
from planner.curves.cards import Card
from planner.curves.curve import MAX_TEXT, Curve
from planner.demand.profiles import HOURS_PER_MONTH
from planner.errors import BadInput, NotFound
from planner.links.urls import encode, saved_params, saved_plan_url, self_contained, url
from planner.plan.answer import Paragraph, plan_answer
from planner.plan.mig_profiles import plans_every_profile, result_rows
from planner.plan.options import Option, Recommendation
from planner.plan.params import PlanParams
from planner.plan.pareto import dominated
from planner.plan.recommend import CHART_EVERY_COUNT_UPTO, CHART_POINTS, chart_counts
from planner.plan.resolve import (
    PlanInputs,
    command_line,
    modes_of,
    plan_curve,
    plan_inputs,
    plan_simulation,
)
from planner.sim.policies import POLICIES
from planner.sim.sharing import offered_modes, parameters_of, sharing_mode
from planner.sim.sharing.mig import ALL_PROFILES
from planner.sim.work import OverBudget

c = Controls("plan_")
CRITERIA = ("budget_ms", "percentile", "min_fps", "source_fps", "overhead_ms", "max_overwritten")
EFFORT = ("seeds", "duration_s", "max_sessions", "search")
FLEET = ("peak_sessions", "headroom", "price_per_hour", "other_jobs")
WORKER = ("network_ms", "pre_ms", "post_ms", "cpu_workers")
MODE_MEMORY = ("cotenant_memory_mb", "mps_memory_mb")


def controls(default_id: str, curves: list[Any]) -> PlanParams | None:
    """The sidebar: every parameter of the plan. None (with the problems shown) when the
    values do not make a plan."""
    bar = st.sidebar
    bar.markdown("### What to plan")
    chosen = pick_curve(c, bar, offered_curves(curves), default_id)
    if any(x.flag for x in curves):
        c.check(
            bar,
            "flagged",
            "Offer flagged curves",
            help="Curves whose measurement failed its drift check (the device was busy or "
            "its clocks changed) are left out of the choices unless you include them.",
        )
    card = chosen_card(db, chosen, default)

    bar.markdown("**What every seat must get**")
    left, right = bar.columns(2)
    c.number(
        left,
        "budget_ms",
        "Latency budget (ms)",
        step=5.0,
        help="End-to-end latency (GPU plus the per-frame overhead) at the percentile.",
    )
    c.number(
        right,
        "percentile",
        "Percentile",
        step=0.5,
        help="The budget applies to this percentile of all delivered frames.",
    )
    left, right = bar.columns(2)
    c.number(
        left,
        "min_fps",
        "Frame-rate floor (fps)",
        step=0.5,
        help="The slowest session must get at least this many frames per second. A "
        "session's delivered frame rate is its source rate times the share of its frames "
        "delivered; frames still in flight when a run ends do not count against it, so a "
        "floor equal to the source rate means every frame, no drops.",
    )
    c.number(
        right,
        "overhead_ms",
        "Overhead per frame (ms)",
        step=1.0,
        help="Network, decode and post-processing outside the GPU.",
    )
    c.number(
        bar,
        "source_fps",
        "Source frame rate (fps)",
        step=1.0,
        help="Frames per second every source (camera) sends.",
    )
    c.number(
        bar,
        "max_overwritten",
        "Most frames overwritten (fraction)",
        step=0.01,
        placeholder="no limit",
        help="Optional: the largest fraction of frames replaced by a newer one "
        "before they ran, e.g. 0.05.",
    )

    bar.markdown("**How the card is scheduled and shared**")
    c.multi(
        bar,
        "policies",
        "Scheduling policies",
        list(POLICIES),
        help="\n".join(f"- **{n}**: {p.summary}" for n, p in POLICIES.items()),
    )
    offered = offered_modes(card)
    if c.get("modes"):
        st.session_state[c.key("modes")] = [m for m in c.get("modes") if m in offered]
    modes = c.multi(
        bar,
        "modes",
        "Sharing modes",
        offered,
        help="Each mode is planned separately; its seat cap is shown with its isolation.",
    )
    if card is None or not card.mig:
        name = "this curve's card" if card is None else f"{card.name}"
        bar.caption(
            f"MIG needs a card that supports it (A30, A100, H100, H200); {md(name)} does not."
        )
    mode_fields: list[str] = []
    asked = parameters_of(modes)  # each mode's parameters, drawn once
    if "cotenants" in asked:
        c.default("cotenants", (0.9, 0.9))
        left, right = bar.columns(2)
        c.text(
            left,
            "cotenants",
            "Co-tenants (duty cycles)",
            placeholder="e.g. 0.9,0.9",
            help="Other jobs on the card, each the fraction of time it is busy (0-1).",
        )
        c.default("busy_period_ms", 50.0)
        c.number(
            right,
            "busy_period_ms",
            "Busy period (ms)",
            step=10.0,
            help="Mean length of a co-tenant's busy period.",
        )
        c.text(
            bar,
            "cotenant_memory_mb",
            "Co-tenants' GPU memory (MB)",
            placeholder="not declared",
            help="GPU memory each co-tenant holds: one value for all, or one per co-tenant. "
            "Time-slicing has no memory isolation, so ours is the card's memory less theirs.",
        )
        mode_fields += ["cotenants", "busy_period_ms", "cotenant_memory_mb"]
    if "mps_share" in asked:
        c.default("mps_share", 50.0)
        c.number(
            bar,
            "mps_share",
            "MPS compute share (%)",
            step=5.0,
            placeholder="50",
            help="Our share of the card's compute (active thread percentage).",
        )
        c.number(
            bar,
            "mps_memory_mb",
            "MPS memory limit (MB)",
            step=256.0,
            placeholder="no limit",
            help="Our client's GPU memory limit, if one is set; else the card's memory.",
        )
        mode_fields += ["mps_share", "mps_memory_mb"]
    if "mig_profile" in asked and card is not None and card.mig:
        profiles = [p.name for p in card.mig_profiles] + [ALL_PROFILES]
        if c.get("mig_profile") not in profiles:
            st.session_state[c.key("mig_profile")] = profiles[0]
        c.select(
            bar,
            "mig_profile",
            "MIG profile",
            profiles,
            format_func=lambda p: _profile_label(card, p),
            help="Each profile is planned on its own; all profiles of this card plans "
            "every one at once and compares them in one table and on the chart of seats "
            "against latency.",
        )
        mode_fields.append("mig_profile")

    bar.markdown("**The worker**")
    left, right = bar.columns(2)
    c.number(
        left,
        "network_ms",
        "Network, each way (ms)",
        step=1.0,
        help="Camera to worker; a frame crosses it twice (there and back).",
    )
    c.number(
        right,
        "cpu_workers",
        "CPU threads",
        help="Threads that decode and post-process frames, from one queue. 0 = unlimited: "
        "the CPU stages only delay frames.",
    )
    left, right = bar.columns(2)
    c.number(
        left,
        "pre_ms",
        "Decode per frame (ms)",
        step=1.0,
        help="CPU work per frame before the GPU: decode, resize, normalise. A hardware "
        "decoder: 1000 / its frames per second per engine, with threads = engines.",
    )
    c.number(
        right,
        "post_ms",
        "Post-process (ms)",
        step=1.0,
        help="CPU work per frame after the GPU.",
    )
    queue_fields = queue_controls(c, bar)

    bar.markdown("**Fleet and cost**")
    left, right = bar.columns(2)
    c.number(
        left,
        "peak_sessions",
        "Peak sessions",
        placeholder="not set",
        help="Concurrent sessions at peak, for the number of GPUs.",
    )
    c.number(
        right,
        "headroom",
        "Headroom (0.2 = 20%)",
        step=0.05,
        fmt="%.2f",
        help="Spare capacity on top of the peak.",
    )
    stored = card.price_per_hour if card is not None else None
    c.number(
        bar,
        "price_per_hour",
        "Card price (USD per hour)",
        step=0.1,
        fmt="%.2f",
        placeholder="stored price" if stored is not None else "not set",
        help="Leave empty to use the card's stored price (set on Compare cards).",
    )
    if stored is not None and c.get("price_per_hour") is None:
        bar.caption(f"Using the stored price of {md(card.name)}: {display.money(stored)} per hour.")  # type: ignore[union-attr]
    if any(sharing_mode(m).several_per_card for m in modes):
        c.check(
            bar,
            "other_jobs",
            "The rest of the card runs other jobs",
            help="By default a MIG or MPS card is filled with instances of this worker, and "
            "seats per card count them all. Tick this when the card's other instances run "
            "other jobs: a card then counts one instance, and a seat costs our fraction of "
            "the card.",
        )
    else:
        st.session_state.pop(c.key("other_jobs"), None)

    effort = bar.expander("Simulation effort")
    c.number(
        effort,
        "seeds",
        "Random phase draws per count",
        help="Each session count is simulated with this many random arrival "
        "phases; the percentile pools them all.",
    )
    c.number(effort, "duration_s", "Simulated seconds per draw", step=5.0)
    c.number(
        effort,
        "max_sessions",
        "Largest session count considered",
        placeholder=f"until the first failure, up to {int(limits.MAX_SESSIONS.high):,}",
    )
    c.select(
        effort,
        "search",
        "Cap search",
        limits.SEARCHES,
        help="Bracketed (the default) finds the first failing count by doubling and "
        "bisection and establishes the counts below it with one-seed probes where they "
        "leave room; exhaustive simulates every count from 1 in full. They agree except in "
        "the case docs/design.md states.",
    )

    names = [*CRITERIA, "policies", *mode_fields, *WORKER, *queue_fields, *FLEET, *EFFORT,
             "flagged"]  # fmt: skip
    values, problems = c.values(names)
    values["flagged"] = bool(values.get("flagged"))  # only asked when a curve is flagged
    selected = tuple(modes)
    defaults = {
        "cotenants": (),
        "mps_share": None,
        "mig_profile": None,
        "cotenant_memory_mb": (),
        "mps_memory_mb": None,
    }
    values = {**defaults, **values}
    values["other_jobs"] = bool(values.get("other_jobs"))  # only asked with MIG or MPS
    if not selected:
        problems.append("Sharing modes: pick at least one")
    triggers = ("cotenants", "mps_share", "mig_profile", "mps_memory_mb")
    derived = modes_of(PlanParams(**{k: values[k] for k in triggers}))
    values["modes"] = None if selected == derived else selected
    if problems:
        show_problems("These settings do not make a plan:", problems)
        return None
    try:
        return PlanParams(**chosen, **values)
    except BadInput as exc:
        show_problems("These settings do not make a plan:", c.explain(exc.problems))
        return None


def offered_curves(everything: list[Curve]) -> list[Curve]:
    """The curves the picker offers: flagged ones only when the user includes them, or
    when the plan already runs on one (a link to it)."""
    include = bool(c.get("flagged"))
    current = c.get("curve")
    return [x for x in everything if include or not x.flag or x.id == current]


def _profile_label(card: Card, name: str) -> str:
    """``1g.10gb (1 of 7 slices, up to 7 per card)``, or every profile at once."""
    if name == ALL_PROFILES:
        return "all profiles of this card"
    profile = card.profile(name)
    fits = "" if profile.max_instances is None else f", up to {profile.max_instances} per card"
    return f"{name} ({profile.slices} of {card.mig_slices} slices{fits})"


def paragraph(part: Paragraph, hint: str = "") -> str:
    """One paragraph of the answer as Markdown: its lead in bold, then its text (and a
    pointer to this page's controls), then its items as a list. The answer's sentences
    are the library's own words, so they are not escaped."""
    lines = [" ".join(x for x in (f"**{part.lead}**", part.text, hint) if x)]
    return "\n".join([*lines, *(f"- {item}" for item in part.items)])


def headline(result: Recommendation, inputs: PlanInputs, simulated: bool) -> None:
    """The answer (``planner.plan.answer``), the figures at the cap, and what to measure."""
    best = result.recommended
    answer = plan_answer(result)
    with st.container(key="headline"):
        st.title(answer.headline)
        with st.container(key="plan_plain"):
            st.markdown(md(answer.plain))
        if answer.instances is not None:
            st.markdown(paragraph(answer.instances, "Say otherwise under *Fleet and cost*."))
        st.markdown(paragraph(answer.why))
    runs = (
        f"simulated ({result.simulations:,} runs)"
        if simulated
        else "answered from the cache (nothing new to simulate)"
    )
    st.caption(f"{md(inputs.curve.label)} · {len(result.options)} options {runs}")
    if inputs.curve.flag:
        st.warning(
            f"**This curve is flagged: {md(inputs.curve.flag)}.** Its points may not be what "
            "the card does on an idle device; measure it again before relying on this plan.",
            icon=":material/warning:",
        )
    if best is not None:
        figures(result, best)
    if answer.extrapolated is not None:
        st.warning(answer.extrapolated, icon=":material/warning:")
    how = (
        ""
        if result.measure_next is None
        else " Measure it on the Measure page, or with `planner measure` on the card."
    )
    st.info(f"{answer.measure_next}{how}", icon=":material/straighten:")
    if answer.low_confidence is not None:
        st.caption(f"{answer.low_confidence} Both are set under *Simulation effort*.")


def figures(result: Recommendation, best: Option) -> None:
    """The recommended option's figures: seats, latency and the slowest session at the
    cap, GPUs for the peak, and what a seat costs."""
    at = best.at_cap
    cells = st.columns(4)
    cells[0].metric(
        "Seats per card",
        best.seats,
        help="A range when the fitted curve's band makes the cap uncertain. With MIG or "
        "MPS: the seats of one instance times the instances one card holds.",
    )
    where = str(best.cap) if best.per_card == 1 else f"{best.cap} per instance"
    if at is not None and at.e2e_latency_ms is not None:
        cells[1].metric(f"p{at.percentile:g} latency at {where}", display.ms(at.e2e_latency_ms))
        cells[2].metric(f"Slowest session at {where}", display.fps(at.min_fps))
    fleet = result.fleet
    if fleet is not None and fleet.gpus_span is not None:
        cells[3].metric(
            f"GPUs for {fleet.peak_sessions:,} at peak",
            display.span(fleet.gpus_span),
            help=f"ceil(peak × (1 + {fleet.headroom:g}) / seats per card), over the range "
            "of seats per card; likely: on the fitted curve's",
        )
    if fleet is not None and fleet.cost_per_seat_hour_span is not None:
        price = f"{display.money(fleet.price_per_hour)} per card-hour"
        if fleet.card_share < 1:
            price += f" × our {display.fraction(fleet.card_share)} of the card"
        hourly = fleet.cost_per_hour_span
        with st.container(key="plan_cost"):
            st.markdown(
                md(
                    "Cost: "
                    + display.span(fleet.cost_per_seat_hour_span, display.money, " per seat-hour")
                    + ", "
                    + display.span(fleet.cost_per_seat_month_span, display.money, " per seat-month")
                    + f" ({price} ÷ {display.span(fleet.seats, unit=' seats')}"
                    + f"; a month is {HOURS_PER_MONTH} hours, 30 days around the clock)"
                    + (
                        f"; the fleet costs {display.span(hourly, display.money)} per hour."
                        if hourly is not None
                        else "."
                    )
                )
            )


def profiles_table(result: Recommendation) -> None:
    """Every MIG profile of the card side by side, where the plan asks for them all
    (``planner.plan.mig_profiles``)."""
    if not plans_every_profile(result):
        return
    request = result.request
    st.subheader("Every MIG profile of this card")
    static_table(result_rows(result), key="plan_profiles")
    st.caption(
        "Each profile's best option, from one plan of them all under the same criteria. "
        "Seats per card count every instance of the profile a card holds"
        + (
            f"; a month is {HOURS_PER_MONTH} hours (30 days around the clock)."
            if request.price_per_hour is not None
            else "; set a price under *Fleet and cost* to compare what a seat costs."
        )
    )


def stages_view(result: Recommendation) -> None:
    """Where a frame's end-to-end time goes at the cap, stage by stage, and how busy the
    CPU threads are there."""
    best = result.recommended
    at = best.at_cap if best is not None else None
    if best is None or at is None or at.stages is None or at.stages.mean is None:
        return
    st.plotly_chart(stages_figure(at.stages, best.cap), width="stretch", key="plan_chart_stages")
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
    st.caption(
        f"At {best.cap} sessions under {md(best.label)}"
        + (": " + "; ".join(notes) if notes else "")
        + ". The tail bar is the mean over the frames at or beyond the "
        f"p{at.stages.percentile:g} (percentiles of the parts would not add up)."
    )


def share(params: PlanParams, inputs: PlanInputs, result: Recommendation) -> None:
    st.subheader("Share this plan")
    base = url_state.base_url()
    left, right = st.columns(2)
    with left:
        st.markdown("**Short link** (opens on this server)")
        current = params
        name = st.text_input(
            "Name of the plan (optional)",
            key="plan_save_name",
            placeholder="e.g. spring peak on L4",
            max_chars=MAX_TEXT,
        )
        if st.button("Save plan", key="plan_save", icon=":material/bookmark_add:"):
            # A saved plan names its curve, so that it keeps its meaning if the default
            # changes, and so that deleting the curve asks first.
            if params.curve is None and params.points is None:
                current = replace(params, curve=plan_curve(params, db).id)
                name_curve(c)
            try:
                plan_id = db.save_plan(
                    saved_params(current), name=name or None, headline=plan_answer(result).headline
                )
            except BadInput as exc:
                show_problems("The plan was not saved:", exc.problems)
            else:
                url_state.remember_plan(PlanParams, plan_id, current)
                url_state.publish(current)
        saved = url_state.saved_plan(PlanParams)
        if saved is not None and saved[1] == current:
            with st.container(key="plan_short_link"):
                st.code(saved_plan_url(base, saved[0]), language=None, wrap_lines=True)
        else:
            st.caption("Stores these settings under a short id.")
    with right:
        st.markdown("**Self-contained link** (embeds the curve's points; opens anywhere)")
        try:
            embedded = self_contained(params, inputs.curve)
        except BadInput as exc:
            st.caption(md("; ".join(exc.problems)))
        else:
            with st.container(key="plan_self_contained"):
                st.code(url(base, embedded), language=None, wrap_lines=True)
    saved_plans(base)


SAVED_SHOWN = 50  # most recent saved plans listed


def saved_plans(base: str) -> None:
    """Every saved plan, newest first: its name, when it was saved, its headline then,
    and its short link."""
    plans = db.plans()
    with st.expander(f"Saved plans ({len(plans)})", expanded=False):
        if not plans:
            st.caption("No plan is saved yet. Save this one above to list it here.")
            return
        rows = [
            {
                "name": plan.name or "(no name)",
                "saved": plan.created_at.strftime("%Y-%m-%d %H:%M UTC"),
                "headline then": plan.headline or "-",
                "short link": saved_plan_url(base, plan.id),
            }
            for plan in plans[:SAVED_SHOWN]
        ]
        static_table(rows, key="plan_saved_list")
        if len(plans) > SAVED_SHOWN:
            st.caption(f"The {SAVED_SHOWN} most recent of {len(plans):,} saved plans.")


def charts(result: Recommendation, inputs: PlanInputs) -> None:
    request = result.request
    sharings = list(dict.fromkeys(request.sharings))
    if sum(s.mode == "mig" for s in sharings) > 1 and result.recommended is not None:
        # Every MIG profile: the table above and the chart of seats against latency below
        # compare them; the session charts show the recommended one.
        sharings = [result.recommended.sharing]
        st.caption(
            f"The session charts show {md(result.recommended.sharing.label)}, the "
            "recommended sharing; every profile is compared in the table above and on the "
            "chart of seats against latency below."
        )
    views = st.tabs([s.label for s in sharings]) if len(sharings) > 1 else [st.container()]
    for view, sharing in zip(views, sharings, strict=True):
        mine = [o for o in result.options if o.sharing == sharing]
        counts = chart_counts(mine, request.largest)
        sampled = any(len(c) < c[-1] for c in counts.values())
        try:
            with (
                st.spinner("Simulating every policy at each session count…"),
                cache.working("Charting") as account,
            ):
                rows = cache.sweep(result, sharing, counts, account)
        except OverBudget as exc:
            view.info(
                f"The charts for {sharing.label} are left out: drawing them {exc.problems[0]}."
            )
            continue
        except BadInput as exc:  # not even batch 1 fits in the memory this mode leaves
            view.info(md("; ".join(exc.problems)), icon=":material/memory:")
            continue
        best = mine[0]
        with view:
            left, right = st.columns(2)
            left.plotly_chart(
                sessions_figure(
                    rows, metric="latency", limit=request.criteria.budget_ms, cap=best.cap
                ),
                width="stretch",
                key=f"plan_chart_latency_{sharing.mode}",
            )
            right.plotly_chart(
                sessions_figure(rows, metric="fps", limit=request.criteria.min_fps, cap=best.cap),
                width="stretch",
                key=f"plan_chart_fps_{sharing.mode}",
            )
            if sampled:
                st.caption(
                    f"The session axis is sampled: beyond {CHART_EVERY_COUNT_UPTO} sessions "
                    "each policy is drawn at every count up to 16, at about "
                    f"{CHART_POINTS} evenly spaced counts up to a little past its own cap and "
                    "at the counts its search ran in full (its boundary among them), not at "
                    "every count."
                )
    st.caption(
        "Each point pools all random phase draws: latency is the percentile over every "
        "delivered frame, the frame rate is the slowest session on the worst draw. A policy "
        "holds a seat count when it is inside the budget and above the floor there and at "
        "every smaller count."
    )
    left, right = st.columns(2)
    largest = max([p.batch for p in inputs.fitted.points] + [o.cap + 1 for o in result.options])
    left.plotly_chart(
        fit_figure(
            [Fitted(inputs.curve.label, inputs.curve.points, inputs.fitted)],
            upto=max(8, min(largest, 256)),
            title="The batch curve the plan runs on",
        ),
        width="stretch",
        key="plan_chart_curve",
    )
    right.plotly_chart(
        pareto_figure(result.options, dominated(result.options)),
        width="stretch",
        key="plan_chart_pareto",
    )
    st.caption(
        "Left: latency of one batched call; the shaded band is how far the fit could be off "
        "(optimistic to pessimistic), dotted where it is extrapolated. Right: every option's "
        "seats against its latency at the cap; a hollow grey option is dominated (another "
        "holds as many seats or more at no higher latency). Options with the same seats and "
        "latency share a marker: a label such as “oldest-first and 5 more” stands for "
        "oldest-first and five other options at that point (hover over it for the list)."
    )


def options_table(result: Recommendation) -> None:
    st.subheader("Every option")
    request = result.request
    static_table(
        option_rows(
            result.options,
            dominated(result.options),
            peak_sessions=request.peak_sessions,
            headroom=request.headroom,
            price_per_hour=request.price_per_hour,
        ),
        key="plan_options",
    )
    st.caption(
        "Ranked by seats on the fitted curve, then on the pessimistic edge, then by latency. "
        "Isolation is what the sharing mode guarantees between jobs on the card."
    )


def simulate_link(result: Recommendation, params: PlanParams) -> None:
    """A link to the run behind the headline's reason: the first session count that fails,
    on the random draw (seed) where its slowest session did worst, with the plan's
    calibration and its criteria drawn on the charts (``plan_simulation``); and every
    draw's slowest session, the worst marked."""
    best: Option | None = result.recommended
    if best is None:
        return
    failing = best.history[-1]  # the first failing count (or the cap, when none failed)
    worst = min(range(len(failing.seeds)), key=lambda i: failing.min_fps_by_seed[i])
    seed = failing.seeds[worst]
    detail = plan_simulation(
        params,
        result.request,
        best,
        failing.sessions,
        seed=seed,
        compare_policy=next((o.policy for o in result.options if o.policy != best.policy), None),
    )
    st.page_link(
        "dashboard/pages/simulate.py",
        label=f"See {failing.sessions} sessions under {best.policy} in detail",
        icon=":material/timeline:",
        query_params=encode(detail),
    )
    draws = ", ".join(
        f"**{display.fps(v, unit=False)}** (seed {s}, the worst)" if i == worst
        else f"{display.fps(v, unit=False)}"
        for i, (s, v) in enumerate(zip(failing.seeds, failing.min_fps_by_seed, strict=True))
    )  # fmt: skip
    st.caption(
        f"The link opens seed {seed}, the random phase draw where the slowest of "
        f"{failing.sessions} sessions gets {display.fps(failing.min_fps)}: the plan judges a "
        f"session count by its worst draw. The slowest session on each of the "
        f"{len(failing.seeds)} draws, in fps: {draws}."
    )


# ---------------------------------------------------------------------------------------

db = store()
default = default_curve_or_stop(db, "Plan", "to plan with")
curves = db.curves()
link = url_state.opened(
    PlanParams,
    load_plan=db.plan,
    check=handover.check(
        db, calibration_control.check(db, url_state.curve_check(db, plan_inputs, "plan"))
    ),
)
if link is not None:
    load_curve(c, link.params, default.id)
    loaded = [*CRITERIA, "policies", *WORKER, *QUEUE_FIELDS, *FLEET, *EFFORT, "busy_period_ms"]
    c.load(link.params, [*loaded, "flagged"])
    for name in ("cotenants", "mps_share", "mig_profile", *MODE_MEMORY):
        # Unset, they start from the widget's default when their mode is picked.
        if getattr(link.params, name):
            c.load(link.params, [name])
        else:
            st.session_state.pop(c.key(name), None)
    st.session_state[c.key("modes")] = list(modes_of(link.params))
    url_state.show_ignored(link.ignored)
    handover.opened(c, link.params, db)
    calibration_control.load(link.params)

params = controls(default.id, curves)
demand = handover.demand_controls(c, db)  # drawn even when the rest does not make a plan
if params is None or demand is None:
    st.stop()
# The answer comes first and the calibration control below it, though the control's
# choice is read before the plan is computed: each is drawn into its own slot.
answer_slot, calibration_slot = st.container(), st.container()
with calibration_slot:
    params = calibration_control.choose(replace(params, **demand), db)
url_state.publish(params, extra=handover.view_extras(db))
try:
    inputs = plan_inputs(params, db)
except (BadInput, NotFound) as exc:
    show_problems("This plan cannot be computed:", exc.problems)
    st.stop()
try:
    with (
        st.spinner(
            "Simulating sessions on this curve… (right after the server starts on a new "
            "machine, this first waits a few seconds for the simulator to compile)"
        ),
        cache.working("Planning") as account,
    ):
        result = cache.recommendation(inputs.request, account)
except OverBudget as exc:
    show_over_budget(exc, "plan", command_line("recommend", params))
    st.stop()

with answer_slot:
    if inputs.request.floor_warning is not None:
        st.warning(f"Warning: {inputs.request.floor_warning}.")
    headline(result, inputs, simulated=account.done > 0)
with calibration_slot:
    calibration_control.note(inputs)
profiles_table(result)
stages_view(result)
simulate_link(result, params)
charts(result, inputs)
options_table(result)
st.subheader("Assumptions")
st.markdown(md_list(plan_answer(result).assumptions))
share(params, inputs, result)
handover.sections(result, inputs, params, db)
