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
