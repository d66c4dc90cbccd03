"""A store, links and a study written by the planner before its library was split into
subpackages (``tests/data/compat``) still open, read and plan exactly as they did then.

The store (schema 4) was written by that planner with its command line: the built-in
curves, a curve measured by ``planner loadtest`` on a CPU with its load test and its
calibration, two saved plans (one with MPS and the worker's stages, one pinning the
calibration), and a six-cell study. Beside it lie what that planner printed: the links
it wrote, the comparison of the two saved plans, the stored load test and the curves.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import duckdb
import pytest

from planner.cli.output import plain
from planner.links.parameters import schema
from planner.links.urls import BEFORE_ADDED, decode, encode
from planner.plan.params import PlanParams, SimulateParams
from planner.store.repository import Store
from planner.store.schema import SCHEMA_VERSION

DATA = Path(__file__).resolve().parent / "data" / "compat"


def _recorded(name: str) -> Any:
    """What the previous planner printed, its floats rounded as JSON output now rounds
    them (``planner.cli.output.plain``): the same figures, without binary noise."""
    return plain(json.loads((DATA / name).read_text(encoding="utf-8")))


@pytest.fixture
def old_store(db_path: Path) -> Path:
    """The previous planner's store, unpacked where PLANNER_DB points."""
    with gzip.open(DATA / "store.duckdb.gz") as packed, db_path.open("wb") as out:
        shutil.copyfileobj(packed, out)
    return db_path


def test_the_old_store_opens_and_is_brought_to_the_current_schema(old_store: Path) -> None:
    with duckdb.connect(str(old_store), read_only=True) as raw:
        before = raw.execute("SELECT max(version) FROM schema_version").fetchone()
    assert before == (4,)
    with Store(old_store) as store:
        ids = sorted(c.id for c in store.curves())
        plans = sorted(p.id for p in store.plans())
    assert ids == sorted(c["id"] for c in _recorded("curves.json"))
    assert plans == ["b2dbfea188", "d6a61209e4"]
    with duckdb.connect(str(old_store), read_only=True) as raw:
        after = raw.execute("SELECT max(version) FROM schema_version").fetchone()
    assert after == (SCHEMA_VERSION,)


def test_the_old_curves_list_the_same(old_store: Path, cli: Any) -> None:
    run = cli("curves", "list", "--json")
    assert run.status == 0, run.err
    assert run.json == _recorded("curves.json")


CHANGED_DEFAULTS = {"max_sessions": ("64", "")}
"""Defaults changed on purpose, as (old, new) link text: an unset largest session count
was 64 and is now "until the first failure, up to 4,096" (a big card's answer must not
stop at 64). Caps below the old default are the same either way."""


def test_every_old_link_and_saved_plan_decodes_to_the_same_parameters(old_store: Path) -> None:
    with Store(old_store) as store:
        for link in _recorded("links.json"):
            cls = {"PlanParams": PlanParams, "SimulateParams": SimulateParams}[link["page"]]
            query = {k: v[0] for k, v in parse_qs(urlsplit(link["url"]).query).items()}
            params, ignored = decode(cls, query, load_plan=store.plan)
            assert ignored == [], link["url"]
            now = encode(params, include_defaults=True)
            # A parameter added since then reads as its default; every old one is unchanged.
            added = {n: p for n, p in schema(cls).items() if n not in link["decoded"]}
            old = dict(link["decoded"])
            for name, (before, after) in CHANGED_DEFAULTS.items():
                # A link that left it unset meant the old default and now means the new one
                # (a saved plan stored its value, and keeps it).
                if name in old and not {name, "plan"} & set(query) and old[name] == before:
                    assert now.pop(name, "") == after, link["url"]  # unset: not in the link
                    del old[name]
            assert {n: v for n, v in now.items() if n not in added} == old
            # ... except in a saved plan, where one added since reads as what the plan ran
            # as before it existed (batch-time spread: off).
            for name, p in added.items():
                expected = p.default
                if "plan" in query and name in BEFORE_ADDED:
                    expected = p.codec.parse(BEFORE_ADDED[name])
                assert getattr(params, name) == expected, (link["url"], name)


def test_the_saved_plans_compare_exactly_as_before(old_store: Path, cli: Any) -> None:
    # One of them pins the calibration fitted by the stored load test.
    run = cli("compare-plans", "d6a61209e4", "b2dbfea188", "--json")
    assert run.status == 0, run.err
    recorded = _recorded("compare.json")
    # A parameter added since then is listed too, the same on both sides (its default).
    known = {row["name"] for row in recorded["inputs"]}
    added = [row for row in run.json["inputs"] if row["name"] not in known]
    assert all(not row["differs"] for row in added)
    now = {**run.json, "inputs": [row for row in run.json["inputs"] if row["name"] in known]}
    # min_fps_at_cap was re-recorded (29.8 to 30.0, 28.8 to 28.799999999999997) when the
    # delivered frame rate came to leave out the frames in flight at the end of a run.
    for side in ("a", "b"):
        now[side] = _as_recorded(now[side])
    assert now == recorded


def _as_recorded(side: dict[str, Any]) -> dict[str, Any]:
    """A plan's outcome in the recording's terms. Since then seats per card is a count
    with the range's ends beside it (``seats`` keeps the text the recording holds), every
    figure that follows from it has its ends too, and figures are rounded to what they
    mean (``planner.cli.output.plain``, applied to the recording too)."""
    out = {}
    for key, value in side.items():
        if key.endswith(("_low", "_high")) or key == "seats":
            continue
        out[key] = side["seats"] if key == "seats_per_card" else value
    return out


def test_the_stored_load_test_reads_back_as_before(old_store: Path, cli: Any) -> None:
    run = cli("loadtest", "show", "1", "--json")
    assert run.status == 0, run.err
    assert run.json == _recorded("loadtest.json")


def test_the_stored_study_finds_every_cell_it_computed(old_store: Path, cli: Any) -> None:
    run = cli("study", DATA / "study.toml", "--workers", "1", "--json")
    assert run.status == 0, run.err
    summary = run.json
    assert (summary["cells"], summary["computed"], summary["already_stored"]) == (6, 0, 6)
