"""A plan's view (``planner.views.plan``): the Plan page, the report (HTML and Markdown)
and ``planner recommend``'s text show the same cells of the options table, the MIG-profile
table and the stage table, and the same cost sentence, each before its own escaping."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

from streamlit.testing.v1 import AppTest

from dashboard.state import store
from planner.limits import UNCALIBRATED_MARGIN
from planner.links.urls import decode, saved_plan_url
from planner.plan.params import PlanParams
from planner.plan.recommend import recommend
from planner.plan.resolve import plan_inputs
from planner.report.document import ReportContext
from planner.report.html import html_report
from planner.report.markdown import markdown_report
from planner.text import JOINER
from planner.views.plan import PlanView, plan_view
from planner.views.table import Table
from tests.conftest import run

# Every MIG profile of an H100 beside the whole card, priced, with a CPU stage: each of
# the four things compared is there.
PLAN = {"points": "1:4.69,4:9.29", "card": "h100-80gb", "mig_profile": "all",
        "modes": "exclusive,mig", "policies": "oldest-first", "seeds": "2", "duration_s": "5",
        "peak_sessions": "100", "price_per_hour": "4", "pre_ms": "2",
        "cpu_workers": "1",
        # The margin the command line pins by default, so the link is the same plan.
        "margin": str(UNCALIBRATED_MARGIN)}  # fmt: skip
Cells = tuple[tuple[str, ...], ...]  # a table's header row, then its rows


def unescaped(markdown: str) -> str:
    """What a reader sees of Markdown written by ``planner.text.md``: no escapes."""
    return re.sub(r"\\(.)", r"\1", markdown).replace(JOINER, "")


def cells(table: Table) -> Cells:
    return (table.header, *table.rows)


# ---------------------------------------------------------------------------------------
# Reading each front end's tables back into cells.


def page_table(app: AppTest, key: str) -> Cells:
    frame = app.get_by_key(key).table[0].value
    header = tuple(unescaped(str(h)) for h in frame.columns)
    return (header, *(tuple(unescaped(str(v)) for v in row) for row in frame.to_numpy()))


class _Html(HTMLParser):
    """Every table's cells and every paragraph's text of an HTML document."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[tuple[str, ...]]] = []
        self.paragraphs: list[str] = []
        self._row: list[str] | None = None
        self._text: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th", "p"):
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._row is not None and self._text is not None:
            self._row.append("".join(self._text))
            self._text = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(tuple(self._row))
            self._row = None
        elif tag == "p" and self._text is not None:
            self.paragraphs.append("".join(self._text))
            self._text = None

    def handle_data(self, data: str) -> None:
        if self._text is not None:
            self._text.append(data)


def markdown_tables(text: str) -> list[Cells]:
    """Every table of a Markdown document, its cells unescaped (the rule row left out)."""
    tables: list[list[tuple[str, ...]]] = []
    previous = ""
    for line in text.splitlines():
        if line.startswith("|"):
            if not previous.startswith("|"):
                tables.append([])
            if not re.fullmatch(r"\|(---\|)+", line):
                parts = re.split(r"(?<!\\)\|", line.strip())[1:-1]
                tables[-1].append(tuple(unescaped(p.strip()) for p in parts))
        previous = line
    return [tuple(t) for t in tables]


def text_table(out: str, header: tuple[str, ...], rows: int) -> Cells:
    """The table printed under ``header`` (columns padded to their widest cell, a rule of
    dashes under the header), read back by the rule's column spans."""
    lines = out.splitlines()
    for at, line in enumerate(lines[:-1]):
        rule = lines[at + 1]
        if re.fullmatch(r"-+(  -+)*", rule):
            spans = [m.span() for m in re.finditer(r"-+", rule)]
            read = [tuple(row[a:b if i < len(spans) - 1 else None].strip()
                          for i, (a, b) in enumerate(spans))
                    for row in (line, *lines[at + 2 : at + 2 + rows])]  # fmt: skip
            if read[0] == header:
                return tuple(read)
    raise AssertionError(f"no table headed {header} in the command's output")


def found(tables: list[Cells], header: tuple[str, ...]) -> Cells:
    (table,) = [t for t in tables if t and t[0] == header]
    return table


# ---------------------------------------------------------------------------------------


def test_the_page_the_report_and_the_command_show_the_same_cells(app: AppTest, cli: Any) -> None:
    for key, value in PLAN.items():
        app.query_params[key] = value
    run(app)

    params, ignored = decode(PlanParams, PLAN)
    assert not ignored
    inputs = plan_inputs(params, store())
    result = recommend(inputs.request)
    view: PlanView = plan_view(params, inputs, result)
    assert view.profiles is not None and view.stages is not None and view.cost is not None
    assert len(view.options.rows) > 2 and "isolation (memory; faults)" in view.options.header
    compared = {"plan_options": view.options, "plan_profiles": view.profiles,
                "plan_stages": view.stages}  # fmt: skip

    # The page.
    for key, table in compared.items():
        assert page_table(app, key) == cells(table), key
    cost = app.get_by_key("plan_cost").markdown[0].value
    assert unescaped(cost) == view.cost

    # The report, in HTML and in Markdown.
    ctx = ReportContext(params, inputs, result)
    document = _Html()
    document.feed(html_report(ctx))
    markdown = markdown_report(ctx)
    for table in compared.values():
        assert found([tuple(t) for t in document.tables], table.header) == cells(table)
        assert found(markdown_tables(markdown), table.header) == cells(table)
    assert view.cost in document.paragraphs
    assert view.cost in [unescaped(line) for line in markdown.splitlines()]

    # The command line.
    arguments = [part for key, value in PLAN.items()
                 for part in (f"--{key.replace('_', '-')}", value)]  # fmt: skip
    said = cli("recommend", *arguments)
    assert said.status == 0, said.err
    for table in compared.values():
        assert text_table(said.out, table.header, len(table.rows)) == cells(table)
    assert view.cost in said.out.splitlines()


def test_an_unpriced_plan_has_no_cost_sentence_anywhere(app: AppTest, cli: Any) -> None:
    params = PlanParams(policies=("oldest-first",), seeds=2, duration_s=5.0)
    inputs = plan_inputs(params, store())
    result = recommend(inputs.request)
    view = plan_view(params, inputs, result)
    assert view.cost is None and "cost per seat-hour" not in view.options.header
    assert "per seat-hour" not in markdown_report(ReportContext(params, inputs, result))
    said = cli("recommend", "--curve", inputs.curve.id, "--policies", "oldest-first",
               "--seeds", "2", "--duration-s", "5")  # fmt: skip
    assert said.status == 0, said.err
    assert "per seat-hour" not in said.out


# ---------------------------------------------------------------------------------------
# What the view says of the run behind the headline, and of the plan's links.

LATENCY_BOUND = {"points": "1:8,3:20", "policies": "batch-all,oldest-first", "budget_ms": "20",
                 "seeds": "2", "duration_s": "5"}  # fmt: skip


def test_a_count_that_fails_on_latency_is_not_said_to_fail_on_its_slowest_session(
    app: AppTest,
) -> None:
    for key, value in LATENCY_BOUND.items():
        app.query_params[key] = value
    run(app)
    params, _ = decode(PlanParams, LATENCY_BOUND)
    inputs = plan_inputs(params, store())
    result = recommend(inputs.request)
    best = result.recommended
    assert best is not None and "latency" in best.binding_constraint
    assert best.history[-1].min_fps >= result.request.criteria.min_fps  # every draw is fine
    (said,) = [c.value for c in app.caption if c.value.startswith("The link opens seed")]
    assert "the plan judges a session count by its worst draw" not in said
    assert best.binding_constraint in said
    (link,) = [x for x in app.get("page_link") if x.proto.page == "simulate"]
    # Only what the plan holds: no second policy that nobody asked to compare.
    assert "compare_policy" not in link.proto.query_string


def test_saved_plans_list_their_short_links_as_links(app: AppTest) -> None:
    app.query_params.update({"seeds": "2", "duration_s": "5", "policies": "oldest-first"})
    run(app)
    app.text_input(key="plan_save_name").set_value("spring *peak*")
    app.button(key="plan_save").click()
    run(app)
    (plan,) = store().plans()
    listed = app.get_by_key("plan_saved_list").dataframe[0]
    (row,) = listed.value.to_dict("records")
    # The address itself (no character hidden in it to stop Markdown linking it), and
    # the column shows it as a link; the name is shown as typed.
    assert row["short link"] == saved_plan_url("http://localhost:8501", plan.id)
    assert row["name"] == "spring *peak*"
    assert "link" in listed.proto.columns and "short link" in listed.proto.columns


def test_the_report_writes_money_and_links_as_the_page_does(app: AppTest) -> None:
    params = PlanParams(policies=("oldest-first",), seeds=2, duration_s=5.0, price_per_hour=2.5)
    inputs = plan_inputs(params, store())
    result = recommend(inputs.request)
    ctx = ReportContext(params, inputs, result, plan_id="0123456789")
    markdown = markdown_report(ctx)
    (price,) = [line for line in markdown.splitlines() if "hourly price of the card" in line]
    assert "$2.50" in unescaped(price) and "2.5 " not in price
    tables = markdown_tables(markdown)
    options = found(tables, plan_view(params, inputs, result).options.header)
    columns = list(zip(*options[1:], strict=True))
    assert all(any(cell for cell in column) for column in columns)  # no empty column
    (link,) = [line for line in markdown.splitlines() if "Link to this plan" in line]
    assert saved_plan_url(ctx.base, "0123456789") in link
