"""The Simulate page says what its run is: the server's queue as chosen, and a run far past
what the card serves as such (``planner.plan.overload``), on the page and the command line."""

from __future__ import annotations

from typing import Any

from streamlit.testing.v1 import AppTest

from tests.test_dashboard_pages import open_page, plain, texts


def captions(at: AppTest) -> str:
    return " ".join(plain(c) for c in texts(at.caption))


def test_a_server_that_queues_every_frame_is_not_said_to_keep_the_newest(app: AppTest) -> None:
    open_page(app, "simulate.py", {"points": "1:10,8:30", "sessions": "12", "policy": "triton",
                                   "queue": "all", "duration_s": "5"})  # fmt: skip
    said = captions(app)
    assert "The server queues every frame" in said
    assert "keeps only its newest frame" not in said
    assert any("the server queued every one" in plain(m) for m in texts(app.markdown))
    open_page(app, "simulate.py", {"queue": "newest", "duration_s": "5"})
    assert "Each session keeps only its newest frame" in captions(app)


def test_a_run_far_past_the_cards_capacity_says_so(app: AppTest) -> None:
    open_page(app, "simulate.py", {"sessions": "2000", "duration_s": "5"})
    warnings = [plain(w) for w in texts(app.warning)]
    assert any("No session gets even half the frames it sends" in w for w in warnings)
    assert any("where the curve is extrapolated: its largest measured batch is" in w
               for w in warnings)  # fmt: skip


def test_a_run_the_card_serves_has_no_such_warning(app: AppTest) -> None:
    open_page(app, "simulate.py", {"sessions": "3", "duration_s": "5"})
    assert not [w for w in texts(app.warning) if "half the frames" in w or "extrapolated" in w]


def test_the_command_line_says_the_same_of_an_overloaded_run(cli: Any) -> None:
    done = cli("simulate", "--points", "1:10,8:30", "--sessions", "2000", "--policy",
               "batch-all", "--duration-s", "5")  # fmt: skip
    assert done.status == 0, done.err
    assert "No session gets even half the frames it sends: the 2,000 sessions send 60,000" in (
        done.out
    )
    assert "Batches of up to" in done.out and "its largest measured batch is 8" in done.out
    served = cli("simulate", "--points", "1:10,8:30", "--sessions", "2", "--duration-s", "5")
    assert "half the frames" not in served.out and "extrapolated" not in served.out
