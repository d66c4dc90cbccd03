"""Reliability of the dashboard, in-process with AppTest: hostile names on every page, bad
files on the upload form, and a store shared with commands while the dashboard runs."""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from planner.curves.imports.base import MAX_PROBLEMS_PER_FILE
from planner.store.repository import Store
from tests.conftest import run

REPO = Path(__file__).resolve().parent.parent
QUICK = {"seeds": "1", "duration_s": "2", "max_sessions": "4"}

# What the probe named its curves, and relatives: an image whose address the browser
# fetches, a disguised link, bare addresses GitHub Markdown links by itself, Streamlit's
# colour directive, LaTeX and HTML.
HOSTILE_MODEL = (
    "![t](http://127.0.0.1:8799/pixel.png) [click](https://evil.example) www.evil.example"
)
HOSTILE_CARD = "mail user@evil.example :red[red] $x^2$ <b>bold</b> evil"
HOSTILE_NOTES = "read http://evil.example/notes first, or [this](https://evil.example/x) evil"
# None of these may reach an element that renders Markdown, in any text that comes from
# the names above (every such text contains "evil").
RAW = ("![", "](", "http://", "https://", "www.evil", "user@evil", ":red[", "$x^2$", "<b>")


def hostile_csv(model: str = HOSTILE_MODEL) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["batch", "latency_ms", "model", "card", "notes"])
    for batch, latency in ((1, 6.0), (2, 10.5), (4, 19.0)):
        writer.writerow([batch, latency, model, HOSTILE_CARD, HOSTILE_NOTES])
    return out.getvalue().encode()


def open_page(at: AppTest, script: str, query: dict[str, str] | None = None) -> AppTest:
    for key, value in (query or {}).items():
        at.query_params[key] = value
    at.switch_page(f"dashboard/pages/{script}")
    return run(at)


def _nodes(node: Any) -> Iterator[Any]:
    yield node
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        for child in children.values():
            yield from _nodes(child)


MARKDOWN_BODIES = {"markdown", "caption", "title", "header", "subheader", "error", "warning",
                   "info", "success", "toast"}  # fmt: skip


def rendered_markdown(at: AppTest) -> list[str]:
    """Every text of the page that Streamlit renders as Markdown: bodies of text and
    alert elements, and the labels and help of widgets, expanders, tabs and links."""
    texts = []
    for node in _nodes(at._tree):
        kind = getattr(node, "type", "")
        if kind in MARKDOWN_BODIES:
            texts.append(str(node.value))
        for attribute in ("label", "help"):
            value = getattr(node, attribute, None)
            if isinstance(value, str):
                texts.append(value)
        proto = getattr(node, "proto", None)
        for block in ("expandable", "tab"):
            if proto is not None and hasattr(proto, block) and proto.HasField(block):
                texts.append(getattr(proto, block).label)
    return texts


def assert_literal(at: AppTest) -> int:
    """No hostile fragment reaches Markdown unescaped; how many texts carried one."""
    seen = 0
    for text in rendered_markdown(at):
        if "evil" not in text:
            continue
        seen += 1
        leaks = [fragment for fragment in RAW if fragment in text]
        assert not leaks, f"{leaks} rendered as Markdown in {text[:300]!r}"
    return seen


def test_hostile_names_are_shown_literally_on_every_page(app: AppTest) -> None:
    """Issue 11.2: a model name drew an image (fetched during the upload preview) and a
    disguised link in the 'Points of …' expander, and addresses in names became links."""
    # The upload preview, before anything is stored.
    run(app)
    open_page(app, "curves.py", {"tab": "Upload"})
    app.file_uploader(key="upload_files").set_value(("evil.csv", hostile_csv(), "text/csv"))
    run(app)
    assert any("Points of" in text for text in rendered_markdown(app))
    assert assert_literal(app) > 0
    app.button(key="upload_save").click()
    run(app)
    (curve,) = [c for c in Store(os.environ["PLANNER_DB"]).curves() if "evil" in c.model]

    pages = [
        ("curves.py", {"curve": curve.id}),
        ("plan.py", {"curve": curve.id, **QUICK}),
        (
            "plan.py",
            {"points": "1:6,2:10.5", "model": HOSTILE_MODEL, "card": HOSTILE_CARD, **QUICK},
        ),
        ("plan.py", {"policies": HOSTILE_CARD, "budget_ms": "abc", **QUICK}),
        ("simulate.py", {"curve": curve.id, "sessions": "2", "duration_s": "2"}),
        ("compare.py", {"model": curve.model, **QUICK}),
        ("studies.py", {}),
    ]
    from planner.studies.run import run_study
    from planner.studies.study import study_from_dict

    hostile_study = {
        "name": HOSTILE_MODEL,
        "description": HOSTILE_NOTES,
        "curves": {"ids": [curve.id]},
        "fixed": {"seeds": 1, "duration_s": 2, "max_sessions": 4},
        "axes": {"budget_ms": [30, 50], "policies": ["all", "batch-all"]},
    }
    with Store(os.environ["PLANNER_DB"]) as store:
        run_study(store, study_from_dict(hostile_study), workers=1)
    for script, query in pages:
        at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
        open_page(at, script, query)
        assert assert_literal(at) > 0, (script, query)

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    at.session_state["measure_last"] = [curve.id]
    open_page(at, "measure.py")
    assert assert_literal(at) > 0


def plain(markdown: str) -> str:
    """What a reader sees of Markdown made by ``planner.text.md``: no escapes, no joiners."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u2060", "")


def upload(app: AppTest, name: str, data: bytes) -> AppTest:
    run(app)
    open_page(app, "curves.py", {"tab": "Upload"})
    app.file_uploader(key="upload_files").set_value((name, data, "text/csv"))
    return run(app)


@pytest.mark.parametrize(
    ("name", "data", "problem"),
    [
        ("deep.json", b"[" * 10_000 + b"]" * 10_000, "nested more than"),
        (
            "number.json",
            b'{"model": "m", "card": "c", "points": [{"batch": 1, "latency_ms": '
            + b"9" * 5000
            + b"}]}",
            "not a finite number",
        ),
        ("field.csv", b'batch,latency_ms,model\n1,5,"' + b"m" * 200_000 + b'"\n', "not a readable"),
        (
            "wide.csv",
            b"batch,latency_ms," + b",".join(b"c%d" % i for i in range(100_000)) + b"\n",
            "columns, more than the",
        ),
    ],
    ids=["deep json", "long number", "long field", "wide header"],
)
def test_bad_files_on_the_upload_form_are_one_line_never_a_traceback(
    app: AppTest, name: str, data: bytes, problem: str
) -> None:
    """Issue 11.3: these raised RecursionError, ValueError and csv.Error on the page, with
    server paths in the traceback."""
    upload(app, name, data)
    (box,) = app.error
    assert "nothing was stored" in box.value
    assert problem in plain(box.value) and box.value.count("\n- ") == 1


def test_an_upload_with_100000_bad_rows_lists_the_first_50(app: AppTest) -> None:
    """Issue 11.5: 100k bad rows took 271 s to show (a million crashed the tab)."""
    rows = 100_000
    upload(app, "bad.csv", b"batch,latency_ms,model,card\n" + b"0,5,m,c\n" * rows)
    (box,) = app.error
    assert box.value.count("\n- ") == MAX_PROBLEMS_PER_FILE + 1
    assert f"and {rows - MAX_PROBLEMS_PER_FILE:,} more of the same kinds" in plain(box.value)


def planner(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "planner", "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_commands_store_curves_while_the_dashboard_runs(
    app: AppTest, db_path: Path, tmp_path: Path
) -> None:
    """Issue 10.9: with the dashboard up (this process holds its Store for good), an import
    and a measurement succeed, and the next rerun of the page shows their curves."""
    open_page(app, "curves.py")
    assert any("5 of 5 stored curves" in c.value for c in app.caption)
    source = tmp_path / "new.csv"
    source.write_text("batch,latency_ms,model,card\n1,5,imported,gpu-new\n2,9,imported,gpu-new\n")
    imported = planner(db_path, "curves", "import", str(source))
    assert imported.returncode == 0, imported.stderr
    measured = planner(db_path, "measure", "--batches", "1,2", "--resolution", "16x8",
                       "--warmup", "1", "--rounds", "1", "--repetitions", "2", "--device", "cpu",
                       "--model", "measured", "--card", "cpu-here", "--store")  # fmt: skip
    assert measured.returncode == 0, measured.stderr
    run(app)
    assert any("7 of 7 stored curves" in c.value for c in app.caption)
    rows = app.get_by_key("curves_table").dataframe[0].value.to_dict("records")
    models = {row["model"] for row in rows}
    assert {"imported", "measured"} <= models


def test_a_store_held_too_long_mid_page_is_a_message(
    app: AppTest, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dashboard's store waits for another process like any command; when the wait
    runs out the page says so in words."""
    monkeypatch.setenv("PLANNER_DB_WAIT_S", "0.2")
    open_page(app, "curves.py")
    code = (
        "import time, duckdb\n"
        f"con = duckdb.connect({str(db_path)!r})\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        run(app)
    finally:
        holder.kill()
        holder.wait()
    messages = [plain(e.value) for e in app.error]
    assert any("This page stopped" in m and "is busy: process" in m for m in messages), messages


@pytest.mark.parametrize(
    ("name", "value"), [("PLANNER_BUDGET_FRAMES", "abc"), ("PLANNER_CONCURRENT_WORK", "lots")]
)
def test_a_bad_server_setting_is_named_on_the_page(
    app: AppTest, monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    run(app)
    assert not app.exception
    (error,) = app.error
    shown = error.value.replace("\\", "")  # the message is escaped for Markdown
    assert "settings are not valid" in shown and f"{name}='{value}' is not" in shown
