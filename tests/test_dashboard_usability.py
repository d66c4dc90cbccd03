"""What a new user met on the dashboard, run in-process with AppTest: uploads that report
everything at once in the form's words, curves that can be renamed and told apart,
formatted figures, saved plans, the Simulate link's seed, and flagged measurements."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from dashboard.state import store
from planner.curve import Point, make_curve
from planner.store import Store
from tests.test_import_tools import ADD_SUB, PERF_HEADER, perf_row

REPO = Path(__file__).resolve().parent.parent
GOOD_CSV = b"batch,latency_ms,model,card\n1,5.5,m,t4\n2,9.25,m,t4\n"
PERF_OK = (PERF_HEADER + perf_row(1, 500.0, 2000, 2100, 2200)).encode()


@pytest.fixture
def app(db_path: Path) -> Iterator[AppTest]:
    st.cache_resource.clear()
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    yield at
    st.cache_resource.clear()


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, at.exception
    return at


def open_page(at: AppTest, script: str, query: dict[str, str] | None = None) -> AppTest:
    for key, value in (query or {}).items():
        at.query_params[key] = value
    if script != "plan.py":
        at.switch_page(f"dashboard/pages/{script}")
    return run(at)


def db() -> Store:
    return store()


def texts(elements: Any) -> list[str]:
    return [e.value for e in elements]


def plain(markdown: str) -> str:
    """What a reader sees of escaped Markdown."""
    import re

    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def choose_files(at: AppTest, *files: tuple[str, bytes]) -> AppTest:
    at.file_uploader(key="upload_files").set_value([(n, d, "text/csv") for n, d in files])
    return run(at)


def rows(at: AppTest, key: str) -> list[dict[str, Any]]:
    node = at.get_by_key(key)
    frame = node.dataframe[0] if len(node.dataframe) else node.table[0]
    records: list[dict[str, Any]] = frame.value.to_dict("records")
    return records


def spec(at: AppTest, key: str) -> dict[str, Any]:
    (chart,) = [c for c in at.get("plotly_chart") if c.key == key]
    loaded: dict[str, Any] = json.loads(chart.proto.spec)
    return loaded


# ---------------------------------------------------------------------------------------
# Uploads


def test_five_files_at_once_report_three_kinds_of_problems_in_one_box(app: AppTest) -> None:
    open_page(app, "curves.py", {"tab": "Upload"})
    choose_files(
        app,
        ("good.csv", GOOD_CSV),
        ("rows.csv", b"batch,latency_ms,model,card\n1,5,m,t4\n0,9,m,t4\n4,x,m,t4\n"),
        ("notes.txt", b"these are my notes about the benchmark\n"),
        ("b1.csv", PERF_OK),
        ("also.csv", b"batch,latency_ms,model,card\n4,16,m,t4\n"),
    )
    (box,) = app.error
    text = plain(box.value)
    assert "7 problems in 3 of 5 files; nothing was stored" in text
    # Each file under its own name, every problem listed: bad rows, a refused file, and
    # what the perf_analyzer file needs, in the form's words.
    assert "**rows.csv** (planner CSV)" in text and "**notes.txt** (not recognised)" in text
    assert "rows.csv line 3: batch" in text and "rows.csv line 4: latency_ms 'x'" in text
    assert "not a format the planner reads" in text and "choose one under “Format”" in text
    assert "b1.csv: a perf_analyzer CSV does not name the model; fill in “Model”" in text
    assert "fill in “Batch size of this run” with the run's -b" in text
    assert "--" not in text  # no command-line flags on the page
    assert "upload it again" not in text and "takes effect as you type" in text
    assert len(db().curves()) == 5


def test_fields_a_chosen_file_needs_are_marked_before_anything_is_missing(app: AppTest) -> None:
    open_page(app, "curves.py", {"tab": "Upload"})
    labels = {k: app.get_by_key(f"upload_{k}").label for k in ("model", "card", "batch")}
    assert labels == {"model": "Model", "card": "Card", "batch": "Batch size of this run"}
    assert app.get_by_key("upload_template").type == "download_button"
    assert any("batch" in m and "latency_ms" in m and "required" in m for m in texts(
        app.markdown))  # fmt: skip

    choose_files(app, ("b1.csv", PERF_OK))
    assert app.text_input(key="upload_model").label == "Model *"
    assert app.selectbox(key="upload_card").label == "Card *"
    assert app.text_input(key="upload_batch").label == "Batch size of this run *"
    assert app.selectbox(key="upload_precision").label == "Precision"
    assert any("needed by the files chosen" in plain(c) and "b1.csv (perf_analyzer CSV)"
               in plain(c) for c in texts(app.caption))  # fmt: skip

    # Filling them in refreshes the preview: no "upload it again".
    app.text_input(key="upload_model").set_value("m")
    app.selectbox(key="upload_card").set_value("t4")
    app.text_input(key="upload_batch").set_value("1")
    run(app)
    assert texts(app.error) == []
    assert rows(app, "upload_preview")[0]["batches"] == "1"


def test_the_form_can_use_its_name_in_place_of_the_files(app: AppTest) -> None:
    text = b"batch,latency_ms,model,card\n1,5,ball_detector_v2,t4\n2,9,ball_detector_v2,t4\n"
    open_page(app, "curves.py", {"tab": "Upload"})
    choose_files(app, ("bd.csv", text))
    app.text_input(key="upload_model").set_value("ball-detector")
    run(app)
    (box,) = app.error
    assert plain(box.value).count("bd.csv") == 2  # the heading, and one line for the file
    assert "bd.csv lines 2–3: model is 'ball_detector_v2' in the file but “Model” says " in (
        plain(box.value)
    )
    app.checkbox(key="upload_override_model").check()
    run(app)
    assert texts(app.error) == []
    app.button(key="upload_save").click()
    run(app)
    (saved,) = db().curves(model="ball-detector", card="t4")
    assert saved.environment["file_model"] == "ball_detector_v2"


def test_curves_of_several_configs_are_told_apart_and_chosen(app: AppTest) -> None:
    open_page(app, "curves.py", {"tab": "Upload"})
    choose_files(app, ("metrics-model-inference.csv", ADD_SUB.encode()))
    app.selectbox(key="upload_card").set_value("a100-40gb")
    run(app)
    configs = {r["config"]: r["id"] for r in rows(app, "upload_preview")}
    assert set(configs) == {"add_sub_config_0", "add_sub_config_1"}
    expanders = sorted(plain(e.label) for e in app.expander if "Points of" in e.label)
    assert expanders == [
        "Points of add_sub on a100-40gb, config add_sub_config_0",
        "Points of add_sub on a100-40gb, config add_sub_config_1",
    ]
    legend = {t["name"] for t in spec(app, "upload_chart_latency")["data"]}
    assert legend == {e.removeprefix("Points of ") for e in expanders}
    chooser = app.multiselect(key="upload_chosen")
    assert sorted(chooser.value) == sorted(configs.values())  # all, until the user says
    assert any("config add_sub_config_1" in option for option in chooser.options)
    chooser.set_value([configs["add_sub_config_1"]])
    run(app)
    assert app.button(key="upload_save").label == "Save 1 new curve(s)"
    app.button(key="upload_save").click()
    run(app)
    (saved,) = db().curves(model="add_sub")
    assert saved.id == configs["add_sub_config_1"]


def test_preview_axes_of_a_short_curve_tick_whole_batches(app: AppTest) -> None:
    open_page(app, "curves.py", {"tab": "Upload"})
    choose_files(app, ("good.csv", GOOD_CSV))
    axis = spec(app, "upload_chart_latency")["layout"]["xaxis"]
    assert axis["dtick"] == 1 and axis["tickformat"] == "d"
    (points,) = [k for k in ("upload_points_0",)]
    assert set(rows(app, points)[0]) == {"batch", "latency (ms)"}  # no raw column names


# ---------------------------------------------------------------------------------------
# Stored curves: rename and flags


def test_renaming_a_curve_makes_a_new_one_that_records_the_old(app: AppTest) -> None:
    open_page(app, "curves.py")
    old = db().curve(app.selectbox(key="curve").value)
    app.text_input(key=f"rename_model_{old.id}").set_value("ball-detector-v2")
    app.button(key="curve_rename").click()
    run(app)
    new = db().curve(app.selectbox(key="curve").value)
    assert (new.model, new.card, new.points) == ("ball-detector-v2", old.card, old.points)
    assert new.renamed_from == old.id and db().curve(old.id) == old
    meta = {r["field"]: r["value"] for r in rows(app, "curve_metadata")}
    assert meta["renamed from"] == old.id
    assert any("renamed from" in s for s in texts(app.success))


def test_a_flagged_curve_says_so_wherever_it_is_named(app: AppTest) -> None:
    drifted = make_curve(
        model="ball-detector", card="cpu-busy", precision="fp32", resolution="128x72",
        points=[Point(1, 38.5), Point(2, 76.0)], source="measured",
        environment={"drift_warning": "batch 1 moved +6178.2% (38.50 -> 2417.00 ms)"},
    )  # fmt: skip
    run(app)
    db().add_curves([drifted])
    open_page(app, "curves.py", {"curve": drifted.id})
    assert any("Flagged: drift check failed" in plain(w) for w in texts(app.warning))
    flags = {r["id"]: r["flag"] for r in rows(app, "curves_table")}
    assert flags[drifted.id] == "⚠ drift check failed" and list(flags.values()).count("") == 5
