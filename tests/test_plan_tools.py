"""Library pieces the dashboard stands on: sweeps that reuse the recommendation's runs,
fleet arithmetic on a cached recommendation, Pareto dominance of options, and a
simulation's parameters resolved into scenarios, and a plan's option as a simulation."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

import planner.sim.policies
import planner.sim.scenario
from planner import limits
from planner.curves.curve import PER_REQUEST_KEY, Curve, Point
from planner.curves.fit import fit_curve
from planner.demand.fleet import gpus_for
from planner.errors import BadInput, StoreError
from planner.links.parameters import DEFAULT_POLICIES, MODES, PHASES
from planner.links.urls import self_contained
from planner.plan import margin
from planner.plan.outcomes import Option, fleet
from planner.plan.params import PlanParams, SimulateParams
from planner.plan.pareto import dominated, latency_at_cap, rank
from planner.plan.recommend import option_sweep, recommend
from planner.plan.request import Criteria, Request
from planner.plan.resolve import (
    command_line,
    default_curve,
    plan_inputs,
    plan_simulation,
    simulation_inputs,
)
from planner.sim.calibration import Calibration
from planner.sim.scenario import Sharing
from planner.sim.simulate import simulate
from planner.sim.sweep import Pooled, sweep
from planner.store.calibrations import save_calibration
from planner.store.connection import StoreFile
from planner.store.repository import Store

LAPTOP = [(1, 9.82), (2, 20.36), (3, 32.71), (4, 46.15), (8, 103.77), (16, 221.25)]
QUICK = {"seeds": 2, "duration_s": 5.0}


def request(**changes: object) -> Request:
    base = Request(curve=fit_curve([Point(b, v) for b, v in LAPTOP]), **QUICK)  # type: ignore[arg-type]
    return replace(base, **changes)


def test_links_use_the_policy_and_mode_names_of_the_simulator() -> None:
    assert tuple(planner.sim.policies.POLICIES) == DEFAULT_POLICIES
    assert (planner.sim.scenario.MODES, planner.sim.scenario.PHASES) == (MODES, PHASES)


def test_option_sweep_agrees_with_the_recommendations_own_runs() -> None:
    req = request(criteria=Criteria(budget_ms=40.0), slo_ms=None)
    result = recommend(req)
    counts = range(1, 8)
    fresh = option_sweep(req, Sharing(), counts)
    reused = option_sweep(req, Sharing(), counts, result.options)
    assert [(r.policy, r.sessions) for r in fresh] == [(p, n) for p in req.policies for n in counts]
    assert fresh == reused
    for option in result.options:
        mine = [r for r in fresh if r.policy == option.policy]
        assert mine[: len(option.history)] == list(option.history[: len(mine)])


def test_option_sweep_keeps_each_policys_objective() -> None:
    # One template for all policies would lose the 25 ms objective: an oldest-first
    # scenario drops slo_ms, and deadline then runs with its default of 50 ms.
    req = request(criteria=Criteria(budget_ms=25.0), policies=("oldest-first", "deadline"))
    (row,) = [r for r in option_sweep(req, Sharing(), [5]) if r.policy == "deadline"]
    template = req.scenario("deadline", Sharing(), "central", 5, 0)
    (right,) = sweep(template, ["deadline"], [5], range(2))
    lossy = req.scenario("oldest-first", Sharing(), "central", 5, 0)
    (wrong,) = sweep(lossy, ["deadline"], [5], range(2))
    assert template.slo_ms == 25.0 and lossy.slo_ms is None
    assert row == right
    assert row.expired_fraction > wrong.expired_fraction


def test_option_sweep_refuses_counts_outside_the_curve_table() -> None:
    with pytest.raises(BadInput, match=r"within 1\.\.64"):
        option_sweep(request(max_sessions=8), Sharing(), [0, 3])
    with pytest.raises(BadInput):
        option_sweep(request(max_sessions=8), Sharing(), [65])
    # Unset, the largest count is 4,096 sessions: the table covers them all.
    with pytest.raises(BadInput, match=r"within 1\.\.4096"):
        option_sweep(request(), Sharing(), [4097])


def test_fleet_on_a_recommendation_made_without_peak_or_price() -> None:
    result = recommend(request())
    best = result.recommended
    assert best is not None and result.fleet is None
    sized = fleet(best, peak_sessions=100, headroom=0.2, price_per_hour=2.4)
    assert sized is not None
    assert sized.gpus == gpus_for(100, 0.2, best.cap)
    assert sized.cost_per_seat_hour == pytest.approx(2.4 / best.cap)
    full = recommend(request(peak_sessions=100, headroom=0.2, price_per_hour=2.4))
    assert full.fleet == sized
    assert fleet(best, peak_sessions=None, headroom=0.2, price_per_hour=None) is None
    assert fleet(None, peak_sessions=10, headroom=0.2, price_per_hour=1.0) is None


def _option(policy: str, cap: int, latency: float | None) -> Option:
    at = None
    if latency is not None:
        at = Pooled(policy, "exclusive", cap, (0,), 99.0, latency, latency, None, None, None,
                    None, 100, (30.0,), 30.0, 0.0, 0.0, 0.5, ())  # fmt: skip
    return Option(policy, Sharing(), cap, cap, cap, at, (), "", False, ())


def test_dominated_options_need_as_many_seats_at_no_higher_latency() -> None:
    a, b, c, d, e, f = (
        _option("a", 3, 20.0),  # best seats, lowest latency among 3-seat options
        _option("b", 3, 29.0),  # dominated by a
        _option("c", 5, 45.0),  # more seats, higher latency: not dominated
        _option("d", 2, 45.0),  # dominated by a (and c)
        _option("e", 3, 20.0),  # equal to a: neither dominates the other
        _option("f", 0, None),  # holds no seat: not compared
    )
    assert dominated([a, b, c, d, e, f]) == [None, a, None, a, None, None]
    assert latency_at_cap(f) is None and latency_at_cap(c) == 45.0


def _ranged(policy: str, low: int, cap: int, high: int, latency: float) -> Option:
    return replace(_option(policy, cap, latency), cap_low=low, cap_high=high)


def test_dominance_reads_the_whole_seat_range_not_only_the_likely_value() -> None:
    wide = _ranged("wide", 6, 10, 12, 20.0)  # more seats likely, fewer at the low end
    narrow = _ranged("narrow", 8, 9, 9, 20.0)
    # Neither is no worse at every end of its range: neither dominates.
    assert dominated([wide, narrow]) == [None, None]
    # At least as many seats at each end and the likely value, at no higher latency.
    better = _ranged("better", 8, 10, 12, 20.0)
    assert dominated([better, wide, narrow]) == [None, better, better]
    # A higher high end alone keeps an option from being dominated.
    upside = _ranged("upside", 8, 9, 14, 20.0)
    assert dominated([better, upside]) == [None, None]
    # The same seats at a lower latency dominate; equal options do not.
    assert dominated([narrow, replace(narrow, policy="slower", at_cap=wide.at_cap)]) == [
        None,
        None,
    ]
    faster = _ranged("faster", 8, 9, 9, 15.0)
    assert dominated([narrow, faster]) == [faster, None]


def test_an_uncalibrated_range_is_what_dominance_and_the_ranking_read() -> None:
    # Band ranges: a wide band under the larger likely count, a narrow one under the smaller.
    wide = _ranged("wide", 7, 12, 12, 20.0)
    narrow = _ranged("narrow", 11, 11, 11, 20.0)
    assert dominated([wide, narrow]) == [None, None]
    # Uncalibrated, the margin sets both low ends to 7 (floor(0.674 x 11) = 7): the
    # narrow band no longer promises 11, and the larger likely count dominates.
    m = limits.UNCALIBRATED_MARGINS[limits.UNCALIBRATED_MARGIN]
    wide_u, narrow_u = margin.widened(wide, m), margin.widened(narrow, m)
    assert (wide_u.seats_per_card_low, narrow_u.seats_per_card_low) == (7, 7)
    assert dominated([wide_u, narrow_u]) == [None, wide_u]
    # The ranking's second key is the range's low end. On the band's range the higher low
    # edge comes first; uncalibrated, both low ends are the margin's (floor(0.674 x 12) =
    # 8), they tie there, and the lower latency at the cap decides.
    tight, loose = _ranged("tight", 10, 12, 12, 30.0), _ranged("loose", 9, 12, 12, 20.0)
    policies, sharings = ("tight", "loose"), [Sharing()]
    assert [o.policy for o in rank([loose, tight], policies, sharings)] == ["tight", "loose"]
    both = [margin.widened(o, m) for o in (tight, loose)]
    assert [o.seats_per_card_low for o in both] == [8, 8]
    assert [o.policy for o in rank(both, policies, sharings)] == ["loose", "tight"]


def test_dominance_on_a_real_recommendation_marks_only_worse_options() -> None:
    result = recommend(request(criteria=Criteria(budget_ms=40.0)))
    marks = dominated(result.options)
    # Both kinds occur here (triton's queue delay costs latency at the same seats), so both
    # checks below run.
    assert any(m is None for m in marks) and any(m is not None for m in marks)
    points = [(o.cap, latency_at_cap(o)) for o in result.options]
    for (seats, latency), winner in zip(points, marks, strict=True):
        assert latency is not None
        better = [
            (s, lat)
            for s, lat in points
            if lat is not None and s >= seats and lat <= latency and (s, lat) != (seats, latency)
        ]
        if winner is None:
            assert better == []
        else:
            assert (winner.cap, latency_at_cap(winner)) in better


def test_simulation_inputs_resolve_curve_policy_parameters_and_sharing(store: Store) -> None:
    params = SimulateParams(sessions=5, policy="triton", compare_policy="aimd", max_batch=3,
                            slo_ms=30.0, duration_s=2.0, mode="mps", mps_share=40.0)  # fmt: skip
    inputs = simulation_inputs(params, store)
    assert inputs.curve == default_curve(store)
    scenario, compare = inputs.scenario, inputs.compare
    assert compare is not None
    assert (scenario.policy, scenario.max_batch, scenario.slo_ms) == ("triton", 3, None)
    assert (compare.policy, compare.max_batch, compare.slo_ms) == ("aimd", None, 30.0)
    assert scenario.sharing.mode == "mps" and scenario.sharing.settings.mps_share == 40.0
    assert len(scenario.latency_ms) == 64
    assert scenario.latency_ms[0] == pytest.approx(9.82)


def test_simulation_inputs_from_a_self_contained_link_need_no_store(store: Store) -> None:
    curve = store.curves(card="server-24gb")[0]
    params = self_contained(SimulateParams(sessions=2), curve)
    inputs = simulation_inputs(params, None)
    assert inputs.curve.id == curve.id
    with pytest.raises(BadInput, match="co-tenants"):
        simulation_inputs(replace(params, mode="time-slicing"), None)
    with pytest.raises(BadInput, match="does not support MIG"):
        simulation_inputs(SimulateParams(mode="mig", mig_profile="3g.40gb"), store)


def test_plan_inputs_and_the_default_curve_agree(store: Store) -> None:
    inputs = plan_inputs(PlanParams(), store)
    assert inputs.curve == default_curve(store)
    assert (inputs.curve.card, inputs.curve.precision) == ("laptop-8gb", "fp16")


def test_a_plans_option_simulates_as_the_plan_ran_it_calibration_included(
    store: Store, cli: Any
) -> None:
    curve = default_curve(store)
    pinned = save_calibration(store, Calibration(curve.id, a_ms=2.0, c_ms=0.5, d_ms=1.0))
    plan = PlanParams(curve=curve.id, calibration=pinned.id, network_ms=2.0, pre_ms=1.0,
                      policies=("aimd", "batch-all"), mps_share=40.0, **QUICK)  # fmt: skip
    request = plan_inputs(plan, store).request
    option = recommend(request).options[0]
    detail = plan_simulation(plan, request, option, 3, seed=1)
    assert detail.calibration == pinned.id and detail.curve == curve.id
    run = simulation_inputs(detail, store)
    assert run.calibration == pinned
    # The same run: one builder makes both scenarios (planner.plan.request.run_scenario).
    planned = request.scenario(option.policy, option.sharing, "central", 3, 1)
    assert run.scenario == planned
    ours, theirs = simulate(run.scenario).records, simulate(planned).records
    assert np.array_equal(ours.frame_latency, theirs.frame_latency)
    # ``planner simulate`` given the page's command runs the same calibrated scenario.
    command = command_line("simulate", detail)
    assert command[command.index("--calibration") + 1] == pinned.id
    said = cli(*command[1:], "--json")
    assert said.status == 0, said.err
    assert said.json["calibration"]["id"] == pinned.id
    # --json writes a frame rate to the thousandth of a frame per second.
    assert said.json["min_fps"] == pytest.approx(simulate(run.scenario).min_fps, abs=5e-4)
    # Uncalibrated, the same option's run is the model's, and the command says so.
    model = plan_simulation(replace(plan, calibration=None), request, option, 3, seed=1)
    assert model.calibration is None and simulation_inputs(model, store).calibration is None
    command = command_line("simulate", model)
    assert command[command.index("--calibration") + 1] == "none"


def test_a_queueing_plans_runs_and_their_replays_are_one_scenario(store: Store) -> None:
    # Spread, a per-request cost, queue = all, a second policy and a curve measured past
    # batch 64: every field the plan's runs and the Simulate page's replay take from a
    # curve comes from one builder, down to the length of the table.
    measured = ((1, 4.0), (2, 5.0), (4, 7.0), (8, 11.0), (32, 30.0), (128, 100.0))
    points = tuple(Point(b, v, p90_ms=v * 1.2) for b, v in measured)
    curve = store.add_curves(
        [
            Curve(
                model="spread",
                card="server-24gb",
                precision="fp16",
                resolution="512x288",
                points=points,
                environment={PER_REQUEST_KEY: 0.2},
            )
        ]
    )[0]
    plan = PlanParams(
        curve=curve.id, policies=("triton", "aimd"), queue="all", seeds=2, duration_s=5.0
    )
    request = plan_inputs(plan, store).request
    assert request.per_request_ms == 0.2
    option = recommend(request).options[0]
    for sessions in (1, option.cap, option.cap + 1):
        detail = plan_simulation(plan, request, option, sessions, seed=1, compare_policy="aimd")
        run = simulation_inputs(detail, store)
        assert run.scenario.spread and run.scenario.queue == "all"
        assert run.scenario == request.scenario(
            option.policy, option.sharing, "central", sessions, 1
        )
        assert run.compare == request.scenario("aimd", option.sharing, "central", sessions, 1)


@pytest.mark.parametrize("resolve", ["plan", "simulation"])
def test_a_plan_reads_the_store_in_one_short_transaction(
    store: Store, monkeypatch: pytest.MonkeyPatch, resolve: str
) -> None:
    # The curve, its card, its newest calibration and the pinned one: four reads, one hold
    # of the file, one read transaction.
    curve = default_curve(store)
    pinned = save_calibration(store, Calibration(curve.id, a_ms=1.0, c_ms=0.1, d_ms=0.5))
    holds: list[bool] = []
    attach = StoreFile._attach

    def counted(self: StoreFile) -> Any:
        holds.append(True)
        return attach(self)

    monkeypatch.setattr(StoreFile, "_attach", counted)
    if resolve == "plan":
        inputs: Any = plan_inputs(PlanParams(curve=curve.id, calibration=pinned.id), store)
    else:
        inputs = simulation_inputs(SimulateParams(curve=curve.id, calibration=pinned.id), store)
    assert (inputs.calibration, inputs.latest, inputs.card.name) == (pinned, pinned, curve.card)
    assert len(holds) == 1


def test_a_snapshot_joins_a_write_and_refuses_one_inside(store: Store) -> None:
    with store.write(), store.snapshot():
        assert store.curves()
    with store.snapshot(), store.snapshot():
        assert store.curves()
    with pytest.raises(StoreError), store.snapshot():
        store.set_price("laptop-8gb", 1.0)
    assert store.card("laptop-8gb").price_per_hour != 1.0
