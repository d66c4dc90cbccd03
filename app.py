"""GPU Seat Planner dashboard: ``streamlit run app.py``.

A thin layer over the ``planner`` library (``dashboard/main.py`` and its pages). This file
plays two parts:

- ``streamlit run app.py`` imports it to find the server, ``app``, whose start-up compiles
  the simulator on a background thread (or loads it from the compiled-code cache), so the
  first visitor's plan does not wait for the compiler;
- the server runs it as the page script, as ``__main__``, for every visitor and rerun.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import streamlit as st

if __name__ == "__main__":
    from dashboard.main import main

    main()
else:

    @asynccontextmanager
    async def _start(_app: st.App) -> AsyncIterator[None]:
        from dashboard.main import prepare

        threading.Thread(target=prepare, name="prepare-dashboard", daemon=True).start()
        yield

    app = st.App(__file__, lifespan=_start)
