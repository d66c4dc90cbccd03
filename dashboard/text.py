"""Showing text that users wrote (curve names, file names, cell values) safely.

Streamlit renders alert, caption and heading bodies as Markdown (HTML is escaped, but
links, images, colour directives and LaTeX are not). Text from files, forms and URLs goes
through ``md`` so it is shown literally, never interpreted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Every ASCII punctuation character may be backslash-escaped in CommonMark; escaping all
# of them also disarms Streamlit's own directives (``:red[...]``, ``:material/x:``, ``$``).
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def md(text: object) -> str:
    """``text`` as Markdown that renders exactly as the characters given, on one line."""
    flat = " ".join(str(text).split())
    return _PUNCTUATION.sub(r"\\\1", flat)


def md_list(items: Iterable[object]) -> str:
    """A Markdown bullet list of literal text items."""
    return "\n".join(f"- {md(item)}" for item in items)
