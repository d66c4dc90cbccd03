"""Studies (SPEC §5.4): the file, the grid, running it on a process pool and on Ray,
resuming without recomputing, and the Study page."""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

import planner.studies.run
from planner.errors import BadInput
from planner.links.parameters import PARAMETERS
from planner.links.urls import decode
from planner.plan.params import PlanParams
from planner.plan.recommend import recommend
from planner.plan.resolve import plan_inputs
from planner.sim.work import Work
from planner.store.repository import Store
from planner.studies.run import StudyInterrupted, run_study
from planner.studies.store import load_study, studies
from planner.studies.study import MAX_CELLS, cells, study_from_dict

REPO = Path(__file__).resolve().parent.parent

# 5 built-in curves x 10 budgets x 10 floors = 500 cells, each a quick search.
BIG: dict[str, Any] = {
    "name": "five hundred",
    "curves": {"filters": [{"model": "ball-detector"}]},
    "fixed": {"seeds": 1, "duration_s": 2, "max_sessions": 8, "policies": "batch-all"},
    "axes": {
        "budget_ms": [20, 25, 30, 35, 40, 45, 50, 60, 70, 80],
        "min_fps": [20, 21, 22, 23, 24, 25, 26, 27, 28, 28.5],
    },
}
SMALL: dict[str, Any] = {
    "name": "small",
    "curves": {"filters": [{"model": "ball-detector", "card": "server-24gb"}]},
    "fixed": {"seeds": 2, "duration_s": 5, "peak_sessions": 100, "price_per_hour": 2.0},
    "axes": {"budget_ms": [30, 50, 80], "policies": ["all", "batch-all"]},
}


def _stored(store: Store, name: str) -> dict[str, dict[str, Any]]:
    _study, members = load_study(store, name)
    out = {}
    for member in members:
        assert member.result is not None
        doc = dict(member.result.outputs)
        out[member.key] = {"status": member.result.status, **doc}
    return out


def test_a_500_cell_study_resumes_without_recomputing_and_matches_recommend(
    store: Store,
) -> None:
    study = study_from_dict(BIG)
    assert len(cells(store, study)) == 500

    stop_after = 120
    with pytest.raises(StudyInterrupted) as stopped:

        def interrupt(state: Any) -> None:
            if state.done >= stop_after:
                raise KeyboardInterrupt

        run_study(store, study, progress=interrupt, workers=2)
    first = stopped.value.summary
    assert first.interrupted and first.computed >= stop_after
    kept = len(_stored_ok(store, study))
    assert kept == first.computed  # every finished cell was stored

    second = run_study(store, study, workers=2)
    assert second.skipped == kept
    assert second.computed == 500 - kept  # nothing computed twice
    results = _stored(store, "five hundred")
    assert len(results) == 500 and all(r["status"] == "ok" for r in results.values())

    # The two runs together simulated exactly what one uninterrupted run does.
    with Store(store.path.with_name("fresh.duckdb")) as fresh:
        whole = run_study(fresh, study, workers=2)
    assert first.simulations + second.simulations == whole.simulations

    # Sampled cells equal single recommendations with the same inputs.
    _study, members = load_study(store, "five hundred")
    for member in random.Random(7).sample(members, 5):
        params, ignored = decode(PlanParams, member.params)
        assert ignored == []
        alone = recommend(plan_inputs(params, store).request)
        stored = member.result.outputs if member.result else {}
        assert alone.recommended is not None
        assert stored["seats_per_card"] == alone.recommended.seats_per_card
        assert stored["cap_low"] == alone.recommended.cap_low
        at = alone.recommended.at_cap
        assert at is not None and at.e2e_latency_ms is not None
        assert stored["latency_ms"] == round(at.e2e_latency_ms, 2)  # hundredths of a ms


def _stored_ok(store: Store, study: Any) -> set[str]:
    from planner.studies.store import finished_keys

    return finished_keys(store, [c.key for c in cells(store, study)])


def test_the_same_study_on_ray_stores_identical_cells(store: Store, tmp_path: Path) -> None:
    study = study_from_dict(SMALL)
    run_study(store, study, engine="local", workers=2)
    local = _stored(store, "small")
    env = {**os.environ, "HOME": str(tmp_path), "RAY_AUTH_MODE": "disabled"}
    other = tmp_path / "ray.duckdb"
    probe = (
        "import json, sys\n"
        "from planner.store.repository import Store\n"
        "from planner.studies.study import study_from_dict\n"
        "from planner.studies.run import run_study\n"
        f"study = study_from_dict(json.loads({json.dumps(json.dumps(SMALL))}))\n"
        f"with Store({str(other)!r}) as store:\n"
        "    run_study(store, study, engine='ray', workers=2)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                          text=True, timeout=600, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    with Store(other) as store_ray:
        on_ray = _stored(store_ray, "small")
    assert set(on_ray) == set(local)
    for key, doc in local.items():
        assert on_ray[key] == doc, key


def test_ray_is_imported_only_for_the_ray_engine(tmp_path: Path) -> None:
    probe = (
        "import json, sys\n"
        "from planner.store.repository import Store\n"
        "from planner.studies.study import study_from_dict\n"
        "from planner.studies.run import run_study\n"
        "study = study_from_dict({'name': 'one', 'curves': {'filters': [{'card': "
        "'server-24gb'}]}, 'fixed': {'seeds': 1, 'duration_s': 1, 'max_sessions': 2}})\n"
        f"with Store({str(tmp_path / 'one.duckdb')!r}) as store:\n"
        "    run_study(store, study, workers=1)\n"
        "print('ray' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": "blue"}, "unknown key 'colour'"),
        ({"axes": {"budget_ms": []}}, "axes.budget_ms: is empty"),
        ({"axes": {"budget_ms": [30, -1]}}, "axes.budget_ms[2]: must be"),
        ({"axes": {"warp": [1]}}, "axes: unknown plan parameter 'warp'"),
        ({"fixed": {"seeds": 0}}, "fixed.seeds: must be"),
        ({"fixed": {"curve": "abc"}}, "curves are chosen under [curves]"),
        ({"curves": {"ids": ["nosuchcurve1"]}}, "no stored curve has the id 'nosuchcurve1'"),
        ({"curves": {"filters": [{"model": "nothing"}]}}, "no stored curve has model=nothing"),
        ({"name": "ring\a the bell"}, "name contains control characters"),
        ({"name": "\u202egnirts desrever"}, "name contains control characters"),
        ({"name": "two\nlines"}, "name contains control characters"),
        ({"name": "n" * 201}, "name is longer than 200 characters"),
        ({"description": "d" * 900_000}, "description: is longer than 2,000 characters"),
        ({"description": "bell\a"}, "description: contains control characters"),
        (
            {
                "axes": {
                    "budget_ms": list(range(1, 201)),
                    "min_fps": list(range(0, 200)),
                    "headroom": [0.1, 0.2, 0.3],
                }
            },
            f"at most {MAX_CELLS:,} fit in one study",
        ),
    ],
)
def test_bad_study_files_get_one_clear_message_each_and_store_nothing(
    cli: Any, tmp_path: Path, db_path: Path, change: dict[str, Any], message: str
) -> None:
    raw = json.loads(json.dumps(SMALL))
    for key, value in change.items():
        if isinstance(value, dict) and isinstance(raw.get(key), dict):
            raw[key] = {**raw[key], **value}
        else:
            raw[key] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(raw))
    run = cli("study", str(path))
    assert run.status == 2
    assert message in run.err, run.err
    assert "Traceback" not in run.err
    with Store(db_path) as store:
        assert studies(store) == []


def test_a_study_file_with_thousands_of_problems_prints_51_lines(cli: Any, tmp_path: Path) -> None:
    """The command line printed one line per problem: 50,001 lines for 50,000 bad budgets.
    Now the first 50, then one line counting the rest by kind."""
    budgets = {**SMALL, "axes": {"budget_ms": [-1] * 50_000}}
    curves = {**SMALL, "curves": {"ids": [f"nosuchcurve{i:04d}" for i in range(300)]}}
    for name, raw, first, last in [
        ("budgets", budgets, "axes.budget_ms[1]: must be from 0.001 to 600000",
         "… and 49,951 more (49,950 × must be from … to …; 1 × a value is listed twice)"),
        ("curves", curves, "curves.ids: no stored curve has the id 'nosuchcurve0000'",
         "… and 250 more of the same kinds (250 × no stored curve has the id …)"),
    ]:  # fmt: skip
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(raw))
        run = cli("study", str(path))
        assert run.status == 2 and "Traceback" not in run.err
        lines = run.err.splitlines()
        assert len(lines) == 51, (name, len(lines))
        assert lines[0] == f"planner: {first}"
        assert lines[-1] == f"planner: {last}"


HUGE = "9" * 5000  # more digits than Python converts to an int (4,300)
HUGE_TOML = f"""name = "huge"
[curves]
filters = [{{ model = "ball-detector" }}]
[fixed]
seeds = {HUGE}
[axes]
budget_ms = [30, 50]
"""


@pytest.mark.parametrize("suffix", ["toml", "json"])
def test_a_study_file_with_a_5000_digit_integer_is_one_line(
    cli: Any, tmp_path: Path, db_path: Path, suffix: str
) -> None:
    path = tmp_path / f"huge.{suffix}"
    if suffix == "toml":
        path.write_text(HUGE_TOML)
    else:
        path.write_text(
            '{"name": "huge", "curves": {"filters": [{"model": "ball-detector"}]}, '
            f'"fixed": {{"seeds": {HUGE}}}, "axes": {{"budget_ms": [30, {HUGE}]}}}}'
        )
    run = cli("study", str(path))
    assert run.status == 2 and "Traceback" not in run.err, run.err[-500:]
    assert run.err.count("planner: ") == len(run.err.splitlines()) <= 2, run.err
    assert len(run.err) < 400
    with Store(db_path) as store:
        assert studies(store) == []


def test_a_5000_digit_integer_in_the_pages_study_box_is_one_problem(app: AppTest) -> None:
    app.switch_page("dashboard/pages/studies.py")
    app.run()
    app.text_area(key="study_file").set_value(HUGE_TOML)
    app.button(key="study_run").click().run()
    assert not app.exception, app.exception
    shown = " ".join(e.value for e in app.error) + " ".join(m.value for m in app.markdown)
    assert "thousands of digits" in shown
    with Store(os.environ["PLANNER_DB"]) as store:
        assert studies(store) == []


def test_several_problems_are_listed_at_once() -> None:
    with pytest.raises(BadInput) as refused:
        study_from_dict({"name": "", "curves": {}, "axes": {"budget_ms": [], "x": [1]}, "y": 1})
    assert len(refused.value.problems) >= 4


def test_the_study_command_runs_and_resumes(cli: Any, tmp_path: Path) -> None:
    path = tmp_path / "small.json"
    path.write_text(json.dumps(SMALL))
    first = cli("study", str(path), "--json", "--workers", "2")
    assert first.status == 0, first.err
    assert first.json["computed"] == 6 and first.json["failed"] == 0
    again = cli("study", str(path), "--json")
    assert again.json["already_stored"] == 6 and again.json["computed"] == 0
    text = cli("study", str(REPO / "examples" / "study.toml"), "--workers", "2")
    assert text.status == 0, text.err
    assert "cells" in text.out


@pytest.mark.parametrize("workers", ["0", "-1", "4096"])
def test_a_worker_count_this_machine_cannot_take_is_refused(
    cli: Any, tmp_path: Path, workers: str
) -> None:
    # 0 used to mean the default and 4096 processes were started on two cores.
    path = tmp_path / "small.json"
    path.write_text(json.dumps(SMALL))
    run = cli("study", str(path), "--workers", workers)
    assert run.status == 2 and run.err.count("planner: ") == 1
    assert "workers must be a whole number from 1 to" in run.err and "per core" in run.err
    assert cli("curves", "list", "--json").status == 0
    with Store(os.environ["PLANNER_DB"]) as store:
        assert studies(store) == []  # nothing stored


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("not a url", "is not a Ray address"),
        ("ray://[::1", "is not a Ray address"),
        ("head:99999", "is not a Ray address"),
        ("ray://127.0.0.1:9", "pip install 'ray[client]'"),  # without Ray's client
    ],
)
def test_a_ray_address_that_cannot_work_is_one_line_and_stores_nothing(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, address: str, says: str
) -> None:
    pytest.importorskip("ray")
    monkeypatch.setitem(sys.modules, "grpc", None)  # as if ray[client] were not installed
    path = tmp_path / "small.json"
    path.write_text(json.dumps(SMALL))
    run = cli("study", str(path), "--engine", "ray", "--ray-address", address)
    assert run.status == 2 and run.out == "", run.err[-2000:]
    assert run.err.count("\n") == 1 and says in run.err, run.err
    with Store(os.environ["PLANNER_DB"]) as store:
        assert studies(store) == []


def test_a_ray_address_nobody_listens_at_is_tried_first_and_one_line(
    db_path: Path, tmp_path: Path
) -> None:
    """``--ray-address 127.0.0.1:9`` (the discard port, closed) waited in ``ray.init``
    for two minutes and more; the address is tried first, for at most 10 s, and the answer
    says so (that it is the planner's own try that answered, not ``ray.init``)."""
    pytest.importorskip("ray")
    path = tmp_path / "small.json"
    path.write_text(json.dumps(SMALL))
    run = subprocess.run(
        [sys.executable, "-m", "planner", "study", str(path), "--engine", "ray",
         "--ray-address", "127.0.0.1:9"],
        capture_output=True, text=True,
        env={**os.environ, "PLANNER_DB": str(db_path)},
    )  # fmt: skip
    assert run.returncode == 2, run.stderr[-2000:]
    assert run.stderr.count("\n") == 1 and "no Ray cluster answers at 127.0.0.1:9" in run.stderr
    with Store(db_path) as store:
        assert studies(store) == []


def test_the_study_page_draws_a_heatmap_and_links_each_cells_plan(app: AppTest) -> None:
    with Store(os.environ["PLANNER_DB"]) as store:
        run_study(store, study_from_dict(SMALL), workers=2)
        stored = _stored(store, "small")
    app.switch_page("dashboard/pages/studies.py")
    app.run()
    assert not app.exception, app.exception
    charts = {c.key: json.loads(c.proto.spec) for c in app.get("plotly_chart")}
    heat = charts["study_heatmap"]["data"][0]
    assert heat["type"] == "heatmap"
    values = [v for row in heat["z"] for v in row if v is not None]
    assert sorted(values) == sorted(d["seats_per_card"] for d in stored.values())
    rows = app.get_by_key("study_cells").dataframe[0].value.to_dict("records")
    assert len(rows) == 6
    # A cell's link opens its Plan, which shows the cell's seats.
    row = rows[0]
    query = dict(part.split("=", 1) for part in row["plan"].split("?", 1)[1].split("&"))
    plan = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    for key, value in query.items():
        plan.query_params[key] = value.replace("%3A", ":").replace("%2C", ",")
    plan.run()
    assert not plan.exception, plan.exception
    assert plan.title[0].value.startswith(f"{row['seats per card']} seat")


def test_cells_with_a_demand_profile_store_the_fleet_over_the_day(store: Store) -> None:
    from planner.demand.profiles import typed_profile
    from planner.plan.fleet import plan_fleet, plan_profile
    from planner.studies.view import METRICS

    store.save_profile(typed_profile("shifts", [40.0] * 8 + [120.0] * 8 + [10.0] * 8))
    study = study_from_dict(
        {
            "name": "per day",
            "curves": {"filters": [{"model": "ball-detector", "card": "server-24gb"}]},
            "fixed": {"seeds": 1, "duration_s": 2, "price_per_hour": 2.0, "peak_sessions": 150},
            "axes": {"budget_ms": [30, 60], "profile": ["office-hours", "shifts"]},
        }
    )
    run_study(store, study, workers=1)
    _study, members = load_study(store, "per day")
    assert len(members) == 4
    for member in members:
        assert member.result is not None and member.result.status == "ok"
        params, _ignored = decode(PlanParams, member.params)
        alone = recommend(plan_inputs(params, store).request)
        day = plan_fleet(alone, plan_profile(params, store), params.lead_time_min)
        assert day is not None
        stored = member.result.outputs
        assert stored["cost_per_day"] == pytest.approx(day.autoscaled.cost_per_day)
        assert stored["day_gpu_hours"] == pytest.approx(day.autoscaled.gpu_hours_per_day)
        assert stored["day_peak_gpus"] == day.autoscaled.peak_gpus
    # Every figure the Study page offers is one a link can name.
    assert set(METRICS) == set(PARAMETERS["metric"].codec.choices)

    # The same name saved with other values is other cells, not the stale ones.
    before = {c.key for c in cells(store, study)}
    store.save_profile(typed_profile("shifts", [80.0] * 24), replace=True)
    after = {c.key for c in cells(store, study)}
    assert len(before & after) == 2  # the office-hours cells only


def test_cells_use_each_curves_newest_calibration_unless_told_none(store: Store) -> None:
    from planner.sim.calibration import Calibration
    from planner.store.calibrations import save_calibration

    curve = next(c for c in store.curves(model="ball-detector") if c.card == "server-24gb")
    definition: dict[str, Any] = {
        "name": "calibrated",
        "curves": {"ids": [curve.id]},
        "fixed": {"seeds": 1, "duration_s": 2, "max_sessions": 12, "policies": "batch-all"},
        "axes": {"budget_ms": [30, 60]},
    }
    plain = {c.key for c in cells(store, study_from_dict(definition))}
    slower = save_calibration(store, Calibration(curve.id, a_ms=3.0, c_ms=0.5, d_ms=4.0))
    study = study_from_dict(definition)
    pinned = cells(store, study)
    assert {c.params.calibration for c in pinned} == {slower.id}
    assert not plain & {c.key for c in pinned}  # a new calibration makes new cells
    run_study(store, study, workers=1)
    _study, members = load_study(store, "calibrated")
    for member in members:
        assert member.result is not None and member.result.status == "ok"
        assert member.result.outputs["calibration"] == slower.id
        params, _ignored = decode(PlanParams, member.params)
        alone = recommend(plan_inputs(params, store).request)
        assert alone.request.calibration == slower
        assert alone.recommended is not None
        assert member.result.outputs["cap"] == alone.recommended.cap
    with store.read() as cur:
        stored = {r[0] for r in cur.execute("SELECT calibration FROM study_cells").fetchall()}
    assert stored == {slower.id}

    definition["fixed"]["calibration"] = "none"
    assert {c.key for c in cells(store, study_from_dict(definition))} == plain


def test_the_study_page_says_why_a_per_day_figure_is_empty(app: AppTest) -> None:
    with Store(os.environ["PLANNER_DB"]) as store:
        run_study(store, study_from_dict(SMALL), workers=1)
    app.switch_page("dashboard/pages/studies.py")
    app.run()
    app.radio(key="study_metric").set_value("cost_per_day").run()
    assert not app.exception, app.exception
    assert any("need a demand profile" in i.value for i in app.info)


def test_a_small_study_started_on_the_page_is_stored_and_drawn_with_its_front(
    app: AppTest,
) -> None:
    app.switch_page("dashboard/pages/studies.py")
    app.run()
    assert any("No study is stored yet" in i.value for i in app.info)
    app.button(key="study_run").click().run()  # the page's own example: 12 cells
    assert not app.exception, app.exception
    with Store(os.environ["PLANNER_DB"]) as store:
        stored = _stored(store, "a small study")
    assert len(stored) == 12 and all(r["status"] == "ok" for r in stored.values())

    charts = {c.key: json.loads(c.proto.spec) for c in app.get("plotly_chart")}
    assert "study_heatmap" in charts
    # The front: the cheapest cost per seat-hour at each budget, over every other cell.
    with Store(os.environ["PLANNER_DB"]) as store:
        _study, members = load_study(store, "a small study")
    cheapest: dict[float, float] = {}
    for member in members:
        assert member.result is not None
        budget, cost = member.coordinates["budget_ms"], member.result.outputs["cost_per_seat_hour"]
        cheapest[budget] = min(cost, cheapest.get(budget, cost))
    front = charts["study_front"]["data"][0]
    assert front["x"] == sorted(cheapest)
    assert front["y"] == pytest.approx([cheapest[b] for b in sorted(cheapest)])


def test_ctrl_c_stops_the_command_and_keeps_what_finished(db_path: Path, tmp_path: Path) -> None:
    """Ctrl-C in a terminal interrupts the whole process group: the command and its pool."""
    import signal
    import time

    from planner.studies.store import finished_keys

    path = tmp_path / "big.json"
    path.write_text(json.dumps(BIG))
    study = study_from_dict(BIG)
    environment = {**os.environ, "PLANNER_DB": str(db_path)}
    command = [sys.executable, "-m", "planner", "study", str(path), "--workers", "2", "--json"]
    running = subprocess.Popen(
        command,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 600  # a bound on a hang, not on speed
    stored = 0
    while stored < 40 and time.monotonic() < deadline and running.poll() is None:
        time.sleep(0.5)
        with Store(db_path) as store:
            keys = [c.key for c in cells(store, study)]
            stored = len(finished_keys(store, keys))
    assert stored >= 40 and running.poll() is None, "the study finished before the interrupt"
    os.killpg(running.pid, signal.SIGINT)
    out, err = running.communicate(timeout=60)
    assert running.returncode == 130, err
    assert "Traceback" not in err, err
    assert "interrupted" in err and "run the same command again" in err
    summary = json.loads(out)
    assert summary["interrupted"] is True

    with Store(db_path) as store:
        kept = len(finished_keys(store, [c.key for c in cells(store, study)]))
    assert kept == summary["already_stored"] + summary["computed"] >= 40
    again = subprocess.run(command, env=environment, capture_output=True, text=True,
                           timeout=600, check=True)  # fmt: skip
    resumed = json.loads(again.stdout)
    assert resumed["already_stored"] == kept and resumed["computed"] == 500 - kept


@pytest.mark.parametrize("write_every_s", [0.0, 1e9], ids=["on-the-way", "final"])
def test_ctrl_c_while_the_cells_are_written_stores_them_and_stops(
    store: Store, monkeypatch: pytest.MonkeyPatch, write_every_s: float
) -> None:
    """Ctrl-C that lands while buffered cells are written (the final write of a run, or
    one on the way) used to interrupt DuckDB's query and lose them; the write now ends
    first, and then the study stops as interrupted."""
    import signal
    import threading

    import planner.studies.run as study_run
    from planner.studies.store import finished_keys

    real = study_run.save_results
    interrupted: list[int] = []

    def interrupted_save(target: Store, results: Any) -> None:
        if results and not interrupted:
            interrupted.append(len(results))
            with target.write() as cur:  # Ctrl-C lands while this transaction runs
                threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT)).start()
                cur.execute("SELECT count(*) FROM range(300000000) t(x) WHERE x % 7 = 3")
        real(target, results)

    monkeypatch.setattr(study_run, "save_results", interrupted_save)
    monkeypatch.setattr(study_run, "_WRITE_EVERY_S", write_every_s)  # 1e9: only the last
    study = study_from_dict(SMALL)
    with pytest.raises(StudyInterrupted) as stopped:
        run_study(store, study, workers=1)
    done = stopped.value.summary
    assert interrupted and done.interrupted
    kept = finished_keys(store, [c.key for c in cells(store, study)])
    assert len(kept) == done.computed >= interrupted[0]


def _budgets(count: int) -> dict[str, Any]:
    """A study of ``count`` cells on one curve: one budget per cell."""
    return {
        "name": f"{count} budgets",
        "curves": {"filters": [{"model": "ball-detector", "card": "server-24gb"}]},
        "fixed": {"seeds": 1, "duration_s": 2},
        "axes": {"budget_ms": [round(10 + i * 0.01, 2) for i in range(count)]},
    }


def test_preparing_a_study_reads_the_store_as_often_for_1000_cells_as_for_20(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The curve, its card and its calibrations were read again for every cell (1,000
    cells 9.7 s, 4,000 cells 54.8 s); they are read once, whatever the cell count."""
    from planner.store.connection import StoreFile
    from planner.studies.run import prepare

    opened = 0  # reads of the file (each a query or a few), whether or not it is held
    read = StoreFile.read

    def counted(self: StoreFile) -> Any:
        nonlocal opened
        opened += 1
        return read(self)

    monkeypatch.setattr(StoreFile, "read", counted)
    reads = {}
    for count in (20, 1000):
        opened = 0
        _every, jobs, _curves, _refused = prepare(store, study_from_dict(_budgets(count)))
        assert len(jobs) == count
        reads[count] = opened
    assert reads[1000] == reads[20] <= 12, reads


def test_another_process_writes_the_store_while_a_study_is_prepared(
    store: Store, db_path: Path, tmp_path: Path
) -> None:
    """Preparing held the store in one transaction across every cell, so a command had to
    wait for all of them (45 s for 3,000); between the reads the file is free."""
    from planner.studies.run import prepare

    profile = tmp_path / "day.csv"
    profile.write_text("time,sessions\n08:00,1\n09:00,2\n")
    written: list[int] = []

    def write_from_another_process(done: int, total: int) -> None:
        if written or done >= total:
            return
        run = subprocess.run(
            [sys.executable, "-m", "planner", "profiles", "add", "day", "--file", str(profile)],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "PLANNER_DB": str(db_path), "PLANNER_DB_WAIT_S": "0"},
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        written.append(done)

    _every, jobs, _curves, _refused = prepare(
        store, study_from_dict(_budgets(1000)), write_from_another_process
    )
    assert written == [500] and len(jobs) == 1000
    assert [p.name for p in store.profiles()] == ["day"]


# A study that outlasts any test: 500 cells, each a search of one-minute simulations.
LONG: dict[str, Any] = {**BIG, "name": "long", "fixed": {**BIG["fixed"], "duration_s": 60}}


def _children(parent: int) -> dict[int, str]:
    """The pool workers among ``parent``'s child processes, read from /proc: pid -> start
    time (so a pid the system hands out again is not taken for the same process)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            command = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:  # it ended while being read
            continue
        after_name = stat.rpartition(")")[2].split()  # state, ppid, ... (fields 3 on)
        if int(after_name[1]) == parent and b"spawn_main" in command:
            found[int(entry)] = after_name[19]  # field 22, the start time
    return found


def _alive(pid: int, started: str) -> bool:
    try:
        after_name = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return False
    return after_name[19] == started and after_name[0] not in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_the_pool_workers_end_when_the_command_is_killed(
    db_path: Path, tmp_path: Path, how: str
) -> None:
    """``kill -9`` or SIGTERM of ``planner study`` used to leave its workers alive, idle
    and handed to PID 1, for good."""
    import signal
    import time

    path = tmp_path / "long.json"
    path.write_text(json.dumps(LONG))
    environment = {**os.environ, "PLANNER_DB": str(db_path)}
    command = [sys.executable, "-m", "planner", "study", str(path), "--workers", "2"]
    log = tmp_path / "stderr.txt"
    with log.open("wb") as errors:
        running = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL,
                                   stderr=errors, start_new_session=True)  # fmt: skip
    workers: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 120
        while len(workers) < 2 and time.monotonic() < deadline and running.poll() is None:
            time.sleep(0.2)
            workers = _children(running.pid)
        assert len(workers) == 2 and running.poll() is None, log.read_text()[-3000:]
        os.kill(running.pid, getattr(signal, how))
        running.wait(timeout=120)
        # Workers end as soon as they see the command gone; the bound only ends a hang.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and any(_alive(p, s) for p, s in workers.items()):
            time.sleep(0.2)
        left = [pid for pid, started in workers.items() if _alive(pid, started)]
        assert left == [], f"workers {left} outlived the command"
    finally:
        for pid, started in workers.items():
            if _alive(pid, started):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(running.pid, signal.SIGKILL)  # anything else it started
        running.wait(timeout=30)


def test_each_card_takes_its_own_price_from_the_studys_prices(store: Store) -> None:
    """``[prices]`` prices each cell by its curve's card, so cards compare at their own
    prices rather than one price for all."""
    raw = {
        "name": "two cards",
        "curves": {"filters": [{"model": "ball-detector", "precision": "fp16"}]},
        "fixed": {"seeds": 1, "duration_s": 2, "max_sessions": 8, "policies": "batch-all"},
        "axes": {"budget_ms": [40, 60]},
        "prices": {"laptop-8gb": 0.6, "server-24gb": 1.8},
    }
    study = study_from_dict(raw)
    assert study.prices == (("laptop-8gb", 0.6), ("server-24gb", 1.8))
    assert study_from_dict(study.as_dict()) == study  # stored and read back the same
    found = cells(store, study)
    by_card = {store.curve(c.curve_id).card: c.params.price_per_hour for c in found}
    assert by_card == {"laptop-8gb": 0.6, "server-24gb": 1.8}
    run_study(store, study, workers=1)
    _study, members = load_study(store, "two cards")
    for member in members:
        assert member.result is not None and member.result.status == "ok"
        outputs = member.result.outputs
        price = by_card[store.curve(member.curve_id).card]
        assert outputs["cost_per_seat_hour"] == pytest.approx(price / outputs["seats_per_card"])


@pytest.mark.parametrize(
    ("prices", "fixed", "message"),
    [
        ({"server-24gb": "cheap"}, {}, "prices.server-24gb: price 'cheap' is not a number"),
        ({"server-24gb": -1.0}, {}, "prices.server-24gb: "),
        ({"server-24gb": 1.0}, {"price_per_hour": 2.0}, "not both"),
        ([1, 2], {}, "prices: a table of cards and hourly prices"),
    ],
)
def test_bad_prices_are_named(prices: Any, fixed: dict[str, Any], message: str) -> None:
    raw = {**SMALL, "fixed": {"seeds": 2, **fixed}, "prices": prices}
    with pytest.raises(BadInput) as caught:
        study_from_dict(raw)
    assert any(message in p for p in caught.value.problems), caught.value.problems


def test_a_price_for_a_card_no_curve_is_on_is_refused(store: Store) -> None:
    raw = {**SMALL, "fixed": {"seeds": 2}, "prices": {"server-24gb": 1.0, "h100": 3.0}}
    with pytest.raises(BadInput, match="no curve of the study is on 'h100'"):
        cells(store, study_from_dict(raw))


def test_the_study_page_names_its_axes_in_words_and_its_curves_by_model_and_card(
    app: AppTest,
) -> None:
    raw = {**SMALL, "curves": {"filters": [{"model": "ball-detector", "precision": "fp16"}]},
           "axes": {"budget_ms": [30, 50]}}  # fmt: skip
    with Store(os.environ["PLANNER_DB"]) as store:
        run_study(store, study_from_dict(raw), workers=1)
        labels = {c.id: c.label for c in store.curves()}
    app.switch_page("dashboard/pages/studies.py")
    app.run()
    assert not app.exception, app.exception
    app.selectbox(key="study_x").set_value("budget_ms")
    app.run()
    app.selectbox(key="study_y").set_value("curve")
    app.run()
    assert not app.exception, app.exception
    layout = json.loads(app.get_by_key("study_heatmap").proto.spec)["layout"]
    heat = json.loads(app.get_by_key("study_heatmap").proto.spec)["data"][0]
    assert layout["xaxis"]["title"]["text"] == "latency budget (ms)"
    assert layout["yaxis"]["title"]["text"] == "model and card"
    assert "budget_ms" not in layout["title"]["text"]
    assert set(heat["y"]) == {
        labels[i] for i in labels if "fp16" in labels[i].lower() and "ball" in labels[i]
    }
    assert not any(i in " ".join(heat["y"]) for i in labels)  # no curve id on the axis
    rows = app.get_by_key("study_cells").dataframe[0].value.to_dict("records")
    assert {"latency budget (ms)", "model and card"} <= set(rows[0])


def test_a_link_to_a_study_that_is_not_stored_says_it_was_ignored(app: AppTest) -> None:
    with Store(os.environ["PLANNER_DB"]) as store:
        run_study(store, study_from_dict({**SMALL, "axes": {"budget_ms": [30, 50]}}), workers=1)
    app.switch_page("dashboard/pages/studies.py")
    app.query_params["study"] = "nope"
    app.run()
    assert not app.exception, app.exception
    assert any("nope" in w.value and "ignored" in w.value for w in app.warning)
    assert app.selectbox(key="study_name").value == "small"


TWO_CELLS: dict[str, Any] = {
    "name": "two cells",
    "curves": {"filters": [{"model": "ball-detector", "card": "server-24gb"}]},
    "fixed": {"seeds": 1, "duration_s": 2, "max_sessions": 8, "policies": "batch-all"},
    "axes": {"budget_ms": [30, 50]},
}


def test_a_failing_cell_is_tried_again_then_stored_with_its_error(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = planner.studies.run.recommend
    tries: list[float] = []

    def recommend_or_refuse(request: Any, **kwargs: Any) -> Any:
        if request.criteria.budget_ms == 30:
            tries.append(request.criteria.budget_ms)
            raise BadInput("this cell cannot be planned")
        return real(request, **kwargs)

    monkeypatch.setattr(planner.studies.run, "recommend", recommend_or_refuse)
    summary = run_study(store, study_from_dict(TWO_CELLS), engine="here", work=Work(math.inf))
    assert (summary.computed, summary.failed, tries) == (2, 1, [30, 30])
    _study, members = load_study(store, "two cells")
    results = sorted((m.result.status, m.result.error, m.result.attempts)
                     for m in members if m.result is not None)  # fmt: skip
    assert results == [("error", "this cell cannot be planned", 2), ("ok", None, 1)]


def test_a_fault_of_the_run_itself_stops_it_and_is_no_cells_answer(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    tries: list[int] = []

    def broken(request: Any, **kwargs: Any) -> Any:
        tries.append(1)
        raise ZeroDivisionError("a bug, not the cell's answer")

    monkeypatch.setattr(planner.studies.run, "recommend", broken)
    with pytest.raises(ZeroDivisionError, match="a bug"):
        run_study(store, study_from_dict(TWO_CELLS), engine="here", work=Work(math.inf))
    assert tries == [1]  # not tried again, and the other cell not started
    _study, members = load_study(store, "two cells")
    assert [m.result for m in members] == [None, None]  # nothing stored as an answer
