"""A plan report to send: one self-contained HTML file and a Markdown version (SPEC §5.3).

The report holds everything a person signing off needs: the inputs, the curve with its
band and where it came from, the seat cap with its range and reasons, every option with
its isolation, fleet and cost, the demand profile if any, the worker's stages and the
curve's calibration where the plan has them, the assumptions, and the share link.

``report_sections`` lays the report out once, as plain blocks (text, tables, lists,
charts, links); ``html_report`` and ``markdown_report`` render the same blocks. The HTML
works offline: Plotly's script is embedded once, before the first chart, and nothing is
fetched when the file is opened. Every piece of text goes through the renderer's escaping
(``html.escape``; backslash escapes in Markdown), so a model named
``<img src=x onerror=alert(1)>`` is shown as those characters; links are written only for
``http`` and ``https`` addresses.
"""

from __future__ import annotations

import html
import re
import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlsplit

import plotly.graph_objects as go

from planner import __version__
from planner.demand.profiles import DemandFleet
from planner.errors import BadInput
from planner.links.parameters import PARAMETERS, schema
from planner.links.urls import encode, saved_plan_url, self_contained, url
from planner.plan.fleet import option_fleets
from planner.plan.params import PlanParams
from planner.plan.recommend import Recommendation, fleet
from planner.plan.resolve import PlanInputs, command_line
from planner.report.figures import curve_figure, demand_figure, options_figure

# ---------------------------------------------------------------------------------------
# Blocks: what a section is made of, rendered by each format.


@dataclass(frozen=True)
class Text:
    text: str
    lead: str = ""  # shown in bold before the text


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Metrics:
    items: tuple[tuple[str, str], ...]  # (what, value)


@dataclass(frozen=True)
class Chart:
    id: str
    figure: go.Figure = field(compare=False)

    @property
    def title(self) -> str:
        layout = self.figure.layout
        return html.unescape(str(layout.title.text or "")) if layout.title else ""


@dataclass(frozen=True)
class Link:
    what: str
    address: str


Block = Text | Table | Bullets | Metrics | Chart | Link


@dataclass(frozen=True)
class Section:
    id: str
    title: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class ReportContext:
    """What a report is written from: the plan's parameters, its inputs and result, its
    fleet over a demand profile (if any), where its dashboard lives, and when."""

    params: PlanParams
    inputs: PlanInputs
    result: Recommendation
    fleet: DemandFleet | None = None
    base: str = "http://localhost:8501"
    plan_id: str | None = None
    profile_problem: str | None = None  # why the plan's profile could not be used
    generated_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def headline(self) -> str:
        best = self.result.recommended
        if best is None:
            return "No seat fits these criteria"
        plural = "seat" if best.seats == "1" else "seats"
        return f"{best.seats} {plural} per card — {best.label}"

    @property
    def title(self) -> str:
        return f"Seat plan: {self.inputs.curve.label}"

    @property
    def file_stem(self) -> str:
        """A file name for the report: ``seat-plan-MODEL-CARD`` in safe characters."""
        curve = self.inputs.curve
        slug = re.sub(r"[^a-z0-9]+", "-", f"{curve.model}-{curve.card}".lower()).strip("-")
        return f"seat-plan-{slug[:60] or 'plan'}"


def report_sections(ctx: ReportContext) -> list[Section]:
    """The report, section by section."""
    sections = [
        _answer(ctx),
        _inputs(ctx),
        _curve(ctx),
        _options(ctx),
        _fleet(ctx),
    ]
    demand = _demand(ctx)
    if demand is not None:
        sections.append(demand)
    worker = _worker(ctx)
    if worker is not None:
        sections.append(worker)
    sections += [_calibration(ctx), _assumptions(ctx), _share(ctx)]
    return sections


def _number(value: float | None, digits: int = 1, unit: str = "") -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}{unit}"


def _money(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"${value:,.{digits}f}"


def _answer(ctx: ReportContext) -> Section:
    result = ctx.result
    best = result.recommended
    blocks: list[Block] = [Text(result.summary)]
    if best is None:
        return Section("answer", "The answer", tuple(blocks))
    at = best.at_cap
    where = str(best.cap) if best.per_card == 1 else f"{best.cap} per instance"
    metrics = [("Seats per card", best.seats)]
    if best.instances_note:
        metrics.append(("How", best.instances_note))
    if at is not None:
        metrics.append(
            (f"p{at.percentile:g} latency at {where}", _number(at.e2e_latency_ms, 1, " ms"))
        )
        metrics.append((f"Slowest session at {where}", _number(at.min_fps, 1, " fps")))
    sized = result.fleet
    if sized is not None and sized.gpus is not None:
        gpus = str(sized.gpus)
        if sized.gpus_worst is not None and sized.gpus_worst != sized.gpus:
            gpus = f"{sized.gpus}–{sized.gpus_worst}"
        metrics.append((f"GPUs for {sized.peak_sessions:,} at peak", gpus))
    if sized is not None and sized.cost_per_seat_hour is not None:
        metrics.append(("Cost per seat-hour", _money(sized.cost_per_seat_hour, 3)))
    if ctx.fleet is not None and ctx.fleet.autoscaled.cost_per_day is not None:
        metrics.append(("Cost per day, autoscaled", _money(ctx.fleet.autoscaled.cost_per_day)))
    blocks.append(Metrics(tuple(metrics)))
    low, high = min(best.cap_low, best.cap), max(best.cap_high, best.cap)
    blocks.append(
        Text(
            f"{best.cap} on the fitted curve; {low} on the band's pessimistic edge and "
            f"{high} on its optimistic edge" + (" (per instance)." if best.per_card > 1 else "."),
            lead="Seat cap range (per instance of the worker): "
            if best.per_card > 1
            else "Seat cap range: ",
        )
    )
    if best.failures:
        blocks.append(Text(_sentence(best.binding_constraint), lead=f"Why not {best.cap + 1}? "))
    else:
        blocks.append(Text(f"It {best.binding_constraint}.", lead="No limit found: "))
    if best.extrapolated:
        measured = ctx.inputs.fitted.points
        blocks.append(
            Text(
                f"This cap rests on batch sizes beyond the measured {measured[0].batch}–"
                f"{measured[-1].batch}, where the curve is extrapolated.",
                lead="Extrapolated: ",
            )
        )
    if result.measure_next is not None:
        blocks.append(
            Text(
                f"batch {result.measure_next}, relative to {result.measure_next_basis}.",
                lead="Measure next: ",
            )
        )
    if at is not None and at.low_confidence:
        blocks.append(
            Text(
                f"the p{at.percentile:g} at the cap rests on fewer than 10 frames beyond it.",
                lead="Low confidence: ",
            )
        )
    return Section("answer", "The answer", tuple(blocks))


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _inputs(ctx: ReportContext) -> Section:
    written = encode(ctx.params, include_defaults=True)
    rows = [("curve", ctx.inputs.curve.label, "the batch curve the plan runs on")]
    for name in schema(PlanParams):
        if name in ("curve", "points", "model", "card", "precision", "resolution"):
            continue
        value = written.get(name)
        if name == "price_per_hour" and value is None and ctx.result.request.price_per_hour:
            value = f"{ctx.result.request.price_per_hour:g} (the card's stored price)"
        if name == "modes" and value is None:
            value = (
                ",".join(s.mode for s in ctx.result.request.sharings)
                + " (from the modes' settings)"
            )
        rows.append((name, "not set" if value is None else value, PARAMETERS[name].doc))
    return Section("inputs", "Inputs", (Table(("parameter", "value", "what it is"), tuple(rows)),))


def _curve(ctx: ReportContext) -> Section:
    curve, fitted = ctx.inputs.curve, ctx.inputs.fitted
    provenance = [
        ("model", curve.model),
        ("card", curve.card),
        ("precision", curve.precision or "–"),
        ("input size", curve.resolution or "–"),
        ("MIG profile", curve.mig_profile or "whole card"),
        ("source", curve.source),
        ("stored", curve.created_at.isoformat(timespec="seconds") if curve.created_at else "–"),
        ("curve id", curve.id),
    ]
    for key, value in list(curve.environment.items())[:20]:
        text = str(value)
        provenance.append(
            (f"environment: {key}"[:60], text if len(text) <= 200 else text[:199] + "…")
        )
    points = tuple(
        (
            str(p.batch),
            f"{p.latency_ms:g}",
            *("" if v is None else f"{v:g}" for v in (p.p10_ms, p.p90_ms, p.p99_ms, p.std_ms)),
            "" if p.n is None else str(p.n),
            "" if p.memory_mb is None else f"{p.memory_mb:g}",
        )
        for p in curve.points
    )
    upto = max(
        8, min(256, max([p.batch for p in curve.points] + [o.cap + 1 for o in ctx.result.options]))
    )
    central, optimistic, pessimistic = fitted.band([float(b) for b in range(1, upto + 1)])
    band_rows = tuple(
        (str(b), f"{central[b - 1]:.3g}", f"{optimistic[b - 1]:.3g}", f"{pessimistic[b - 1]:.3g}",
         "yes" if bool(fitted.extrapolated(b)) else "")
        for b in sorted({1, 2, 4, 8, 16, 32, 64, upto} & set(range(1, upto + 1)))
    )  # fmt: skip
    blocks: list[Block] = [
        Table(("", ""), tuple(provenance)),
        Text(fitted.description, lead="Fit: "),
        Table(
            (
                "batch",
                "latency (ms)",
                "p10 (ms)",
                "p90 (ms)",
                "p99 (ms)",
                "std (ms)",
                "runs",
                "memory (MB)",
            ),
            points,
        ),
        Table(
            ("batch", "fit (ms)", "optimistic (ms)", "pessimistic (ms)", "extrapolated"), band_rows
        ),
        Chart("chart-curve", curve_figure(curve.label, curve.points, fitted, upto)),
    ]
    if fitted.reconciled:
        blocks.insert(
            2,
            Text(
                "the fit could not honour the measured latency at batch "
                + ", ".join(str(b) for b in fitted.reconciled)
                + " (latency fell with batch size).",
                lead="Reconciled: ",
            ),
        )
    loo = fitted.loo
    if loo is not None:
        blocks.insert(
            2,
            Text(
                f"predicting each measured point from the others, the fit is off by "
                f"{loo.fit:.1%} on average, the straight-line method by {loo.straight_line:.1%}.",
                lead="Leave-one-out: ",
            ),
        )
    return Section("curve", "The batch curve", tuple(blocks))


def _options(ctx: ReportContext) -> Section:
    request = ctx.result.request
    rows = []
    for option in ctx.result.options:
        at = option.at_cap
        sized = fleet(
            option,
            peak_sessions=request.peak_sessions,
            headroom=request.headroom,
            price_per_hour=request.price_per_hour,
        )
        iso = option.sharing.kind.isolation
        rows.append(
            (
                option.label,
                option.seats,
                option.seats_per_instance if option.per_card > 1 else "",
                f"{iso.memory} / {iso.fault}",
                _number(None if at is None else at.e2e_latency_ms),
                _number(None if at is None else at.min_fps),
                "–" if sized is None or sized.gpus is None else str(sized.gpus),
                _money(None if sized is None else sized.cost_per_seat_hour, 3),
                option.binding_constraint,
            )
        )
    pct = f"p{request.criteria.percentile:g}"
    header = (
        "option", "seats per card", "per instance", "isolation (memory / fault)",
        f"{pct} ms at cap", "slowest fps at cap", "GPUs for peak", "USD per seat-hour",
        "next seat fails because",
    )  # fmt: skip
    percentile = request.criteria.percentile
    return Section(
        "options",
        "Every option",
        (
            Text(
                "Ranked by seats per card on the fitted curve, then on the pessimistic edge, "
                "then by latency. Isolation is what the sharing mode guarantees between jobs "
                "on the card."
            ),
            Table(header, tuple(rows)),
            Chart(
                "chart-latency",
                options_figure(
                    ctx.result.options,
                    metric="latency",
                    limit=request.criteria.budget_ms,
                    percentile=percentile,
                ),
            ),
            Chart(
                "chart-fps",
                options_figure(
                    ctx.result.options,
                    metric="fps",
                    limit=request.criteria.min_fps,
                    percentile=percentile,
                ),
            ),
        ),
    )


def _fleet(ctx: ReportContext) -> Section:
    sized = ctx.result.fleet
    if sized is None:
        return Section(
            "fleet",
            "Fleet and cost",
            (Text("No peak demand or card price was given, so no fleet is sized or priced."),),
        )
    items = [("seats per card", str(sized.seats_per_card)), ("headroom", f"{sized.headroom:.0%}")]
    if sized.gpus is not None:
        items.append((f"GPUs for {sized.peak_sessions:,} sessions at peak", str(sized.gpus)))
        if sized.gpus_worst is not None:
            items.append(("GPUs on the pessimistic cap", str(sized.gpus_worst)))
    if sized.price_per_hour is not None:
        items.append(("card price per hour", _money(sized.price_per_hour)))
        if sized.card_share < 1:
            items.append(("our part of the card", f"{sized.card_share:.0%}"))
        items.append(("cost per seat-hour", _money(sized.cost_per_seat_hour, 3)))
        cost = sized.as_dict()["cost_per_hour"]
        if cost is not None:
            items.append(("the peak fleet per hour", _money(cost)))
    return Section(
        "fleet",
        "Fleet and cost",
        (
            Table(("", ""), tuple(items)),
            Text(
                f"GPUs = ceil(peak x (1 + {sized.headroom:g}) / seats per card); cost per "
                "seat-hour = the card's hourly price x our part of the card / seats per card."
            ),
        ),
    )


def _demand(ctx: ReportContext) -> Section | None:
    if ctx.fleet is None:
        if ctx.params.profile is None:
            return None
        return Section(
            "demand",
            "Demand over the day",
            (Text(ctx.profile_problem or "The plan's demand profile could not be used."),),
        )
    f = ctx.fleet
    profile = f.profile
    rows = []
    for rule, name in (
        (f.fixed, "fixed fleet for the peak"),
        (f.autoscaled, f"autoscaled, {f.lead_time_min:g} min lead"),
    ):
        rows.append(
            (
                name,
                str(rule.peak_gpus),
                f"{rule.gpu_hours_per_day:,.1f}",
                _money(rule.cost_per_day),
                _money(rule.cost_per_month, 0),
                "–" if rule.mean_utilisation is None else f"{rule.mean_utilisation:.0%}",
            )
        )
    steps = tuple(
        (
            f"{hour:g}",
            f"{d:,.4g}",
            str(n),
            str(fx),
            str(a),
        )
        for hour, d, n, fx, a in zip(
            profile.hours, profile.sessions, f.needed, f.fixed.gpus, f.autoscaled.gpus, strict=True
        )
    )
    options = tuple(
        (
            option.label,
            option.seats,
            str(fleet.fixed.peak_gpus),
            _money(fleet.fixed.cost_per_day),
            str(fleet.autoscaled.peak_gpus),
            f"{fleet.autoscaled.gpu_hours_per_day:,.1f}",
            _money(fleet.autoscaled.cost_per_day),
        )
        for option, fleet in option_fleets(ctx.result, profile, f.lead_time_min)
    )
    blocks: list[Block] = [
        Text(
            f"{profile.name}: {profile.shape}, peak {profile.peak:,.4g} sessions"
            + (f", from {profile.start}" if profile.start else "")
            + f". {profile.description}",
            lead="Profile: ",
        ),
        Table(
            (
                "provisioning",
                "peak GPUs",
                "GPU-hours per day",
                "per day",
                "per month",
                "mean seat utilisation",
            ),
            tuple(rows),
        ),
        Chart("chart-demand", demand_figure(f)),
        Bullets(f.notes),
        Text("Every option that holds a seat, on the same demand (cheapest per day first):"),
        Table(
            (
                "option",
                "seats per card",
                "GPUs, fixed",
                "per day, fixed",
                "peak GPUs, autoscaled",
                "GPU-hours per day, autoscaled",
                "per day, autoscaled",
            ),
            options,
        ),
    ]
    if len(steps) <= 168:
        blocks.append(Table(("hour", "sessions", "GPUs needed", "fixed", "autoscaled"), steps))
    return Section("demand", "Demand over the day", tuple(blocks))


WORKER_STAGES = (
    ("network_ms", "network delay, each way (ms)"),
    ("pre_ms", "CPU work per frame before the GPU (ms)"),
    ("post_ms", "CPU work per frame after the GPU (ms)"),
    ("cpu_workers", "CPU threads for that work (0: unlimited)"),
)
"""The worker's pipeline stages (SPEC §5.1), shown when a plan's request carries them."""


def _worker(ctx: ReportContext) -> Section | None:
    request = ctx.result.request
    values = [(words, getattr(request, name, None)) for name, words in WORKER_STAGES]
    if not any(v for _, v in values):
        return None
    rows = tuple((words, f"{v:g}") for words, v in values if v is not None)
    return Section("worker", "The worker", (Table(("stage", "value"), rows),))


def _calibration(ctx: ReportContext) -> Section:
    found = getattr(ctx.inputs, "calibration", None) or getattr(
        ctx.result.request, "calibration", None
    )
    if found is None:
        text = (
            "None: the figures are the model's, not corrected by a load test of a real "
            "worker on this curve."
        )
    else:
        text = str(getattr(found, "description", found))
    return Section("calibration", "Calibration", (Text(text),))


def _assumptions(ctx: ReportContext) -> Section:
    notes = [ctx.inputs.fitted.description, *ctx.result.assumptions]
    return Section("assumptions", "Assumptions", (Bullets(tuple(notes)),))


def _share(ctx: ReportContext) -> Section:
    links: list[Block] = []
    if ctx.plan_id is not None:
        links.append(
            Link("Saved plan (opens on this server)", saved_plan_url(ctx.base, ctx.plan_id))
        )
    links.append(Link("Link to this plan", url(ctx.base, ctx.params)))
    try:
        embedded = self_contained(ctx.params, ctx.inputs.curve)
    except BadInput:
        pass
    else:
        if ctx.params.points is None:
            links.append(
                Link(
                    "Self-contained link (embeds the curve; opens on any server)",
                    url(ctx.base, embedded),
                )
            )
    blocks = [
        *links,
        Text(
            shlex.join(command_line("recommend", ctx.params)),
            lead="The same plan on the command line: ",
        ),
    ]
    if (
        ctx.params.profile is not None
        and ctx.fleet is not None
        and ctx.fleet.profile.source != "built-in"
    ):
        blocks.append(
            Text(
                f"The demand profile {ctx.params.profile!r} is stored on this server; a link "
                "opened on another server needs it stored there too."
            )
        )
    return Section("share", "Share this plan", tuple(blocks))


# ---------------------------------------------------------------------------------------
# HTML


_CSS = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 0;
       color: #1f2328; background: #fff; line-height: 1.45; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 32px 64px; }
h1 { font-size: 1.9rem; margin: 0.2rem 0 0.6rem; }
h2 { font-size: 1.3rem; margin-top: 2.2rem; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
.kicker { color: #57606a; margin: 0; text-transform: uppercase; letter-spacing: 0.06em;
          font-size: 0.8rem; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
.metrics { display: flex; flex-wrap: wrap; gap: 12px; margin: 1rem 0; }
.metric { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 14px; min-width: 150px; }
.metric .label { color: #57606a; font-size: 0.8rem; }
.metric .value { font-size: 1.4rem; font-weight: 600; }
.chart { margin: 1rem 0; }
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
        f"<p>{e(ctx.inputs.curve.label)}</p>",
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
        head = "".join(f"<th>{e(h)}</th>" for h in block.header)
        body = "".join(
            "<tr>" + "".join(f"<td>{e(cell)}</td>" for cell in row) + "</tr>" for row in block.rows
        )
        thead = f"<thead><tr>{head}</tr></thead>" if any(block.header) else ""
        return f"<table>{thead}<tbody>{body}</tbody></table>"
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


# ---------------------------------------------------------------------------------------
# Markdown

# Characters that start Markdown syntax anywhere in a line (emphasis, code, links, images,
# HTML, tables, entities, maths); list and heading markers matter only at the start. The
# rest of the punctuation is left alone so the file stays readable as text.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#!|~&$])")
_MD_NUMBERED = re.compile(r"^([0-9]+)([.)])")
# GitHub links bare web and mail addresses after escapes are resolved; a word joiner
# (U+2060: no width) before the ``:`` of a scheme, the ``@`` of an address and the ``.``
# after ``www`` breaks each pattern without changing what the reader sees.
_AUTOLINK = re.compile(
    r"(?:(?<=http)|(?<=https)|(?<=mailto)|(?<=xmpp))(?=:)|(?<=[\w.+-])(?=@)|(?<=www)(?=\.)",
    re.IGNORECASE,
)


def md(text: object) -> str:
    """``text`` as literal Markdown on one line: no emphasis, code, link, image or HTML."""
    flat = " ".join(str(text).split())
    escaped = _MD_SPECIAL.sub(r"\\\1", _AUTOLINK.sub("\u2060", flat))
    if escaped[:1] in ("-", "+", "="):  # a list item or a heading underline
        return "\\" + escaped
    return _MD_NUMBERED.sub(r"\1\\\2", escaped)  # a numbered list item


def markdown_report(ctx: ReportContext) -> str:
    """The report in Markdown: the same sections and tables; charts are in the HTML."""
    lines = [f"# {md(ctx.headline)}", "", md(ctx.inputs.curve.label), ""]
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
