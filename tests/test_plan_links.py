"""What the Plan page writes into its own link and shows to copy, run with AppTest: every
setting a widget can take writes a link that opens again with nothing ignored (only
parameter values go in), and the comparison's command line is a real ``planner
compare-plans`` command naming two stored plans."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.state import store
from planner.cli import build_parser
from planner.curves.curve import Curve, Point
from planner.links.urls import encode, saved_params
from planner.plan.params import PlanParams
from tests.conftest import run

REPO = Path(__file__).resolve().parent.parent
QUICK: dict[str, Any] = {"seeds": 1, "duration_s": 5.0}
H100 = Curve(
    model="ball-detector",
    card="h100-80gb",
    precision="fp16",
    resolution="512x288",
    points=(Point(1, 4.69), Point(4, 9.29)),
)
IGNORED = "Parts of this link were ignored"
CHOICES = ("selectbox", "multiselect", "radio", "checkbox", "toggle")


def query(at: AppTest) -> dict[str, list[str]]:
    return {k: [v] if isinstance(v, str) else list(v) for k, v in at.query_params.items()}


def ignored(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if IGNORED in w.value]


def reopened(reader: AppTest, link: dict[str, list[str]], script: str = "plan.py") -> list[str]:
    """Open ``link`` in a second session (on page ``script``); the ignored-parts messages
    it shows."""
    reader.query_params.clear()
    for key, values in link.items():
        reader.query_params[key] = values[-1] if len(values) == 1 else values
    if script != "plan.py":
        reader.switch_page(f"dashboard/pages/{script}")
    run(reader)
    return ignored(reader)


def choice_widgets(at: AppTest) -> list[tuple[str, str]]:
    out = []
    for kind in CHOICES:
        for widget in getattr(at, kind):
            if widget.key is not None and not widget.disabled:
                out.append((kind, widget.key))
    return out


def settings(widget: Any, kind: str) -> list[Any]:
    """Each setting a person can give a choice widget: every option (alone, in a
    multiselect; by position, in a select box), both states of a box."""
    if kind in ("checkbox", "toggle"):
        return [not widget.value, widget.value]
    if kind == "multiselect":
        return [[option] for option in widget.options]
    if kind == "selectbox":
        return list(range(len(widget.options)))
    return list(widget.options)


def give(widget: Any, kind: str, setting: Any) -> None:
    if kind == "selectbox":
        widget.select_index(setting)
    else:
        widget.set_value(setting)


def find(at: AppTest, kind: str, key: str) -> Any:
    return next((w for w in getattr(at, kind) if w.key == key), None)


def sweep(writer: AppTest, reader: AppTest, script: str, last: str = "") -> list[str]:
    """Give every choice widget on the page each of its settings in turn (``last`` at the
    end); after each, the link the page wrote must open on ``script`` with nothing
    ignored. The keys of the widgets tried."""
    tried = []
    widgets = sorted(choice_widgets(writer), key=lambda w: w[1] == last)
    for kind, key in widgets:
        for setting in settings(find(writer, kind, key), kind):
            widget = find(writer, kind, key)
            if widget is None:
                break  # another choice took it off the page
            give(widget, kind, setting)
            run(writer)
            link = query(writer)
            assert ignored(writer) == [], (key, setting)
            assert reopened(reader, link, script) == [], (key, setting, link)
            tried.append(key)
    return tried


def test_every_choice_on_the_plan_page_writes_a_link_that_opens_with_nothing_ignored(
    app: AppTest,
) -> None:
    (h100,) = store().add_curves([H100])
    store().save_plan(saved_params(PlanParams(budget_ms=60.0, **QUICK)))
    reader = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    for key, value in encode(PlanParams(curve=h100.id, **QUICK)).items():
        app.query_params[key] = value
    run(app)
    # The curve goes last, so that every other choice is made on the H100 curve (MIG).
    tried = sweep(app, reader, "plan.py", last="plan_curve")
    assert {"plan_modes", "plan_deploy_option", "plan_compare_plan"} <= set(tried)


@pytest.mark.parametrize(
    ("script", "query_params"),
    [
        ("simulate.py", {"sessions": "4", "duration_s": "5"}),
        ("compare.py", {"seeds": "1", "duration_s": "5"}),
    ],
)
def test_every_choice_on_the_other_pages_writes_a_link_that_opens_cleanly(
    app: AppTest, script: str, query_params: dict[str, str]
) -> None:
    store().add_curves([H100])
    reader = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    for key, value in query_params.items():
        app.query_params[key] = value
    app.switch_page(f"dashboard/pages/{script}")
    run(app)
    assert sweep(app, reader, script)


def commands(at: AppTest, program: str) -> list[str]:
    return [c.value for c in at.code if c.value.startswith(program)]


def test_the_comparison_shows_a_compare_plans_command_naming_both_stored_plans(
    app: AppTest, cli: Any
) -> None:
    a_id = store().save_plan(saved_params(PlanParams(budget_ms=20.0, **QUICK)))
    b_id = store().save_plan(saved_params(PlanParams(budget_ms=60.0, **QUICK)))
    app.query_params["plan"] = a_id
    app.query_params["compare_plan"] = b_id
    run(app)
    (command,) = commands(app, "planner compare-plans")
    argv = shlex.split(command)
    args = build_parser().parse_args(argv[1:])
    stored = {plan.id for plan in store().plans()}
    assert (args.a, args.b) == (a_id, b_id) and {args.a, args.b} <= stored
    done = cli(*argv[1:])
    assert done.status == 0, done.err
    assert (done.json["a"]["plan_id"], done.json["b"]["plan_id"]) == (a_id, b_id)


def test_an_unsaved_plan_offers_no_command_with_a_placeholder(app: AppTest) -> None:
    b_id = store().save_plan(saved_params(PlanParams(budget_ms=60.0, **QUICK)))
    for key, value in encode(PlanParams(budget_ms=20.0, **QUICK)).items():
        app.query_params[key] = value
    app.query_params["compare_plan"] = b_id
    run(app)
    assert commands(app, "planner compare-plans") == []
    assert not any("compare-plans A " in c.value for c in app.caption)
    assert any("Save this plan" in c.value for c in app.caption)
