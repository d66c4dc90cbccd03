"""A co-tenant by workload follows the band edge a plan judges (SPEC §6.3): it runs on
the same card, so on the pessimistic edge its batches are slower and it is busier. Each
edge of the plan is the plan of a duty-cycle co-tenant at that edge's duty and busy
period; one busy all the time on the slow edge is refused; stored sharings read back."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from planner.curves.curve import Point
from planner.curves.fit import fit_curve
from planner.errors import BadInput
from planner.plan.cotenants import workloads_of
from planner.plan.recommend import recommend
from planner.plan.request import Criteria, Request
from planner.sim.scenario import Sharing
from planner.sim.sharing.time_slicing import CotenantWorkload

DETECTOR = fit_curve(
    [Point(1, 6.0), Point(2, 8.5), Point(4, 13.0), Point(8, 22.0), Point(16, 40.0)]
)
# Measured at batch 1 and 2 only: at batch 16 its band is wide.
WIDE = "1:5,2:8"
COMMON = dict(
    criteria=Criteria(budget_ms=80.0, min_fps=25.0),
    policies=("oldest-first", "batch-all"),
    seeds=2,
    duration_s=3.0,
    max_sessions=30,
)


def _workload(points: str, batch: int, rps: float) -> CotenantWorkload:
    given = SimpleNamespace(cotenant_curve=(points,), cotenant_batch=(batch,), cotenant_rps=(rps,))
    (workload,) = workloads_of(given, None)
    return workload


def _plan(sharing: Sharing):  # type: ignore[no-untyped-def]
    return recommend(Request(curve=DETECTOR, sharings=(sharing,), **COMMON))


def _duty_cycle(workload: CotenantWorkload, edge: str) -> Sharing:
    return Sharing.of(
        "time-slicing",
        cotenants=(workload.duty_at(edge),),  # type: ignore[arg-type]
        busy_period_ms=workload.time_at(edge),  # type: ignore[arg-type]
    )


def test_the_band_of_a_cotenants_curve_is_taken_from_its_fit_at_its_batch() -> None:
    workload = _workload(WIDE, 16, 160.0)
    central, fast, slow = (float(v[()]) for v in fit_curve([Point(1, 5.0), Point(2, 8.0)]).band(16))
    assert (workload.batch_ms, workload.optimistic_ms, workload.pessimistic_ms) == (
        central,
        fast,
        slow,
    )
    assert fast < central < slow
    assert workload.duty_at("optimistic") < workload.duty < workload.duty_at("pessimistic")
    # The derivation states the range of the duty across the band.
    low, high = workload.duty_at("optimistic"), workload.duty_at("pessimistic")
    assert f"= {workload.duty:.1%} of the time ({low:.1%}–{high:.1%} across" in workload.derivation


def test_each_edge_plans_as_the_duty_cycle_cotenant_at_that_edges_duty() -> None:
    workload = _workload(WIDE, 16, 240.0)  # busy 75% on its fit, about 93% on its slow edge
    banded = _plan(Sharing.of("time-slicing", workloads=(workload,)))
    unbanded = replace(workload, optimistic_ms=None, pessimistic_ms=None)
    before = _plan(Sharing.of("time-slicing", workloads=(unbanded,)))
    by_edge = {edge: _plan(_duty_cycle(workload, edge)) for edge in ("central", "optimistic",
                                                                     "pessimistic")}  # fmt: skip
    assert any(o.cap > 1 for o in banded.options)
    lowered = False
    for i, got in enumerate(banded.options):
        old = before.options[i]
        # The fitted curve's cap is as before, and as the duty cycle the fit implies.
        assert got.cap == old.cap == by_edge["central"].options[i].cap
        assert got.at_cap is not None and by_edge["central"].options[i].at_cap is not None
        assert got.at_cap.p99_ms == by_edge["central"].options[i].at_cap.p99_ms
        # The low end: no higher than with the fit's time on every edge, and that of a
        # co-tenant busy as on its curve's slow edge.
        assert got.cap_low <= old.cap_low
        assert got.cap_low == by_edge["pessimistic"].options[i].cap_low
        assert got.cap_high == by_edge["optimistic"].options[i].cap_high
        lowered = lowered or got.cap_low < old.cap_low
    # The band is wide enough here that the busier co-tenant costs seats at the low end.
    assert lowered


def test_a_run_on_an_edge_takes_the_cotenants_time_on_that_edge() -> None:
    workload = _workload(WIDE, 16, 160.0)
    sharing = Sharing.of("time-slicing", cotenants=(0.2,), workloads=(workload,))
    request = Request(curve=DETECTOR, sharings=(sharing,), **COMMON)
    for edge in ("central", "optimistic", "pessimistic"):
        run = request.scenario("batch-all", sharing, edge, 4, 0)  # type: ignore[arg-type]
        own = run.sharing.kind.settings_of(run.sharing)
        assert own.duties == (0.2, workload.duty_at(edge))  # type: ignore[arg-type]
        assert own.busy_periods[1] == workload.time_at(edge)  # type: ignore[arg-type,index]
    # The central run keeps the option's sharing as it is.
    assert request.scenario("batch-all", sharing, "central", 4, 0).sharing == sharing


def test_a_cotenant_that_cannot_keep_up_on_its_slow_edge_is_refused_saying_so() -> None:
    rps = 300.0  # busy about 94% on its fit, over 100% on its band's slow edge
    with pytest.raises(BadInput, match="pessimistic edge") as caught:
        _workload(WIDE, 16, rps)
    assert "measure its curve at that batch" in str(caught.value)
    # On its fit alone, as before, it keeps up.
    central = float(fit_curve([Point(1, 5.0), Point(2, 8.0)]).latency(16)[()])
    assert CotenantWorkload("tts", 16, rps, central).duty < 1.0
    with pytest.raises(BadInput, match="band"):
        CotenantWorkload("tts", 16, 10.0, 50.0, optimistic_ms=60.0)


def test_stored_sharings_read_back_equal_and_old_ones_without_a_band() -> None:
    workload = _workload(WIDE, 16, 160.0)
    sharing = Sharing.of("time-slicing", cotenants=(0.3,), workloads=(workload,))
    assert Sharing.of(**sharing.as_dict()) == sharing
    # What a planner wrote before the band was followed: the fit's time on every edge.
    old = sharing.as_dict()
    old["workloads"] = tuple(
        {k: v for k, v in w.items() if k not in ("optimistic_ms", "pessimistic_ms")}
        for w in old["workloads"]
    )
    read = Sharing.of(**old)
    for edge in ("optimistic", "pessimistic"):
        assert read.kind.at_edge(read, edge) == read
