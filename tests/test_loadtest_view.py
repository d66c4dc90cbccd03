"""A load test's view (``planner.views.loadtest``): the Validate page and ``planner
loadtest show`` show the same facts, error table, accuracy, calibration and charts of one
stored load test, each before its own escaping."""

from __future__ import annotations

import json
from typing import Any

from streamlit.testing.v1 import AppTest

from dashboard.state import store
from planner.store.calibrations import calibrations
from planner.validate.loadtest_store import load_loadtest
from planner.views.loadtest import HEADER, LoadTestView, loadtest_view
from tests.conftest import run
from tests.test_plan_view import cells, text_table, unescaped
from tests.test_validate_page import stored_test


def page_records(app: AppTest, key: str) -> list[dict[str, str]]:
    frame = app.get_by_key(key).dataframe[0].value
    return [{str(k): str(v) for k, v in row.items()} for row in frame.to_dict("records")]


def test_the_page_and_the_command_show_the_same_load_test(app: AppTest, cli: Any) -> None:
    # As both front ends read it back from the store.
    test = load_loadtest(store(), stored_test(store()).id)
    view: LoadTestView = loadtest_view(test, calibrations(store(), test.curve.id))
    assert view.calibration is not None and view.calibrations.rows and view.facts
    assert view.errors.header == HEADER and len(view.errors.rows) == len(test.runs)

    # The page.
    app.switch_page("dashboard/pages/validate.py")
    run(app)
    assert page_records(app, "validate_errors") == view.errors.records
    assert page_records(app, "validate_calibrations") == view.calibrations.records
    if view.accuracy.rows:
        assert page_records(app, "validate_accuracy") == view.accuracy.records
    captions = [unescaped(c.value) for c in app.caption]
    (caption,) = [c for c in captions if c.startswith("curve **")]
    for fact in view.facts:
        assert f"{fact.label}: {fact.value}" in caption
    assert view.calibration in [unescaped(m.value) for m in app.markdown]
    specs = {c.key: json.loads(c.proto.spec) for c in app.get("plotly_chart")}
    (fps,) = [c for c in view.charts if c.metric == "min_fps"]
    drawn = {t["name"]: t for t in specs["validate_fps"]["data"]}
    for series in fps.series:
        assert drawn[f"{series.policy}, measured"]["y"] == list(series.measured)
        assert drawn[f"{series.policy}, predicted"]["y"] == list(series.predicted)

    # ``planner loadtest show``.
    shown = cli("loadtest", "show", str(test.id))
    assert shown.status == 0, shown.err
    lines = shown.out.splitlines()
    assert lines[0] == view.title
    for fact in view.facts:
        assert f"{fact.label}: {fact.value}" + (f" ({fact.help})" if fact.help else "") in lines
    assert f"{view.error_titles[0]}:" in lines
    assert text_table(shown.out, HEADER, len(view.errors.rows)) == cells(view.errors)
    if view.accuracy.rows:
        accuracy = view.accuracy
        assert text_table(shown.out, accuracy.header, len(accuracy.rows)) == cells(accuracy)
    assert view.calibration in lines
