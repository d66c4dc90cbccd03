"""Which MIG profile? Every profile of a card planned at once (``mig_profile=all``,
``planner.plan.mig_profiles``): the library, the link, the command and the Plan page."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.plan_charts import pareto_figure
from dashboard.state import store
from planner.curves.curve import Point
from planner.errors import BadInput
from planner.links.urls import decode, encode
from planner.plan.mig_profiles import plan_profiles
from planner.plan.params import PlanParams, SimulateParams
from planner.plan.pareto import dominated
from planner.plan.recommend import recommend
from planner.plan.resolve import plan_inputs, simulation_inputs
from planner.sim.work import Work
from tests.conftest import run
from tests.test_dashboard_pages import query, rows

POINTS = (Point(1, 4.69), Point(4, 9.29))
PLAN = PlanParams(
    points=POINTS, card="h100-80gb", policies=("oldest-first",), seeds=2, duration_s=5.0,
    peak_sessions=100, price_per_hour=4.0,
)  # fmt: skip


def test_every_profile_is_planned_once_in_one_recommendation_as_each_alone() -> None:
    db = store()
    card = db.card("h100-80gb")
    budgets: list[Work] = []

    def counted(request: Any) -> Any:
        budgets.append(Work())
        return recommend(request, work=budgets[-1])

    _, result, plans = plan_profiles(PLAN, db, recommend_with=counted)
    assert len(budgets) == 1  # one recommendation, its runs charged to the one budget
    assert budgets[0].done > 0 and result.simulations > 0
    names = [p.sharing.settings.mig_profile for p in plans if p.sharing.mode == "mig"]
    assert names == [p.name for p in card.mig_profiles]
    assert plans[0].name == "exclusive"  # the plan's other mode stays beside them
    for plan in plans:
        if plan.sharing.mode != "mig":
            continue
        alone = recommend(
            plan_inputs(
                replace(PLAN, modes=("mig",), mig_profile=plan.sharing.settings.mig_profile), db
            ).request
        )
        best = alone.recommended
        assert plan.best is not None and best is not None, plan.name
        assert (plan.best.seats, plan.best.policy) == (best.seats, best.policy), plan.name
        assert plan.fleet is not None and alone.fleet is not None
        assert plan.fleet.gpus == alone.fleet.gpus
        assert plan.fleet.cost_per_seat_hour == pytest.approx(alone.fleet.cost_per_seat_hour)
    assert result.recommended is not None
    assert result.recommended.seats_per_card == max(
        p.best.seats_per_card for p in plans if p.best is not None
    )


def test_every_profile_round_trips_through_a_link_and_a_run_takes_one() -> None:
    every = replace(PLAN, mig_profile="ALL ")
    assert every.mig_profile == "all"
    assert decode(PlanParams, encode(every)) == (every, [])
    with pytest.raises(BadInput, match="mig_profile=all plans every profile; one run takes"):
        simulation_inputs(
            SimulateParams(points=POINTS, card="h100-80gb", mode="mig", mig_profile="all"),
            store(),
        )
    with pytest.raises(BadInput, match="does not support MIG"):
        plan_profiles(replace(PLAN, card="laptop-8gb"), store())


def test_the_command_prints_every_profile_in_one_table(cli: Any) -> None:
    card = store().card("h100-80gb")
    said = cli("recommend", "--points", "1:4.69,4:9.29", "--card", "h100-80gb",
               "--mig-profile", "all", "--policies", "oldest-first", "--seeds", "2",
               "--duration-s", "5", "--peak-sessions", "100")  # fmt: skip
    assert said.status == 0, said.err
    table = said.out.split("every MIG profile of the card")[1].splitlines()
    shown = [line.split()[1] for line in table if line.startswith("MIG ")]
    assert shown == [p.name for p in card.mig_profiles]
    doc = cli(
        "recommend",
        "--points",
        "1:4.69,4:9.29",
        "--card",
        "h100-80gb",
        "--mig-profile",
        "all",
        "--seeds",
        "2",
        "--duration-s",
        "5",
        "--json",
    ).json
    assert [r["mig_profile"] for r in doc["profiles"]][1:] == [p.name for p in card.mig_profiles]


def test_the_report_shows_every_profile_in_one_table_as_the_command_does(
    cli: Any, tmp_path: Path
) -> None:
    card = store().card("h100-80gb")
    args = ("--points", "1:4.69,4:9.29", "--card", "h100-80gb", "--mig-profile", "all",
            "--policies", "oldest-first", "--seeds", "2", "--duration-s", "5",
            "--price-per-hour", "4")  # fmt: skip
    said = cli("report", *args, "--out", tmp_path / "plan.md")
    assert said.status == 0, said.err
    markdown = (tmp_path / "plan.md").read_text()
    assert "Every MIG profile of this card" in markdown
    section = markdown.split("Every MIG profile of this card")[1].split("\n#")[0]
    rows = [line for line in section.splitlines() if line.startswith("| MIG ")]
    assert [r.split("|")[1].strip() for r in rows] == [f"MIG {p.name}" for p in card.mig_profiles]
    # The same rows as planner recommend prints, cell for cell.
    printed = cli("recommend", *args).out.split("every MIG profile of the card")[1]
    for row in rows:
        # (Markdown escapes a pair of dollar signs, which some renderers read as maths.)
        cells = [c.strip().replace("\\$", "$") for c in row.strip("|").split("|")]
        line = next(x for x in printed.splitlines() if x.startswith(cells[0] + " "))
        assert line.split() == " ".join(c for c in cells if c).split()
    # A plan of one profile has no such section.
    one = cli("report", *args[:5], "1g.10gb", *args[6:], "--out", tmp_path / "one.md")
    assert one.status == 0, one.err
    assert "Every MIG profile" not in (tmp_path / "one.md").read_text()


def test_the_page_offers_every_profile_and_shows_them_in_one_table(app: AppTest) -> None:
    app.query_params.update({"points": "1:4.69,4:9.29", "card": "h100-80gb", "modes": "mig",
                             "mig_profile": "1g.10gb", "policies": "oldest-first,batch-all",
                             "seeds": "2", "duration_s": "5", "price_per_hour": "4"})  # fmt: skip
    run(app)
    assert "Every MIG profile of this card" not in [s.value for s in app.subheader]
    app.selectbox(key="plan_mig_profile").select("all")
    run(app)
    assert query(app)["mig_profile"] == "all"
    card = store().card("h100-80gb")
    table = rows(app, "plan_profiles")
    assert [r["sharing"] for r in table] == [f"MIG {p.name}" for p in card.mig_profiles]
    assert "cost per seat-hour" in table[0] and "per seat-month (720 h)" in table[0]
    options = rows(app, "plan_options")
    assert {o["option"].split(", ")[1].split(" (")[0] for o in options} == {
        f"MIG {p.name}" for p in card.mig_profiles
    }

    # One entry per policy and mode to deploy: the best profile of each policy.
    deploy = app.selectbox(key="plan_deploy_option").options
    assert len(deploy) == len(set(deploy)) == 2  # the recommended one, and the other policy

    # The link opens the same choice.
    again = AppTest.from_file(app._script_path, default_timeout=120)
    again.query_params.update(query(app))
    run(again)
    assert again.selectbox(key="plan_mig_profile").value == "all"
    assert rows(again, "plan_profiles") == table


def test_the_chart_of_seats_against_latency_names_every_profiles_options() -> None:
    _, result, plans = plan_profiles(PLAN, store())
    figure = pareto_figure(result.options, dominated(result.options))
    hover = " ".join(str(t) for trace in figure.data for t in trace.customdata)
    named = [str(t) for trace in figure.data if trace.text is not None for t in trace.text]
    for plan in plans:
        assert plan.name in hover, plan.name
    # A marker of MIG options is labelled by its profile, not by "mig", so that the
    # profiles can be told apart without hovering.
    assert not any(label.endswith(", mig") or ", mig " in label for label in named)
    assert any("MIG " in label for label in named)
