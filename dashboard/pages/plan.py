"""Plan: how many live sessions one card holds under a latency budget and a frame-rate
floor, with which scheduling policy and sharing mode, and what a fleet costs."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path

import streamlit as st

from dashboard import (
    cache,
    calibration_control,
    plan_compare,
    plan_demand,
    plan_deploy,
    plan_report,
    plan_share,
    plan_url,
    url_state,
    worker_controls,
)
from dashboard.charts import Fitted, fit_figure
from dashboard.controls import QUEUE_FIELDS, Controls, load_curve
from dashboard.plan_charts import pareto_figure, sessions_figure, stages_figure
from dashboard.plan_controls import CRITERIA, EFFORT, FLEET, MODE_MEMORY, WORKER, controls
from dashboard.state import store
from dashboard.ui import (
    default_curve_or_stop,
    show_over_budget,
    show_problems,
    static_table,
)
from planner.demand.profiles import HOURS_PER_MONTH
from planner.errors import BadInput, NotFound
from planner.limits import UNCALIBRATED_MARGIN
from planner.links.urls import encode
from planner.plan.answer import Paragraph
from planner.plan.mig_profiles import plans_every_profile
from planner.plan.outcomes import Recommendation
from planner.plan.params import PlanParams
from planner.plan.pareto import dominated
from planner.plan.recommend import CHART_EVERY_COUNT_UPTO, CHART_POINTS, chart_counts
from planner.plan.resolve import (
    BATCHER,
    PlanInputs,
    command_line,
    modes_of,
    pin_batcher,
    plan_curve,
    plan_inputs,
)
from planner.text import md, md_list
from planner.views.plan import PlanView, plan_view
from planner.views.work import OverBudget

c = Controls("plan_")
MARGIN_KEY = "plan_margin"
"""The margin version the page's plan pins: an opened link's (None for none), else the
current one."""
STYLE = Path(__file__).resolve().parent.parent / "assets" / "plan.css"
"""How the page lays out on a narrow screen (a phone), where Streamlit's own layout does
not suffice."""


def paragraph(part: Paragraph, hint: str = "") -> str:
    """One paragraph of the answer as Markdown: its lead in bold, then its text (and a
    pointer to this page's controls), then its items as a list. The answer's sentences
    are the library's own words, so they are not escaped."""
    lines = [" ".join(x for x in (f"**{part.lead}**", part.text, hint) if x)]
    return "\n".join([*lines, *(f"- {item}" for item in part.items)])


def headline(view: PlanView, result: Recommendation, inputs: PlanInputs, simulated: bool) -> None:
    """The answer (``planner.plan.answer``), the figures at the cap, and what to measure."""
    answer = view.answer
    with st.container(key="headline"):
        st.title(answer.headline)
        with st.container(key="plan_plain"):
            st.markdown(md(answer.plain))
        if answer.instances is not None:
            st.markdown(paragraph(answer.instances, "Say otherwise under *Fleet and cost*."))
        st.markdown(paragraph(answer.why))
    n = result.simulations
    if not simulated:
        runs = "answered from the cache (nothing new to simulate)"
    elif n:
        runs = f"simulated ({n:,} {'run' if n == 1 else 'runs'})"
    else:  # new criteria judged on runs made before (a floor change, say)
        runs = "judged on runs already simulated (no new run)"
    st.caption(f"{md(inputs.curve.label)} · {len(result.options)} options {runs}")
    if inputs.curve.flag:
        st.warning(
            f"**This curve is flagged: {md(inputs.curve.flag)}.** Its points may not be what "
            "the card does on an idle device; measure it again before relying on this plan.",
            icon=":material/warning:",
        )
    figures(view)
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


def figures(view: PlanView) -> None:
    """The recommended option's figures (seats, latency and the slowest session at the
    cap, GPUs for the peak) and what a seat costs."""
    if not view.figures:
        return
    cells = st.columns(4)
    for cell, metric in zip(cells, view.figures, strict=False):
        cell.metric(metric.label, metric.value, help=metric.help or None)
    if view.cost is not None:
        with st.container(key="plan_cost"):
            st.markdown(md(view.cost))


def profiles_table(view: PlanView, result: Recommendation) -> None:
    """Every MIG profile of the card side by side, where the plan asks for them all
    (``planner.plan.mig_profiles``)."""
    if view.profiles is None:
        return
    st.subheader("Every MIG profile of this card")
    static_table(view.profiles.records, key="plan_profiles")
    st.caption(
        md(view.profiles_note)
        + (
            f" A month is {HOURS_PER_MONTH} hours (30 days around the clock)."
            if result.request.price_per_hour is not None
            else " Set a price under *Fleet and cost* to compare what a seat costs."
        )
    )


def stages_view(view: PlanView, result: Recommendation) -> None:
    """Where a frame's end-to-end time goes at the cap, stage by stage, and how busy the
    CPU threads are there."""
    best = result.recommended
    at = best.at_cap if best is not None else None
    if view.stages is None or best is None or at is None or at.stages is None:
        return
    st.plotly_chart(stages_figure(at.stages, best.cap), width="stretch", key="plan_chart_stages")
    with st.expander("Latency by stage at the cap, in ms"):
        static_table(view.stages.records, key="plan_stages")
    st.caption(md(view.stages_note))


def charts(view: PlanView, result: Recommendation, inputs: PlanInputs) -> None:
    request = result.request
    sharings = list(dict.fromkeys(request.sharings))
    if plans_every_profile(result) and result.recommended is not None:
        # Every MIG profile: the table above and the chart of seats against latency below
        # compare them; the session charts show the recommended one.
        sharings = [result.recommended.sharing]
        st.caption(
            f"The session charts show {md(result.recommended.sharing.label)}, the "
            "recommended sharing; every profile is compared in the table above and on the "
            "chart of seats against latency below."
        )
    tabs = st.tabs([s.label for s in sharings]) if len(sharings) > 1 else [st.container()]
    for tab, sharing in zip(tabs, sharings, strict=True):
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
            tab.info(
                f"The charts for {sharing.label} are left out: drawing them {exc.problems[0]}."
            )
            continue
        except BadInput as exc:  # not even batch 1 fits in the memory this mode leaves
            tab.info(md("; ".join(exc.problems)), icon=":material/memory:")
            continue
        best = mine[0]
        with tab:
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
                    "The session axis is sampled, as a cap here lies beyond "
                    f"{CHART_EVERY_COUNT_UPTO} sessions: each policy is drawn at every count "
                    f"up to 16, then at about {CHART_POINTS} evenly spaced counts up to a "
                    "little past its own cap and at the counts its search ran in full (its "
                    "boundary among them), not at every count."
                )
    st.caption(
        "Each point pools all random phase draws: latency is the percentile over every "
        "delivered frame, the frame rate is the slowest session on the worst draw. A policy "
        "holds a seat count when it is inside the budget and above the floor there and at "
        "every smaller count."
    )
    left, right = st.columns(2)
    left.plotly_chart(
        fit_figure(
            [Fitted(inputs.curve.label, inputs.curve.points, inputs.fitted)],
            upto=view.curve_upto,
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
    # Named by their titles, not by side: on a phone the two columns stack.
    st.caption(
        "*The batch curve the plan runs on*: latency of one batched call; the shaded band is "
        "how far the fit could be off (optimistic to pessimistic), dotted where it is "
        "extrapolated. *Seats per card against latency at the cap*: every option's "
        "seats (its range as error bars) against its latency at the cap; a hollow grey "
        "option is dominated (another holds as many seats or more at each end of its range "
        "and at the likely count, at no higher latency). Options with the same seats and "
        "latency share a marker: a label such as “oldest-first and 5 more” stands for "
        "oldest-first and five other options at that point (hover over it for the list)."
    )


def options_table(view: PlanView) -> None:
    st.subheader("Every option")
    with st.container(key="plan_options_swipe"):
        st.caption("On a narrow screen the table scrolls sideways: swipe it for every column.")
    static_table(view.options.records, key="plan_options")
    st.caption(md(view.options_note))


def simulate_link(view: PlanView) -> None:
    """A link to the run behind the headline's reason (``planner.views.plan.DetailRun``),
    and every draw's slowest session, the worst marked."""
    detail = view.detail
    if detail is None:
        return
    st.page_link(
        "dashboard/pages/simulate.py",
        label=detail.label,
        icon=":material/timeline:",
        query_params=encode(detail.params),
    )
    # Numbers and the planner's own words: nothing in it is a person's text.
    st.caption(detail.sentence(lambda text: f"**{text}**"))


# ---------------------------------------------------------------------------------------

st.html(STYLE)
db = store()
default = default_curve_or_stop(db, "Plan", "to plan with")
curves = db.curves()
link = url_state.opened(
    PlanParams,
    load_plan=db.plan,
    check=plan_url.check(
        db, calibration_control.check(db, url_state.curve_check(db, plan_inputs, "plan"))
    ),
)
if link is not None:
    load_curve(c, link.params, default.id)
    loaded = [*CRITERIA, "policies", *BATCHER, *WORKER, *QUEUE_FIELDS, *FLEET, *EFFORT,
              "busy_period_ms"]  # fmt: skip
    c.load(link.params, [*loaded, "flagged"])
    for name in ("cotenants", "mps_share", "mig_profile", *MODE_MEMORY):
        # Unset, they start from the widget's default when their mode is picked.
        if getattr(link.params, name):
            c.load(link.params, [name])
        else:
            st.session_state.pop(c.key(name), None)
    worker_controls.opened(c, link.params)
    st.session_state[c.key("modes")] = list(modes_of(link.params))
    url_state.show_ignored(link.ignored)
    plan_url.opened(c, link.params, db)
    calibration_control.load(link.params)
    # A link pins its margin, or none (a link from before it keeps the band's range).
    st.session_state[MARGIN_KEY] = link.params.margin

params = controls(c, db, default, curves)
demand = plan_demand.demand_controls(c, db)  # drawn even when the rest does not make a plan
if params is None or demand is None:
    st.stop()
# A plan opened afresh pins the current margin of the uncalibrated range (SPEC §6.2).
params = replace(params, margin=st.session_state.get(MARGIN_KEY, UNCALIBRATED_MARGIN))
# The answer comes first and the calibration control below it, though the control's
# choice is read before the plan is computed: each is drawn into its own slot.
answer_slot, calibration_slot = st.container(), st.container()
with calibration_slot:
    params = calibration_control.choose(replace(params, **demand), db)
with contextlib.suppress(BadInput, NotFound):  # a wrong curve: computing the plan says so
    # The batcher settings taken from the server the curve was measured on go into the
    # link, which then pins them.
    params = pin_batcher(params, plan_curve(params, db))
url_state.publish(params, extra=plan_url.view_extras(db))
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

saved = url_state.saved_plan(PlanParams)
view = plan_view(
    params,
    inputs,
    result,
    base=url_state.base_url(),
    plan_id=saved[0] if saved is not None and saved[1] == params else None,
)
with answer_slot:
    if inputs.request.floor_warning is not None:
        st.warning(f"Warning: {inputs.request.floor_warning}.")
    headline(view, result, inputs, simulated=account.done > 0)
with calibration_slot:
    calibration_control.note(inputs)
profiles_table(view, result)
stages_view(view, result)
simulate_link(view)
charts(view, result, inputs)
options_table(view)
st.subheader("Assumptions")
st.markdown(md_list(view.assumptions))
plan_share.share(c, db, params, inputs, view)
# From plan to production: demand over the day, the report, deployment, a saved plan.
fleet, problem = plan_demand.demand_section(result, params, db)
plan_report.report_section(result, inputs, params, fleet, problem)
plan_deploy.deploy_section(result, inputs, params)
plan_compare.compare_section(params, db)
