"""The Plan page's "Share this plan": save the plan under a short id (with a name), its
self-contained link, and the list of saved plans with their short links."""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from dashboard import url_state
from dashboard.controls import Controls, name_curve
from dashboard.ui import show_problems, table
from planner.curves.curve import MAX_TEXT
from planner.errors import BadInput
from planner.links.urls import saved_params, saved_plan_url, self_contained, url
from planner.plan.params import PlanParams
from planner.plan.resolve import PlanInputs, plan_curve
from planner.store.repository import Store
from planner.text import md
from planner.views.plan import PlanView


def share(c: Controls, db: Store, params: PlanParams, inputs: PlanInputs, view: PlanView) -> None:
    """Save the plan under a short id, its self-contained link, and every saved plan."""
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
                    saved_params(current), name=name or None, headline=view.answer.headline
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
    saved_plans(db, base)


SAVED_SHOWN = 50  # most recent saved plans listed


def saved_plans(db: Store, base: str) -> None:
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
        # A table of plain cells (not Markdown, whose escaping would break the address)
        # whose short links are links.
        table(
            rows,
            key="plan_saved_list",
            column_config={"short link": st.column_config.LinkColumn("short link")},
        )
        if len(plans) > SAVED_SHOWN:
            st.caption(f"The {SAVED_SHOWN} most recent of {len(plans):,} saved plans.")
