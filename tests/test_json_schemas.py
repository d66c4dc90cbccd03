"""Each command's JSON matches its schema (``planner schema COMMAND``): every command with
``--json`` has one, one type per figure across commands (seats per card and GPU counts
integers everywhere), every figure from a seat range a span, and floats rounded to what
they mean."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

import planner.validate.loadtest as loadtest_module
from planner.cli import build_parser
from planner.cli.output import DECIMALS, SIGNIFICANT
from planner.cli.schema import SCHEMAS, schema
from planner.curves.fit import fit_curve
from planner.plan.resolve import default_curve
from planner.store.repository import Store
from planner.validate.worker.backends import SleepBackend

RANGED = ["--points", "1:8,3:20", "--seeds", "2", "--duration-s", "5", "--peak-sessions",
          "200", "--price-per-hour", "2.5"]  # fmt: skip
"""A sparse curve (its cap a range), a peak and a price: every figure there is."""


def _check(doc: Any, command: str) -> None:
    validator = Draft202012Validator(schema(command))
    problems = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]
    assert problems == []


def _valid(doc: Any, command: str) -> None:
    """``doc`` matches its schema and its floats are rounded to what they mean."""
    _check(doc, command)
    assert _rounded(doc) == []


def _floats(doc: Any, keys: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], float]]:
    if isinstance(doc, float):
        return [(keys, doc)]
    if isinstance(doc, dict):
        return [f for k, v in doc.items() for f in _floats(v, (*keys, str(k)))]
    if isinstance(doc, list):
        return [f for v in doc for f in _floats(v, keys)]
    return []


def _rounded(doc: Any) -> list[str]:
    """Floats with more digits than their key means (``planner.cli.output.DECIMALS``)."""
    bad = []
    for keys, value in _floats(doc):
        text = repr(value)
        digits = len(text.split(".")[1]) if "." in text and "e" not in text else 0
        allowed = None
        for name in reversed(keys):
            allowed = next((d for words, d in DECIMALS if any(w in name for w in words)), None)
            if allowed is not None:
                break
        if allowed is not None and abs(value) >= 1 and digits > allowed:
            bad.append(f"{'.'.join(keys)}={text}")
        mantissa = text.split("e")[0]  # 8.659e-05: the exponent is no digit of it
        significant = len(mantissa.replace("-", "").replace(".", "").lstrip("0"))
        if significant > SIGNIFICANT + 1:
            bad.append(f"{'.'.join(keys)}={text}")
    return bad


def _json_commands(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> list[str]:
    """The name of every (sub-)command of ``parser`` that takes --json: a sub-command's
    words joined by spaces, and an action given as a positional choice (``loadtest
    list``) named the same way."""
    names: list[str] = []
    takes_json = any("--json" in a.option_strings for a in parser._actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                names += _json_commands(sub, (*words, name))
        elif takes_json and not action.option_strings and action.choices:
            names += [" ".join((*words, str(choice))) for choice in action.choices]
    if takes_json:
        names.append(" ".join(words))
    return names


def test_every_command_with_json_has_a_schema() -> None:
    commands = _json_commands(build_parser())
    # The walk finds sub-commands and positional actions, not only top-level commands.
    assert {"curves list", "loadtest show", "recommend", "measure"} <= set(commands)
    assert sorted(c for c in commands if c not in SCHEMAS) == []
    assert sorted(c for c in SCHEMAS if c not in commands) == []  # no schema of nothing


def test_every_schema_is_a_valid_schema_and_prints(cli: Any) -> None:
    for command in SCHEMAS:
        Draft202012Validator.check_schema(schema(command))
        done = cli("schema", *command.split())
        assert done.status == 0 and json.loads(done.out) == schema(command)
    assert json.loads(cli("schema", "curves list").out) == schema("curves list")
    unknown = cli("schema", "curves", "export")
    assert unknown.status == 2 and unknown.out == ""
    assert unknown.err.count("\n") == 1 and "curves list" in unknown.err


def test_recommend_matches_its_schema(cli: Any) -> None:
    for args in (RANGED, ["--points", "1:8,3:20", "--seeds", "2", "--duration-s", "5"]):
        doc = cli("recommend", *args, "--json").json
        _check(doc, "recommend")
        assert _rounded(doc) == []
    assert doc["fleet"] is None  # no peak and no price: no fleet, and the schema allows it


def test_compare_cards_matches_its_schema_with_integer_seats(cli: Any) -> None:
    doc = cli("compare-cards", "--seeds", "2", "--duration-s", "5", "--peak-sessions", "200",
              "--json").json  # fmt: skip
    _check(doc, "compare-cards")
    assert _rounded(doc) == []
    recommended = cli("recommend", "--curve", doc["curves"][0]["curve"], "--seeds", "2",
                      "--duration-s", "5", "--json").json["recommended"]  # fmt: skip
    # The same figure has the same type in both commands.
    assert type(doc["curves"][0]["seats_per_card"]) is type(recommended["seats_per_card"]) is int


def test_fleet_matches_its_schema(cli: Any) -> None:
    doc = cli("fleet", *RANGED, "--profile", "office-hours", "--compare-cards", "--json").json
    _check(doc, "fleet")
    assert _rounded(doc) == []
    low, high = doc["fleet"]["seats_per_card_low"], doc["fleet"]["seats_per_card_high"]
    assert low < high  # the ranged curve: the spans are ranges
    fixed = doc["fleet"]["fixed"]
    assert fixed["peak_gpus_low"] < fixed["peak_gpus_high"]


def test_compare_plans_matches_its_schema(cli: Any) -> None:
    a = cli("link", *RANGED, "--save", "--json").json["plan_id"]
    b = cli("link", *RANGED[:-4], "--save", "--json").json["plan_id"]
    doc = cli("compare-plans", a, b, "--json").json
    _check(doc, "compare-plans")
    assert _rounded(doc) == []
    assert doc["a"]["gpus_for_peak_low"] <= doc["a"]["gpus_for_peak_high"]
    assert doc["b"]["gpus_for_peak"] is None and doc["b"]["gpus_for_peak_high"] is None


@pytest.mark.parametrize("value", [57.599999999999994, 29.966666666666665, 1.5595703125])
def test_json_floats_lose_binary_noise_only(value: float) -> None:
    from planner.cli.output import plain

    kept = plain({"x": value})["x"]
    assert math.isclose(kept, value, rel_tol=1e-11)
    assert len(repr(kept)) <= len(repr(value))
    assert plain({"latency_ms": value})["latency_ms"] == round(value, 3)


def test_store_commands_match_their_schemas(cli: Any, tmp_path: Path) -> None:
    cards = cli("cards", "list", "--json").json
    _valid(cards, "cards list")
    assert any(c["mig_profiles"] for c in cards) and any(c["mig_slices"] is None for c in cards)
    _valid(cli("cards", "set-price", cards[0]["name"], "2.5", "--json").json, "cards set-price")
    listed = cli("curves", "list", "--json").json
    _valid(listed, "curves list")
    shown = cli("curves", "show", listed[0]["id"], "--json").json
    _valid(shown, "curves show")
    assert type(shown["n_points"]) is int and type(shown["points"][0]["batch"]) is int
    path = tmp_path / "curve.csv"
    assert cli("curves", "export", listed[0]["id"], "--out", path).status == 0
    imported = cli("curves", "import", path, "--card", "other", "--override", "card", "--json")
    _valid(imported.json, "curves import")
    renamed = cli("curves", "rename", listed[0]["id"], "--model", "renamed", "--json").json
    _valid(renamed, "curves rename")
    assert renamed["renamed_from"] == listed[0]["id"]
    values = ",".join(str(h) for h in range(24))
    _valid(cli("profiles", "add", "day", "--values", values, "--json").json, "profiles add")
    _valid(cli("profiles", "show", "day", "--json").json, "profiles show")
    profiles = cli("profiles", "list", "--json").json
    _valid(profiles, "profiles list")
    assert [p["name"] for p in profiles["stored"]] == ["day"]


def test_fit_and_simulate_match_their_schemas(cli: Any) -> None:
    for source in (("--points", "1:8,3:20"), ("--points", "1:8")):
        doc = cli("fit", *source, "--upto", "8", "--json").json
        _valid(doc, "fit")
        assert [type(b) for b, _ in doc["points"]] == [int] * len(doc["points"])
    assert doc["loo"] is None  # one point: no leave-one-out errors, and the schema allows it
    plain = cli("simulate", "--points", "1:8,3:20", "--sessions", "3", "--duration-s", "2",
                "--json").json  # fmt: skip
    _valid(plain, "simulate")
    assert plain["cpu_pool"] is None and plain["queue_growth"] is None
    busy = cli("simulate", "--points", "1:8,3:20", "--sessions", "3", "--duration-s", "2",
               "--pre-ms", "4", "--cpu-workers", "1", "--json").json  # fmt: skip
    _valid(busy, "simulate")
    queued = cli("simulate", "--points", "1:8,3:20", "--sessions", "3", "--duration-s", "2",
                 "--queue", "all", "--json").json  # fmt: skip
    _valid(queued, "simulate")
    assert busy["cpu_pool"] is not None and queued["queue_growth"] is not None


def test_plan_hand_offs_match_their_schemas(cli: Any, tmp_path: Path) -> None:
    quick = ("--points", "1:8,3:20", "--seeds", "1", "--duration-s", "2")
    link = cli("link", *quick, "--json").json
    _valid(link, "link")
    saved = cli("link", *quick, "--save", "--json").json
    _valid(saved, "link")
    assert link["plan_id"] is None and saved["plan_id"]
    for folder in ((), ("--out", tmp_path / "deploy")):
        doc = cli("deploy", *quick, *folder, "--json").json
        _valid(doc, "deploy")
    assert doc["written"] and doc["files"]
    report = cli("report", *quick, "--out", tmp_path / "plan", "--json").json
    _valid(report, "report")
    assert Path(report["html"]).is_file()


def test_study_matches_its_schema(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "study.toml"
    path.write_text(
        'name = "tiny"\n[curves]\nfilters = [{ model = "ball-detector", precision = "fp16" }]\n'
        "[fixed]\nseeds = 1\nduration_s = 2\n[axes]\nbudget_ms = [40, 50]\n",
        encoding="utf-8",
    )
    first = cli("study", path, "--workers", "1", "--json").json
    _valid(first, "study")
    again = cli("study", path, "--workers", "1", "--json").json
    _valid(again, "study")
    assert first["computed"] == again["already_stored"] > 0 and again["computed"] == 0


def test_measure_matches_its_schema(cli: Any) -> None:
    doc = cli("measure", "--batches", "1,2", "--resolution", "16x8", "--warmup", "1",
              "--rounds", "1", "--repetitions", "2", "--device", "cpu", "--json").json  # fmt: skip
    _valid(doc, "measure")
    assert doc[0]["source"] == "measured" and doc[0]["points"][0]["p10_ms"] is not None


def test_load_tests_match_their_schemas(
    cli: Any, store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    curve = default_curve(store)
    table = fit_curve(curve.points).table(64)
    monkeypatch.setattr(loadtest_module, "torch_backend", lambda *_a: SleepBackend(table))
    ran = cli("loadtest", "--curve", curve.id, "--sessions", "1-2", "--policies", "batch-all",
              "--duration-s", "0.3", "--find-cap", "2", "--json")  # fmt: skip
    assert ran.status == 0, ran.err
    _valid(ran.json, "loadtest")
    assert ran.json["calibration"] is not None and ran.json["caps"]
    path = tmp_path / "summary.csv"
    path.write_text("session,fps,overwritten\n0,15-19,20-25%\n1,15-19,20-25%\n",
                    encoding="utf-8")  # fmt: skip
    scenario = ("--sessions", "2", "--policy", "round-robin", "--fps", "22", "--duration-s", "10")
    imported = cli("loadtest", "import", path, "--points", "1:19.6,2:39.2", *scenario, "--json")
    assert imported.status == 0, imported.err
    _valid(imported.json, "loadtest import")
    assert imported.json["runs"][0]["measured"]["p99_ms"] is None  # a summary gives few
    _valid(cli("loadtest", "show", str(ran.json["id"]), "--json").json, "loadtest show")
    listed = cli("loadtest", "list", "--json").json
    _valid(listed, "loadtest list")
    assert len(listed) == 2


def test_bench_matches_its_schema(cli: Any) -> None:
    doc = cli("bench", "--only", "fit", "--json").json
    _valid(doc, "bench")
    assert set(doc) == {"machine", "fit"}


def test_a_schema_rejects_a_figure_of_another_type(cli: Any) -> None:
    shown = cli("curves", "show", cli("curves", "list", "--json").json[0]["id"], "--json").json
    for key, wrong in (("n_points", "6"), ("batches", [1.5]), ("points", [])):
        validator = Draft202012Validator(schema("curves show"))
        assert not validator.is_valid({**shown, key: wrong}), key
    del shown["environment"]
    assert not Draft202012Validator(schema("curves show")).is_valid(shown)


def test_an_unknown_schema_name_is_quoted_short(cli: Any) -> None:
    long_name = "x" * 100_000
    done = cli("schema", long_name)
    assert done.status == 2 and done.out == ""
    assert long_name not in done.err and len(done.err) < 2_000 and "curves list" in done.err
