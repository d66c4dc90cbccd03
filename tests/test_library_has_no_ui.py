"""The library must work without Streamlit: importing all of it never loads Streamlit."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import planner


def test_importing_every_planner_module_does_not_load_streamlit() -> None:
    modules = sorted(m.name for m in pkgutil.walk_packages(planner.__path__, prefix="planner."))
    assert "planner.store.repository" in modules and "planner.cli" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    if name != 'planner.__main__':\n"
        "        importlib.import_module(name)\n"
        "print('streamlit' in sys.modules, 'torch' in sys.modules)\n"
    )
    probe = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert probe.returncode == 0, probe.stderr
    streamlit_loaded, torch_loaded = probe.stdout.split()
    assert streamlit_loaded == "False"
    assert torch_loaded == "False"  # torch stays at the edge: imported only when measuring


def test_the_public_names_load_and_importing_the_package_loads_nothing_heavy() -> None:
    code = (
        "import sys, planner\n"
        "light = not any(m in sys.modules for m in ('duckdb', 'numba', 'scipy', 'planner.sim'))\n"
        "names = [n for n in planner.__all__ if getattr(planner, n, None) is None]\n"
        "listed = sorted(['__version__', *planner._EXPORTS])\n"
        "print(light, names == [], sorted(planner.__all__) == dir(planner) == listed)\n"
    )
    probe = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == ["True", "True", "True"]


def test_a_script_plans_with_the_public_names_alone() -> None:
    from planner import Criteria, Point, Request, fit_curve, recommend

    curve = fit_curve([Point(1, 8.0), Point(3, 20.0)])
    result = recommend(Request(curve=curve, criteria=Criteria(budget_ms=50), seeds=2))
    assert result.recommended is not None and result.recommended.cap >= 1
