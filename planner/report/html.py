"""The plan report as one self-contained HTML file: the document's blocks rendered with
``html.escape`` for every piece of text, Plotly's script embedded once before the first
chart (nothing is fetched when the file is opened), links only to ``http(s)`` addresses."""

from __future__ import annotations

import html
from urllib.parse import urlsplit

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

PROSE_CHARS = 40
"""A table's column with a cell longer than this is prose, kept readably wide."""

_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0;
       color: #1f2328; background: #fff; line-height: 1.45; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 32px 64px; }
h1 { font-size: 1.9rem; margin: 0.2rem 0 0.6rem; }
h2 { font-size: 1.3rem; margin-top: 2.2rem; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
.kicker { color: #57606a; margin: 0; text-transform: uppercase; letter-spacing: 0.06em;
          font-size: 0.8rem; }
.table { overflow-x: auto; max-width: 100%;
         background: linear-gradient(to right, #fff 30%, rgba(255,255,255,0)) left / 24px 100%,
                     linear-gradient(to left, #fff 30%, rgba(255,255,255,0)) right / 24px 100%,
                     radial-gradient(farthest-side at 0 50%, rgba(0,0,0,.25), transparent)
                       left / 12px 100%,
                     radial-gradient(farthest-side at 100% 50%, rgba(0,0,0,.25), transparent)
                       right / 12px 100%;
         background-repeat: no-repeat; background-attachment: local, local, scroll, scroll; }
.prose { min-width: 14em; }
p, li { overflow-wrap: anywhere; }  /* a command line's long points break, not the page */
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.9rem; }
@media (max-width: 600px) { main { padding: 16px 12px 48px; } }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
.metrics { display: flex; flex-wrap: wrap; gap: 12px; margin: 1rem 0; }
.metric { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 14px; min-width: 150px; }
.metric .label { color: #57606a; font-size: 0.8rem; }
.metric .value { font-size: 1.4rem; font-weight: 600; }
/* A long title never widens the page. */
.chart { margin: 1rem 0; overflow: hidden; position: relative; }
code, .address { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 0.85rem;
                 word-break: break-all; }
footer { color: #57606a; font-size: 0.8rem; margin-top: 3rem; }
"""


def html_report(ctx: ReportContext) -> str:
    """The report as one self-contained HTML document (Plotly's script embedded once)."""
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(ctx.title)}</title>",
        f"<style>{_CSS}</style></head><body><main>",
        '<p class="kicker">GPU Seat Planner · plan report</p>',
        f'<h1 id="headline">{e(ctx.headline)}</h1>',
        f"<p>{e(ctx.title)}</p>",
    ]
    script_written = False
    for section in report_sections(ctx):
        parts.append(f'<section id="{e(section.id)}"><h2>{e(section.title)}</h2>')
        for block in section.blocks:
            if isinstance(block, Chart):
                parts.append(
                    '<div class="chart">'
                    + block.figure.to_html(
                        include_plotlyjs=not script_written,
                        full_html=False,
                        div_id=block.id,
                        config={"displaylogo": False, "responsive": True},
                    )
                    + "</div>"
                )
                script_written = True
            else:
                parts.append(_html_block(block))
        parts.append("</section>")
    parts.append(
        f"<footer>Written by GPU Seat Planner {e(__version__)} on "
        f"{e(ctx.generated_at.strftime('%Y-%m-%d %H:%M UTC'))}. The figures are simulations "
        "on a fitted curve; the assumptions above say what they rest on.</footer>"
    )
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"


def _html_block(block: Block) -> str:
    e = html.escape
    if isinstance(block, Text):
        lead = f"<strong>{e(block.lead)}</strong>" if block.lead else ""
        return f"<p>{lead}{e(block.text)}</p>"
    if isinstance(block, Table):
        # A column of sentences keeps a readable width on a narrow screen (not one word a
        # line); the table then scrolls in its box, whose edge shadows say there is more.
        prose = [
            any(len(str(r[i])) > PROSE_CHARS for r in block.rows) for i in range(len(block.header))
        ]
        head = "".join(
            f'<th class="prose">{e(h)}</th>' if long else f"<th>{e(h)}</th>"
            for h, long in zip(block.header, prose, strict=True)
        )
        body = "".join(
            "<tr>"
            + "".join(
                f'<td class="prose">{e(cell)}</td>' if long else f"<td>{e(cell)}</td>"
                for cell, long in zip(row, prose, strict=True)
            )
            + "</tr>"
            for row in block.rows
        )
        thead = f"<thead><tr>{head}</tr></thead>" if any(block.header) else ""
        # In a box of its own that scrolls sideways: a wide table never widens the page.
        return f'<div class="table"><table>{thead}<tbody>{body}</tbody></table></div>'
    if isinstance(block, Bullets):
        return "<ul>" + "".join(f"<li>{e(item)}</li>" for item in block.items) + "</ul>"
    if isinstance(block, Metrics):
        cells = "".join(
            f'<div class="metric"><div class="label">{e(what)}</div>'
            f'<div class="value">{e(value)}</div></div>'
            for what, value in block.items
        )
        return f'<div class="metrics">{cells}</div>'
    if isinstance(block, Link):
        if _web_address(block.address):
            target = (
                f'<a class="address" href="{e(block.address, quote=True)}">{e(block.address)}</a>'
            )
        else:
            target = f'<span class="address">{e(block.address)}</span>'
        return f"<p><strong>{e(block.what)}:</strong><br>{target}</p>"
    raise TypeError(f"not a block: {block!r}")  # pragma: no cover - charts are handled above


def _web_address(address: str) -> bool:
    parts = urlsplit(address)
    return parts.scheme in ("http", "https") and bool(parts.netloc)
