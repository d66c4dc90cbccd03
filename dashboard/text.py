"""Showing text that users wrote (curve names, file names, cell values) safely.

Streamlit renders widget labels, expander and tab labels, alert, caption and heading
bodies as Markdown (HTML is escaped, but links, images, colour directives and LaTeX are
not; in a label an image is fetched and drawn as an icon). Text from files, forms and URLs
goes through ``md`` so it is shown literally, never interpreted. The escaping itself is the
library's (``planner.text``), shared with the report: every Markdown punctuation character
is escaped, and the web and mail addresses that GitHub Markdown turns into links by
themselves are interrupted by an invisible character.
"""

from __future__ import annotations

from collections.abc import Iterable

from planner import text


def md(value: object) -> str:
    """``value`` as Markdown that renders exactly as the characters given, on one line,
    with no link, image or directive in it."""
    return text.md(value)


def md_list(items: Iterable[object]) -> str:
    """A Markdown bullet list of literal text items."""
    return text.md_list(items)
