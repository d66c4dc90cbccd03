"""The dashboard's script: what Streamlit runs for every visitor and every rerun.

``app.py`` calls ``main()``; each page in ``dashboard/pages/`` collects inputs, calls the
library and renders what it returns. The pages are listed in ``dashboard/navigation.py``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import streamlit as st

from dashboard.navigation import pages
from dashboard.state import store
from dashboard.ui import show_problems
from planner.errors import PlannerError
from planner.views.work import budget_frames, turns

WORDMARK = Path(__file__).resolve().parent / "assets" / "wordmark.svg"
ICON = Path(__file__).resolve().parent / "assets" / "icon.png"
"""The browser tab's icon, shipped: a Material icon name would be fetched from a font server."""
PRODUCT = "GPU Seat Planner"


def page_title(page: str) -> str:
    """The browser's title of a page: ``Plan — GPU Seat Planner``."""
    return f"{page} — {PRODUCT}"


def prepare() -> None:
    """The server's start-up work, so that the first visitor waits for as little as
    possible: create the store file if there is none (its schema and built-in curves),
    import what the pages draw with, and compile the simulator (or load it from the
    compiled-code cache, where the README's ``planner compile`` put it). Runs on a
    background thread while the server answers."""
    from planner.paths import default_store_path
    from planner.store.repository import Store

    with contextlib.suppress(PlannerError, OSError):  # the page says what is wrong, when asked
        Store(default_store_path()).close()
    import dashboard.charts
    import dashboard.plan_charts
    import dashboard.run_charts
    import dashboard.tables  # noqa: F401
    from planner.views.work import warm_up

    warm_up()


def main() -> None:
    """Lay out the page frame and run the page the visitor is on."""
    st.set_page_config(page_title=PRODUCT, page_icon=str(ICON), layout="wide")
    st.logo(str(WORDMARK), size="large")
    page = st.navigation(pages())
    # The browser's title names the page, so that tabs and history tell pages apart.
    st.set_page_config(page_title=page_title(page.title))
    with st.sidebar:
        st.caption("How many live camera sessions can one GPU hold?")

    try:
        store()
    except PlannerError as exc:  # e.g. a damaged file, or another process held it too long
        show_problems("The curve store cannot be opened.", exc.problems)
        st.stop()
    try:  # the server's own settings, read where every page can say what is wrong
        budget_frames()
        turns()
    except PlannerError as exc:
        show_problems("The server's settings are not valid.", exc.problems)
        st.stop()

    try:
        page.run()
    except PlannerError as exc:
        # The store can fail in the middle of a page (held too long by another process, a
        # full disk): say so in words, never with a traceback. Pages handle their own bad
        # input.
        show_problems("This page stopped.", exc.problems)
