"""The Plan page's link beyond the plan itself: a check of the demand profile it names,
and the page's view settings (a saved plan to compare with, an option to deploy), read
when a link opens the page and written back when the page publishes its URL. The demand
profile and the lead time are plan parameters (in links and saved plans); the saved plan
compared with and the option deployed are view settings (``PlanParams.views``), kept in
the page's URL next to the plan.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

import streamlit as st

from dashboard import url_state
from dashboard.controls import Controls
from planner.demand.profiles import SHAPES
from planner.errors import BadInput, NotFound
from planner.plan.compare_plans import saved_plan
from planner.plan.params import PlanParams
from planner.store.repository import Store
from planner.views.choices import MODES, POLICIES

COMPARE_KEY = "plan_compare_plan"
DEPLOY_KEY = "plan_deploy_option"

_OPTION = re.compile(r"^([a-z-]+),([a-z-]+)$")


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
