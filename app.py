"""GPU Seat Planner dashboard: ``streamlit run app.py``.

A thin layer over the ``planner`` library: each page collects inputs, calls the library
and renders what it returns.
"""

from __future__ import annotations

import streamlit as st

from dashboard.state import store

st.set_page_config(page_title="GPU Seat Planner", page_icon=":material/memory:", layout="wide")

st.title("GPU Seat Planner")
st.caption("How many live camera sessions can one GPU hold?")

curves = store().curves()
st.subheader("Stored batch curves")
st.dataframe(
    [
        {
            "id": c.id,
            "model": c.model,
            "card": c.card,
            "precision": c.precision or "",
            "resolution": c.resolution or "",
            "source": c.source,
            "batches": ", ".join(map(str, c.batches)),
            "latency (ms)": ", ".join(f"{v:g}" for v in c.latencies),
        }
        for c in curves
    ],
    hide_index=True,
    key="curves_table",
)
