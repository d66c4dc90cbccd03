"""Messages the hostile-server probe found misleading outside the load test itself: each
says what is true of the command as given."""

from __future__ import annotations

import pytest

from planner.cli import main

POINTS = ("--points", "1:10,8:30", "--sessions", "2", "--duration-s", "1")


@pytest.mark.parametrize(
    ("flag", "value"), [("--queue-timeout-us", "0"), ("--max-queue-size", "0")]
)
def test_a_bad_queue_setting_under_queue_all_is_not_said_to_need_queue_all(
    capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    assert main(["simulate", *POINTS, "--queue", "all", flag, value]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"planner: {flag}: must be")


def test_a_run_too_short_to_judge_its_queue_does_not_say_it_keeps_up(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # One batch of 5 s in a run of 1 s: nothing is delivered, so the run's thirds cannot
    # be compared, and the queue is not said to keep up.
    argv = ["simulate", "--points", "1:5000,2:9000", "--sessions", "2", "--duration-s", "1",
            "--queue", "all", "--queue-timeout-us", "1"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "too few frames delivered to tell whether it keeps up" in out
    assert "every frame: the queue keeps up" not in out


def test_an_unknown_schema_name_is_not_echoed_whole(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "x" * 100_000]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "x" * 40 + "…" in line and len(line) < 1000


def test_the_budget_notice_says_it_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import dashboard.ui as ui
    from planner.sim.work import OverBudget

    said: list[str] = []
    monkeypatch.setattr(ui.st, "warning", lambda text, **_: said.append(text))
    monkeypatch.setattr(ui.st, "code", lambda *a, **k: None)
    ui.show_over_budget(OverBudget(12_000_000, 10_000_000), "plan", ["planner", "recommend"])
    (text,) = said
    assert "It needs more simulation than this server allows" in text and "It it" not in text
