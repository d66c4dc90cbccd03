"""The dashboard's pages: one entry per page, in the order the sidebar lists them.

The first entry is the landing page, which Streamlit serves at ``/`` (not at its own
path), so links to it are ``/?…``. Adding a page is one line here plus its script in
``dashboard/pages/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st
from streamlit.navigation.page import StreamlitPage

from planner.links.parameters import ParameterSet
from planner.plan.params import CompareParams, PlanParams, SimulateParams
from planner.studies.params import StudyParams

PAGES_DIR = Path(__file__).resolve().parent / "pages"


@dataclass(frozen=True)
class PageEntry:
    """A page: its script in ``dashboard/pages/``, sidebar title and icon, URL path, and
    the link parameters it reads from the URL (if any)."""

    script: str
    title: str
    icon: str
    url_path: str
    params: type[ParameterSet] | None = None


PAGES: tuple[PageEntry, ...] = (
    PageEntry("plan.py", "Plan", ":material/event_seat:", "plan", PlanParams),
    PageEntry("curves.py", "Curves", ":material/show_chart:", "curves"),
    PageEntry("simulate.py", "Simulate", ":material/timeline:", "simulate", SimulateParams),
    PageEntry("measure.py", "Measure", ":material/speed:", "measure"),
    PageEntry("compare.py", "Compare cards", ":material/compare_arrows:", "compare", CompareParams),
    PageEntry("studies.py", "Studies", ":material/grid_on:", "studies", StudyParams),
    PageEntry("validate.py", "Validate", ":material/fact_check:", "validate"),
)


def pages() -> list[StreamlitPage]:
    """The ``st.Page`` objects for ``st.navigation``; the first is the default page."""
    return [
        st.Page(
            PAGES_DIR / entry.script,
            title=entry.title,
            icon=entry.icon,
            url_path=entry.url_path,
            default=index == 0,
        )
        for index, entry in enumerate(PAGES)
    ]
