"""The plan report (SPEC §5.3): self-contained HTML with Plotly embedded once, a Markdown
version with the same sections, user text escaped in both, and sections that appear
when the plan carries what they show."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from planner.plan.fleet import plan_fleet, plan_profile
from planner.plan.params import PlanParams
from planner.plan.recommend import recommend
from planner.plan.resolve import plan_inputs
from planner.report.document import (
    Chart,
    ReportContext,
    Table,
    _calibration,
    _worker,
    report_sections,
)
from planner.report.html import html_report
from planner.report.markdown import markdown_report
from planner.sim.stages import WorkerStages
from planner.store.repository import Store

XSS = "<img src=x onerror=alert(1)>"
QUICK: dict[str, Any] = {"seeds": 2, "duration_s": 5.0, "policies": ("oldest-first", "batch-all")}


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> ReportContext:
    store = Store(tmp_path_factory.mktemp("report") / "planner.duckdb")
    params = PlanParams(
        points=((1, 9.8), (2, 20.4), (4, 46.0)),  # type: ignore[arg-type]
        model=XSS,
        card="laptop-8gb",
        profile="office-hours",
        peak_sessions=40,
        price_per_hour=1.25,
        **QUICK,
    )
    inputs = plan_inputs(params, store)
    result = recommend(inputs.request)
    fleet = plan_fleet(result, plan_profile(params, store), params.lead_time_min)
    return ReportContext(params, inputs, result, fleet, base="https://planner.example.com")


def test_the_html_embeds_plotly_once_and_fetches_nothing(ctx: ReportContext) -> None:
    page = html_report(ctx)
    assert page.count("window.PlotlyConfig") == 1  # the script, once, before the first chart
    assert not re.search(r"<script[^>]+src=", page)  # no script from anywhere else
    assert "<link" not in page and "cdn.plot.ly/plotly" not in page.split("window.PlotlyConfig")[0]
    charts = [b.id for s in report_sections(ctx) for b in s.blocks if isinstance(b, Chart)]
    assert charts == ["chart-curve", "chart-latency", "chart-fps", "chart-demand"]
    for chart in charts:
        assert f'id="{chart}"' in page


def test_user_text_is_escaped_everywhere(ctx: ReportContext) -> None:
    page, markdown = html_report(ctx), markdown_report(ctx)
    assert XSS not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page  # the headline's label, as text
    # In the Markdown the "<" is escaped, so no renderer reads a tag: rendered, it is text.
    assert "\\" + XSS in markdown and ("\n" + XSS) not in markdown
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown)
    assert "<img" not in rendered and "&lt;img src=x onerror=alert(1)&gt;" in rendered
    # In the charts' JSON the name is pseudo-HTML-escaped, then "<" is written \u003c.
    charts = page[page.index('id="chart-curve"') :]
    assert "The batch curve\\u003cbr\\u003e" in charts  # its title, the label under it
    assert "&lt;img src=x onerror=alert(1)&gt;" in charts


def test_both_versions_have_the_same_sections_and_the_plans_figures(ctx: ReportContext) -> None:
    page, markdown = html_report(ctx), markdown_report(ctx)
    titles = [s.title for s in report_sections(ctx)]
    assert titles == [
        "The answer", "Inputs", "The batch curve", "Every option", "Fleet and cost",
        "Demand over the day", "Calibration", "Assumptions", "Share this plan",
    ]  # fmt: skip
    for title in titles:
        assert f"## {title}" in markdown.replace("\\", "")
    best = ctx.result.recommended
    assert best is not None
    assert f'<h1 id="headline">{best.seats} seat' in page
    assert ctx.fleet is not None
    day = f"${ctx.fleet.autoscaled.cost_per_day:,.2f}"
    assert day in page and day in markdown  # a price reads as itself: no escape needed
    assert "https://planner.example.com/?points=" in page
    assert "_Chart in the HTML version: The batch curve" in markdown


def test_links_are_written_only_for_web_addresses(ctx: ReportContext) -> None:
    hostile = replace(ctx, base="javascript:alert(1)")
    page = html_report(hostile)
    assert 'href="javascript' not in page
    assert '<span class="address">javascript:alert(1)/?points=' in page


def test_the_worker_and_calibration_sections_follow_what_the_plan_carries(
    ctx: ReportContext,
) -> None:
    # Today's requests carry no pipeline stages and no calibration.
    assert _worker(ctx) is None
    assert "None: the figures are the model's" in str(_calibration(ctx).blocks[0])
    staged = SimpleNamespace(
        result=SimpleNamespace(
            request=SimpleNamespace(stages=WorkerStages(network_ms=5.0, pre_ms=2.5, cpu_workers=4))
        )
    )
    worker = _worker(staged)  # type: ignore[arg-type]
    assert worker is not None and worker.title == "The worker"
    assert ("network delay, each way (ms)", "5") in worker.blocks[0].rows  # type: ignore[union-attr]
    calibrated = SimpleNamespace(
        inputs=SimpleNamespace(calibration=SimpleNamespace(description="fitted on load test 7")),
        result=ctx.result,
    )
    assert "fitted on load test 7" in str(_calibration(calibrated).blocks[0])  # type: ignore[arg-type]


def test_a_plan_whose_profile_could_not_be_used_says_why(ctx: ReportContext) -> None:
    missing = replace(ctx, fleet=None, profile_problem="no stored demand profile called 'x'")
    markdown = markdown_report(missing)
    assert "## Demand over the day\n\nno stored demand profile called 'x'" in markdown


def test_the_report_file_name_is_safe(ctx: ReportContext, tmp_path: Path) -> None:
    assert ctx.file_stem == f"seat-plan-img-src-x-onerror-alert-1-laptop-8gb-{ctx.key}"
    assert re.fullmatch(r"[0-9a-f]{10}", ctx.key)
    (tmp_path / f"{ctx.file_stem}.html").write_text(html_report(ctx))


def test_reports_of_two_plans_do_not_share_a_file_name_and_a_name_titles_one(
    ctx: ReportContext,
) -> None:
    """Two plans on one card (50 and 80 ms) downloaded one after the other must not
    overwrite each other; a saved plan's name is in its title and its file name."""
    looser = replace(ctx, params=replace(ctx.params, budget_ms=80.0))
    assert looser.file_stem != ctx.file_stem
    from planner.links.urls import saved_params
    from planner.store.repository import plan_key

    assert ctx.key == plan_key(saved_params(ctx.params))  # the id it is saved under
    named = replace(ctx, plan_name="Store cameras, phase 2", plan_id="abc123def0")
    assert named.file_stem == "seat-plan-store-cameras-phase-2-abc123def0"
    assert named.title.startswith("Seat plan “Store cameras, phase 2”: ")
    assert "<title>Seat plan “Store cameras, phase 2”: " in html_report(named)
    assert "\nSeat plan “Store cameras, phase 2”: " in markdown_report(named)


def test_the_inputs_list_what_was_set_in_words(ctx: ReportContext) -> None:
    """The inputs table names each input in words and lists the criteria and what was
    set, not every parameter the planner has, most of them "not set"."""
    from planner.report.document import _inputs

    table = _inputs(ctx).blocks[0]
    assert isinstance(table, Table) and table.header == ("input", "value")
    names = [name for name, _ in table.rows]
    assert "latency budget, ms end-to-end" in names and "budget_ms" not in names
    assert "peak concurrent sessions" in names  # set by the plan
    assert "cotenants" not in " ".join(names) and "not set" not in str(table.rows)
    assert dict(table.rows)["latency budget, ms end-to-end"] == "50 (the default)"
