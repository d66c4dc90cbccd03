"""A server that queues every frame is judged by its stability first (SPEC §6.1)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import integrate, stats

from planner.curves.curve import Point
from planner.curves.fit import fit_curve
from planner.plan.answer import plain_sentence
from planner.plan.recommend import recommend
from planner.plan.request import Criteria, Request
from planner.plan.stability import Service, mean_stretch, service_rates, stable_upto
from planner.sim.batch_time import Z_BOUND
from planner.sim.scenario import Sharing

A100 = [(1, 0.76), (2, 0.81), (4, 0.93), (8, 1.14), (16, 1.54), (32, 2.45), (64, 4.27),
        (128, 7.81), (256, 14.74)]  # fmt: skip
EXCLUSIVE = Sharing()


def curve(points: list[tuple[int, float]]):
    return fit_curve([Point(b, v) for b, v in points])


def batch_rate(request: Request, edge: str, largest: int) -> float:
    """The most frames per second batches of up to ``largest`` serve on ``edge``, worked
    out here from the fitted curve itself."""
    table = request.curve.table(largest, edge)  # type: ignore[arg-type]
    return max(b * 1000.0 / float(table[b - 1]) for b in range(1, largest + 1))


def test_the_a100_cap_is_the_largest_count_strictly_inside_the_condition() -> None:
    # 234 x 30 = 7,020 frames/s reaches what batch 8 serves (8 / 1.14 ms ~ 7,018): the
    # card would be busy 100% and the queue grows, however slowly.
    request = Request(
        curve=curve(A100), policies=("triton",), queue="all", seeds=1, duration_s=10.0
    )
    option = recommend(request).options[0]
    for cap, edge in ((option.cap, "central"), (option.cap_low, "pessimistic"),
                      (option.cap_high, "optimistic")):  # fmt: skip
        rate = batch_rate(request, edge, 8)
        assert cap * request.fps < rate <= (cap + 1) * request.fps, edge
    assert option.cap == 233
    assert option.binding_constraint.startswith(
        "at 234 sessions the card would be busy 100%: the queue grows without end"
    )
    assert "7,020 frames/s offered; batches of 8 serve at most 7,018 frames/s" in (
        option.binding_constraint
    )


def test_an_offered_load_equal_to_the_service_rate_fails() -> None:
    # Batch 1 takes 2 ms, batch 8 takes 8 ms: batches of 8 serve exactly 1,000 frames/s,
    # which 40 sessions at 25 fps offer.
    request = Request(
        curve=curve([(1, 2.0), (8, 8.0)]), policies=("triton",), queue="all", fps=25.0,
        criteria=Criteria(budget_ms=1000.0, min_fps=20.0), seeds=1, duration_s=10.0,
    )  # fmt: skip
    assert stable_upto(request, "triton", EXCLUSIVE, "central", memory=True) == 39
    option = recommend(request).options[0]
    assert option.cap == 39
    assert [(f.constraint, f.sessions) for f in option.failures] == [("latency", 40)]
    assert "busy 100%: the queue grows without end" in option.failures[0].detail
    # The largest batch is the policy's: one frame at a time serves 500 frames/s.
    assert stable_upto(request, "oldest-first", EXCLUSIVE, "central", memory=True) == 19
    one = replace(request, max_batch=1)
    assert stable_upto(one, "triton", EXCLUSIVE, "central", memory=True) == 19
    # batch-all's largest batch is the session count: each count has its own rate.
    first = next(
        n for n in range(1, request.largest + 1) if n * 25.0 >= batch_rate(request, "central", n)
    )
    assert first > 40
    assert stable_upto(request, "batch-all", EXCLUSIVE, "central", memory=True) == first - 1


def test_the_per_request_cost_lowers_the_service_rate() -> None:
    # 1,000 frames/s without it; with 0.25 ms per request, batches of 8 take 10 ms: 800.
    base = dict(curve=curve([(1, 2.0), (8, 8.0)]), policies=("triton",), queue="all",
                fps=25.0, criteria=Criteria(budget_ms=1000.0, min_fps=20.0))  # fmt: skip
    costly = Request(**base, per_request_ms=0.25)
    assert stable_upto(costly, "triton", EXCLUSIVE, "central", memory=True) == 31


def test_a_server_that_cannot_serve_one_session_runs_nothing() -> None:
    # Batches of 8 take 400 ms: 20 frames/s, less than one 30 fps session offers.
    request = Request(curve=curve([(1, 50.0), (8, 400.0)]), policies=("triton",), queue="all")
    result = recommend(request)
    assert result.simulations == 0
    assert result.recommended is None
    assert result.options[0].cap == 0
    assert "the queue grows without end" in result.options[0].binding_constraint


def test_newest_keeps_no_queue_so_every_count_is_stable() -> None:
    request = Request(curve=curve([(1, 50.0), (8, 400.0)]), policies=("triton",))
    assert stable_upto(request, "triton", EXCLUSIVE, "central", memory=True) == request.largest


@pytest.mark.parametrize("sigma", [0.0, 0.1, 0.5, 1.5])
def test_the_spread_adds_its_mean_to_every_batch(sigma: float) -> None:
    # The mean of exp(sigma * z), z a standard normal clipped to +-Z_BOUND, integrated.
    inside, _ = integrate.quad(lambda z: math.exp(sigma * z) * stats.norm.pdf(z), -Z_BOUND, Z_BOUND)
    tails = stats.norm.sf(Z_BOUND) * (math.exp(sigma * Z_BOUND) + math.exp(-sigma * Z_BOUND))
    assert mean_stretch(sigma) == pytest.approx(inside + tails, rel=1e-9)
    rates = service_rates([2.0, 4.0], [sigma, sigma])
    assert rates[-1] == pytest.approx(500.0 / mean_stretch(sigma))


def test_rates_take_the_best_batch_up_to_each_largest() -> None:
    # Batches of 1, 2 and 3 serve 500, 800 and 750 frames/s.
    assert np.allclose(service_rates([2.0, 2.5, 4.0], []), [500.0, 800.0, 800.0])
    assert Service(800.0, 2).holds(26, 30.0)
    assert not Service(810.0, 2).holds(27, 30.0)


def test_the_answer_says_the_next_camera_makes_the_queue_grow() -> None:
    # Batches serve 992.6, 1,000 and 1,007.6 frames/s on the band's three curves: 41
    # sessions at 24 fps (984) hold on all three, 42 (1,008) on none.
    request = Request(
        curve=curve([(1, 1.0), (2, 2.0), (4, 4.0), (8, 8.0), (16, 16.0)]), policies=("triton",),
        queue="all", fps=24.0, criteria=Criteria(budget_ms=1000.0, min_fps=20.0), seeds=1,
        duration_s=10.0,
    )  # fmt: skip
    result = recommend(request)
    option = result.options[0]
    assert (option.cap_low, option.cap, option.cap_high) == (41, 41, 41)
    assert plain_sentence(result).endswith("a 42nd camera would make the queue grow without end.")
