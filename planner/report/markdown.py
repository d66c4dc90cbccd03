"""The plan report as Markdown: the document's blocks, every piece of text escaped so that
it reads as itself (``planner.text``), readable as plain text too."""

from __future__ import annotations

from planner import __version__
from planner.report.document import (
    Block,
    Bullets,
    Chart,
    Link,
    Metrics,
    ReportContext,
    Table,
    Text,
    report_sections,
)
from planner.text import md as literal


def md(text: object) -> str:
    """``text`` as literal Markdown on one line, readable as plain text (``planner.text``)."""
    return literal(text, readable=True)


def markdown_report(ctx: ReportContext) -> str:
    """The report in Markdown: the same sections and tables; charts are in the HTML."""
    lines = [f"# {md(ctx.headline)}", "", md(ctx.title), ""]
    for section in report_sections(ctx):
        lines += [f"## {md(section.title)}", ""]
        for block in section.blocks:
            lines += [*_md_block(block), ""]
    lines.append(
        f"_Written by GPU Seat Planner {md(__version__)} on "
        f"{md(ctx.generated_at.strftime('%Y-%m-%d %H:%M UTC'))}\\._"
    )
    return "\n".join(lines) + "\n"


def _md_block(block: Block) -> list[str]:
    if isinstance(block, Text):
        lead = f"**{md(block.lead.strip())}** " if block.lead else ""
        return [lead + md(block.text)]
    if isinstance(block, Table):
        header = [md(h) or " " for h in block.header]
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(md(c) for c in row) + " |" for row in block.rows]
        return out
    if isinstance(block, Bullets):
        return [f"- {md(item)}" for item in block.items]
    if isinstance(block, Metrics):
        return [f"- **{md(what)}:** {md(value)}" for what, value in block.items]
    if isinstance(block, Chart):
        return [f"_Chart in the HTML version: {md(block.title)}\\._"]
    if isinstance(block, Link):
        # A code span shows the address literally; a backtick in it would end the span.
        return [f"**{md(block.what)}:** `{block.address.replace('`', '%60')}`"]
    raise TypeError(f"not a block: {block!r}")  # pragma: no cover
