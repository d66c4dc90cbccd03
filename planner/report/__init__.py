"""A plan report to send (SPEC §5.3): the document, rendered as self-contained HTML and
as Markdown, and the Plotly figures it shares with the dashboard."""
