"""From plan to production, on the Plan page: demand over the day, the report to send,
deployment settings to apply, and a comparison with a saved plan (SPEC §5.3).

The Plan page calls these in a few places: ``opened`` when a link opens the page,
``demand_controls`` after the sidebar, ``view_extras`` when it publishes its URL, and
``sections`` at the end. The demand profile and the lead time are plan parameters (in
links and saved plans); the saved plan compared with and the option deployed are view
settings of the page (``PlanParams.views``), kept in its URL next to the plan.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pandas as pd
import streamlit as st

from dashboard import cache, url_state
from dashboard.controls import Controls
from dashboard.state import store
from dashboard.text import md, md_list
from dashboard.ui import show_over_budget, show_problems, table
from planner import display
from planner.demand.fleet import DemandFleet
from planner.demand.profiles import SHAPES, DemandProfile, read_profile_csv, typed_profile
from planner.errors import BadInput, NotFound, PlannerError
from planner.plan.compare_plans import compare_plans, saved_plan
from planner.plan.deploy import choose_option, deployment, option_key
from planner.plan.fleet import (
    CardCost,
    card_costs,
    fleet_text,
    option_fleets,
    plan_fleet,
    plan_profile,
    rule_text,
)
from planner.plan.options import Recommendation
from planner.plan.params import PlanParams
from planner.plan.resolve import PlanInputs, command_line
from planner.report.document import ReportContext
from planner.report.figures import demand_figure
from planner.report.html import html_report
from planner.report.markdown import markdown_report
from planner.sim.policies import POLICIES
from planner.sim.scenario import MODES
from planner.sim.work import OverBudget
from planner.store.repository import Store

DEMAND = ("profile", "lead_time_min")
COMPARE_KEY = "plan_compare_plan"
DEPLOY_KEY = "plan_deploy_option"
_NOTE = "_handover_note"
_OPTION = re.compile(r"^([a-z-]+),([a-z-]+)$")
LANGUAGES = {"json": "json", "yaml": "yaml", "pbtxt": "protobuf", "env": "bash"}


# ---------------------------------------------------------------------------------------
# Opening a link, the sidebar, and the URL.


def check(
    db: Store, inner: Callable[[PlanParams], tuple[PlanParams, list[str]]]
) -> Callable[[PlanParams], tuple[PlanParams, list[str]]]:
    """``inner`` (the page's link check), then: a stored profile the store does not have
    is dropped with a message, the rest of the plan kept."""

    def checked(params: PlanParams) -> tuple[PlanParams, list[str]]:
        params, ignored = inner(params)
        if params.profile is not None and params.profile not in SHAPES:
            try:
                db.profile(params.profile)
            except NotFound:
                ignored.append(
                    f"ignored profile={params.profile!r}: no stored demand profile has that "
                    "name on this server; the plan has no profile"
                )
                params = replace(params, profile=None)
        return params, ignored

    return checked


def opened(c: Controls, params: PlanParams, db: Store) -> None:
    """A link opened the page: put its demand settings into the widgets, and read the
    page's view settings (a saved plan to compare with, an option to deploy) from it."""
    c.load(params, ["lead_time_min"])
    if params.profile is None:
        st.session_state.pop(c.key("profile"), None)
    else:
        c.load(params, ["profile"])
    ignored = []
    compare = _one(st.query_params.get_all("compare_plan"))
    st.session_state.pop(COMPARE_KEY, None)
    if compare is not None:
        plan_id = compare.strip().lower()
        try:
            saved_plan(db, plan_id)
        except (BadInput, NotFound):
            ignored.append(f"ignored compare_plan={compare[:40]!r}: no saved plan with that id")
        else:
            st.session_state[COMPARE_KEY] = plan_id
    option = _one(st.query_params.get_all("deploy_option"))
    st.session_state.pop(DEPLOY_KEY, None)
    if option is not None:
        value = option_value(option)
        if value is not None:
            st.session_state[DEPLOY_KEY] = value
        else:
            ignored.append(
                f"ignored deploy_option={option[:40]!r}: not POLICY,MODE (e.g. triton,exclusive)"
            )
    url_state.show_ignored(ignored)


def option_value(text: object) -> str | None:
    """``text`` as a ``deploy_option`` value (``POLICY,MODE`` of a known policy and sharing
    mode), or None when it is not one (a widget's label, say)."""
    match = _OPTION.match(text.strip().lower()) if isinstance(text, str) else None
    if match and match[1] in POLICIES and match[2] in MODES:
        return f"{match[1]},{match[2]}"
    return None


def _one(values: list[str]) -> str | None:
    return values[-1] if values and values[-1].strip() else None


def demand_controls(c: Controls, db: Store) -> dict[str, Any] | None:
    """The sidebar's demand group; the profile and lead time it holds (None, with the
    problems shown, when they are not valid)."""
    bar = st.sidebar
    bar.markdown("**Demand over the day**")
    stored = [p.name for p in db.profiles()]
    choices: list[str | None] = [*SHAPES, *stored]
    if c.get("profile") not in choices:
        st.session_state[c.key("profile")] = None
    c.select(
        bar,
        "profile",
        "Demand profile",
        choices,
        format_func=lambda name: f"{name} (shape x peak)" if name in SHAPES else str(name),
        placeholder="none (size for the peak only)",
        optional=True,
        help="Concurrent sessions over a day or a week. The built-in shapes are fractions "
        "of the peak sessions (under Fleet and cost), not measured traffic; add your own "
        "under Demand over the day on the page.",
    )
    c.default("lead_time_min", PlanParams.lead_time_min)
    c.number(
        bar,
        "lead_time_min",
        "Autoscaling lead time (min)",
        step=5.0,
        help="Minutes from asking for a GPU to it serving (node start, image pull, model "
        "load). Autoscaling provisions each step for the largest demand that starts within "
        "its end plus this time.",
    )
    values, problems = c.values(list(DEMAND))
    if problems:
        show_problems("These settings do not make a plan:", problems)
        return None
    return values


def view_extras(db: Store) -> dict[str, str]:
    """The page's view settings for its URL (left out at their defaults). Only parameter
    values go in: a saved plan's id that the store holds, a ``POLICY,MODE`` option; a
    widget that holds anything else (a select box hands back the label it showed when its
    choices changed under it) leaves its setting out, and its section puts it right."""
    out = {}
    compare = st.session_state.get(COMPARE_KEY)
    if isinstance(compare, str) and compare in {plan.id for plan in db.plans()}:
        out["compare_plan"] = compare
    option = option_value(st.session_state.get(DEPLOY_KEY))
    if option is not None:
        out["deploy_option"] = option
    return out


# ---------------------------------------------------------------------------------------
# The sections.


def sections(result: Recommendation, inputs: PlanInputs, params: PlanParams, db: Store) -> None:
    """Demand over the day, the report, deployment settings and the comparison."""
    fleet, problem = demand_section(result, params, db)
    report_section(result, inputs, params, fleet, problem)
    deploy_section(result, inputs, params)
    compare_section(params, db)


def demand_section(
    result: Recommendation, params: PlanParams, db: Store
) -> tuple[DemandFleet | None, str | None]:
    """The fleet over the plan's demand profile: a chart of demand and GPUs over time, the
    two provisioning rules' costs, and the model's cards on cost per day."""
    st.subheader("Demand over the day")
    note = st.session_state.pop(_NOTE, None)
    if note is not None:
        kind, text = note
        getattr(st, kind)(text)
    fleet, problem = None, None
    if params.profile is None:
        st.caption(
            "A product owner pays for a fleet over a day, not for one peak. Pick a demand "
            "profile in the sidebar (*Demand over the day*) to see GPUs over the day and "
            "the cost per day of a fixed fleet against autoscaling."
        )
    else:
        try:
            profile = plan_profile(params, db)
        except (BadInput, NotFound) as exc:
            problem = "; ".join(exc.problems)
            st.info(md(problem[:1].upper() + problem[1:]), icon=":material/info:")
        else:
            assert profile is not None
            fleet = plan_fleet(result, profile, params.lead_time_min)
            if fleet is None:
                problem = "No option holds a seat, so there is no fleet to size."
                st.info(problem)
            else:
                _show_fleet(fleet, result)
                _cards(params, profile, db)
    _add_profile(db)
    return fleet, problem


def _show_fleet(fleet: DemandFleet, result: Recommendation) -> None:
    profile = fleet.profile
    st.markdown(
        f"**{md(profile.name)}**: {md(profile.shape)}, peak {profile.peak:,.4g} sessions. "
        f"{md(profile.description)}"
    )
    st.plotly_chart(demand_figure(fleet), width="stretch", key="plan_chart_demand")
    rows = []
    for rule, name in (
        ("fixed", "fixed fleet, sized for the peak"),
        ("autoscaled", f"autoscaling, {fleet.lead_time_min:g} min lead time"),
    ):
        text = rule_text(fleet, rule)
        rows.append(
            {
                "provisioning": name,
                "peak GPUs": text["peak_gpus"],
                "GPU-hours per day": text["gpu_hours_per_day"],
                "per day": text["cost_per_day"],
                "per month": text["cost_per_month"],
                "mean seat utilisation": text["mean_utilisation"],
            }
        )
    table(rows, key="plan_demand_costs")
    if result.request.price_per_hour is None:
        st.caption("No price for this card: set one under *Fleet and cost* for costs.")
    st.caption(md_list(fleet.notes))
    options = option_fleets(result, profile, fleet.lead_time_min)
    if len(options) > 1:
        st.markdown("**Every option on the same demand** (cheapest per day first)")
        table(
            [
                {
                    "option": option.label,
                    "seats per card": option.seats,
                    "GPUs, fixed": text["fixed_peak_gpus"],
                    "per day, fixed": text["fixed_cost_per_day"],
                    "peak GPUs, autoscaled": text["autoscaled_peak_gpus"],
                    "GPU-hours per day, autoscaled": text["autoscaled_gpu_hours_per_day"],
                    "per day, autoscaled": text["autoscaled_cost_per_day"],
                }
                for option, text in ((o, fleet_text(f)) for o, f in options)
            ],
            key="plan_demand_options",
        )


def _cards(params: PlanParams, profile: DemandProfile, db: Store) -> None:
    st.markdown("**Which card is cheapest for this demand?**")
    try:
        with (
            st.spinner("Planning the model's other cards…"),
            cache.working("Comparing cards") as account,
        ):
            rows = card_costs(
                db,
                params,
                profile,
                recommend_with=lambda request: cache.recommendation(request, account),
            )
    except (BadInput, NotFound) as exc:
        st.caption(md("; ".join(exc.problems)))
        return
    except OverBudget as exc:
        command = [*command_line("fleet", params), "--compare-cards"]
        show_over_budget(exc, "comparison of cards", command)
        return
    if not rows:
        st.caption("The store has no whole-card curve of this model to compare.")
        return
    table([_card_row(r) for r in rows], key="plan_demand_cards")
    problems = [f"{r.plan.curve.label}: {p}" for r in rows for p in r.plan.problems]
    if problems:
        st.caption(md_list(problems))
    st.caption(
        "Each card's curve of this model at this input size, planned under the same criteria "
        "(exclusive use, each card's stored price, set on Compare cards, and this plan's own "
        "price for its card); cheapest per day first."
    )


def _card_row(row: CardCost) -> dict[str, Any]:
    plan, text = row.plan, fleet_text(row.fleet)
    best = plan.result.recommended if plan.result is not None else None
    return {
        "card": plan.curve.card,
        "precision": plan.curve.precision or "–",
        "seats per card": best.seats if best is not None else "0",
        "with": best.label if best is not None else "nothing fits",
        "per card-hour": display.money(plan.price_per_hour),
        "GPUs, fixed": text["fixed_peak_gpus"],
        "per day, fixed": text["fixed_cost_per_day"],
        "per day, autoscaled": text["autoscaled_cost_per_day"],
    }


def _add_profile(db: Store) -> None:
    with st.expander("Add a demand profile"):
        st.text_input(
            "Name",
            key="plan_new_profile_name",
            placeholder="e.g. eu-weekdays",
            help="Letters, digits, '.', '_' and '-'.",
        )
        typed, uploaded = st.tabs(["Type hourly values", "Upload a CSV"])
        typed.text_area(
            "24 hourly values (a day) or 168 (a week from Monday 00:00)",
            key="plan_new_profile_values",
            placeholder="e.g. 5, 3, 2, 2, 3, 8, 20, 45, …",
        )
        uploaded.file_uploader(
            "CSV with the columns time and sessions",
            type=["csv", "txt"],
            key="plan_new_profile_file",
            help="One row per step at a regular step; time is a time of day (08:00), a date "
            "and time (2026-11-30T08:00) or hours from the start. A bad file stores nothing.",
        )
        st.button(
            "Save profile",
            key="plan_new_profile_save",
            icon=":material/save:",
            on_click=_save_profile,
            args=(db,),
        )


def _save_profile(db: Store) -> None:
    """The Save button's callback (before the page runs, so it may set the picker)."""
    name = str(st.session_state.get("plan_new_profile_name") or "").strip()
    values = str(st.session_state.get("plan_new_profile_values") or "").strip()
    upload = st.session_state.get("plan_new_profile_file")
    try:
        if not name:
            raise BadInput("give the profile a name")
        if upload is not None:
            profile = read_profile_csv(name, upload.name, upload.getvalue())
        elif values:
            profile = typed_profile(name, values)
        else:
            raise BadInput("type 24 or 168 values, or upload a CSV file")
        stored = db.save_profile(profile)
    except PlannerError as exc:  # a bad file or name; or a store that cannot be written
        st.session_state[_NOTE] = (
            "error",
            "**Nothing was stored.**\n\n" + md_list(exc.problems),
        )
        return
    st.session_state["plan_profile"] = stored.name
    st.session_state[_NOTE] = (
        "success",
        f"Stored profile **{md(stored.name)}** ({md(stored.shape)}); the plan now uses it.",
    )


def report_section(
    result: Recommendation,
    inputs: PlanInputs,
    params: PlanParams,
    fleet: DemandFleet | None,
    problem: str | None,
) -> None:
    """Download the plan as a report: HTML that works offline, and Markdown."""
    st.subheader("Report")
    saved = url_state.saved_plan(PlanParams)
    plan_id = saved[0] if saved is not None and saved[1] == params else None
    ctx = ReportContext(
        params=params,
        inputs=inputs,
        result=result,
        fleet=fleet,
        base=url_state.base_url(),
        plan_id=plan_id,
        profile_problem=problem,
        plan_name=next((p.name for p in store().plans() if p.id == plan_id), None)
        if plan_id
        else None,
    )
    left, right = st.columns(2)
    # Written when a button is pressed, not on every run: the HTML embeds Plotly (~5 MB).
    left.download_button(
        "Download report",
        data=lambda: html_report(ctx),
        file_name=f"{ctx.file_stem}.html",
        mime="text/html",
        key="plan_report_html",
        icon=":material/description:",
        on_click="ignore",
    )
    right.download_button(
        "Download as Markdown",
        data=lambda: markdown_report(ctx),
        file_name=f"{ctx.file_stem}.md",
        mime="text/markdown",
        key="plan_report_markdown",
        on_click="ignore",
    )
    st.caption(
        "One HTML file that opens offline (charts included) with the inputs, the curve and "
        "its band, the seat cap and why, every option with its isolation, fleet and cost, the "
        "demand over the day, the assumptions and the links; the Markdown version has the "
        "same text for a wiki or an e-mail. `planner report` writes the same."
    )


def deploy_section(result: Recommendation, inputs: PlanInputs, params: PlanParams) -> None:
    """The files that apply the recommended (or chosen) option."""
    st.subheader("Deploy")
    holding = [o for o in result.options if o.cap >= 1]
    if not holding or result.recommended is None:
        st.caption("No option holds a seat, so there is nothing to deploy.")
        return
    # A key names a policy and a mode: of several MIG profiles (a plan of every profile)
    # it stands for the best-ranked one, which is the one ``choose_option`` deploys.
    labels: dict[str, str] = {}
    for o in holding:
        labels.setdefault(option_key(o), o.label)
    keys = list(labels)
    recommended = option_key(result.recommended)
    chosen_key = st.session_state.get(DEPLOY_KEY)
    if chosen_key == recommended or (chosen_key is not None and option_value(chosen_key) is None):
        # The recommended option, or a label the select box handed back when its choices
        # changed under it (another curve, another sharing mode): the recommended option.
        st.session_state[DEPLOY_KEY] = None
    elif chosen_key is not None and chosen_key not in keys:
        st.info(
            f"The link asked to deploy {md(chosen_key)}, which holds no seat in this plan; "
            "showing the recommended option."
        )
        st.session_state[DEPLOY_KEY] = None
    st.selectbox(
        "Option to deploy",
        [None, *[k for k in keys if k != recommended]],
        key=DEPLOY_KEY,
        format_func=lambda k: (
            f"the recommended option ({labels[recommended]})" if k is None else labels[k]
        ),
    )
    option = choose_option(result, st.session_state.get(DEPLOY_KEY))
    try:
        files = deployment(result, option, inputs.card)
    except BadInput as exc:  # pragma: no cover - every option offered holds a seat
        show_problems("Nothing to deploy:", exc.problems)
        return
    for file in files:
        with st.container(key=f"plan_deploy_{file.name.replace('.', '_')}"):
            st.markdown(f"**{file.name}**")
            st.caption(md(file.assumption))
            st.code(file.text, language=LANGUAGES[file.format], wrap_lines=True)
            st.download_button(
                f"Download {file.name}",
                data=file.text,
                file_name=file.name,
                key=f"plan_deploy_download_{file.name}",
                on_click="ignore",
            )
    command = [*command_line("recommend", params)]
    command[1] = "deploy"
    if st.session_state.get(DEPLOY_KEY):
        command += ["--option", str(st.session_state[DEPLOY_KEY])]
    st.caption("The same files from the command line:")
    st.code(shlex.join(command), language="bash", wrap_lines=True)


def compare_section(params: PlanParams, db: Store) -> None:
    """This plan beside a saved one: the inputs that differ, then what each gives."""
    st.subheader("Compare with a saved plan")
    saved = {plan.id: plan for plan in db.plans()}
    ids = list(saved)
    if st.session_state.get(COMPARE_KEY) not in [None, *ids]:
        st.session_state[COMPARE_KEY] = None
    st.selectbox(
        "Saved plan",
        [None, *ids],
        key=COMPARE_KEY,
        format_func=lambda i: (
            "none"
            if i is None
            else f"{saved[i].name or i} (saved {saved[i].created_at.strftime('%Y-%m-%d %H:%M')})"
        ),
        help="Save plans with Save plan under Share this plan; open one (?plan=ID) and pick "
        "another here to compare two saved plans.",
    )
    other = st.session_state.get(COMPARE_KEY)
    if other is None:
        st.caption("What did a larger budget or another card buy? Pick a saved plan to compare.")
        return
    current = url_state.saved_plan(PlanParams)
    try:
        b = saved_plan(db, other)
        with (
            st.spinner("Planning the saved plan…"),
            cache.working("Comparing plans") as account,
        ):
            comparison = compare_plans(
                db,
                params,
                b,
                a_id=current[0] if current is not None and current[1] == params else None,
                b_id=other,
                recommend_with=lambda request: cache.recommendation(request, account),
            )
    except (BadInput, NotFound) as exc:
        show_problems("That plan cannot be compared:", exc.problems)
        return
    except OverBudget as exc:
        show_over_budget(exc, "saved plan", command_line("recommend", b))
        return
    a_name = f"this plan ({comparison.a.plan_id})" if comparison.a.plan_id else "this plan"
    b_name = f"saved plan {other}"
    differing = comparison.differing
    if differing:
        st.markdown(f"**{len(differing)} input(s) differ:**")
    else:
        st.markdown("**The two plans have the same inputs.**")
    rows = [
        {"input": r.name, a_name: r.a or "–", b_name: r.b or "–", "differs": r.differs}
        for r in sorted(comparison.inputs, key=lambda r: not r.differs)
    ]
    frame = pd.DataFrame(rows)
    styled = frame.style.apply(
        lambda row: (
            ["background-color: rgba(255, 196, 0, 0.25)" if row["differs"] else ""] * len(row)
        ),
        axis=1,
    )
    with st.container(key="plan_compare_inputs"):
        st.dataframe(styled, hide_index=True)
    table(
        [{"": what, a_name: x, b_name: y} for what, x, y in comparison.outcome_rows()],
        key="plan_compare_outcomes",
    )
    for side in (comparison.a, comparison.b):
        if side.problems:
            st.caption(md_list([f"{side.name}: {p}" for p in side.problems]))
    if comparison.a.plan_id is None:
        st.caption(
            "Save this plan (Save plan, under Share this plan) to get the command that makes "
            "this comparison from the command line."
        )
    else:
        command = shlex.join(compare_command(comparison.a.plan_id, other))
        st.caption("The same from the command line:")
        st.code(command, language="bash", wrap_lines=True)


def compare_command(a_id: str, b_id: str) -> list[str]:
    """The ``planner compare-plans`` command line comparing two saved plans."""
    return ["planner", "compare-plans", a_id, b_id, "--json"]
