"""Shared fixtures: a fresh store file per test and an in-process command line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from planner.cli import main
from planner.store import Store

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO.parent / "shared" / "data" / "import-samples"


@pytest.fixture
def db_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A store file of this test's own; PLANNER_DB points at it."""
    path = tmp_path / "planner.duckdb"
    monkeypatch.setenv("PLANNER_DB", str(path))
    return path


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    with Store(db_path) as opened:
        yield opened


@dataclass
class Run:
    status: int
    out: str
    err: str

    @property
    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def cli(db_path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    """Run ``planner ARGS`` in-process against this test's store."""

    def run(*args: str) -> Run:
        try:
            status = main([str(a) for a in args])
        except SystemExit as exc:  # argparse exits on its own errors
            status = int(exc.code or 0)
        captured = capsys.readouterr()
        return Run(status, captured.out, captured.err)

    return run
