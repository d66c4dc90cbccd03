"""The Plan page's comparison with a saved plan: the inputs that differ, then what each
plan gives (``planner.plan.compare_plans``), and the command line that does the same."""

from __future__ import annotations

import shlex

import pandas as pd
import streamlit as st

from dashboard import cache, url_state
from dashboard.plan_url import COMPARE_KEY
from dashboard.ui import show_over_budget, show_problems, table
from planner.errors import BadInput, NotFound
from planner.plan.compare_plans import compare_plans, saved_plan
from planner.plan.params import PlanParams
from planner.plan.resolve import command_line
from planner.store.repository import Store
from planner.text import md_list
from planner.views.work import OverBudget


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
