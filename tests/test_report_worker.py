"""The plan report draws the worker as its stages (SPEC §5.3, §6.3): the CPU work before
the GPU, each model of the chain and the CPU work after, each with its time at the cap,
from numbers only, with user text escaped; and it says the deployment files need nothing
new for a chain."""

from __future__ import annotations

from typing import Any

import pytest

from planner import display
from planner.curves.curve import Point, make_curve
from planner.plan.cascade import stage_times
from planner.plan.params import PlanParams
from planner.plan.recommend import recommend
from planner.plan.resolve import plan_inputs
from planner.report.document import Chart, ReportContext, Table, report_sections
from planner.report.html import html_report
from planner.report.markdown import markdown_report
from planner.report.worker import (
    DECODE_DEPLOYMENT_NOTE,
    DEPLOYMENT_NOTE,
    UNCOUNTED_DECODE_NOTE,
    batch_at_cap,
)
from planner.store.repository import Store

XSS = "<b>cls</b><img src=x onerror=alert(1)>"
QUICK: dict[str, Any] = {"seeds": 1, "duration_s": 3.0, "policies": ("batch-all",)}
POINTS = ((1, 6.0), (2, 8.5), (4, 13.0), (8, 22.0))


def _context(store: Store, **changes: Any) -> ReportContext:
    params = PlanParams(points=POINTS, model="detector", card="laptop-8gb",  # type: ignore[arg-type]
                        **QUICK, **changes)  # fmt: skip
    inputs = plan_inputs(params, store)
    return ReportContext(params, inputs, recommend(inputs.request))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("report_worker") / "planner.duckdb")


@pytest.fixture(scope="module")
def chained(store: Store) -> ReportContext:
    classifier = make_curve(
        model=XSS, card="laptop-8gb", precision="fp16", resolution="224x224",
        points=[Point(1, 1.5), Point(8, 3.0), Point(32, 8.0)],
    )  # fmt: skip
    (stored,) = store.add_curves([classifier])
    return _context(store, cascade=(f"{stored.id}:3",), pre_ms=2.0, post_ms=1.5)


def _worker(ctx: ReportContext) -> Any:
    return next(s for s in report_sections(ctx) if s.id == "worker")


def test_the_worker_is_drawn_as_its_stages_with_their_time_at_the_cap(
    chained: ReportContext,
) -> None:
    section = _worker(chained)
    tables = [b for b in section.blocks if isinstance(b, Table)]
    stages = next(t for t in tables if "time at the cap" in t.header)
    assert stages.column("stage") == ("CPU work before the GPU", "detector", XSS,
                                      "CPU work after the GPU")  # fmt: skip
    option = chained.result.closest
    assert option is not None
    batch = batch_at_cap(option)
    assert 1 <= batch <= option.cap + 1
    request = chained.result.request
    models = stage_times(request.cascade, request.curve_for(option.sharing), batch)
    assert stages.column("time at the cap") == (
        display.ms(2.0),
        *(display.ms(t) for t in models),
        display.ms(1.5),
    )
    assert stages.column("for")[1] == f"per batch of {batch}"
    assert "3 crops" in stages.column("runs on")[2]
    (chart,) = [b for b in section.blocks if isinstance(b, Chart)]
    bars = chart.figure.data
    assert [float(b.x[0]) for b in bars] == pytest.approx([2.0, *models, 1.5])
    # Each bar starts where the one before ends.
    assert [float(b.base[0]) for b in bars] == pytest.approx(
        [0.0, 2.0, 2.0 + models[0], 2.0 + sum(models)]
    )
    notes = [b.text for b in section.blocks if hasattr(b, "text")]
    assert DEPLOYMENT_NOTE in notes


def test_the_stage_names_are_escaped_in_both_versions(chained: ReportContext) -> None:
    page, markdown = html_report(chained), markdown_report(chained)
    assert XSS not in page and "<b>cls</b>" not in page
    assert "&lt;b&gt;cls&lt;/b&gt;" in page
    assert 'id="chart-worker"' in page
    assert "deployment files need nothing new" in markdown


def test_a_plan_without_a_chain_or_cpu_stages_draws_no_stages(store: Store) -> None:
    plain = _context(store)
    assert all(s.id != "worker" for s in report_sections(plain))
    staged = _worker(_context(store, pre_ms=2.0))
    assert DEPLOYMENT_NOTE not in [getattr(b, "text", "") for b in staged.blocks]
    assert DECODE_DEPLOYMENT_NOTE not in [getattr(b, "text", "") for b in staged.blocks]
    (chart,) = [b for b in staged.blocks if isinstance(b, Chart)]
    assert [b.y[0] for b in chart.figure.data] == ["CPU work before the GPU", "detector"]


def test_the_decode_stage_is_drawn_before_the_cpu_work_on_what_decodes(store: Store) -> None:
    engines = _worker(_context(store, decode_ms=2.5, decoders=3, pre_ms=1.0))
    stages = next(b for b in engines.blocks if isinstance(b, Table) and "for" in b.header)
    assert stages.column("stage")[:3] == ("decode (h264)", "CPU work before the GPU", "detector")
    assert stages.column("runs on")[0] == "3 video decoders"
    assert stages.column("time at the cap")[:2] == (display.ms(2.5), display.ms(1.0))
    assert stages.column("for")[0] == "per frame"
    (chart,) = [b for b in engines.blocks if isinstance(b, Chart)]
    assert [float(b.base[0]) for b in chart.figure.data][:3] == pytest.approx([0.0, 2.5, 3.5])
    # No decoder on the instance: the CPU's decode time, on the CPU; a decode stage alone
    # is enough to draw the worker.
    cpu = _worker(_context(store, decoders=0, cpu_decode_ms=6.0, codec="jpeg"))
    (chart,) = [b for b in cpu.blocks if isinstance(b, Chart)]
    assert [b.y[0] for b in chart.figure.data] == ["decode (jpeg)", "detector"]
    assert float(chart.figure.data[0].x[0]) == pytest.approx(6.0)
    stages = next(b for b in cpu.blocks if isinstance(b, Table) and "for" in b.header)
    assert "the CPU" in stages.column("runs on")[0]
    assert DEPLOYMENT_NOTE not in [getattr(b, "text", "") for b in cpu.blocks]
    assert DECODE_DEPLOYMENT_NOTE in [getattr(b, "text", "") for b in cpu.blocks]
    counted = [getattr(b, "text", "") for b in engines.blocks]
    assert DECODE_DEPLOYMENT_NOTE in counted and UNCOUNTED_DECODE_NOTE not in counted
    # A count no source gives (laptop-8gb is in no catalogue row): the cap
    # the deployment files carry does not stop at the decoders, and the report says so.
    unknown = [getattr(b, "text", "") for b in _worker(_context(store, decode_ms=2.5)).blocks]
    assert UNCOUNTED_DECODE_NOTE in unknown and DECODE_DEPLOYMENT_NOTE not in unknown
