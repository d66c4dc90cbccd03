"""Text that users wrote (curve names, file names, cell values) as literal Markdown.

Two renderers read the planner's Markdown: Streamlit, for the dashboard's labels, alerts,
captions and headings (it escapes HTML, but links, images, colour directives and LaTeX
are live, and in a label an image is fetched and drawn as an icon), and whatever shows
the report's Markdown file (GitHub, a wiki, an e-mail). Text from files, forms and URLs
goes through ``md`` so that both show it as the characters given, never interpreted.
This is the one place that escaping is written; the dashboard and the report call it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Every ASCII punctuation character may be backslash-escaped in CommonMark; escaping all
# of them also disarms Streamlit's own directives (``:red[...]``, ``:material/x:``, ``$``).
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
# For a file people also read as text, only what would start Markdown syntax where it
# stands: emphasis (``*`` anywhere, ``_`` only beside a non-word character, since
# ``budget_ms`` is no emphasis), code, links and images (``[`` and ``]``: a ``(`` or ``!``
# without them is text), HTML and autolinks (``<``), tables, strikethrough, an entity
# (``&`` before ``name;``), and ``$`` only where GitHub could read maths between two of them
# (a ``$`` right after a non-space could close one: ``$0.24 a seat, $1.60 a card`` has
# none). List, heading, quote and rule markers matter only at the start of a line.
_SYNTAX = re.compile(r"([\\`*\[\]<|~])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|&(?=#?\w+;)")
_CLOSING_DOLLAR = re.compile(r"(?<=\S)\$")
_NUMBERED = re.compile(r"^([0-9]{1,9})([.)])(?=\s|$)")
_LINE_START = re.compile(r"^(?:[-+*](?=\s|$)|#(?=[#\s]|$)|>|[-=\s]+$)")
"""A list item, a heading, a quote, or a rule or heading underline, at a line's start."""
# Escapes do not stop GitHub's "autolink literals": the renderer links ``http://…``,
# ``www.…``, ``mailto:…`` and ``name@host`` after escapes are resolved. A word joiner
# (U+2060: no width, no line break) before the ``:`` of such a scheme, the ``@`` of an
# address and the ``.`` after ``www`` breaks each pattern without changing what the
# reader sees.
JOINER = "\u2060"
_AUTOLINK = re.compile(
    r"(?:(?<=http)|(?<=https)|(?<=mailto)|(?<=xmpp))(?=:)|(?<=[\w.+-])(?=@)|(?<=www)(?=\.)",
    re.IGNORECASE,
)


def md(text: object, *, readable: bool = False) -> str:
    r"""``text`` as Markdown that renders exactly as the characters given, on one line,
    with no emphasis, code, link, image, HTML or directive in it.

    By default every ASCII punctuation character is escaped, which Streamlit needs (its
    directives use ``:`` and ``[``). ``readable=True`` escapes only what starts Markdown
    syntax, for a Markdown file that people also read as plain text (the report).

    >>> print(md("**hi** :red[x]"), md("**hi** :red[x]", readable=True))
    \*\*hi\*\* \:red\[x\] \*\*hi\*\* :red\[x\]
    """
    flat = _AUTOLINK.sub(JOINER, " ".join(str(text).split()))
    if not readable:
        return _PUNCTUATION.sub(r"\\\1", flat)
    escaped = _SYNTAX.sub(lambda m: "\\" + m.group(0), flat)
    if _CLOSING_DOLLAR.search(flat):
        escaped = escaped.replace("$", "\\$")
    if _LINE_START.match(escaped):
        return "\\" + escaped
    return _NUMBERED.sub(r"\1\\\2", escaped)


def md_list(items: Iterable[object], *, readable: bool = False) -> str:
    """A Markdown bullet list of literal text items (``md`` on each)."""
    return "\n".join(f"- {md(item, readable=readable)}" for item in items)
