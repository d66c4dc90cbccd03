"""The report's Markdown escapes only what would start Markdown syntax (``md(...,
readable=True)``): rendered by a CommonMark renderer with GitHub's tables and
strikethrough, every text reads back as the characters given, and ordinary figures and
names (``44.1 ms``, ``$0.24``, ``budget_ms``) carry no backslash."""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from planner.text import JOINER, md

RENDERER = MarkdownIt("commonmark").enable(["table", "strikethrough"])
MARKDOWN_TEXT = st.text(
    alphabet=st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=60
)


def _rendered_text(markdown: str) -> str:
    """The paragraph markdown-it makes of one line, as text: it must be one paragraph
    with nothing but text in it."""
    out = RENDERER.render(markdown).strip()
    assert out.startswith("<p>") and out.endswith("</p>"), (markdown, out)
    inner = out[3:-4]
    assert "<" not in inner.replace("&lt;", ""), (markdown, out)  # no tag: no markup
    return html.unescape(inner)


@given(MARKDOWN_TEXT | st.sampled_from(["*x*", "_y_", "[a](b)", "<b>x</b>", "`c`", "~~s~~"]))
@example("1. first")
@example("# heading")
@example("- item")
@example("> quote")
@example("---")
@example("===")
@example("+ x")
@example("&amp; &#65;")
@example("a | b")
@example("![img](x)")
@example("__init__")
@example("x_ _y")
@example("\\*")
def test_readable_markdown_renders_as_the_characters_given(text: str) -> None:
    flat = " ".join(text.split())
    if not flat:
        return
    shown = _rendered_text(md(text, readable=True))
    assert shown.replace(JOINER, "") == flat


@pytest.mark.parametrize(
    "text",
    ["44.1 ms", "$0.24 per seat-hour, $1.60 per card-hour", "budget_ms", "p99 (end to end)",
     "5 seats per card!", "3g.40gb", "#3 of 5", "a-b", "-5 ms", "2026-12-02 07:52 UTC"],
)  # fmt: skip
def test_ordinary_figures_and_names_carry_no_escape(text: str) -> None:
    assert md(text, readable=True) == text
    assert _rendered_text(text) == text


def test_maths_and_entities_are_still_escaped() -> None:
    assert md("cost $x$ here", readable=True) == "cost \\$x\\$ here"
    assert md("&amp;", readable=True) == "\\&amp;"
    assert re.fullmatch(r"\\#+ .*", md("## not a heading", readable=True))
