"""What a user can install: every extra of pyproject.toml installs beside the others
without breaking the product (the Triton test server, which declares NumPy below 2, is
installed for the tests only, exactly pinned and without its declared dependencies)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NUMPY_1_ONLY = {"nvidia-pytriton"}
"""Packages whose every release declares numpy<2 (pyarrow, so Streamlit and Ray, need 2)."""


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement.strip())
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match[0]).lower()


def test_no_extra_brings_a_package_that_needs_numpy_1() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = {
        extra: {_name(r) for r in requirements}
        for extra, requirements in project["optional-dependencies"].items()
    }
    assert {"measure", "cluster", "server", "dev"} <= set(wanted)
    assert {
        extra: names & NUMPY_1_ONLY for extra, names in wanted.items() if names & NUMPY_1_ONLY
    } == {}
    assert not {_name(r) for r in project["dependencies"]} & NUMPY_1_ONLY


def test_the_tests_install_the_triton_server_without_its_declared_dependencies() -> None:
    pins = (REPO / "constraints" / "triton.txt").read_text().splitlines()
    assert "nvidia-pytriton==0.7.0" in pins
    script = (REPO / "scripts" / "test.sh").read_text()
    assert "--no-deps -r constraints/triton.txt" in script
