"""The Streamlit dashboard's pages and helpers (everything that imports Streamlit)."""
