"""The Plan page's demand over the day (SPEC §5.3): the sidebar's profile and lead time,
and the section that sizes a fleet over the profile — demand and GPUs over the day, the
fixed and autoscaled fleets' costs, every option and every card of the model on the same
demand — with a form that stores a new profile.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dashboard import cache
from dashboard.controls import Controls
from dashboard.ui import show_over_budget, show_problems, table
from planner import display
from planner.demand.fleet import DemandFleet
from planner.demand.profiles import SHAPES, DemandProfile, read_profile_csv, typed_profile
from planner.errors import BadInput, NotFound, PlannerError
from planner.plan.fleet import (
    CardCost,
    card_costs,
    fleet_text,
    option_fleets,
    plan_fleet,
    plan_profile,
    rule_text,
)
from planner.plan.outcomes import Recommendation
from planner.plan.params import PlanParams
from planner.plan.resolve import command_line
from planner.report.figures import demand_figure
from planner.store.repository import Store
from planner.text import md, md_list
from planner.views.work import OverBudget

DEMAND = ("profile", "lead_time_min")
_NOTE = "_handover_note"


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
