"""Process-wide resources of the dashboard.

One ``Store`` (one root DuckDB connection) per server process, shared by every session;
the store hands each operation its own cursor, so sessions never share a connection.
"""

from __future__ import annotations

import streamlit as st

from planner.store import Store


@st.cache_resource(on_release=lambda s: s.close(), show_spinner=False)
def store() -> Store:
    """The store named by ``PLANNER_DB`` (or the per-user default)."""
    return Store()
