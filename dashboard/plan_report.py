"""The Plan page's report section: the plan as a report to download, HTML that works
offline and Markdown (``planner.report``)."""

from __future__ import annotations

import streamlit as st

from dashboard import url_state
from dashboard.state import store
from planner.demand.fleet import DemandFleet
from planner.plan.outcomes import Recommendation
from planner.plan.params import PlanParams
from planner.plan.resolve import PlanInputs
from planner.report.document import ReportContext
from planner.report.html import html_report
from planner.report.markdown import markdown_report


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
