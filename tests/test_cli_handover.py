"""``planner profiles``, ``fleet``, ``report``, ``deploy`` and ``compare-plans``: a plan's
way from the planner to the people who sign off and run it (SPEC §5.3)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from planner.demand.fleet import demand_fleet
from planner.demand.profiles import read_profile_csv
from planner.limits import UNCALIBRATED_MARGIN
from planner.plan.params import PlanParams
from planner.plan.recommend import recommend
from planner.plan.resolve import plan_inputs
from planner.store.repository import Store

QUICK = ("--seeds", "2", "--duration-s", "5", "--policies", "oldest-first,batch-all,triton")
MORNING = "time,sessions\n08:00,60\n09:00,20\n10:00,10\n11:00,30\n"
XSS = "<img src=x onerror=alert(1)>"


def test_profiles_are_added_listed_shown_and_deleted(cli, tmp_path: Path) -> None:
    good = tmp_path / "morning.csv"
    good.write_text(MORNING)
    assert cli("profiles", "add", "morning", "--file", good).status == 0
    typed = cli("profiles", "add", "Day", "--values", ",".join(["5"] * 24), "--json")
    assert typed.status == 0 and typed.json["name"] == "day" and typed.json["repeats"]
    listing = cli("profiles", "list", "--json").json
    assert [p["name"] for p in listing["built_in"]] == ["flat", "office-hours", "evening-peak"]
    assert [p["name"] for p in listing["stored"]] == ["day", "morning"]
    shown = cli("profiles", "show", "morning")
    assert "4 steps of 60 min (4 hours, not repeating)" in shown.out and "08:00" in shown.out
    again = cli("profiles", "add", "morning", "--values", ",".join(["1"] * 24))
    assert again.status == 2 and "stored with other values" in again.err
    assert cli("profiles", "delete", "morning").status == 0
    assert cli("profiles", "show", "morning").status == 2


def test_a_bad_profile_file_stores_nothing_and_says_why_line_by_line(cli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("time,sessions\n08:00,1\n09:00,x\n09:30,2\n")
    run = cli("profiles", "add", "bad", "--file", bad)
    assert run.status == 2
    assert "bad.csv line 3: sessions 'x' is not a number" in run.err
    assert "bad.csv line 4: time '09:30' is 30 min after the row before" in run.err
    assert cli("profiles", "list", "--json").json["stored"] == []


def test_fleet_over_a_profile_matches_the_library(cli, db_path: Path, tmp_path: Path) -> None:
    good = tmp_path / "morning.csv"
    good.write_text(MORNING)
    run = cli("fleet", *QUICK, "--profile", good, "--price-per-hour", "2", "--lead-time-min",
              "90", "--json")  # fmt: skip
    assert run.status == 0, run.err
    doc = run.json
    params = PlanParams(seeds=2, duration_s=5.0, policies=("oldest-first", "batch-all", "triton"),
                        price_per_hour=2.0)  # fmt: skip
    result = recommend(plan_inputs(params, Store(db_path)).request)
    best = result.recommended
    assert best is not None and doc["option"] == best.label
    expected = demand_fleet(
        read_profile_csv("morning", "m.csv", MORNING.encode()),
        seats_per_card=best.seats_per_card,
        headroom=0.2,
        lead_time_min=90,
        price_per_hour=2.0,
    )
    assert doc["fleet"]["autoscaled"]["gpus"] == list(expected.autoscaled.gpus)
    assert doc["fleet"]["fixed"]["cost_per_day"] == pytest.approx(expected.fixed.cost_per_day)
    assert doc["fleet"]["repeats"] is False and doc["fleet"]["steps_ahead"] == 2
    # Every option that holds a seat, priced on the same demand, cheapest first.
    holding = [o for o in result.options if o.cap >= 1]
    assert sorted(o["option"] for o in doc["options"]) == sorted(o.label for o in holding)
    days = [o["autoscaled_cost_per_day"] for o in doc["options"]]
    assert days == sorted(days)
    for row in doc["options"]:
        seats = next(o.seats_per_card for o in holding if o.label == row["option"])
        assert row["seats_per_card"] == seats
        # The peak step: 60 sessions x 1.2 = 72 seats, ceil(72 / seats per card) GPUs.
        assert row["fixed_peak_gpus"] == -(-72 // seats)
    text = cli("fleet", *QUICK, "--profile", "office-hours", "--peak-sessions", "100", "--steps")
    assert text.status == 0, text.err
    assert "autoscaled, 15 min lead time" in text.out and "hour  sessions" in text.out


def test_fleet_compares_the_models_cards_on_cost_per_day(cli) -> None:
    assert cli("cards", "set-price", "server-24gb", "1.5").status == 0
    assert cli("cards", "set-price", "laptop-8gb", "0.4").status == 0
    run = cli("fleet", *QUICK, "--profile", "evening-peak", "--peak-sessions", "60",
              "--compare-cards", "--json")  # fmt: skip
    assert run.status == 0, run.err
    cards = run.json["cards"]
    # Every whole-card curve of the model at 512x288: the laptop's two and the server's.
    assert sorted((c["card"], c["precision"]) for c in cards) == [
        ("laptop-8gb", "fp16"), ("laptop-8gb", "fp32"), ("server-24gb", "fp16"),
    ]  # fmt: skip
    costs = [c["autoscaled_cost_per_day"] for c in cards]
    assert costs == sorted(costs)  # cheapest per day first
    for card in cards:
        assert card["fixed_cost_per_day"] >= card["autoscaled_cost_per_day"]


def test_fleet_needs_a_profile_and_a_shape_needs_the_peak(cli) -> None:
    missing = cli("fleet", *QUICK)
    assert missing.status == 2 and "--profile is needed" in missing.err
    shape = cli("fleet", *QUICK, "--profile", "flat")
    assert shape.status == 2 and "give the peak sessions to scale it" in shape.err
    unknown = cli("fleet", *QUICK, "--profile", "lunch")
    assert unknown.status == 2 and "no stored demand profile called 'lunch'" in unknown.err


def test_recommend_with_a_profile_adds_the_fleet(cli) -> None:
    run = cli("recommend", "--points", "1:9.82,2:20.36", *QUICK, "--profile", "flat",
              "--peak-sessions", "30", "--json")  # fmt: skip
    assert run.status == 0, run.err
    assert run.json["demand"]["fixed"]["peak_gpus"] == run.json["fleet"]["gpus"]


def test_a_report_holds_the_plan_and_escapes_what_users_wrote(cli, tmp_path: Path) -> None:
    curve = tmp_path / "xss.csv"
    curve.write_text(
        f'batch,latency_ms,model,card\n1,9.8,"{XSS}",laptop-8gb\n2,20.4,"{XSS}",laptop-8gb\n'
    )
    stored = cli("curves", "import", curve, "--json")
    assert stored.status == 0, stored.err
    curve_id = stored.json[0]["id"]
    out = tmp_path / "report"
    run = cli("report", "--curve", curve_id, *QUICK, "--profile", "office-hours",
              "--peak-sessions", "50", "--out", out, "--json")  # fmt: skip
    assert run.status == 0, run.err
    page = (tmp_path / "report.html").read_text()
    markdown = (tmp_path / "report.md").read_text()
    assert run.json["html"] == str(tmp_path / "report.html")
    assert XSS not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "\\" + XSS in markdown  # "<" escaped: no renderer reads a tag
    assert not re.search(r"(?<!\\)<img", markdown)
    assert run.json["headline"] in page
    for section in ("answer", "inputs", "curve", "options", "fleet", "demand", "share"):
        assert f'<section id="{section}">' in page
    assert f"?curve={curve_id}" in page


def test_a_report_of_a_saved_plan_has_its_short_link(cli, tmp_path: Path) -> None:
    saved = cli("link", *QUICK, "--save", "--json").json["plan_id"]
    run = cli("report", "--plan", saved, "--out", tmp_path / "r", "--base",
              "https://planner.example.com")  # fmt: skip
    assert run.status == 0, run.err
    assert f"https://planner.example.com/?plan={saved}" in (tmp_path / "r.md").read_text()
    changed = cli("report", "--plan", saved, "--budget-ms", "70")
    assert changed.status == 2 and "--budget-ms would change it" in changed.err
    unknown = cli("report", "--plan", "0123456789")
    assert unknown.status == 2 and "no saved plan" in unknown.err


def test_deploy_writes_the_files_of_the_chosen_option(cli, tmp_path: Path) -> None:
    out = tmp_path / "deploy"
    run = cli("deploy", *QUICK, "--modes", "exclusive,time-slicing", "--cotenants", "0.2",
              "--option", "triton,time-slicing", "--out", out)  # fmt: skip
    assert run.status == 0, run.err
    assert sorted(p.name for p in out.iterdir()) == [
        "config.pbtxt", "time-slicing.yaml", "worker.json",
    ]  # fmt: skip
    worker = json.loads((out / "worker.json").read_text())
    assert worker["policy"] == "triton" and worker["sharing"]["mode"] == "time-slicing"
    plugin = yaml.safe_load((out / "time-slicing.yaml").read_text())
    assert plugin["sharing"]["timeSlicing"]["resources"][0]["replicas"] == 2
    printed = cli("deploy", *QUICK, "--json")
    assert printed.status == 0 and printed.json["written"] == []
    assert printed.json["files"][0]["name"] == "worker.json"
    wrong = cli("deploy", *QUICK, "--option", "aimd")
    assert wrong.status == 2 and "has no option 'aimd'" in wrong.err


def test_deploy_refuses_a_planted_link_and_an_empty_folder_name(cli, tmp_path: Path) -> None:
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    out = tmp_path / "deploy"
    out.mkdir()
    (out / "worker.json").symlink_to(outside)
    run = cli("deploy", *QUICK, "--out", out)
    assert run.status == 2 and run.err.count("planner: ") == 1 and "symbolic link" in run.err
    assert outside.read_text() == "keep me"
    assert sorted(p.name for p in out.iterdir()) == ["worker.json"]  # nothing else written
    empty = cli("deploy", *QUICK, "--out", "")
    assert empty.status == 2 and "--out needs a folder name" in empty.err


@pytest.mark.parametrize("command", ["link", "report"])
def test_a_base_address_that_does_not_parse_is_one_line(cli, command: str, tmp_path: Path) -> None:
    extra = ("--out", str(tmp_path / "plan")) if command == "report" else ()
    run = cli(command, *QUICK, "--base", "http://[::1", *extra)
    assert run.status == 2 and run.err.count("\n") == 1, run.err
    assert "is not a valid address" in run.err and run.out == ""
    assert list(tmp_path.iterdir()) == []


def test_compare_plans_says_what_differs_and_what_it_bought(cli) -> None:
    a = cli("link", *QUICK, "--budget-ms", "20", "--save", "--json").json["plan_id"]
    b = cli("link", *QUICK, "--budget-ms", "60", "--peak-sessions", "40", "--save",
            "--json").json["plan_id"]  # fmt: skip
    run = cli("compare-plans", a, b, "--json")
    assert run.status == 0, run.err
    doc = run.json
    assert doc["differing"] == ["budget_ms", "peak_sessions"]
    assert doc["a"]["plan_id"] == a and doc["b"]["gpus_for_peak"] is not None
    assert int(doc["b"]["seats_per_card"]) >= int(doc["a"]["seats_per_card"])
    text = cli("compare-plans", a, b)
    assert "budget_ms" in text.out and "seats per card" in text.out
    missing = cli("compare-plans", a, "0123456789")
    assert missing.status == 2 and "no saved plan" in missing.err


def test_a_link_cannot_carry_a_profile_file(cli, tmp_path: Path) -> None:
    good = tmp_path / "morning.csv"
    good.write_text(MORNING)
    run = cli("link", "--profile", good)
    assert run.status == 2 and "store it first" in run.err
    named = cli("link", "--profile", "office-hours", "--lead-time-min", "30", "--json")
    margin = str(UNCALIBRATED_MARGIN)  # a link pins the uncalibrated range's margin
    assert named.json["params"] == {"profile": "office-hours", "lead_time_min": "30",
                                    "margin": margin}  # fmt: skip


@pytest.mark.parametrize(
    ("given", "written"),
    [("plan.html", ["plan.html"]), ("plan.md", ["plan.md"]), ("plan", ["plan.html", "plan.md"]),
     ("Plan.HTML", ["Plan.html"])],
)  # fmt: skip
def test_a_report_takes_the_name_the_user_gave(
    cli, tmp_path: Path, given: str, written: list[str]
) -> None:
    out = tmp_path / "reports"
    out.mkdir()
    run = cli("report", *QUICK, "--out", out / given, "--json")
    assert run.status == 0, run.err
    assert sorted(p.name for p in out.iterdir()) == written
    by_kind = {Path(name).suffix: str(out / name) for name in written}
    assert (run.json["html"], run.json["markdown"]) == (by_kind.get(".html"), by_kind.get(".md"))
    if given == "plan.md":
        assert (out / "plan.md").read_text().startswith("#")
