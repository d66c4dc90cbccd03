"""What a new user met on the dashboard, run in-process with AppTest: uploads that report
everything at once in the form's words, curves that can be renamed and told apart,
formatted figures, saved plans, the Simulate link's seed, and flagged measurements."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.state import store
from planner.curves.curve import Point, make_curve
from planner.store.repository import Store
from tests.conftest import run
from tests.test_import_tools import ADD_SUB, PERF_HEADER, perf_row

REPO = Path(__file__).resolve().parent.parent
GOOD_CSV = b"batch,latency_ms,model,card\n1,5.5,m,t4\n2,9.25,m,t4\n"
PERF_OK = (PERF_HEADER + perf_row(1, 500.0, 2000, 2100, 2200)).encode()


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


# ---------------------------------------------------------------------------------------
# Plan

QUICK = {"seeds": "2", "duration_s": "5"}


def headline_why(at: AppTest) -> str:
    (why,) = [plain(m) for m in texts(at.markdown) if m.startswith("**Why")]
    return why


def test_the_simulate_link_opens_the_draw_behind_the_headline(app: AppTest) -> None:
    open_page(app, "plan.py", QUICK)
    why = headline_why(app)
    claimed = why.split(" gets ")[1].split(" under ")[0]  # "12.2 fps"
    (link,) = [x for x in app.get("page_link") if x.proto.page == "simulate"]
    query = dict(part.split("=", 1) for part in link.proto.query_string.split("&"))
    (said,) = [c for c in texts(app.caption) if c.startswith("The link opens seed")]
    assert said.startswith(f"The link opens seed {query['seed']}, the random phase draw where ")
    assert f"gets {claimed}: the plan judges" in said
    assert f"**{claimed.removesuffix(' fps')}** (seed {query['seed']}, the worst)" in said

    other = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    open_page(other, "simulate.py", query)
    slowest = next(m for m in other.metric if m.label == "Slowest session")
    assert slowest.value == claimed  # the headline's figure, on the page it links to
    assert slowest.delta == "below the floor" and "28.5 fps" in slowest.help


def test_a_range_is_explained_edge_by_edge(app: AppTest) -> None:
    server = db().curves(card="server-24gb")[0]
    open_page(app, "plan.py", {"curve": server.id, **QUICK})
    why = headline_why(app)
    assert why.startswith("**Why 4–5?**") and "Why not" not in why
    assert "- If the card is as slow as the band's pessimistic edge, 4 sessions hold: at 5 " in (
        why
    )
    assert "- On the fitted curve, 5 sessions hold: at 6 sessions" in why


def test_a_rerun_from_the_cache_says_so_and_one_point_is_not_a_range(app: AppTest) -> None:
    open_page(app, "plan.py", {"points": "1:8", **QUICK})
    assert any("options simulated (" in c for c in texts(app.caption))
    assert any("beyond the measured batch 1," in w for w in texts(app.warning))
    assert not any("1–1" in w for w in texts(app.warning) + texts(app.markdown))
    run(app)  # the same plan again: nothing new is simulated
    assert any("answered from the cache" in c for c in texts(app.caption))
    assert not any("(0 runs)" in c for c in texts(app.caption))


def test_grouped_options_on_the_seats_chart_are_explained(app: AppTest) -> None:
    open_page(app, "plan.py", QUICK)
    labels = [t for trace in spec(app, "plan_chart_pareto")["data"] for t in trace.get("text", [])]
    assert labels and not any("+" in label for label in labels)
    grouped = [label for label in labels if " more" in label]
    assert grouped, labels
    assert any("“oldest-first and 5 more”" in c for c in texts(app.caption))


def test_plans_are_saved_under_a_name_and_listed(app: AppTest) -> None:
    open_page(app, "plan.py", QUICK)
    app.text_input(key="plan_save_name").set_value("spring peak")
    app.button(key="plan_save").click()
    run(app)
    (saved,) = rows(app, "plan_saved_list")
    assert plain(saved["name"]) == "spring peak"
    assert plain(saved["headline then"]) == texts(app.title)[0]
    assert plain(saved["short link"]).startswith("http://localhost:8501/?plan=")
    assert db().plans()[0].name == "spring peak"


def test_options_table_puts_what_a_reader_compares_first(app: AppTest) -> None:
    open_page(app, "plan.py", {"peak_sessions": "100", "price_per_hour": "2.5", **QUICK})
    table = [{plain(k): plain(v) for k, v in r.items()} for r in rows(app, "plan_options")]
    assert list(table[0])[:4] == ["option", "seats per card", "GPUs for peak", "cost per seat-hour"]
    costs = [r["cost per seat-hour"] for r in table if r["cost per seat-hour"] != "-"]
    assert costs and all(c.startswith("$") and len(c.split(".")[1]) in (2, 3) for c in costs)
    assert not any(c.endswith("0") and len(c.split(".")[1]) == 3 for c in costs)  # no "$2.500"
    assert len(table) == 7  # every option, no scrolling box


# ---------------------------------------------------------------------------------------
# Flagged curves are kept out of Compare and of the Plan's default choices


def flagged_curve() -> Any:
    return make_curve(
        model="ball-detector", card="busy-gpu", precision="fp16", resolution="512x288",
        points=[Point(1, 38.5), Point(2, 70.0)], source="measured",
        environment={"drift_warning": "batch 1 moved +6178.2% (38.50 -> 2417.00 ms)"},
    )  # fmt: skip


def test_flagged_curves_are_offered_only_when_included(app: AppTest) -> None:
    run(app)
    (drifted,) = db().add_curves([flagged_curve()])
    open_page(app, "plan.py", QUICK)
    assert drifted.id not in app.selectbox(key="plan_curve").options
    app.checkbox(key="plan_flagged").check()
    run(app)
    picker = app.selectbox(key="plan_curve")
    (offered,) = [o for o in picker.options if "busy-gpu" in o]
    assert "⚠ drift check failed" in offered
    assert app.query_params["flagged"] in ("1", ["1"])
    again = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    open_page(again, "plan.py", {"flagged": "1", **QUICK})  # the link keeps the choice
    assert again.checkbox(key="plan_flagged").value

    compare = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    open_page(compare, "compare.py", {"precision": "fp16", "resolution": "512x288", **QUICK})
    assert "busy-gpu" not in {plain(r["card"]) for r in rows(compare, "cmp_table")}
    assert any("1 flagged curve(s) left out" in plain(w) for w in texts(compare.warning))
    compare.checkbox(key="cmp_flagged").check()
    run(compare)
    assert "busy-gpu (⚠ drift check failed)" in {
        plain(r["card"]) for r in rows(compare, "cmp_table")
    }

    simulate = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    open_page(simulate, "simulate.py", {"curve": drifted.id, "duration_s": "2"})
    assert any("This curve is flagged: drift check failed" in plain(w) for w in texts(
        simulate.warning))  # fmt: skip
    assert compare.query_params["flagged"] in ("1", ["1"])


def test_compare_with_one_card_says_what_to_add(app: AppTest) -> None:
    open_page(app, "compare.py", {"cards": "server-24gb", **QUICK})
    (hint,) = [i for i in texts(app.info) if "Add" in i]
    assert "laptop\\-8gb" in hint and "Cards" in hint


# ---------------------------------------------------------------------------------------
# Measure


@pytest.mark.torch
@pytest.mark.parametrize(("found", "says"), [("cpu", "No CUDA GPU here"), ("cuda", "CUDA device")])
def test_measure_says_what_it_would_measure_on_before_the_button(
    app: AppTest, monkeypatch: pytest.MonkeyPatch, found: str, says: str
) -> None:
    import planner.measure.devices

    monkeypatch.setattr(planner.measure.devices, "local_device", lambda: found)
    open_page(app, "measure.py")
    shown = texts(app.warning) + texts(app.caption)
    assert any(says in plain(t) for t in shown), shown
    if found == "cpu":
        assert any("a CPU measurement plans CPU serving, not a GPU" in w for w in texts(
            app.warning))  # fmt: skip


def test_measured_points_read_as_the_planner_writes_them(app: AppTest) -> None:
    run(app)
    laptop = next(c for c in db().curves() if c.precision == "fp16" and c.card == "laptop-8gb"
                  and c.resolution == "512x288")  # fmt: skip
    app.session_state["measure_last"] = [laptop.id]
    open_page(app, "measure.py")
    table = rows(app, f"measure_points_{laptop.id}")
    assert list(table[0]) == ["batch", "latency (ms)"]
    assert [r["latency (ms)"] for r in table][:2] == ["9.82", "20.4"]


def test_each_page_names_itself_in_the_browser_title() -> None:
    from dashboard.main import page_title
    from dashboard.navigation import PAGES

    assert [page_title(p.title) for p in PAGES][:2] == [
        "Plan — GPU Seat Planner",
        "Curves — GPU Seat Planner",
    ]
