"""Process-wide resources of the dashboard.

One ``Store`` per store file and server process, shared by every session. It holds the
DuckDB file only while an operation runs (sessions take turns; each operation has a
connection of its own), so ``planner`` commands can use the same file while the
dashboard runs. Everything a user chooses lives in that user's ``st.session_state`` or
URL, never here.
"""

from __future__ import annotations

import streamlit as st

from planner.paths import default_store_path
from planner.store.repository import Store


def store() -> Store:
    """The store named by ``PLANNER_DB`` (or the per-user default), opened once per file."""
    return _open(str(default_store_path()))


@st.cache_resource(on_release=lambda s: s.close(), show_spinner=False, max_entries=4)
def _open(path: str) -> Store:
    return Store(path)
