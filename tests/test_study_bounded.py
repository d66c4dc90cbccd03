"""Studies started by a page are bounded: they run in the page's process, chunk by chunk
under the page's frame budget and the server's turns, and stop with their visitor; a
study worker that is killed is one line."""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from planner.sim.work import OverBudget, Work
from planner.store.repository import Store
from planner.studies.run import run_study
from planner.studies.store import load_study
from planner.studies.study import study_from_dict

# One cell that is hours of simulation: 64 seeds of 600 s at up to 256 sessions.
HUGE: dict[str, Any] = {
    "name": "huge",
    "curves": {"filters": [{"model": "ball-detector", "card": "server-24gb"}]},
    "fixed": {"seeds": 64, "duration_s": 600, "max_sessions": 256},
}
HUGE_TOML = """name = "huge"

[curves]
filters = [{ model = "ball-detector", card = "server-24gb" }]

[fixed]
seeds = 64
duration_s = 600
max_sessions = 256
"""


def test_a_study_run_here_stops_before_it_crosses_the_budget(store: Store) -> None:
    account = Work(budget=30e6)
    with pytest.raises(OverBudget):
        run_study(store, study_from_dict(HUGE), engine="here", work=account)
    assert 0 < account.done <= 30e6
    _study, members = load_study(store, "huge")
    assert [m.result for m in members] == [None]  # stopped, so nothing stored for the cell


class _Recording(Work):
    """A Work that records the order of admit, turn and count, and whether any child
    process is running while a chunk runs."""

    def __init__(self) -> None:
        super().__init__(budget=float("inf"))
        self.events: list[str] = []
        self.children: list[int] = []

    def admit(self, frames: int) -> None:
        self.events.append("admit")
        super().admit(frames)

    @contextmanager
    def turn(self) -> Iterator[None]:
        with super().turn():
            self.events.append("turn")
            yield
            self.children.append(len(multiprocessing.active_children()))

    def finished(self, frames: int) -> None:
        self.events.append("count")
        super().finished(frames)


def test_every_chunk_of_a_study_here_is_admitted_run_in_a_turn_and_counted(store: Store) -> None:
    small = {
        "name": "small",
        "curves": {"filters": [{"model": "ball-detector", "card": "server-24gb"}]},
        "fixed": {"seeds": 1, "duration_s": 2, "max_sessions": 8},
        "axes": {"budget_ms": [30, 50]},
    }
    account = _Recording()
    summary = run_study(store, study_from_dict(small), engine="here", work=account)
    assert summary.computed == 2 and summary.failed == 0
    assert account.chunks > 0
    assert account.events == ["admit", "turn", "count"] * account.chunks
    assert account.children == [0] * account.chunks  # no worker process, ever
    _study, members = load_study(store, "small")
    frames = sum(m.result.outputs["frames"] for m in members if m.result is not None)
    assert frames == account.done


class _Left(BaseException):
    """What Streamlit raises from an element update once the visitor has left."""


def test_a_visitor_leaving_stops_the_study_at_the_next_chunk(store: Store) -> None:
    def chunk(current: Work) -> None:
        if current.chunks == 2:
            raise _Left()

    account = Work(budget=float("inf"), on_chunk=chunk)
    with pytest.raises(_Left):
        run_study(store, study_from_dict(HUGE), engine="here", work=account)
    assert account.chunks == 2


def test_the_page_stops_a_huge_study_at_its_budget(
    app: AppTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page's study used to run its cells on a worker with no budget, counting the
    page's budget only after a cell finished: this cell kept it busy for minutes."""
    monkeypatch.setenv("PLANNER_BUDGET_FRAMES", "30000000")
    app.default_timeout = 60  # the cell alone is hours of work; the budget is seconds
    app.switch_page("dashboard/pages/studies.py")
    app.run()
    app.text_area(key="study_file").set_value(HUGE_TOML)
    app.button(key="study_run").click().run()
    assert not app.exception, app.exception
    shown = " ".join(e.value for e in app.error) + " ".join(m.value for m in app.markdown)
    assert "The study stopped" in shown and "30 million budget" in shown, shown
    done = re.search(r"stopped after ([0-9,]+) million frames", shown)
    assert done is not None and int(done[1].replace(",", "")) <= 30, shown  # main: 438
    assert "planner study FILE" in shown


def _workers(parent: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            command = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == parent and b"spawn_main" in command:
            found.append(int(entry))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
def test_a_killed_study_worker_is_one_line_without_a_traceback(
    db_path: Path, tmp_path: Path
) -> None:
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(HUGE))
    environment = {**os.environ, "PLANNER_DB": str(db_path)}
    command = [sys.executable, "-m", "planner", "study", str(path), "--workers", "1"]
    running = subprocess.Popen(
        command,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        workers: list[int] = []
        while not workers and time.monotonic() < deadline and running.poll() is None:
            time.sleep(0.2)
            workers = _workers(running.pid)
        assert workers and running.poll() is None
        os.kill(workers[0], signal.SIGKILL)
        _out, err = running.communicate(timeout=60)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(running.pid, signal.SIGKILL)
        running.wait(timeout=30)
    assert running.returncode == 2, err
    assert "Traceback" not in err and "BrokenProcessPool" not in err, err
    lines = [line for line in err.replace("\r", "\n").splitlines() if "worker" in line]
    assert len(lines) == 1 and "ended before its cells were done" in lines[0], err
