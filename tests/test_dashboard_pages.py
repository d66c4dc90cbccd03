"""The Plan, Simulate, Measure and Compare pages, run in-process with AppTest against a
fresh store per test: what they show, what their controls change, and what their links
restore. Expected figures come from the library, called directly on the same inputs."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Widget

import dashboard.cache
import planner.sim.sweep
from dashboard.navigation import PAGES
from dashboard.state import store
from planner import display
from planner.cli import build_parser
from planner.cli.measure import options_from_args
from planner.demand.fleet import gpus_for
from planner.links.urls import encode, saved_params, self_contained, url
from planner.plan.outcomes import Recommendation
from planner.plan.params import CompareParams, PlanParams, SimulateParams
from planner.plan.recommend import recommend
from planner.plan.resolve import default_curve, plan_inputs, simulation_inputs
from planner.sim.ensemble import Outcome, run_many
from planner.sim.results import Results
from planner.sim.scenario import Scenario
from planner.sim.simulate import simulate, simulate_charged
from planner.sim.work import Work
from planner.store.repository import Store
from tests.conftest import run

REPO = Path(__file__).resolve().parent.parent
QUICK = {"seeds": 2, "duration_s": 5.0}  # a smaller search, for tests that need no defaults


def open_page(at: AppTest, script: str, query: dict[str, str] | None = None) -> AppTest:
    """Open a page as a link to it would: its query parameters set before the first run."""
    for key, value in (query or {}).items():
        at.query_params[key] = value
    if script != PAGES[0].script:
        at.switch_page(f"dashboard/pages/{script}")
    return run(at)


def db() -> Store:
    return store()


def texts(elements: Any) -> list[str]:
    return [e.value for e in elements]


def plain(markdown: str) -> str:
    """What a reader sees of Markdown made by ``planner.text.md``: no escapes."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def hex_of(colour: str) -> str:
    """``rgba(10, 48, 105, 0.85)`` as ``#0a3069``; ``#rrggbb`` as it is."""
    found = re.match(r"rgba?\((\d+), (\d+), (\d+)", colour)
    return colour if found is None else "#" + "".join(f"{int(v):02x}" for v in found.groups())


def rows(at: AppTest, key: str) -> list[dict[str, Any]]:
    """A table's rows by key: a dataframe's values, or a static table's cells as read."""
    node = at.get_by_key(key)
    if len(node.dataframe):
        records: list[dict[str, Any]] = node.dataframe[0].value.to_dict("records")
        return records
    frame = node.table[0].value
    return [{plain(str(k)): plain(str(v)) for k, v in r.items()} for r in frame.to_dict("records")]


def charts(at: AppTest) -> dict[str, dict[str, Any]]:
    """Plotly specs by chart key."""
    return {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def axes(spec: dict[str, Any]) -> tuple[str, str]:
    layout = spec["layout"]
    return layout["xaxis"]["title"]["text"], layout["yaxis"]["title"]["text"]


def expected(params: PlanParams) -> Recommendation:
    return recommend(plan_inputs(params, db()).request)


def count_simulations(monkeypatch: pytest.MonkeyPatch) -> list[Scenario]:
    """The scenarios simulated from now on: every pooled run goes through
    ``planner.sim.sweep.run_many`` and every single run through ``dashboard.cache.simulate``."""
    simulated: list[Scenario] = []

    def pooled(scenarios: Sequence[Scenario], detail: bool = False) -> list[Outcome]:
        simulated.extend(scenarios)
        return run_many(scenarios, detail=detail)

    def single(scenario: Scenario, work: Work | None) -> Results:
        simulated.append(scenario)
        return simulate_charged(scenario, work)

    monkeypatch.setattr(planner.sim.sweep, "run_many", pooled)
    monkeypatch.setattr(dashboard.cache, "simulate_charged", single)
    return simulated


def headline_of(result: Recommendation) -> str:
    best = result.recommended
    assert best is not None
    return f"{best.seats} {'seat' if best.seats == '1' else 'seats'} per card — {best.label}"


def query(at: AppTest) -> dict[str, str]:
    return {k: v if isinstance(v, str) else v[-1] for k, v in at.query_params.items()}


def ignored(at: AppTest) -> list[str]:
    """The message a page shows about what a link asked for that it could not use."""
    return [w for w in texts(at.warning) if "Parts of this link were ignored" in w]


# ---------------------------------------------------------------------------------------
# Plan


def test_plan_is_the_landing_page_and_answers_without_touching_anything(app: AppTest) -> None:
    assert PAGES[0].script == "plan.py" and PAGES[0].params is PlanParams
    run(app)
    result = expected(PlanParams())
    best = result.recommended
    assert best is not None
    assert texts(app.title) == [headline_of(result)]
    assert any(f"Why not {best.cap + 1}?" in m for m in texts(app.markdown))
    assert query(app) == {}  # the default plan's link is just "/"

    specs = charts(app)
    assert axes(specs["plan_chart_latency_exclusive"]) == (
        "concurrent sessions",
        "p99 latency, end to end (ms)",
    )
    assert axes(specs["plan_chart_fps_exclusive"]) == (
        "concurrent sessions",
        "slowest session (frames/s)",
    )
    latency = specs["plan_chart_latency_exclusive"]
    assert {t["name"] for t in latency["data"]} == set(PlanParams().policies)
    assert any(s.get("y0") == 50 for s in latency["layout"]["shapes"])  # the budget line
    assert axes(specs["plan_chart_curve"]) == (
        "batch size (frames per call)",
        "latency per call (ms)",
    )
    assert axes(specs["plan_chart_pareto"])[1] == "seats per card"

    options = rows(app, "plan_options")
    assert [(r["option"], r["seats per card"]) for r in options] == [
        (o.label, o.seats) for o in result.options
    ]
    assert list(options[0])[:2] == ["option", "seats per card"]  # what a reader compares
    assert {"isolation (memory; faults)", "dominated by"} <= set(options[0])
    at = result.options[0].at_cap
    assert at is not None and at.e2e_latency_ms is not None
    assert options[0]["p99 latency at cap (ms)"] == display.ms(at.e2e_latency_ms, unit=False)
    assert any("random phase draws" in m for m in texts(app.markdown))  # the assumptions


def test_changing_the_budget_changes_the_headline_and_the_link(app: AppTest) -> None:
    run(app)
    before = texts(app.title)
    app.number_input(key="plan_budget_ms").set_value(15.0)
    run(app)
    after = expected(PlanParams(budget_ms=15.0))
    assert texts(app.title) == [headline_of(after)] != before
    assert query(app) == {"budget_ms": "15"}


def test_fleet_and_cost_follow_peak_and_price_without_new_simulations(
    app: AppTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    simulated = count_simulations(monkeypatch)
    run(app)
    assert simulated, "the first plan simulates, so the count sees the runs"
    simulated.clear()
    app.number_input(key="plan_peak_sessions").set_value(100)
    app.number_input(key="plan_price_per_hour").set_value(3.0)
    run(app)
    assert simulated == []  # the peak and the price size the fleet of the cached plan
    assert any("answered from the cache" in c for c in texts(app.caption))
    best = expected(PlanParams()).recommended
    assert best is not None
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["GPUs for 100 at peak"].startswith(str(gpus_for(100, 0.2, best.cap)))
    cost = display.money(3.0 / best.cap)
    assert any(f"{cost} per seat-hour" in plain(m) for m in texts(app.markdown))
    assert query(app) == {"peak_sessions": "100", "price_per_hour": "3"}
    table = rows(app, "plan_options")
    assert list(table[0])[:4] == ["option", "seats per card", "GPUs for peak",
                                  "cost per seat-hour"]  # fmt: skip
    assert table[0]["cost per seat-hour"] == cost and table[0]["GPUs for peak"] == str(
        gpus_for(100, 0.2, best.cap)
    )


def test_a_link_restores_every_control_and_the_same_numbers(app: AppTest) -> None:
    params = PlanParams(
        budget_ms=40.0,
        min_fps=25.0,
        policies=("batch-all", "round-robin"),
        cotenants=(0.5,),
        peak_sessions=50,
        **QUICK,
    )
    open_page(app, "plan.py", encode(params))
    assert ignored(app) == []
    assert app.number_input(key="plan_budget_ms").value == 40.0
    assert app.number_input(key="plan_min_fps").value == 25.0
    assert app.multiselect(key="plan_policies").value == ["batch-all", "round-robin"]
    assert app.multiselect(key="plan_modes").value == ["exclusive", "time-slicing"]
    assert app.text_input(key="plan_cotenants").value == "0.5"
    assert app.number_input(key="plan_seeds").value == 2
    assert texts(app.title) == [headline_of(expected(params))]
    assert query(app) == encode(params)  # the address bar keeps the same link
    modes = {r["option"].split(", ", 1)[1] for r in rows(app, "plan_options")}
    assert modes == {"exclusive", "time-slicing (co-tenants busy 0.5)"}


def test_a_self_contained_link_opens_the_embedded_curve(app: AppTest) -> None:
    server = db().curves(card="server-24gb")[0]
    params = self_contained(PlanParams(budget_ms=45.0, **QUICK), server)
    open_page(app, "plan.py", encode(params))
    assert ignored(app) == []
    assert app.selectbox(key="plan_curve").value == "link"
    assert texts(app.title) == [headline_of(expected(params))]
    shown = app.get_by_key("plan_self_contained").code[0].value
    assert shown == url("http://localhost:8501", params)


def test_save_plan_gives_a_short_link_that_restores_the_plan(app: AppTest) -> None:
    open_page(app, "plan.py", {"budget_ms": "30", "seeds": "2"})
    app.button(key="plan_save").click()
    run(app)
    (short,) = texts(app.get_by_key("plan_short_link").code)
    plan_id = short.rsplit("=", 1)[1]
    assert short == f"http://localhost:8501/?plan={plan_id}"
    assert query(app) == {"plan": plan_id}
    saved = db().plan(plan_id)
    assert saved["budget_ms"] == "30" and saved["curve"] == default_curve(db()).id

    other = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    open_page(other, "plan.py", {"plan": plan_id})
    assert ignored(other) == []
    assert other.number_input(key="plan_budget_ms").value == 30.0
    assert texts(other.title) == texts(app.title)
    assert query(other) == {"plan": plan_id}  # still the short link
    assert texts(other.get_by_key("plan_short_link").code) == [short]
    other.number_input(key="plan_min_fps").set_value(20.0)
    run(other)
    assert query(other)["min_fps"] == "20" and "plan" not in query(other)
    with pytest.raises(KeyError):  # the short link no longer opens what the page shows
        other.get_by_key("plan_short_link")


def test_a_saved_plan_with_an_override_keeps_the_override(app: AppTest) -> None:
    plan_id = db().save_plan(saved_params(PlanParams(budget_ms=30.0, **QUICK)))
    open_page(app, "plan.py", {"plan": plan_id, "budget_ms": "20"})
    assert app.number_input(key="plan_budget_ms").value == 20.0
    assert query(app)["budget_ms"] == "20"


@pytest.mark.parametrize(
    ("link", "message"),
    [
        ({"budget_ms": "abc"}, "ignored budget_ms='abc': not a number; using the default 50"),
        ({"policies": "fastest"}, "'fastest' not among"),
        ({"curve": "zzzzzzzzzzzz"}, "no stored curve has that id"),
        ({"plan": "0123456789"}, "no saved plan with that id"),
        ({"plan": ""}, "ignored plan: empty"),  # this page used to stop
        ({"plan": "  "}, "ignored plan: empty"),
        ({"overhead_ms": "60"}, "leaves nothing of the 50 ms budget"),
        ({"mig_profile": "3g.40gb"}, "does not support MIG"),
        ({"card": "<script>alert(1)</script>"}, "only describe embedded points"),
        ({"points": "1:5,two:9"}, "ignored points="),
        ({"whatever": "1"}, "ignored unknown parameter 'whatever'"),
    ],
)
def test_a_bad_link_opens_the_default_plan_with_one_message(
    app: AppTest, link: dict[str, str], message: str
) -> None:
    open_page(app, "plan.py", link)
    (warning,) = ignored(app)
    assert "Parts of this link were ignored" in warning
    plain = warning.replace("\\", "")
    assert message in plain
    assert "<script>" not in warning  # shown literally, escaped
    assert not any("This page stopped" in e for e in texts(app.error))
    assert texts(app.title) == [headline_of(expected(PlanParams()))]
    assert app.number_input(key="plan_budget_ms").value == 50.0


def test_controls_that_do_not_go_together_say_so(app: AppTest) -> None:
    run(app)
    app.number_input(key="plan_overhead_ms").set_value(50.0)
    run(app)
    (error,) = texts(app.error)
    assert "leaves nothing of the 50 ms budget" in error
    app.multiselect(key="plan_policies").set_value([])
    run(app)
    assert "Scheduling policies" in texts(app.error)[0]


# ---------------------------------------------------------------------------------------
# Simulate


def test_simulate_shows_one_run_in_detail(app: AppTest) -> None:
    open_page(app, "simulate.py")
    results = simulate(simulation_inputs(SimulateParams(), db()).scenario)
    (summary,) = rows(app, "sim_summary")
    assert summary["policy"] == "batch-all"
    assert summary["slowest session (fps)"] == display.fps(results.min_fps, unit=False)
    assert summary["p99 (ms)"] == display.ms(results.e2e_latency.p99, unit=False)
    specs = charts(app)
    assert axes(specs["sim_chart_timeline_0"]) == ("time since the start (ms)", "session")
    assert axes(specs["sim_chart_fps_0"]) == ("session", "delivered frames/s")
    assert axes(specs["sim_chart_latency_0"]) == ("latency (ms)", "frames")
    timeline = specs["sim_chart_timeline_0"]["data"]
    names = {t.get("name") for t in timeline}
    assert {"waiting", "on the GPU", "delivered"} <= names
    # Every colour the timeline draws has a legend entry (a shade of it, in the GPU lane).
    colours = {hex_of(t["line"]["color"]) for t in timeline if t.get("mode") == "lines"}
    named = {hex_of(t["line"]["color"]) for t in timeline
             if t.get("mode") == "lines" and t.get("showlegend", True)}  # fmt: skip
    assert colours == named and "#d1242f" not in colours  # red marks failures only
    # The plan's criteria on the charts: the floor (default 28.5 fps) and the budget.
    fps_names = {t.get("name") for t in specs["sim_chart_fps_0"]["data"]}
    assert any("floor (28.5 fps" in str(n) for n in fps_names)
    latency_names = {t.get("name") for t in specs["sim_chart_latency_0"]["data"]}
    assert any(f"budget for p99 ({display.ms(50.0)})" in str(n) for n in latency_names)
    assert len(rows(app, "sim_sessions_0")) == 3
    assert any("were overwritten" in m for m in texts(app.markdown))


def test_simulate_two_policies_side_by_side_from_a_link(app: AppTest) -> None:
    params = SimulateParams(sessions=6, policy="oldest-first", compare_policy="batch-all",
                            duration_s=5.0, overhead_ms=5.0)  # fmt: skip
    open_page(app, "simulate.py", encode(params))
    assert ignored(app) == []
    assert app.number_input(key="sim_sessions").value == 6
    assert app.selectbox(key="sim_compare_policy").value == "batch-all"
    inputs = simulation_inputs(params, db())
    assert inputs.compare is not None
    table = rows(app, "sim_summary")
    assert [r["policy"] for r in table] == ["oldest-first", "batch-all"]
    for row, scenario in zip(table, (inputs.scenario, inputs.compare), strict=True):
        assert row["slowest session (fps)"] == display.fps(simulate(scenario).min_fps, unit=False)
    assert {"sim_chart_timeline_0", "sim_chart_timeline_1"} <= set(charts(app))
    assert query(app) == encode(params)


def test_simulate_controls_change_the_run_and_the_link(app: AppTest) -> None:
    open_page(app, "simulate.py", {"duration_s": "5"})
    app.number_input(key="sim_sessions").set_value(5)
    app.selectbox(key="sim_policy").set_value("oldest-first")
    run(app)
    assert query(app) == {"sessions": "5", "policy": "oldest-first", "duration_s": "5"}
    assert len(rows(app, "sim_sessions_0")) == 5
    app.selectbox(key="sim_mode").set_value("time-slicing")
    run(app)
    assert app.text_input(key="sim_cotenants").value == "0.9,0.9"
    assert query(app)["mode"] == "time-slicing" and query(app)["cotenants"] == "0.9,0.9"
    app.text_input(key="sim_cotenants").set_value("0.9,lots")
    run(app)
    assert "Co-tenants (duty cycles): item 2 not a number" in texts(app.error)[0].replace("\\", "")


def test_simulate_bad_link_says_what_was_ignored(app: AppTest) -> None:
    open_page(app, "simulate.py", {"sessions": "3", "fps": "30,15", "policy": "magic"})
    (warning,) = ignored(app)
    plain = warning.replace("\\", "")
    assert "ignored policy='magic'" in plain and "fps has 2 values for 3 sessions" in plain
    assert rows(app, "sim_summary")[0]["policy"] == "batch-all"


# ---------------------------------------------------------------------------------------
# Measure


def test_measure_builds_the_exact_command_for_the_card_machine(app: AppTest) -> None:
    open_page(app, "measure.py")
    app.text_input(key="measure_cmd_batches").set_value("1,2,4,8")
    app.multiselect(key="measure_cmd_precisions").set_value(["fp16", "fp32"])
    app.text_input(key="measure_cmd_card").set_value("l4 (rack 3)")
    app.text_input(key="measure_cmd_out").set_value("l4.csv")
    run(app)
    command = app.get_by_key("measure_command").code[0].value
    argv = shlex.split(command)
    assert argv[:2] == ["planner", "measure"]
    args = build_parser().parse_args(argv[1:])
    options = options_from_args(args)
    assert options.batches == (1, 2, 4, 8) and options.precisions == ("fp16", "fp32")
    assert options.card == "l4 (rack 3)" and args.out == Path("l4.csv")


@pytest.mark.torch
def test_measure_here_runs_the_harness_and_stores_the_curve(app: AppTest) -> None:
    open_page(app, "measure.py")
    app.text_input(key="measure_here_batches").set_value("1,2")
    app.text_input(key="measure_here_resolution").set_value("64x36")
    app.number_input(key="measure_here_warmup").set_value(0)
    app.number_input(key="measure_here_rounds").set_value(1)
    app.number_input(key="measure_here_repetitions").set_value(2)
    app.text_input(key="measure_here_card").set_value("test-cpu")
    run(app)
    app.button(key="measure_run").click()
    run(app)
    (measured,) = db().curves(card="test-cpu")
    assert measured.source == "measured" and measured.batches == (1, 2)
    assert any("Measured and stored 1 curve" in s for s in texts(app.success))
    assert rows(app, f"measure_points_{measured.id}")[0]["batch"] == 1


# ---------------------------------------------------------------------------------------
# Compare cards


def test_compare_plans_every_curve_of_the_model_under_the_same_criteria(app: AppTest) -> None:
    open_page(app, "compare.py", {"precision": "fp16", "resolution": "512x288", **{
        k: str(v) for k, v in QUICK.items()}})  # fmt: skip
    assert ignored(app) == []
    table = rows(app, "cmp_table")
    assert [r["card"] for r in table] == ["laptop-8gb", "server-24gb"]
    for row in table:
        curve = next(c for c in db().curves(card=row["card"]) if c.precision == "fp16"
                     and c.resolution == "512x288")  # fmt: skip
        result = expected(PlanParams(curve=curve.id, **QUICK))
        best = result.recommended
        assert best is not None and row["seats per card"] == best.seats
        assert row["option"] == best.label and row["cost per seat-hour"] == display.MISSING
        assert best.at_cap is not None
        assert row["slowest session at cap (fps)"] == display.fps(best.at_cap.min_fps, unit=False)
    assert list(table[0])[:4] == ["card", "option", "seats per card", "cost per seat-hour"]
    specs = charts(app)
    assert axes(specs["cmp_chart_latency"]) == (
        "batch size (frames per call)",
        "latency per call (ms)",
    )
    assert axes(specs["cmp_chart_per_frame"])[1] == "time per frame (ms)"
    assert axes(specs["cmp_chart_caps"])[1] == "seats per card"


def test_setting_a_price_on_compare_shows_cost_per_seat(app: AppTest) -> None:
    open_page(app, "compare.py", {"cards": "server-24gb", **{k: str(v) for k, v in QUICK.items()}})
    assert app.selectbox(key="cmp_price_card").value == "server-24gb"
    app.number_input(key="cmp_price_value_server-24gb").set_value(2.0)
    app.button(key="cmp_price_set").click()
    run(app)
    assert db().card("server-24gb").price_per_hour == 2.0
    (row,) = rows(app, "cmp_table")
    curve = db().curves(card="server-24gb")[0]
    best = expected(PlanParams(curve=curve.id, **QUICK)).recommended
    # The server curve's two points leave the cap a range ("4–5"): the row shows that
    # range, and the cost is the range it gives, with the fitted cap's cost as likely.
    assert best is not None and "–" in best.seats
    assert row["seats per card"] == best.seats
    low, high = 2.0 / best.seats_per_card_high, 2.0 / best.seats_per_card_low
    likely = display.money(2.0 / best.seats_per_card)
    assert row["cost per seat-hour"] == (
        f"{display.money(low)}–{display.money(high)}, likely {likely}"
    )
    assert any(
        "server-24gb now costs $2.00 per hour" in s.replace("\\", "") for s in texts(app.success)
    )


def test_compare_link_with_unknown_cards_says_so(app: AppTest) -> None:
    open_page(app, "compare.py", {"cards": "server-24gb,nosuchcard", "model": "ball-detector",
                                  **{k: str(v) for k, v in QUICK.items()}})  # fmt: skip
    (warning,) = ignored(app)
    assert "nosuchcard" in warning
    assert [r["card"] for r in rows(app, "cmp_table")] == ["server-24gb"]
    assert query(app)["cards"] == "server-24gb"


# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("entry", PAGES, ids=lambda e: e.script)
def test_every_page_renders_on_a_fresh_store_with_keyed_widgets(app: AppTest, entry: Any) -> None:
    link = (
        {k: str(v) for k, v in QUICK.items()} if entry.script in ("plan.py", "compare.py") else {}
    )
    if entry.script == "simulate.py":
        link = {"duration_s": "5"}
    open_page(app, entry.script, link)
    assert texts(app.title)
    assert texts(app.error) == []
    widgets = [node for node in app._tree if isinstance(node, Widget)]
    assert widgets and [w for w in widgets if not w.key] == []


def test_encoded_links_of_each_page_name_its_parameters() -> None:
    """The page a link opens matches the navigation (landing-page links are ``/?…``)."""
    paths = {e.params: e.url_path for e in PAGES if e.params is not None}
    assert url("http://h", PlanParams(budget_ms=40.0)) == "http://h/?budget_ms=40"
    assert url("http://h", SimulateParams(sessions=4)).startswith(
        f"http://h/{paths[SimulateParams]}?"
    )
    assert url("http://h", CompareParams(cards=("t4",))).startswith(
        f"http://h/{paths[CompareParams]}?"
    )


def test_a_server_that_queues_every_frame_from_the_controls_and_a_link(app: AppTest) -> None:
    """Simulate: choosing "all" shows Triton's queue settings, goes into the link, and a
    saturated run's summary says the queue grows; the Plan page opened with queue=all says
    why the next seat fails in the same words."""
    open_page(app, "simulate.py", {"duration_s": "6", "sessions": "12", "policy": "triton",
                                   "points": "1:10,8:30"})  # fmt: skip
    assert app.selectbox(key="sim_queue").value == "newest"
    app.selectbox(key="sim_queue").set_value("all")
    run(app)
    assert query(app)["queue"] == "all"
    assert app.selectbox(key="sim_timeout_action").value == "reject"
    assert any("The queue grows**: p99" in plain(m) for m in texts(app.markdown))
    plan = {"points": "1:10,8:30", "policies": "triton", "queue": "all", "seeds": "2",
            "duration_s": "5"}  # fmt: skip
    page = open_page(AppTest.from_file(str(REPO / "app.py"), default_timeout=120), "plan.py", plan)
    assert ignored(page) == []
    assert page.selectbox(key="plan_queue").value == "all"
    assert any("the queue grows" in plain(m) for m in texts(page.markdown))
