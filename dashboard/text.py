"""Showing text that users wrote (curve names, file names, cell values) safely.

Streamlit renders widget labels, expander and tab labels, alert, caption and heading
bodies as Markdown (HTML is escaped, but links, images, colour directives and LaTeX are
not; in a label an image is fetched and drawn as an icon). Text from files, forms and URLs
goes through ``md`` so it is shown literally, never interpreted: every Markdown
punctuation character is escaped, and the web addresses and mail addresses that GitHub
Markdown turns into links by themselves are interrupted by an invisible character.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Every ASCII punctuation character may be backslash-escaped in CommonMark; escaping all
# of them also disarms Streamlit's own directives (``:red[...]``, ``:material/x:``, ``$``).
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
# Escapes do not stop GitHub's "autolink literals": the renderer links ``http://…``,
# ``www.…``, ``mailto:…`` and ``name@host`` after escapes are resolved. A word joiner
# (U+2060: no width, no line break) before the ``:`` of such a scheme, the ``@`` of an
# address and the ``.`` after ``www`` breaks each pattern without changing what the
# reader sees.
_JOINER = "\u2060"
_AUTOLINK = re.compile(
    r"(?:(?<=http)|(?<=https)|(?<=mailto)|(?<=xmpp))(?=:)|(?<=[\w.+-])(?=@)|(?<=www)(?=\.)",
    re.IGNORECASE,
)


def md(text: object) -> str:
    """``text`` as Markdown that renders exactly as the characters given, on one line,
    with no link, image or directive in it."""
    flat = " ".join(str(text).split())
    return _PUNCTUATION.sub(r"\\\1", _AUTOLINK.sub(_JOINER, flat))


def md_list(items: Iterable[object]) -> str:
    """A Markdown bullet list of literal text items."""
    return "\n".join(f"- {md(item)}" for item in items)
