"""Each command's JSON matches its schema (``planner schema COMMAND``): one type per
figure across commands (seats per card and GPU counts integers everywhere), every figure
from a seat range a span, and floats rounded to what they mean."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from planner.cli.output import DECIMALS, SIGNIFICANT
from planner.cli.schema import SCHEMAS, schema

RANGED = ["--points", "1:8,3:20", "--seeds", "2", "--duration-s", "5", "--peak-sessions",
          "200", "--price-per-hour", "2.5"]  # fmt: skip
"""A sparse curve (its cap a range), a peak and a price: every figure there is."""


def _check(doc: Any, command: str) -> None:
    validator = Draft202012Validator(schema(command))
    problems = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]
    assert problems == []


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
        significant = len(text.replace("-", "").replace(".", "").lstrip("0"))
        if significant > SIGNIFICANT + 1:
            bad.append(f"{'.'.join(keys)}={text}")
    return bad


def test_every_schema_is_a_valid_schema_and_prints(cli: Any) -> None:
    for command in SCHEMAS:
        Draft202012Validator.check_schema(schema(command))
        done = cli("schema", command)
        assert done.status == 0 and json.loads(done.out) == schema(command)


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
