"""The calibration of the Plan and Simulate pages: which of the curve's calibrations the
plan (or the run) pins, and a line saying whether and by which load test its figures are
calibrated (SPEC §5.2).

A link pins a calibration by id (``calibration=ID``); without one the plan is
uncalibrated, so a calibration made later never changes what an older link shows. A page
therefore starts uncalibrated and offers the curve's calibrations in a control; a plan's
link to the Simulate page carries the plan's calibration, so the run it opens is the one
the plan judged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

import streamlit as st

from planner.errors import NotFound, PlannerError
from planner.plan.params import PlanParams, SimulateParams
from planner.plan.resolve import PlanInputs, SimulationInputs, plan_curve
from planner.store.calibrations import calibration, calibrations
from planner.store.repository import Store
from planner.text import md

KEY = "plan_calibration"
"""The Plan page's control; the Simulate page passes its own key."""
NONE = "none"
P = TypeVar("P", bound=PlanParams | SimulateParams)


def check(
    db: Store, inner: Callable[[P], tuple[P, list[str]]]
) -> Callable[[P], tuple[P, list[str]]]:
    """A link ``check`` (``dashboard.url_state.opened``): a calibration this store does not
    hold, or one of another curve, is dropped with a message; then ``inner`` runs."""

    def run(params: P) -> tuple[P, list[str]]:
        ignored: list[str] = []
        what = "plan" if isinstance(params, PlanParams) else "run"
        if params.calibration is not None:
            try:
                found = calibration(db, params.calibration)
                curve = plan_curve(params, db)
                if found.curve_id != curve.id:
                    ignored.append(
                        f"ignored calibration={params.calibration}: it belongs to another "
                        f"curve; the {what} is not calibrated"
                    )
                    params = replace(params, calibration=None)
            except NotFound:
                ignored.append(
                    f"ignored calibration={params.calibration}: no stored calibration has "
                    f"that id; the {what} is not calibrated"
                )
                params = replace(params, calibration=None)
            except PlannerError:
                pass  # the curve itself is wrong: ``inner`` says so
        params, more = inner(params)
        return params, [*ignored, *more]

    return run


def load(params: PlanParams | SimulateParams, key: str = KEY) -> None:
    """Put an opened link's calibration into the control (before it is drawn)."""
    st.session_state[key] = params.calibration or NONE


def choose(params: P, db: Store, key: str = KEY) -> P:
    """The control: no calibration, or one of the curve's (newest first); ``params`` with
    the choice pinned."""
    try:
        found = calibrations(db, plan_curve(params, db).id)
    except PlannerError:
        return params
    names = {c.id: f"{c.id}: {c.source}" for c in found}
    options = [NONE, *names]
    if st.session_state.get(key) not in options:
        st.session_state[key] = NONE  # another curve: its calibrations are not this one's
    chosen = st.selectbox(
        "Calibration by a load test",
        options,
        key=key,
        format_func=lambda c: "none: the model's figures" if c == NONE else names[c],
        help="A load test of a real worker (Validate page, planner loadtest) calibrates "
        "the curve: extra time per batch and per frame. The link pins the one chosen.",
        disabled=not found,
    )
    return replace(params, calibration=None if chosen == NONE else chosen)


def note(inputs: PlanInputs | SimulationInputs) -> None:
    """One line next to the seat cap: whether and by which load test it is calibrated."""
    if inputs.calibration is not None:
        st.caption(md(inputs.calibration.description))
    elif inputs.latest is not None:
        st.caption(
            f"Not calibrated: these are the model's figures. The curve has calibration "
            f"{inputs.latest.id} from {md(inputs.latest.source)} (choose it under "
            "*Calibration by a load test*)."
        )
    else:
        st.caption("Not calibrated: no load test has calibrated this curve yet (Validate page).")
