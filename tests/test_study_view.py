"""A study's view (``planner.views.study``): the Studies page and ``planner study`` show
the same summary, grid, front, cells and plan links of one stored study, each before its
own escaping."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

from planner.store.repository import Store
from planner.studies.params import StudyParams
from planner.studies.run import run_study
from planner.studies.store import load_study
from planner.studies.study import study_from_dict
from planner.views.study import StudyView, curve_names, settle, study_view
from tests.conftest import run
from tests.test_plan_view import cells, text_table, unescaped

# Three budgets (a front with a line) across two policies (the grid's second axis).
STUDY: dict[str, Any] = {
    "name": "small <b>grid</b>",
    "description": "budgets against policies",
    "curves": {"filters": [{"model": "ball-detector", "card": "server-24gb"}]},
    "fixed": {"seeds": 2, "duration_s": 5, "peak_sessions": 100, "price_per_hour": 2.0},
    "axes": {"budget_ms": [30, 50, 80], "policies": ["all", "batch-all"]},
}


def test_the_page_and_the_command_show_the_same_study(
    app: AppTest, cli: Any, tmp_path: Path
) -> None:
    with Store(os.environ["PLANNER_DB"]) as store:
        run_study(store, study_from_dict(STUDY), workers=2)
        study, members = load_study(store, STUDY["name"])
        names = curve_names(store.curves(), {m.curve_id for m in members})
    view: StudyView = study_view(
        study, members, settle(members, StudyParams(study=study.name)), names
    )
    assert view.grid is not None and view.heatmap is not None and len(view.front) > 1
    assert len(view.cells.rows) == 6 and len(view.plans) == 6

    # The page, opened on the study: its first view is the settled one.
    app.switch_page("dashboard/pages/studies.py")
    run(app)
    assert view.summary in [unescaped(c.value) for c in app.caption]
    frame = app.get_by_key("study_cells").dataframe[0].value
    shown = [{k: str(v) for k, v in row.items()} for row in frame.to_dict("records")]
    assert shown == view.cells.records
    charts = {c.key: json.loads(c.proto.spec) for c in app.get("plotly_chart")}
    heat = charts["study_heatmap"]["data"][0]
    assert [tuple(row) for row in heat["text"]] == list(view.grid_text)
    line = charts["study_front"]["data"][0]
    assert [c[0] for c in line["customdata"]] == [p.cost_text for p in view.front]
    assert line["x"] == [float(p.budget) for p in view.front]
    (picker,) = [s for s in app.selectbox if s.key == "study_open"]
    assert list(picker.options) == [p.what for p in view.plans]

    # ``planner study`` of the same file: every cell is stored, so it computes nothing.
    path = tmp_path / "small.json"
    path.write_text(json.dumps(STUDY))
    printed = cli("study", str(path))
    assert printed.status == 0, printed.err
    lines = printed.out.splitlines()
    assert view.summary in lines
    heatmap = view.heatmap
    assert text_table(printed.out, heatmap.header, len(heatmap.rows)) == cells(heatmap)
    for point in view.front:
        assert f"  {point.budget} ms: {point.cost_text} ({point.label})" in lines
    header = tuple(h for h in view.cells.header if h != "plan")
    read = text_table(printed.out, header, len(view.cells.rows))
    assert read[1:] == tuple(tuple(r[h] for h in header) for r in view.cells.records)
    for link in view.plans:
        assert f"  {link.what}: {link.address}" in lines
