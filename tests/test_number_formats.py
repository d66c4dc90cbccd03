"""Every money, millisecond, frame-rate and percentage figure that one plan's fronts write
(every dashboard page, the report, the command line's text, a simulation's and a stored
load test's text, the Validate page) is written the one way ``planner.display`` writes it:
each figure found must match ``display.PATTERNS``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from dashboard.navigation import PAGES
from dashboard.state import store
from planner import display
from planner.curves.fit import fit_curve
from planner.links.urls import encode
from planner.plan.params import PlanParams
from planner.plan.resolve import default_curve
from planner.store.repository import Store
from planner.validate.loadtest import run_loadtest
from planner.validate.loadtest_store import save_loadtest
from planner.validate.options import LoadTestOptions
from planner.validate.runs import LoadTest
from planner.validate.worker.backends import SleepBackend
from tests.conftest import run

PLAN = PlanParams(peak_sessions=200, profile="office-hours", seeds=2, duration_s=5.0)
PRICE = 1.25

# Anything that looks like a figure of a kind, whatever its format: the rule must match it.
FOUND = {
    "money": r"-?\$\d[\d,]*(?:\.\d+)?",
    "ms": r"(?<![\w.,$])-?\d[\d,]*(?:\.\d+)?\s?ms\b",
    "fps": r"(?<![\w.,$])-?\d[\d,]*(?:\.\d+)?\s?fps\b",
    "percent": r"(?<![\w.,$])-?\d[\d,]*(?:\.\d+)?\s?%",
}
NOT_PROSE = re.compile(r"`[^`]*`|\S+://\S+|\?\S+=\S+|--[\w-]+(?:[ =]\S+)?")
"""Commands, links and options: text a person copies, not figures to read."""


def badly_written(text: str) -> list[str]:
    """The figures in ``text`` not written as ``planner.display`` writes them."""
    prose = NOT_PROSE.sub(" ", text.replace("\\", ""))
    bad = []
    for kind, found in FOUND.items():
        for figure in re.findall(found, prose):
            if not re.fullmatch(display.PATTERNS[kind], figure):
                bad.append(f"{kind}: {figure!r} in {text[:120]!r}")
    return bad


def test_the_rule_matches_what_display_writes_and_nothing_else() -> None:
    for value in (0.0, 0.0042, 0.042, 0.6, 2.5, 1382.4, 123456.789):
        assert badly_written(display.money(value)) == []
    for value in (0.0012, 0.4521, 9.823, 38.46, 50.0, 2417.3):
        assert badly_written(display.ms(value)) == []
        assert badly_written(display.fps(value)) == []
    for value in (0.00004, 0.004, 0.125, 0.2, 1.0):
        assert badly_written(display.fraction(value)) == []
    wrong_ones = ("$0.240", "$1412.50", "44.08 ms", "29.97 fps", "12.50%", "$0.5", "0.0 ms",
                  "   9.0 ms", "10.00 ms", "0.000 ms", "0.450 ms", "1,382.0 ms")  # fmt: skip
    for wrong in wrong_ones:
        assert badly_written(wrong), wrong


FINITE = st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, allow_infinity=False)


@given(value=FINITE, sign=st.booleans())
def test_whatever_display_writes_the_rule_accepts(value: float, sign: bool) -> None:
    for kind, written in (
        ("money", display.money(abs(value))),
        ("ms", display.ms(value, sign=sign)),
        ("ms", display.ms_column(value).strip()),
        ("fps", display.fps(value)),
        ("percent", display.fraction(value / 1e7, sign=sign)),
    ):
        assert re.fullmatch(display.PATTERNS[kind], written.lstrip("+")), (kind, written)


def _page_texts(at: AppTest) -> list[str]:
    out = []
    for node in at._tree:
        for name in ("value", "label", "body"):
            try:
                value = getattr(node, name)
            except Exception:
                continue
            if isinstance(value, str):
                out.append(value)
            elif isinstance(value, pd.DataFrame):
                out += _frame_texts(value)
    return out


UNWRITTEN = "a number the table writes itself, in"
FIGURE_HEADERS = ("(ms)", "(fps)", "(%)", "USD", "cost", "per day", "per month", "error",
                  ": measured", ": predicted")  # fmt: skip
"""Headers of a column of figures: its cells must be text written by ``planner.display``."""


def _frame_texts(frame: pd.DataFrame) -> list[str]:
    out = []
    for column in frame.columns:
        header = str(column)
        unit = " ms" if "(ms)" in header else " fps" if "(fps)" in header else ""
        for cell in frame[column]:
            if isinstance(cell, str):
                out.append(cell + unit if unit and cell != display.MISSING else cell)
            elif isinstance(cell, float) and any(h in header for h in FIGURE_HEADERS):
                out.append(f"{UNWRITTEN} {header}: {cell!r}")
    return out


@pytest.mark.parametrize("entry", PAGES, ids=lambda e: e.script)
def test_every_page_writes_figures_one_way(app: AppTest, entry: Any) -> None:
    store().set_price("laptop-8gb", PRICE)
    link = encode(PLAN) if entry.script in ("plan.py", "compare.py") else {}
    if entry.script == "simulate.py":
        link = {"duration_s": "5"}
    for key, value in link.items():
        app.query_params[key] = value
    if entry.script != PAGES[0].script:
        app.switch_page(f"dashboard/pages/{entry.script}")
    run(app)
    texts = _page_texts(app)
    if entry.script in ("plan.py", "compare.py"):  # priced: the plan's figures are there
        assert any(re.search(FOUND["money"], t) for t in texts)
        assert any(re.search(FOUND["ms"], t) for t in texts)
    found = [bad for text in texts for bad in badly_written(text)]
    assert found + [t for t in texts if t.startswith(UNWRITTEN)] == []


def _plan_args(db_path: Path) -> list[str]:
    with Store(db_path) as opened:
        curve = default_curve(opened).id
    return ["--curve", curve, "--peak-sessions", "200", "--profile", "office-hours", "--seeds", "2",
            "--duration-s", "5", "--price-per-hour", str(PRICE)]  # fmt: skip


@pytest.mark.parametrize(
    "command",
    [["recommend"], ["fleet", "--compare-cards"], ["compare-cards", "--peak-sessions", "200"]],
    ids=lambda c: c[0],
)
def test_the_command_line_writes_figures_one_way(
    cli: Any, db_path: Path, command: list[str]
) -> None:
    args = (
        _plan_args(db_path)
        if command[0] != "compare-cards"
        else ["--seeds", "2", "--duration-s", "5"]
    )
    done = cli(*command, *args)
    assert done.status == 0, done.err
    assert [bad for line in done.out.splitlines() for bad in badly_written(line)] == []


def test_the_report_writes_figures_one_way(cli: Any, db_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    done = cli("report", *_plan_args(db_path), "--out", str(out))
    assert done.status == 0, done.err
    text = out.read_text(encoding="utf-8")
    assert "$" in text and " ms" in text and "%" in text
    assert [bad for line in text.splitlines() for bad in badly_written(line)] == []


def _bad_lines(text: str) -> list[str]:
    return [bad for line in text.splitlines() for bad in badly_written(line)]


def test_a_simulation_writes_figures_one_way(cli: Any) -> None:
    # Worker stages make the latency-by-stage table and the CPU threads' lines appear.
    done = cli("simulate", "--points", "1:8,3:20", "--sessions", "3", "--pre-ms", "12",
               "--network-ms", "5", "--cpu-workers", "1", "--duration-s", "2")  # fmt: skip
    assert done.status == 0, done.err
    assert "end-to-end latency by stage" in done.out and "CPU pre jobs:" in done.out
    assert _bad_lines(done.out) == []


def _stored_loadtest(db: Store) -> LoadTest:
    curve = default_curve(db)
    table = fit_curve(curve.points).table(64)
    options = LoadTestOptions(sessions=(1, 2), policies=("batch-all", "oldest-first"),
                              duration_s=0.4)  # fmt: skip
    test = run_loadtest(options, curve=curve, backend=SleepBackend(table), stage_ms=(0.0, 0.0))
    return save_loadtest(db, test)


def test_a_stored_load_test_is_shown_with_figures_one_way(cli: Any, db_path: Path) -> None:
    with Store(db_path) as opened:
        test = _stored_loadtest(opened)
    assert test.calibration is not None
    done = cli("loadtest", "show", str(test.id))
    assert done.status == 0, done.err
    assert "measured / predicted" in done.out and "Calibrated by" in done.out
    assert _bad_lines(done.out) == []


def test_the_validate_page_writes_a_load_tests_figures_one_way(app: AppTest) -> None:
    test = _stored_loadtest(store())
    app.switch_page("dashboard/pages/validate.py")
    run(app)
    assert app.selectbox(key="validate_loadtest").value == test.id
    texts = _page_texts(app)
    assert any(re.search(FOUND["ms"], t) for t in texts)
    found = [bad for text in texts for bad in badly_written(text)]
    assert found + [t for t in texts if t.startswith(UNWRITTEN)] == []
