"""A simulation's view (planner.views.simulation): the Simulate page and ``planner
simulate`` build one scenario from the same parameters, and the command prints the view's
summary; the front ends reach the simulator only through the views."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from planner.cli import build_parser
from planner.cli.output import read_curve_source
from planner.cli.simulate import scenario_from
from planner.curves.fit import fit_curve
from planner.plan.params import SimulateParams
from planner.plan.resolve import simulation_inputs
from planner.store.repository import Store
from planner.views.simulation import simulate, simulation_view

ROOT = Path(__file__).resolve().parent.parent
LAPTOP = "1:9.82,2:20.36,3:32.71,4:46.15,8:103.77,16:221.25"

# The same scenario as a page's parameters and as the command's options.
SAME = [
    (dict(sessions=5), ("--sessions", "5")),
    (
        dict(sessions=6, mode="time-slicing", cotenants=(0.9, 0.9), duration_s=3.0),
        ("--sessions", "6", "--mode", "time-slicing", "--cotenants", "0.9,0.9",
         "--duration-s", "3"),
    ),
    (
        dict(sessions=4, policy="triton", max_batch=12, queue="all", fps=(15.0,), seed=3),
        ("--sessions", "4", "--max-batch", "12", "--queue", "all",
         "--fps", "15", "--seed", "3"),
    ),
    (
        dict(sessions=8, network_ms=5.0, pre_ms=3.0, post_ms=2.0, cpu_workers=2,
             overhead_ms=4.0, phases="aligned"),
        ("--sessions", "8", "--network-ms", "5", "--pre-ms", "3", "--post-ms", "2",
         "--cpu-workers", "2", "--overhead-ms", "4", "--phases", "aligned"),
    ),
]  # fmt: skip


def _command_scenario(*options: str) -> Any:
    args = build_parser().parse_args(["simulate", *options])
    points, curve = read_curve_source(args)
    # A fresh store holds no calibration: both run on the model's own figures.
    return scenario_from(args, points, fit_curve(points), curve)


@pytest.mark.parametrize(("params", "options"), SAME)
def test_the_page_and_the_command_simulate_the_same_scenario(
    db_path: Path, params: dict[str, Any], options: tuple[str, ...]
) -> None:
    # The page's default policy is not the command's: both name theirs.
    policy = params.get("policy", "oldest-first")
    with Store(db_path) as store:
        inputs = simulation_inputs(SimulateParams(**{**params, "policy": policy}), store)
    command = _command_scenario("--curve", inputs.curve.id, "--policy", policy, *options)
    assert command == inputs.scenario


def test_planner_simulate_prints_the_views_summary_and_notes(cli) -> None:
    run = cli("simulate", "--points", LAPTOP, "--sessions", "300", "--duration-s", "2")
    assert run.status == 0, run.err
    args = build_parser().parse_args(
        ["simulate", "--points", LAPTOP, "--sessions", "300", "--duration-s", "2"]
    )
    points, _ = read_curve_source(args)
    fitted = fit_curve(points)
    view = simulation_view(simulate(scenario_from(args, points, fitted)), fitted)
    assert run.out.splitlines() == list(view.text)
    # A run far past the card's capacity says so, on the page and on the command line.
    assert view.notes and all(note in view.text for note in view.notes)
    assert view.text[-1].startswith("not calibrated")


def test_the_slowest_sessions_figure_names_the_floor_it_is_judged_by(db_path: Path) -> None:
    with Store(db_path) as store:
        inputs = simulation_inputs(SimulateParams(sessions=3, duration_s=2.0), store)
    results = simulate(inputs.scenario)
    judged = simulation_view(results, inputs.fitted, min_fps=12.5).figures[0]
    plain = simulation_view(results, inputs.fitted).figures[0]
    assert judged.label == plain.label == "Slowest session"
    assert "12.5 fps" in judged.help and "floor" not in plain.help


def test_planner_simulate_reports_a_bad_session_count_with_its_other_problems(cli) -> None:
    run = cli("simulate", "--points", LAPTOP, "--sessions", "x", "--fps", "0")
    assert run.status == 2
    assert "--sessions 'x' is not a number" in run.err
    assert "--fps '0' must be above 0" in run.err


FRONT_ENDS = [
    *sorted((ROOT / "dashboard").rglob("*.py")),
    *sorted((ROOT / "planner/cli").glob("*.py")),
]


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("path", FRONT_ENDS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_front_ends_reach_the_simulator_only_through_the_views(path: Path) -> None:
    # The pages are scripts outside any package, so the import contracts do not see them.
    simulator = sorted(
        n for n in _imported(path) if n == "planner.sim" or n.startswith("planner.sim.")
    )
    assert not simulator, f"{path.relative_to(ROOT)} imports {simulator}"
