"""The Plan page from plan to production (SPEC §5.3), run in-process with AppTest: demand
over the day, adding a profile, the report buttons, the deployment files, and the
comparison with a saved plan; what the URL keeps of them. Expected figures come from the
library, called directly on the same inputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.state import store
from planner import display
from planner.errors import StoreError
from planner.links.urls import encode, saved_params
from planner.plan.deploy import deployment, option_key
from planner.plan.fleet import fleet_text, plan_fleet, plan_profile, rule_text
from planner.plan.outcomes import Recommendation
from planner.plan.params import PlanParams
from planner.plan.recommend import recommend
from planner.plan.resolve import plan_inputs
from planner.store.repository import Store
from tests.conftest import run

REPO = Path(__file__).resolve().parent.parent
QUICK: dict[str, Any] = {
    "seeds": 2,
    "duration_s": 5.0,
    "policies": ("oldest-first", "batch-all", "triton"),
}
MORNING = b"time,sessions\n08:00,60\n09:00,20\n10:00,10\n11:00,30\n"


def open_plan(at: AppTest, query: dict[str, str]) -> AppTest:
    for key, value in query.items():
        at.query_params[key] = value
    return run(at)


def db() -> Store:
    return store()


def query(at: AppTest) -> dict[str, str]:
    return {k: v if isinstance(v, str) else v[-1] for k, v in at.query_params.items()}


def rows(at: AppTest, key: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = at.get_by_key(key).dataframe[0].value.to_dict("records")
    return records


def expected(params: PlanParams) -> Recommendation:
    return recommend(plan_inputs(params, db()).request)


def texts(elements: Any) -> list[str]:
    return [e.value for e in elements]


def test_the_sections_are_on_the_default_plan(app: AppTest) -> None:
    open_plan(app, encode(PlanParams(**QUICK)))
    headers = texts(app.subheader)
    for title in ("Demand over the day", "Report", "Deploy", "Compare with a saved plan"):
        assert title in headers
    buttons = {b.key: b.label for b in app.get("download_button")}
    assert buttons["plan_report_html"] == "Download report"
    assert buttons["plan_report_markdown"] == "Download as Markdown"
    assert app.selectbox(key="plan_profile").value is None
    # The recommended option's files, exactly as the library writes them.
    result = expected(PlanParams(**QUICK))
    files = deployment(result, None, plan_inputs(PlanParams(**QUICK), db()).card)
    shown = texts(app.code)
    for file in files:
        assert file.text.rstrip("\n") in [s.rstrip("\n") for s in shown], file.name
    assert any(s.startswith("planner deploy ") for s in shown)


def test_a_profile_in_the_link_shows_demand_gpus_and_cost(app: AppTest) -> None:
    db().set_price("laptop-8gb", 0.5)
    params = PlanParams(profile="office-hours", peak_sessions=120, lead_time_min=90, **QUICK)
    open_plan(app, encode(params))
    assert app.selectbox(key="plan_profile").value == "office-hours"
    assert app.number_input(key="plan_lead_time_min").value == 90.0
    result = expected(params)
    fleet = plan_fleet(result, plan_profile(params, db()), 90.0)
    assert fleet is not None
    spec = json.loads(app.get_by_key("plan_chart_demand").proto.spec)
    traces = {t["name"]: t for t in spec["data"]}
    assert traces["demand (sessions)"]["y"][:24] == list(fleet.profile.sessions)
    assert traces["GPUs, autoscaled (90 min lead)"]["y"][:24] == list(fleet.autoscaled.gpus)
    assert traces["GPUs, fixed fleet"]["y"][0] == fleet.fixed.peak_gpus
    costs = rows(app, "plan_demand_costs")
    fixed, auto = rule_text(fleet, "fixed"), rule_text(fleet, "autoscaled")
    assert [r["peak GPUs"] for r in costs] == [fixed["peak_gpus"], auto["peak_gpus"]]
    assert costs[1]["per day"] == auto["cost_per_day"]
    assert costs[0]["per month"] == fixed["cost_per_month"]
    options = rows(app, "plan_demand_options")
    holding = [o for o in result.options if o.cap >= 1]
    assert {r["option"] for r in options} == {o.label for o in holding}
    days = []
    for row in options:
        option = next(o for o in holding if o.label == row["option"])
        mine = plan_fleet(result, fleet.profile, 90.0, option)
        assert mine is not None
        assert row["per day, autoscaled"] == fleet_text(mine)["autoscaled_cost_per_day"]
        days.append(mine.autoscaled.cost_per_day)
    assert days == sorted(days)
    cards = rows(app, "plan_demand_cards")
    assert {r["card"] for r in cards} == {"laptop-8gb", "server-24gb"}
    laptop = [r for r in cards if r["card"] == "laptop-8gb" and r["precision"] == "fp16"]
    assert laptop[0]["per day, autoscaled"] == auto["cost_per_day"]


def test_picking_a_profile_and_a_lead_time_goes_into_the_url(app: AppTest) -> None:
    open_plan(app, {**encode(PlanParams(**QUICK)), "peak_sessions": "50"})
    app.selectbox(key="plan_profile").set_value("flat")
    run(app)
    assert query(app)["profile"] == "flat"
    before = rows(app, "plan_demand_costs")
    app.number_input(key="plan_lead_time_min").set_value(60.0)
    run(app)
    assert query(app)["lead_time_min"] == "60"
    assert rows(app, "plan_demand_costs")[0] == before[0]  # flat: nothing to scale ahead of


def test_a_shape_without_a_peak_says_what_it_needs(app: AppTest) -> None:
    open_plan(app, {**encode(PlanParams(**QUICK)), "profile": "evening-peak"})
    assert any("give the peak sessions to scale it" in m.replace("\\", "") for m in texts(app.info))
    with pytest.raises(KeyError):
        app.get_by_key("plan_chart_demand")


def test_a_link_to_a_profile_this_server_lacks_drops_only_the_profile(app: AppTest) -> None:
    open_plan(app, {**encode(PlanParams(budget_ms=40.0, **QUICK)), "profile": "not-here"})
    warnings = [w.replace("\\", "") for w in texts(app.warning)]
    assert any("ignored profile='not-here': no stored demand profile" in w for w in warnings)
    assert app.number_input(key="plan_budget_ms").value == 40.0
    assert "profile" not in query(app)


def test_a_bad_upload_stores_nothing_and_a_good_one_becomes_the_plans_profile(
    app: AppTest,
) -> None:
    open_plan(app, encode(PlanParams(**QUICK)))
    app.text_input(key="plan_new_profile_name").set_value("morning")
    bad = b"time,sessions\n08:00,1\n09:00,x\n09:30,2\n"
    app.get("file_uploader")[0].set_value(("bad.csv", bad, "text/csv"))
    run(app)
    app.button(key="plan_new_profile_save").click()
    run(app)
    errors = [e.replace("\\", "") for e in texts(app.error)]
    assert any("Nothing was stored" in e and "bad.csv line 3" in e for e in errors), errors
    assert db().profiles() == []

    app.get("file_uploader")[0].set_value(("morning.csv", MORNING, "text/csv"))
    run(app)
    app.button(key="plan_new_profile_save").click()
    run(app)
    assert [p.name for p in db().profiles()] == ["morning"]
    assert app.selectbox(key="plan_profile").value == "morning"
    assert query(app)["profile"] == "morning"
    assert any("Stored profile" in s for s in texts(app.success))
    spec = json.loads(app.get_by_key("plan_chart_demand").proto.spec)
    assert spec["data"][0]["y"][:4] == [60, 20, 10, 30]


def test_an_upload_with_a_200_kib_field_is_one_line_and_stores_nothing(app: AppTest) -> None:
    open_plan(app, encode(PlanParams(**QUICK)))
    app.text_input(key="plan_new_profile_name").set_value("wide")
    wide = b"time,sessions\n08:00,1\n09:00," + b"9" * (200 * 1024) + b"\n"
    app.get("file_uploader")[0].set_value(("wide.csv", wide, "text/csv"))
    run(app)
    app.button(key="plan_new_profile_save").click()
    run(app)
    assert not app.exception, app.exception
    errors = [e.replace("\\", "") for e in texts(app.error)]
    found = [e for e in errors if "Nothing was stored" in e]
    assert len(found) == 1 and "wide.csv line 3: not a readable CSV table" in found[0], errors
    assert len(found[0]) < 400
    assert db().profiles() == []


def test_typed_values_make_a_profile(app: AppTest) -> None:
    open_plan(app, encode(PlanParams(**QUICK)))
    app.text_input(key="plan_new_profile_name").set_value("Typed")
    app.text_area(key="plan_new_profile_values").set_value(" ".join(["4"] * 24))
    app.button(key="plan_new_profile_save").click()
    run(app)
    assert db().profile("typed").sessions == (4.0,) * 24
    assert query(app)["profile"] == "typed"
    # A second save under the same name with other values is refused.
    app.text_input(key="plan_new_profile_name").set_value("typed")
    app.text_area(key="plan_new_profile_values").set_value(" ".join(["5"] * 24))
    app.button(key="plan_new_profile_save").click()
    run(app)
    assert any("stored with other values" in e for e in texts(app.error))
    assert db().profile("typed").sessions == (4.0,) * 24


def test_choosing_another_option_to_deploy_changes_the_files_and_the_url(app: AppTest) -> None:
    params = PlanParams(**QUICK)
    open_plan(app, encode(params))
    result = expected(params)
    other = next(o for o in result.options if o.cap >= 1 and o is not result.recommended)
    app.selectbox(key="plan_deploy_option").set_value(option_key(other))
    run(app)
    assert query(app)["deploy_option"] == option_key(other)
    worker = next(json.loads(c) for c in texts(app.code) if c.startswith("{"))
    assert worker["policy"] == other.policy and worker["session_cap"] == other.cap

    again = AppTest.from_file(str(REPO / "app.py"), default_timeout=90)
    open_plan(again, query(app))
    assert again.selectbox(key="plan_deploy_option").value == option_key(other)


def test_a_bad_deploy_option_in_the_link_is_ignored_with_a_message(app: AppTest) -> None:
    open_plan(app, {**encode(PlanParams(**QUICK)), "deploy_option": "fastest"})
    warnings = [w.replace("\\", "") for w in texts(app.warning)]
    assert any("ignored deploy_option='fastest'" in w for w in warnings)
    assert app.selectbox(key="plan_deploy_option").value is None


def test_comparing_with_a_saved_plan_highlights_what_differs(app: AppTest) -> None:
    a = PlanParams(budget_ms=20.0, **QUICK)
    b = PlanParams(budget_ms=60.0, peak_sessions=40, **QUICK)
    b_id = db().save_plan(saved_params(b))
    open_plan(app, encode(a))
    app.selectbox(key="plan_compare_plan").set_value(b_id)
    run(app)
    assert query(app)["compare_plan"] == b_id
    inputs = rows(app, "plan_compare_inputs")
    differing = [r["input"] for r in inputs if r["differs"]]
    assert differing == ["budget_ms", "peak_sessions"]
    assert inputs[0][f"saved plan {b_id}"] == "60"
    outcomes = {r[""]: r for r in rows(app, "plan_compare_outcomes")}
    best_b = expected(b).recommended
    assert best_b is not None
    assert outcomes["seats per card"][f"saved plan {b_id}"] == best_b.seats
    assert outcomes["GPUs for the peak"]["this plan"] == display.MISSING


def test_two_saved_plans_side_by_side_from_a_link(app: AppTest) -> None:
    a_id = db().save_plan(saved_params(PlanParams(budget_ms=20.0, **QUICK)))
    b_id = db().save_plan(saved_params(PlanParams(budget_ms=60.0, **QUICK)))
    open_plan(app, {"plan": a_id, "compare_plan": b_id})
    assert query(app) == {"plan": a_id, "compare_plan": b_id}
    inputs = rows(app, "plan_compare_inputs")
    assert [r["input"] for r in inputs if r["differs"]] == ["budget_ms"]
    assert f"this plan ({a_id})" in inputs[0]


def test_a_link_to_compare_with_an_unknown_plan_is_ignored(app: AppTest) -> None:
    open_plan(app, {**encode(PlanParams(**QUICK)), "compare_plan": "0123456789"})
    warnings = [w.replace("\\", "") for w in texts(app.warning)]
    assert any("ignored compare_plan='0123456789'" in w for w in warnings)
    assert app.selectbox(key="plan_compare_plan").value is None


def test_a_store_that_cannot_be_written_says_so_when_saving_a_profile(
    app: AppTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: Store, *args: Any, **kwargs: Any) -> None:
        raise StoreError("the store is read-only for this user, so nothing can be stored in it")

    monkeypatch.setattr(Store, "save_profile", refuse)
    open_plan(app, encode(PlanParams(**QUICK)))
    app.text_input(key="plan_new_profile_name").set_value("day")
    app.text_area(key="plan_new_profile_values").set_value(" ".join(["4"] * 24))
    app.button(key="plan_new_profile_save").click()
    run(app)
    errors = [e.replace("\\", "") for e in texts(app.error)]
    assert any("Nothing was stored" in e and "read-only for this user" in e for e in errors)


def test_the_card_ranking_prices_the_planned_card_at_the_plans_own_price(app: AppTest) -> None:
    # No stored price for the laptop card: the plan's own $3.50 is its price here.
    params = PlanParams(profile="office-hours", peak_sessions=120, price_per_hour=3.5, **QUICK)
    open_plan(app, encode(params))
    fleet = plan_fleet(expected(params), plan_profile(params, db()), params.lead_time_min)
    assert fleet is not None and fleet.autoscaled.cost_per_day is not None
    cards = rows(app, "plan_demand_cards")
    (planned,) = [r for r in cards if r["card"] == "laptop-8gb" and r["precision"] == "fp16"]
    assert planned["per card-hour"] == display.money(3.5)
    assert planned["per day, autoscaled"] == fleet_text(fleet)["autoscaled_cost_per_day"]
    assert planned["per day, autoscaled"] != display.MISSING
    others = [r for r in cards if r["card"] != "laptop-8gb"]
    assert others and all(r["per card-hour"] == display.MISSING for r in others)  # no price
    assert cards[0]["card"] == "laptop-8gb"  # the only priced card ranks first
