"""The dashboard, run in-process with Streamlit's AppTest against a fresh store per test."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Widget

from dashboard.navigation import PAGES, PAGES_DIR
from dashboard.state import store
from planner.curves.imports import MAX_FILE_BYTES
from planner.links.urls import saved_params
from planner.plan.params import PlanParams
from planner.store.repository import Store
from tests.conftest import run

REPO = Path(__file__).resolve().parent.parent
GOOD_CSV = b"batch,latency_ms\n1,5.5\n2,9.25\n4,16.0\n"
BAD_CSV = b"batch,latency_ms\n1,5.5\n2,-3\nfour,16\n"


def open_page(at: AppTest, script: str) -> AppTest:
    """Open a page of the app directly, as a link to it would (with ``at.query_params``)."""
    at.switch_page(f"dashboard/pages/{script}")
    return run(at)


def open_curves(at: AppTest) -> AppTest:
    return open_page(at, "curves.py")


def db() -> Store:
    return store()  # the very store the app uses (same process, same cache)


def texts(elements: object) -> list[str]:
    return [e.value for e in elements]  # type: ignore[attr-defined]


def table(at: AppTest, key: str) -> list[dict[str, object]]:
    node = at.get_by_key(key)
    frame = node.dataframe[0] if hasattr(node, "dataframe") else node
    records: list[dict[str, object]] = frame.value.to_dict("records")  # type: ignore[union-attr]
    return records


def decoded(value: Any) -> list[Any]:
    """A trace's array as a list: Plotly writes NumPy arrays as base64 ``bdata``."""
    if isinstance(value, dict) and "bdata" in value:
        data = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        return data.tolist()
    return list(value)


def traces_of(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A chart's traces by name, arrays decoded."""
    out = {}
    for trace in spec["data"]:
        out[trace.get("name")] = {
            k: decoded(v) if k in ("x", "y") and v is not None else v for k, v in trace.items()
        }
    return out


def upload(at: AppTest, name: str, data: bytes, **fields: str) -> AppTest:
    at.file_uploader(key="upload_files").set_value((name, data, "text/csv"))
    for key, value in fields.items():
        if key in ("card", "precision"):
            at.selectbox(key=f"upload_{key}").set_value(value)
        else:
            at.text_input(key=f"upload_{key}").set_value(value)
    return run(at)


# ---------------------------------------------------------------------------------------


def test_app_renders_the_curves_page_on_a_fresh_store(app: AppTest) -> None:
    open_curves(app)
    assert texts(app.title) == ["Batch curves"]
    rows = table(app, "curves_table")
    assert len(rows) == 5 and {r["source"] for r in rows} == {"built-in"}
    assert set(rows[0]) >= {"id", "model", "card", "MIG profile", "precision", "resolution"}
    assert rows[0]["points"] == len(db().curve(str(rows[0]["id"])).points)
    assert "camera sessions" in app.sidebar.caption[0].value
    assert "GPU Seat Planner" in (REPO / "dashboard" / "assets" / "wordmark.svg").read_text()


def test_every_widget_has_an_explicit_key(app: AppTest) -> None:
    open_curves(app)
    upload(app, "new.csv", GOOD_CSV, model="m", card="t4")
    widgets = [node for node in app._tree if isinstance(node, Widget)]
    assert len(widgets) > 15
    assert [w for w in widgets if not w.key] == []


def test_selected_curve_shows_points_metadata_and_charts_with_units(app: AppTest) -> None:
    open_curves(app)
    shown = db().curve(app.selectbox(key="curve").value)
    assert app.subheader[0].value  # the curve's label, escaped
    assert table(app, f"points_editor_{shown.id}")[0]["batch"] == shown.points[0].batch
    meta = {r["field"]: r["value"] for r in table(app, "curve_metadata")}
    assert meta["id"] == shown.id and meta["card"] == shown.card
    specs = {
        s["layout"]["title"]["text"]: s
        for s in (json.loads(c.proto.spec) for c in app.get("plotly_chart"))
    }
    assert set(specs) == {
        "Latency per batched call",
        "Time per frame",
        "Throughput",
        "Leave-one-out: error predicting each point",
    }
    axes = {
        title: (s["layout"]["xaxis"]["title"]["text"], s["layout"]["yaxis"]["title"]["text"])
        for title, s in specs.items()
    }
    assert axes["Latency per batched call"] == (
        "batch size (frames per call)",
        "latency per call (ms)",
    )
    assert axes["Time per frame"] == ("batch size (frames per call)", "time per frame (ms)")
    assert axes["Throughput"] == ("batch size (frames per call)", "throughput (frames/s)")
    assert axes["Leave-one-out: error predicting each point"][1] == "relative error (%)"
    traces = traces_of(specs["Latency per batched call"])
    assert traces["measured (a cross: reconciled)"]["y"] == list(shown.latencies)
    assert "straight-line method" in traces and "band (optimistic to pessimistic)" in traces
    per_frame = traces_of(specs["Time per frame"])
    assert per_frame["measured (a cross: reconciled)"]["y"] == pytest.approx(
        [p.latency_ms / p.batch for p in shown.points]
    )
    loo = table(app, "curve_loo")
    assert [r["batch"] for r in loo] == list(shown.batches)
    assert all(isinstance(r["inside the band"], bool) for r in loo)
    assert any(
        "Leave-one-out" in m.value and "straight-line method" in m.value for m in app.markdown
    )
    assert app.get_by_key("curve_download").type == "download_button"


def test_filters_narrow_the_table(app: AppTest) -> None:
    open_curves(app)
    app.selectbox(key="card").set_value("server-24gb")
    run(app)
    rows = table(app, "curves_table")
    assert [r["card"] for r in rows] == ["server-24gb"]
    assert app.selectbox(key="curve").value == rows[0]["id"]
    app.selectbox(key="precision").set_value("fp32")
    run(app)
    # No match: said in words with a way out, not an empty grid without headers.
    with pytest.raises(KeyError):
        app.get_by_key("curves_table")
    assert any("No stored curve matches these filters" in i for i in texts(app.info))
    app.button(key="curves_clear_filters").click()
    run(app)
    assert len(table(app, "curves_table")) == 5
    assert (app.selectbox(key="card").value, app.selectbox(key="precision").value) == (None, None)


def test_a_link_to_a_curve_opens_it_and_an_unknown_id_says_so(app: AppTest) -> None:
    server = db().curves(card="server-24gb")[0]
    app.query_params["curve"] = server.id
    open_curves(app)
    assert app.selectbox(key="curve").value == server.id
    assert app.query_params["curve"] == [server.id] or app.query_params["curve"] == server.id
    other = AppTest.from_file(str(REPO / "app.py"), default_timeout=30)
    other.query_params["curve"] = "nosuchcurve0"
    open_curves(other)
    assert any("No stored curve has the id" in w for w in texts(other.warning))


def test_a_good_upload_shows_a_preview_and_stores_only_on_save(app: AppTest) -> None:
    open_curves(app)
    upload(app, "new card.csv", GOOD_CSV, model="yolo", card="t4", precision="fp16")
    preview = table(app, "upload_preview")
    assert [(r["model"], r["card"], r["points"], r["already stored"]) for r in preview] == [
        ("yolo", "t4", 3, False)
    ]
    assert texts(app.error) == []
    assert len(db().curves()) == 5  # nothing stored yet
    charts = [c.key for c in app.get("plotly_chart")]
    assert "upload_chart_latency" in charts and "upload_chart_per_frame" in charts

    app.button(key="upload_save").click()
    run(app)
    stored = db().curves(model="yolo")
    assert len(stored) == 1 and stored[0].latencies == (5.5, 9.25, 16.0)
    assert stored[0].source == "uploaded"
    assert any("Saved 1 curve(s)" in s for s in texts(app.success))
    assert app.selectbox(key="curve").value == stored[0].id
    assert any(r["id"] == stored[0].id for r in table(app, "curves_table"))
    # The files are still in the uploader; saving again would change nothing.
    assert table(app, "upload_preview")[0]["already stored"] is True
    assert app.button(key="upload_save").disabled


def test_metadata_typed_in_the_form_is_checked_before_the_files(app: AppTest) -> None:
    open_curves(app)
    upload(app, "new.csv", GOOD_CSV, model="yolo", card="t4", resolution="wide", batch="0")
    (error,) = texts(app.error)
    assert "resolution" in error and "batch" in error
    assert len(db().curves()) == 5


def test_a_bad_upload_lists_every_problem_and_stores_nothing(app: AppTest) -> None:
    open_curves(app)
    upload(app, "bad.csv", BAD_CSV, model="yolo", card="t4")
    (error,) = texts(app.error)
    assert "nothing was stored" in error
    assert "bad\\.csv line 3" in error and "bad\\.csv line 4" in error  # every bad row
    with pytest.raises(KeyError):
        app.get_by_key("upload_save")
    assert len(db().curves()) == 5


def test_a_file_over_the_size_limit_is_refused(app: AppTest) -> None:
    open_curves(app)
    huge = GOOD_CSV + b"#" * MAX_FILE_BYTES  # AppTest does not apply the server's limit
    upload(app, "huge.csv", huge, model="m", card="t4")
    (error,) = texts(app.error)
    assert "over the 5 MiB limit" in error
    assert len(db().curves()) == 5


def test_a_file_without_model_or_card_asks_for_them(app: AppTest) -> None:
    open_curves(app)
    upload(app, "bare.csv", GOOD_CSV)
    (error,) = texts(app.error)
    assert "model is missing" in error and "card is missing" in error
    assert len(db().curves()) == 5


def test_user_text_is_shown_literally_not_as_markup(app: AppTest) -> None:
    open_curves(app)
    hostile = "**bold** [x](https://example.com) :red[red] <b>b</b>"
    upload(app, "x.csv", GOOD_CSV, model=hostile, card="t4")
    app.button(key="upload_save").click()
    run(app)
    (saved,) = [s for s in texts(app.success) if "Saved" in s]
    assert hostile not in saved
    assert "\\*\\*bold\\*\\* \\[x\\]\\(https\u2060\\:\\/\\/example\\.com\\)" in saved
    assert "\\:red\\[red\\] \\<b\\>b\\<\\/b\\>" in saved
    assert "\\*\\*bold" in app.subheader[0].value


def test_editing_points_saves_a_new_curve_and_keeps_the_old(app: AppTest) -> None:
    open_curves(app)
    original = db().curve(app.selectbox(key="curve").value)
    app.session_state[f"points_editor_{original.id}"] = {
        "edited_rows": {0: {"latency_ms": 10.0}},
        "added_rows": [{"batch": 32, "latency_ms": 450.0}],
        "deleted_rows": [],
    }
    run(app)
    app.button(key="points_save").click()
    run(app)
    edited = db().curve(app.selectbox(key="curve").value)
    assert edited.id != original.id
    assert edited.latencies[0] == 10.0 and edited.batches[-1] == 32
    assert edited.environment["edited_from"] == original.id
    assert db().curve(original.id).latencies == original.latencies  # still stored, unchanged
    assert len(db().curves()) == 6
    assert any("new curve" in s for s in texts(app.success))


def test_invalid_edits_are_reported_and_nothing_is_saved(app: AppTest) -> None:
    open_curves(app)
    original = db().curve(app.selectbox(key="curve").value)
    app.session_state[f"points_editor_{original.id}"] = {
        "edited_rows": {1: {"latency_ms": -4.0}},
        "added_rows": [{"latency_ms": 30.0}],
        "deleted_rows": [],
    }
    run(app)
    app.button(key="points_save").click()
    run(app)
    (error,) = texts(app.error)
    assert "row 2\\: latency\\_ms \\-4\\.0 must be above zero" in error
    assert "row 7\\: batch is empty" in error
    assert len(db().curves()) == 5


def test_unchanged_points_are_not_saved_again(app: AppTest) -> None:
    open_curves(app)
    app.button(key="points_save").click()
    run(app)
    assert any("unchanged" in i for i in texts(app.info))
    assert len(db().curves()) == 5


def test_deleting_an_unused_curve(app: AppTest) -> None:
    open_curves(app)
    doomed = app.selectbox(key="curve").value
    app.button(key="curve_delete").click()
    run(app)
    assert doomed not in {c.id for c in db().curves()}
    assert any("Deleted curve" in s for s in texts(app.success))
    assert app.selectbox(key="curve").value != doomed


def test_deleting_a_curve_that_plans_use_asks_first(app: AppTest) -> None:
    open_curves(app)
    used = app.selectbox(key="curve").value
    plan_id = db().save_plan(saved_params(PlanParams(curve=used)))
    app.button(key="curve_delete").click()
    run(app)
    (warning,) = texts(app.warning)
    assert plan_id in warning and "Delete it anyway?" in warning
    assert used in {c.id for c in db().curves()}

    app.button(key="curve_delete_cancel").click()
    run(app)
    assert texts(app.warning) == [] and used in {c.id for c in db().curves()}

    app.button(key="curve_delete").click()
    run(app)
    app.button(key="curve_delete_confirm").click()
    run(app)
    assert used not in {c.id for c in db().curves()}


def test_every_page_entry_has_a_script_and_links_open_the_right_page() -> None:
    paths = [p.url_path for p in PAGES]
    assert len(set(paths)) == len(paths)
    for index, entry in enumerate(PAGES):
        assert (PAGES_DIR / entry.script).is_file()
        assert "pages" not in {p.name for p in REPO.iterdir()}  # no legacy pages/ folder
        if entry.params is not None:
            expected = "" if index == 0 else entry.url_path
            assert entry.params.page_path == expected


def _link_page() -> None:
    import streamlit as st  # AppTest runs this function's source alone

    from dashboard.url_state import opened, publish, show_ignored
    from planner.links.urls import encode
    from planner.plan.params import PlanParams

    link = opened(PlanParams)
    if link is not None:  # a page keeps the parameters in its widgets; this one here
        st.session_state["params"] = link.params
        show_ignored(link.ignored)
    params = st.session_state["params"]
    publish(params)
    st.text(repr(sorted(encode(params).items())))


def test_a_link_is_read_once_with_what_was_ignored_and_written_back_canonical() -> None:
    at = AppTest.from_function(_link_page, default_timeout=30)
    at.query_params["budget_ms"] = "40.0"
    at.query_params["policies"] = "batch-all,oldest-first"
    at.query_params["percentile"] = "[x](https://example.com)"
    run(at)
    assert at.text[0].value == repr([("budget_ms", "40"), ("policies", "batch-all,oldest-first")])
    (warning,) = texts(at.warning)
    assert "percentile" in warning and "\\[x\\]\\(https" in warning
    # The address bar now holds the plan as planner link writes it: bad parts dropped.
    assert at.query_params == {"budget_ms": "40", "policies": "batch-all,oldest-first"}
    run(at)  # a rerun reads nothing new from the URL and warns no more
    assert texts(at.warning) == []
    assert at.query_params == {"budget_ms": "40", "policies": "batch-all,oldest-first"}
