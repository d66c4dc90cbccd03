"""A plan report to send (SPEC §5.3), as a document of plain blocks that each format renders.

The report holds everything a person signing off needs: the inputs, the curve with its
band and where it came from, the seat cap with its range and reasons (the plan's answer,
``planner.plan.answer``, in the words the Plan page and ``planner recommend`` use), every
option with its isolation, fleet and cost, the demand profile if any, the worker's stages
and the curve's calibration where the plan has them, the assumptions, and the share link.

``report_sections`` lays the report out once, as plain blocks (text, tables, lists,
charts, links); ``planner.report.html.html_report`` and
``planner.report.markdown.markdown_report`` render the same blocks. The HTML
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
from functools import cached_property

import plotly.graph_objects as go

from planner import display
from planner.demand.fleet import DemandFleet
from planner.links.parameters import PARAMETERS, schema
from planner.links.urls import encode, saved_params
from planner.plan.answer import Answer, Paragraph
from planner.plan.fleet import option_fleets
from planner.plan.outcomes import Recommendation
from planner.plan.params import PlanParams
from planner.plan.resolve import BATCHER, PlanInputs
from planner.report.figures import curve_figure, demand_figure, options_figure
from planner.report.worker import (
    DEPLOYMENT_NOTE,
    decode_deployment_note,
    stages_figure,
    stages_table,
    worker_stages,
)
from planner.sim.policies import POLICIES
from planner.store.repository import plan_key
from planner.views.plan import PlanView, plan_view
from planner.views.table import Link, Table

# ---------------------------------------------------------------------------------------
# Blocks: what a section is made of, rendered by each format.


@dataclass(frozen=True)
class Text:
    text: str
    lead: str = ""  # shown in bold before the text


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
    plan_name: str | None = None  # the name it was saved under, if any
    generated_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    @cached_property
    def view(self) -> PlanView:
        """The plan as the Plan page and ``planner recommend`` show it (``planner.views``)."""
        return plan_view(self.params, self.inputs, self.result, base=self.base,
                         plan_id=self.plan_id)  # fmt: skip

    @property
    def answer(self) -> Answer:
        """The plan's answer in words, as the Plan page and ``planner recommend`` say it."""
        return self.view.answer

    @property
    def headline(self) -> str:
        return self.answer.headline

    @property
    def title(self) -> str:
        named = f" “{self.plan_name}”" if self.plan_name else ""
        return f"Seat plan{named}: {self.inputs.curve.label}"

    @property
    def key(self) -> str:
        """The plan's id: the one it is saved under, or would be (``plan_key``)."""
        return self.plan_id or plan_key(saved_params(self.params))

    @property
    def file_stem(self) -> str:
        """A file name for the report, in safe characters: ``seat-plan-NAME-KEY``, or
        ``seat-plan-MODEL-CARD-KEY`` for a plan without a name; the plan's key keeps the
        reports of two plans (say, 50 and 80 ms on one card) from overwriting each other."""
        curve = self.inputs.curve
        words = self.plan_name or f"{curve.model}-{curve.card}"
        slug = re.sub(r"[^a-z0-9]+", "-", words.lower()).strip("-")[:60].strip("-")
        return f"seat-plan-{slug or 'plan'}-{self.key}"


def report_sections(ctx: ReportContext) -> list[Section]:
    """The report, section by section."""
    sections = [
        _answer(ctx),
        _inputs(ctx),
        _curve(ctx),
        _options(ctx),
    ]
    profiles = _profiles(ctx)
    if profiles is not None:
        sections.append(profiles)
    sections.append(_fleet(ctx))
    demand = _demand(ctx)
    if demand is not None:
        sections.append(demand)
    worker = _worker(ctx)
    if worker is not None:
        sections.append(worker)
    sections += [_calibration(ctx), _assumptions(ctx), _share(ctx)]
    return sections


def _answer(ctx: ReportContext) -> Section:
    """The answer (``planner.plan.answer``) with the figures at the cap between its why
    and its advice, in the order the Plan page shows them."""
    result, answer = ctx.result, ctx.answer
    best = result.recommended
    blocks: list[Block] = [Text(answer.plain)]
    if answer.instances is not None:
        blocks += _paragraph(answer.instances)
    blocks += _paragraph(answer.why)
    if best is not None:
        blocks.append(Metrics(_figures(ctx)))
    if ctx.view.cost is not None:
        blocks.append(Text(ctx.view.cost))
    if ctx.view.stages is not None:
        # Where a frame's time goes at the cap, as the Plan page shows it below its answer.
        blocks += [ctx.view.stages, Text(ctx.view.stages_note)]
    blocks += [
        Text(t) for t in (answer.extrapolated, answer.measure_next, answer.low_confidence) if t
    ]
    return Section("answer", "The answer", tuple(blocks))


def _paragraph(part: Paragraph) -> list[Block]:
    blocks: list[Block] = [Text(part.text, lead=f"{part.lead} ")]
    if part.items:
        blocks.append(Bullets(part.items))
    return blocks


def _figures(ctx: ReportContext) -> tuple[tuple[str, str], ...]:
    metrics = [(m.label, m.value) for m in ctx.view.figures]
    day = None if ctx.fleet is None else ctx.fleet.span("autoscaled", "cost_per_day")
    if day is not None:
        metrics.append(("Cost per day, autoscaled", display.span(day, display.money)))
    return tuple(metrics)


_CRITERIA = ("budget_ms", "percentile", "min_fps", "max_overwritten", "policies", "modes")
"""Inputs the report always lists, set or not: what the answer is judged by."""


def _inputs(ctx: ReportContext) -> Section:
    """What the plan was asked, in words: its curve, its criteria, and every other input
    that was set (the rest are the planner's defaults, which the link and the command
    under "Share this plan" carry exactly)."""
    given = encode(ctx.params)
    written = encode(ctx.params, include_defaults=True)
    rows = [("the batch curve", ctx.inputs.curve.label)]
    for name in schema(PlanParams):
        if name in ("curve", "points", "model", "card", "precision", "resolution"):
            continue
        value = written.get(name)
        price = ctx.result.request.price_per_hour
        if name == "price_per_hour" and price:
            # Money as the planner writes it everywhere ($2.50), not the link's 2.5.
            value = display.money(price) + ("" if value else " (the card's stored price)")
        if name == "modes" and value is None:
            value = (
                ",".join(s.mode for s in ctx.result.request.sharings)
                + " (from the modes' settings)"
            )
        if name in BATCHER:
            value = batcher_text(ctx, name) or (value if name in given else None)
        if value is None or (name not in (*_CRITERIA, *BATCHER) and name not in given):
            continue
        shown = value.replace(",", ", ") if name in ("policies", "modes") else value
        if name not in given and "(" not in shown:
            shown += " (the default)"
        rows.append((PARAMETERS[name].doc, shown))
    note = Text(
        "Inputs not listed are the planner's defaults; the link and the command under "
        '"Share this plan" reopen the plan with every input exactly.'
    )
    return Section("inputs", "Inputs", (Table(("input", "value"), tuple(rows)), note))


def batcher_text(ctx: ReportContext, name: str) -> str | None:
    """A batcher setting as the plan's policies take it: the value given (said to be the
    server's where it is what the server the curve was measured on uses), else each
    policy's own default; None when no policy of the plan takes it."""
    request = ctx.result.request
    takers = [POLICIES[p] for p in request.policies if name in POLICIES[p].params]
    if not takers:
        return None
    found = getattr(request, name)
    if found is None:
        return ", ".join(f"{p.defaults[name]:g} ({p.name}'s default)" for p in takers)
    server = ctx.inputs.curve.batcher.get(name)
    return f"{found:g}" + (" (the server's the curve was measured on)" if found == server else "")


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
            display.number(p.latency_ms),
            *(
                "" if v is None else display.number(v)
                for v in (p.p10_ms, p.p90_ms, p.p99_ms, p.std_ms)
            ),
            "" if p.n is None else str(p.n),
            "" if p.memory_mb is None else f"{p.memory_mb:g}",
        )
        for p in curve.points
    )
    upto = ctx.view.curve_upto
    central, optimistic, pessimistic = fitted.band([float(b) for b in range(1, upto + 1)])
    band_rows = tuple(
        (str(b), display.number(central[b - 1]), display.number(optimistic[b - 1]),
         display.number(pessimistic[b - 1]),
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
                f"{display.fraction(loo.fit)} on average, the straight-line method by "
                f"{display.fraction(loo.straight_line)}.",
                lead="Leave-one-out: ",
            ),
        )
    return Section("curve", "The batch curve", tuple(blocks))


def _options(ctx: ReportContext) -> Section:
    request = ctx.result.request
    percentile = request.criteria.percentile
    return Section(
        "options",
        "Every option",
        (
            Text(ctx.view.options_note),
            ctx.view.options,
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


def _profiles(ctx: ReportContext) -> Section | None:
    """Every MIG profile of the card side by side, where the plan asks for them all."""
    view = ctx.view
    if view.profiles is None:
        return None
    return Section(
        "profiles", "Every MIG profile of this card", (view.profiles, Text(view.profiles_note))
    )


def _fleet(ctx: ReportContext) -> Section:
    sized = ctx.result.fleet
    if sized is None:
        return Section(
            "fleet",
            "Fleet and cost",
            (Text("No peak demand or card price was given, so no fleet is sized or priced."),),
        )
    items = [
        ("seats per card", display.span(sized.seats)),
        ("headroom", display.fraction(sized.headroom)),
    ]
    if sized.gpus_span is not None:
        items.append(
            (f"GPUs for {sized.peak_sessions:,} sessions at peak", display.span(sized.gpus_span))
        )
    if sized.price_per_hour is not None:
        items.append(("card price per hour", display.money(sized.price_per_hour)))
        if sized.card_share < 1:
            items.append(("our part of the card", display.fraction(sized.card_share)))
        items.append(
            ("cost per seat-hour", display.span(sized.cost_per_seat_hour_span, display.money))
        )
        if sized.cost_per_hour_span is not None:
            items.append(
                ("the peak fleet per hour", display.span(sized.cost_per_hour_span, display.money))
            )
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
        key = rule.rule
        rows.append(
            (
                name,
                display.span(f.span(key, "peak_gpus")),
                display.span(f.span(key, "gpu_hours_per_day"), display.number),
                display.span(f.span(key, "cost_per_day"), display.money),
                display.span(f.span(key, "cost_per_month"), display.money),
                display.fraction(rule.mean_utilisation),
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
            display.span(fleet.span("fixed", "peak_gpus")),
            display.span(fleet.span("fixed", "cost_per_day"), display.money),
            display.span(fleet.span("autoscaled", "peak_gpus")),
            display.span(fleet.span("autoscaled", "gpu_hours_per_day"), display.number),
            display.span(fleet.span("autoscaled", "cost_per_day"), display.money),
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
    """The worker's settings, and its stages drawn with the time each takes at the cap
    (``planner.report.worker``), when it decodes, has CPU stages or runs a chain."""
    stages = getattr(ctx.result.request, "stages", None)
    values = [(words, getattr(stages, name, None)) for name, words in WORKER_STAGES]
    drawn = worker_stages(ctx.result)
    if not any(v for _, v in values) and drawn is None:
        return None
    rows = tuple((words, f"{v:g}") for words, v in values if v is not None)
    blocks: list[Block] = [Table(("stage", "value"), rows)] if rows else []
    if drawn is not None:
        blocks += [stages_table(drawn), Chart("chart-worker", stages_figure(drawn))]
        if getattr(ctx.result.request, "cascade", ()):
            blocks.append(Text(DEPLOYMENT_NOTE, lead="Deployment: "))
        decode_note = decode_deployment_note(ctx.result.request, ctx.result.options)
        if decode_note is not None:
            blocks.append(Text(decode_note, lead="Deployment: "))
    return Section("worker", "The worker", tuple(blocks))


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
    return Section("assumptions", "Assumptions", (Bullets(ctx.answer.assumptions),))


def _share(ctx: ReportContext) -> Section:
    blocks: list[Block] = [
        *ctx.view.links,
        Text(
            shlex.join(ctx.view.command),
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
