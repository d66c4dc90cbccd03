"""Bounded, interruptible work (``planner.sim.work``): the budget holds, cancelled work stops
at the next chunk, and turns go in arrival order."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.curves.curve import Point
from planner.curves.fit import fit_curve
from planner.errors import BadInput
from planner.plan.recommend import recommend
from planner.plan.request import Request
from planner.sim.work import (
    CHUNK_FRAMES,
    Cancelled,
    OverBudget,
    Work,
    _Turns,
    budget_frames,
    chunks,
    turns,
)

# A card so fast that every policy holds every session count: the search runs to the end.
FAST = fit_curve([Point(1, 0.001), Point(2, 0.001), Point(4, 0.002)])


@given(st.lists(st.integers(1, 3 * CHUNK_FRAMES), max_size=40))
def test_chunks_keep_order_and_stay_within_the_limit_unless_one_run_is_larger(
    sizes: list[int],
) -> None:
    groups = chunks(sizes)
    assert [i for g in groups for i in g] == list(range(len(sizes)))
    for group in groups:
        total = sum(sizes[i] for i in group)
        assert total <= CHUNK_FRAMES or len(group) == 1


def test_a_plan_over_its_budget_stops_before_crossing_it() -> None:
    work = Work(budget=30_000_000)
    with pytest.raises(OverBudget, match="million frames of its 30 million budget"):
        recommend(Request(curve=FAST, seeds=4, duration_s=30.0, max_sessions=256), work=work)
    assert 0 < work.done <= work.budget
    assert work.chunks >= 1


def test_cancelled_work_stops_at_the_next_chunk() -> None:
    cancel_after = 3
    after: list[int] = []

    def on_chunk(current: Work) -> None:
        if current.cancelled:
            after.append(current.chunks)
        elif current.chunks == cancel_after:
            current.cancel()

    work = Work(budget=float("inf"), on_chunk=on_chunk)
    with pytest.raises(Cancelled):
        recommend(Request(curve=FAST, seeds=8, duration_s=30.0, max_sessions=256), work=work)
    assert work.chunks == cancel_after
    assert after == []  # not one chunk ran after the cancel


def test_cancelling_from_another_thread_stops_within_one_chunk() -> None:
    started = threading.Event()
    seen_at_cancel: list[int] = []
    outcome: list[BaseException] = []

    def on_chunk(current: Work) -> None:
        started.set()

    work = Work(budget=float("inf"), on_chunk=on_chunk)

    def run() -> None:
        try:
            recommend(Request(curve=FAST, seeds=8, duration_s=30.0, max_sessions=256), work=work)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    assert started.wait(120)
    seen_at_cancel.append(work.chunks)
    work.cancel()
    thread.join(120)
    assert not thread.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], Cancelled)
    # At most the chunk that was running when the cancel came finished afterwards.
    assert work.chunks - seen_at_cancel[0] <= 1


def test_turns_are_handed_out_in_arrival_order() -> None:
    turns = _Turns(1)
    order: list[int] = []
    holding = threading.Event()
    release = threading.Event()

    def first() -> None:
        with turns.held():
            holding.set()
            release.wait(10)

    def later(i: int) -> None:
        with turns.held():
            order.append(i)

    threads = [threading.Thread(target=first)]
    threads[0].start()
    assert holding.wait(10)
    for i in range(5):
        thread = threading.Thread(target=later, args=(i,))
        thread.start()
        threads.append(thread)
        time.sleep(0.05)  # each one queues before the next
    release.set()
    for thread in threads:
        thread.join(10)
    assert order == [0, 1, 2, 3, 4]


def test_the_budget_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANNER_BUDGET_FRAMES", "1e6")
    assert budget_frames() == 1e6 and Work().budget == 1e6
    monkeypatch.setenv("PLANNER_BUDGET_FRAMES", "inf")
    assert budget_frames() == float("inf")
    monkeypatch.delenv("PLANNER_BUDGET_FRAMES")
    assert budget_frames() == 400_000_000


@pytest.mark.parametrize("text", ["lots", "-1", "0", "nan", "1e400"])
def test_a_budget_that_is_no_number_of_frames_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    # Not the default in disguise, and 1e400 (which reads as inf) is not "no budget".
    monkeypatch.setenv("PLANNER_BUDGET_FRAMES", text)
    with pytest.raises(BadInput, match="PLANNER_BUDGET_FRAMES="):
        budget_frames()


@pytest.mark.parametrize("text", ["junk", "0", "-3", "2.5", "65"])
def test_concurrent_work_that_is_no_count_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    monkeypatch.setenv("PLANNER_CONCURRENT_WORK", text)
    with pytest.raises(BadInput, match="PLANNER_CONCURRENT_WORK="):
        turns()
    monkeypatch.setenv("PLANNER_CONCURRENT_WORK", "3")
    assert turns() == 3


def test_without_work_the_library_has_no_budget() -> None:
    result = recommend(Request(curve=FAST, seeds=1, duration_s=1.0, max_sessions=8))
    assert result.recommended is not None and result.recommended.cap == 8
