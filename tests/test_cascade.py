"""A synchronous cascade of models per frame (SPEC §6.3): a chain with fixed crops plans as
the one curve it adds up to, drawn crops give the expected batch time, and crop laws read
and write as one token."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from planner import display
from planner.curves.curve import Point
from planner.curves.fit import FittedCurve, fit_curve
from planner.curves.shape import BAND, BandRules
from planner.errors import BadInput
from planner.plan.cascade import CascadeStep
from planner.plan.recommend import recommend
from planner.plan.request import Criteria, Request
from planner.sim.cascade import CascadeModel
from planner.sim.crops import Crops, chain_items, parse_crops, parse_shares
from planner.sim.engine_fast import run_fast
from planner.sim.engine_reference import run_reference
from planner.sim.scenario import Scenario, Sharing
from planner.sim.sharing.time_slicing import CotenantWorkload
from planner.sim.simulate import simulate
from planner.views.simulation import simulation_view

DETECTOR = fit_curve(
    [Point(1, 6.0), Point(2, 8.5), Point(4, 13.0), Point(8, 22.0), Point(16, 40.0)]
)
CLASSIFIER = fit_curve([Point(1, 1.2), Point(4, 2.0), Point(16, 4.5), Point(64, 14.0)])


@dataclass(frozen=True)
class _Summed:
    """The shape of the curve whose every edge is L_A(b) + L_B(k b)."""

    a: FittedCurve
    b: FittedCurve
    k: int
    rules: BandRules = BAND

    def evaluate(self, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        first = self.a.band(batch)
        then = self.b.band(self.k * np.asarray(batch, dtype=np.float64))
        return first[0] + then[0], first[1] + then[1], first[2] + then[2]


def summed(a: FittedCurve, b: FittedCurve, k: int) -> FittedCurve:
    shape = _Summed(a, b, k)
    points = tuple(
        Point(p.batch, float(shape.evaluate(np.array([float(p.batch)]))[0][0])) for p in a.points
    )
    return FittedCurve(points, "summed", (), (), _shape=shape)  # type: ignore[arg-type]


@pytest.mark.parametrize("queue", ["newest", "all"])
def test_a_chain_with_fixed_crops_plans_as_the_curve_it_adds_up_to(queue: str) -> None:
    one = summed(DETECTOR, CLASSIFIER, 3)
    common = dict(
        queue=queue,
        criteria=Criteria(budget_ms=120.0, min_fps=25.0),
        policies=("oldest-first", "batch-all", "deadline"),
        sharings=(Sharing(), Sharing.of("time-slicing", cotenants=(0.5,))),
        seeds=2,
        duration_s=3.0,
        max_sessions=40,
    )
    step = CascadeStep(CLASSIFIER, Crops(k=3), largest=4096, name="classifier")
    chain = Request(curve=DETECTOR, cascade=(step,), model_name="detector", **common)
    single = Request(curve=one, **common)
    got, want = recommend(chain), recommend(single)
    assert len(got.options) == len(want.options) > 0
    for a, b in zip(got.options, want.options, strict=True):
        assert (a.policy, a.sharing) == (b.policy, b.sharing)
        assert (a.cap, a.cap_low, a.cap_high) == (b.cap, b.cap_low, b.cap_high)
        assert (a.at_cap is None) == (b.at_cap is None)
        if a.at_cap is not None and b.at_cap is not None:
            assert a.at_cap.p99_ms == b.at_cap.p99_ms
    assert any(o.cap > 1 for o in got.options)  # the comparison reached real caps
    # The reason names the chain, with each model's time at the failing count's batch.
    failing = [o for o in got.options if o.failures]
    assert failing
    for o in failing:
        assert "the chain of models binds" in o.binding_constraint
        assert "detector" in o.binding_constraint and "classifier" in o.binding_constraint


@pytest.mark.parametrize("engine", [run_fast, run_reference])
@pytest.mark.parametrize("policy", ["oldest-first", "batch-all", "deadline", "triton"])
def test_each_engine_runs_a_fixed_chain_as_the_summed_table(engine, policy) -> None:  # type: ignore[no-untyped-def]
    first = tuple(float(v) for v in DETECTOR.table(64))
    then = tuple(float(v) for v in CLASSIFIER.table(192))
    summed_table = tuple(a + then[3 * b - 1] for b, a in enumerate(first, start=1))
    base = Scenario(latency_ms=first, sessions=12, policy=policy, duration_s=2.0, seed=5,
                    sharing=Sharing.of("time-slicing", cotenants=(0.3,)))  # fmt: skip
    chain = engine(base.with_(cascade=(CascadeModel(then, Crops(k=3)),)))
    alone = engine(base.with_(latency_ms=summed_table))
    assert chain.same_as(alone, tolerance_ms=0.0) == []
    assert chain.batch_size.size > 10


def _expected_ms(first: tuple[float, ...], then: tuple[float, ...], b: int, mean: float) -> float:
    """L1(b) + E[L2(K)], K ~ Poisson(mean * b), a call per ``len(then)`` inputs."""
    lam, largest = mean * b, len(then)
    row = (0.0, *then)
    total, top = 0.0, int(lam + 15 * math.sqrt(lam) + 30)
    for k in range(top + 1):
        calls, rest = divmod(k, largest)
        t = row[k] if k <= largest else calls * row[largest] + row[rest]
        total += math.exp(k * math.log(lam) - lam - math.lgamma(k + 1)) * t
    return first[b - 1] + total


def test_drawn_crops_give_the_expected_batch_time_within_sampling_error() -> None:
    first = tuple(float(v) for v in DETECTOR.table(64))
    then = tuple(float(v) for v in CLASSIFIER.table(16))  # large inputs split into calls
    scenario = Scenario(latency_ms=first, sessions=24, policy="batch-all", duration_s=20.0,
                        cascade=(CascadeModel(then, Crops("poisson", mean=2.5)),))  # fmt: skip
    r = run_fast(scenario)
    took = r.batch_end - r.batch_start
    checked = 0
    for b in np.unique(r.batch_size):
        these = took[r.batch_size == b]
        if these.size < 200:
            continue
        expected = _expected_ms(first, then, int(b), 2.5)
        error = these.std(ddof=1) / math.sqrt(these.size)
        assert abs(these.mean() - expected) < 4.0 * error + 1e-9
        assert these.std() > 0  # drawn, not fixed: batches of one size differ
        checked += 1
    assert checked >= 1


def test_crops_are_drawn_per_frame_from_their_own_stream() -> None:
    laws = (Crops("poisson", mean=2.0), Crops("hist", shares=((0, 1.0), (2, 3.0))))
    longer, shorter = chain_items(laws, 7, 5000), chain_items(laws, 7, 300)
    assert np.array_equal(longer[:, :300], shorter)  # one array serves every run of a seed
    assert not np.array_equal(chain_items(laws, 8, 300), shorter)
    assert abs(longer[0].mean() - 2.0) < 0.15
    # The second model's inputs are the first's crops; each crop gives 0 or 2 (3 in 4: 2).
    assert np.all(longer[1] % 2 == 0) and np.all(longer[1] <= 2 * longer[0])
    assert abs(longer[1].sum() / longer[0].sum() - 1.5) < 0.1
    # A later model's law does not change an earlier one's counts.
    other = chain_items((laws[0], Crops(k=4)), 7, 5000)
    assert np.array_equal(other[0], longer[0]) and np.array_equal(other[1], 4 * longer[0])


@pytest.mark.parametrize("text", ["3", "0", "poisson=2.5", "hist=0:0.2,1:0.5,4:0.3"])
def test_a_crop_law_reads_back_as_written(text: str) -> None:
    law = parse_crops(text)
    assert parse_crops(law.text) == law
    assert law.text == text


def test_a_histogram_file_is_count_share_lines_and_its_shares_are_weights() -> None:
    shares = parse_shares("# count,share\n0,2\n1,1\n\n3,1\n")
    law = Crops("hist", shares=shares)
    assert law.shares == ((0, 0.5), (1, 0.25), (3, 0.25))
    assert law.expected == pytest.approx(1.0)


@pytest.mark.parametrize(
    "text", ["-1", "poisson=0", "poisson=x", "hist=", "hist=1:0", "hist=a:1", "three"]
)
def test_a_bad_crop_law_is_refused_with_a_reason(text: str) -> None:
    with pytest.raises(BadInput):
        parse_crops(text)


def test_a_cotenant_by_workload_plans_as_the_duty_cycle_and_busy_period_it_implies() -> None:
    workload = CotenantWorkload("tts", batch=4, rps=60.0, batch_ms=22.0, memory_mb=2048.0)
    assert workload.duty == pytest.approx(60.0 / 4 * 22.0 / 1000.0)
    by_workload = Sharing.of("time-slicing", cotenants=(0.3,), workloads=(workload,))
    by_duty = Sharing.of(
        "time-slicing",
        cotenants=(0.3, workload.duty),
        busy_period_ms=50.0,
        cotenant_memory_mb=(0.0, 2048.0),
    )
    own = by_workload.kind.settings_of(by_workload)
    assert own.duties == (0.3, workload.duty) and own.busy_periods == (50.0, 22.0)
    alone = Sharing.of("time-slicing", workloads=(workload,))
    implied = Sharing.of("time-slicing", cotenants=(workload.duty,), busy_period_ms=22.0,
                         cotenant_memory_mb=(2048.0,))  # fmt: skip
    common = dict(
        criteria=Criteria(budget_ms=80.0, min_fps=25.0),
        policies=("oldest-first", "batch-all"),
        seeds=2,
        duration_s=3.0,
        max_sessions=30,
        card_memory_gb=24.0,
    )
    got = recommend(Request(curve=DETECTOR, sharings=(alone,), **common))
    want = recommend(Request(curve=DETECTOR, sharings=(implied,), **common))
    for a, b in zip(got.options, want.options, strict=True):
        assert (a.cap, a.cap_low, a.cap_high) == (b.cap, b.cap_low, b.cap_high)
        assert a.at_cap is not None and b.at_cap is not None
        assert a.at_cap.p99_ms == b.at_cap.p99_ms
    assert any(o.cap > 1 for o in got.options)
    # The answer shows the derivation.
    assert any("busy 60 / 4 x 22 ms" in note for note in got.assumptions)
    # The memory the co-tenant holds is taken from the card, as a declared figure is.
    assert (
        alone.kind.available(alone, 24.0 * 1024).mb
        == implied.kind.available(implied, 24.0 * 1024).mb
    )
    assert (
        by_duty.kind.available(by_duty, 1024.0).mb
        == by_workload.kind.available(by_workload, 1024.0).mb
    )


def test_a_cotenant_that_cannot_keep_up_is_refused_with_its_figures() -> None:
    with pytest.raises(BadInput, match="busy 120% of the time"):
        CotenantWorkload("tts", batch=2, rps=100.0, batch_ms=24.0)


def test_a_simulation_of_a_chain_reports_its_batch_times_mean_and_tail() -> None:
    first = tuple(float(v) for v in DETECTOR.table(64))
    then = tuple(float(v) for v in CLASSIFIER.table(64))
    model = CascadeModel(then, Crops("poisson", mean=2.0), "classifier")
    scenario = Scenario(
        latency_ms=first, sessions=6, policy="batch-all", duration_s=3.0, cascade=(model,)
    )
    results = simulate(scenario)
    took = results.records.batch_end - results.records.batch_start
    line = next(x for x in simulation_view(results, DETECTOR).text if "chain" in x)
    assert "classifier" in line
    assert f"p99 {display.ms(float(np.percentile(took, 99)))}" in line
    assert f"mean {display.ms(float(took.mean()))}" in line


def _stored_ids(db_path) -> list[str]:  # type: ignore[no-untyped-def]
    from planner.store.repository import Store

    store = Store(db_path)
    try:
        return [c.id for c in store.curves()]
    finally:
        store.close()


def test_the_command_line_links_a_cascade_and_its_histogram_inline(cli, db_path, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from urllib.parse import parse_qs, urlsplit

    from planner.links.urls import decode
    from planner.plan.params import PlanParams

    first, second = _stored_ids(db_path)[:2]
    crops = tmp_path / "crops.csv"
    crops.write_text("count,share\n0,1\n2,3\n")  # a header line is not a pair
    run = cli("link", "--curve", first, "--cascade", f"{second}:hist={crops}",
              "--cascade", f"{second}:poisson=1.5:max=16")  # fmt: skip
    assert run.status == 2 and "count,share" in run.err  # the header is refused by line
    crops.write_text("# count,share\n0,1\n2,3\n")
    run = cli("link", "--curve", first, "--cascade", f"{second}:hist={crops}",
              "--cascade", f"{second}:poisson=1.5:max=16")  # fmt: skip
    assert run.status == 0, run.err
    params, ignored = decode(PlanParams, parse_qs(urlsplit(run.out.strip()).query))
    assert ignored == []
    assert params.cascade == (f"{second}:hist=0:0.25,2:0.75", f"{second}:poisson=1.5:max=16")
    # An old link, without a cascade, reads as one model per frame.
    assert decode(PlanParams, {"curve": [first]})[0].cascade == ()


def test_the_command_line_refuses_a_cascade_or_cotenant_it_cannot_read(cli, db_path) -> None:  # type: ignore[no-untyped-def]
    first = _stored_ids(db_path)[0]
    run = cli("recommend", "--curve", first, "--cascade", "abcdefghijkl:3")
    assert run.status == 2 and "no stored curve has the id abcdefghijkl" in run.err
    run = cli("recommend", "--curve", first, "--cascade", f"{first}:poisson=-1")
    assert run.status == 2 and "--cascade" in run.err
    run = cli("recommend", "--curve", first, "--cotenant-curve", first, "--cotenant-batch", "4")
    assert run.status == 2 and "a curve, a batch and a request rate" in run.err
    run = cli("simulate", "--curve", first, "--sessions", "2", "--cotenant-curve", first,
              "--cotenant-batch", "1", "--cotenant-rps", "100000")  # fmt: skip
    assert run.status == 2 and "--mode time-slicing" in run.err


def test_the_command_a_plan_shows_runs_its_cascade_and_cotenants(db_path) -> None:  # type: ignore[no-untyped-def]
    from planner.cli import build_parser
    from planner.cli.planning import plan_params
    from planner.plan.params import PlanParams
    from planner.plan.resolve import command_line

    first, second = _stored_ids(db_path)[:2]
    params = PlanParams(
        curve=first,
        cascade=(f"{second}:3", f"{second}:hist=0:0.25,2:0.75"),
        cotenant_curve=(second, second),
        cotenant_batch=(4.0, 8.0),
        cotenant_rps=(30.0, 60.0),
    )
    argv = command_line("recommend", params)
    args = build_parser().parse_args(argv[1:])
    assert plan_params(args) == params


def test_a_stored_scenario_with_a_cascade_reads_back_equal() -> None:
    from planner.validate.loadtest_store import scenario_dict, scenario_from_dict

    scenario = Scenario(
        latency_ms=(5.0, 6.0, 7.0),
        sessions=3,
        cascade=(
            CascadeModel((1.0, 1.5), Crops(kind="hist", shares=((0, 0.5), (2, 0.5))), "cls"),
            CascadeModel((2.0,), Crops(kind="poisson", mean=1.5)),
        ),
    )
    assert scenario_from_dict(scenario_dict(scenario)) == scenario


def test_a_cotenant_batch_is_a_whole_number() -> None:
    from planner.links.parameters import PARAMETERS

    codec = PARAMETERS["cotenant_batch"].codec
    assert codec.check("2,4") == (2, 4)
    with pytest.raises(BadInput, match="whole number"):
        codec.check("2.5")


def test_a_cascade_or_cotenant_measured_on_another_card_is_refused(cli, db_path) -> None:  # type: ignore[no-untyped-def]
    from planner.store.repository import Store

    store = Store(db_path)
    try:
        cards = {c.id: c.card for c in store.curves()}
    finally:
        store.close()
    first = next(i for i, card in cards.items() if card == "laptop-8gb")
    other = next(i for i, card in cards.items() if card != "laptop-8gb")
    run = cli("recommend", "--curve", first, "--cascade", f"{other}:3")
    assert run.status == 2 and f"curve {other} was measured on {cards[other]}" in run.err
    run = cli("simulate", "--curve", first, "--sessions", "2", "--cascade", f"{other}:3")
    assert run.status == 2 and f"curve {other} was measured on {cards[other]}" in run.err
    run = cli("recommend", "--curve", first, "--modes", "time-slicing", "--cotenant-curve",
              other, "--cotenant-batch", "4", "--cotenant-rps", "30")  # fmt: skip
    assert run.status == 2 and f"curve {other} was measured on {cards[other]}" in run.err
    same = next(i for i, card in cards.items() if card == "laptop-8gb" and i != first)
    assert cli("recommend", "--curve", first, "--cascade", f"{same}:1", "--seeds", "1",
               "--duration-s", "2").status == 0  # fmt: skip
