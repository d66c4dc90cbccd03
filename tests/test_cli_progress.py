"""Long command-line work shows progress on a terminal: on standard error, only when that
is a terminal, and never beside --json."""

from __future__ import annotations

import io
import json
import sys

import pytest

from planner.cli import main

PLAN = ["recommend", "--points", "1:10,8:30", "--policies", "batch-all", "--seeds", "2",
        "--duration-s", "5"]  # fmt: skip


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(argv: list[str], stderr: io.StringIO, capsys: pytest.CaptureFixture[str],
         monkeypatch: pytest.MonkeyPatch) -> str:  # fmt: skip
    capsys.readouterr()
    monkeypatch.setattr(sys, "stderr", stderr)
    assert main(argv) == 0
    monkeypatch.undo()
    return capsys.readouterr().out


def test_recommend_shows_its_progress_on_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, db_path: object
) -> None:
    terminal = Terminal()
    out = _run(PLAN, terminal, capsys, monkeypatch)
    said = terminal.getvalue()
    assert "planning: " in said and "million frames simulated in" in said
    assert "(Ctrl-C stops)" in said and said.rstrip("\n").endswith("\r\x1b[K")  # erased
    assert "planning:" not in out and "seats" in out


def test_recommend_shows_no_progress_in_json_or_a_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, db_path: object
) -> None:
    terminal = Terminal()
    out = _run([*PLAN, "--json"], terminal, capsys, monkeypatch)
    assert "planning:" not in terminal.getvalue()
    assert json.loads(out)["recommended"] is not None
    log = io.StringIO()
    _run(PLAN, log, capsys, monkeypatch)
    assert "planning:" not in log.getvalue() and "\r" not in log.getvalue()
