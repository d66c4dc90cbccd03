"""The worker's stages as one value (``planner.sim.stages``): built from the flat link
parameters and back, one budget rule for links, requests and criteria, stored scenarios
and studies from before they were one value, and the load test's seed bound."""

from __future__ import annotations

import gzip
from dataclasses import replace
from pathlib import Path

import pytest

from planner import limits
from planner.curves.curve import Point
from planner.curves.fit import fit_curve
from planner.errors import BadInput
from planner.links.urls import decode, encode
from planner.plan.params import PlanParams, SimulateParams, stage_params
from planner.plan.request import Criteria, Request
from planner.sim.scenario import Scenario
from planner.sim.stages import NO_STAGES, STAGE_FIELDS, WorkerStages
from planner.store.repository import Store
from planner.studies.store import finished_keys, load_study
from planner.studies.study import cells
from planner.validate.loadtest_store import scenario_dict, scenario_from_dict
from planner.validate.options import LoadTestOptions

COMPAT = Path(__file__).resolve().parent / "data" / "compat"
SERVER = fit_curve([Point(1, 8.0), Point(3, 20.0)])


def test_the_link_parameters_build_the_stages_and_the_stages_give_them_back() -> None:
    stages = WorkerStages(network_ms=2.0, pre_ms=1.5, post_ms=0.5, cpu_workers=3)
    plan = PlanParams(**stage_params(stages))
    assert plan.stages == stages
    assert SimulateParams(**stage_params(plan.stages)).stages == stages
    assert PlanParams().stages == NO_STAGES
    # The link keeps its flat form: an old link opens the same stages.
    assert encode(PlanParams(network_ms=2)) == {"network_ms": "2"}
    params, ignored = decode(PlanParams, {"network_ms": "2", "cpu_workers": "3"})
    assert ignored == [] and params.stages == WorkerStages(network_ms=2.0, cpu_workers=3)


def test_stage_times_are_canonical_floats() -> None:
    assert WorkerStages(network_ms=2, pre_ms=1) == WorkerStages(network_ms=2.0, pre_ms=1.0)
    assert isinstance(WorkerStages(pre_ms=1).pre_ms, float)
    assert STAGE_FIELDS == ("network_ms", "pre_ms", "post_ms", "cpu_workers")


def test_the_time_outside_the_gpu_is_refused_by_one_rule_everywhere() -> None:
    stages = WorkerStages(network_ms=10.0, pre_ms=20.0, post_ms=5.0)
    sentence = stages.budget_problem(6.0, 50.0)
    assert sentence == (
        "the time outside the GPU (2 x 10 ms network + 20 ms pre + 5 ms post + 6 ms overhead "
        "= 51 ms) leaves nothing of the 50 ms budget for the GPU"
    )
    assert stages.budget_problem(4.0, 50.0) is None  # 49 ms leaves 1 ms
    # The same sentence from a request and from a link, which resets the parts that take time.
    with pytest.raises(BadInput) as caught:
        Request(curve=SERVER, criteria=Criteria(overhead_ms=6.0), stages=stages)
    assert sentence in caught.value.problems
    link = {"overhead_ms": "6", "network_ms": "10", "pre_ms": "20", "post_ms": "5"}
    params, ignored = decode(PlanParams, link)
    assert ignored == [f"ignored overhead_ms, network_ms, pre_ms, post_ms: {sentence}"]
    assert params == PlanParams()
    # The overhead alone: the criteria say it the same way.
    with pytest.raises(BadInput) as alone:
        Criteria(budget_ms=10.0, overhead_ms=12.0)
    assert alone.value.problems == [NO_STAGES.budget_problem(12.0, 10.0)]
    assert "(12 ms overhead) leaves nothing of the 10 ms budget" in alone.value.problems[0]
    # A fixed objective takes the stages as given.
    Request(curve=SERVER, criteria=Criteria(overhead_ms=6.0), stages=stages, slo_ms=10.0)


def test_a_stored_scenario_keeps_its_flat_form_and_old_ones_read_back() -> None:
    stages = WorkerStages(network_ms=2.0, pre_ms=1.0, cpu_workers=2)
    s = Scenario(latency_ms=(1.0, 2.0), sessions=2, stages=stages)
    doc = scenario_dict(s)
    assert "stages" not in doc and {k: doc[k] for k in STAGE_FIELDS} == {
        "network_ms": 2.0, "pre_ms": 1.0, "post_ms": 0.0, "cpu_workers": 2,
    }  # fmt: skip
    assert list(doc).index("network_ms") < list(doc).index("memory_batch_limit")
    assert scenario_from_dict(doc) == s
    first_wave = {k: v for k, v in doc.items() if k not in STAGE_FIELDS}
    assert scenario_from_dict(first_wave) == replace(s, stages=NO_STAGES)


def test_a_study_stored_before_still_finds_its_cells(tmp_path: Path) -> None:
    path = tmp_path / "store.duckdb"
    path.write_bytes(gzip.decompress((COMPAT / "store.duckdb.gz").read_bytes()))
    store = Store(path)
    study, members = load_study(store, "compat")
    keys = [c.key for c in cells(store, study)]
    assert keys == [m.key for m in members]
    assert finished_keys(store, keys) == set(keys)


def test_the_load_test_takes_every_seed_the_library_takes() -> None:
    largest = int(limits.SEED.high)
    assert LoadTestOptions(seed=largest).seed == largest
    with pytest.raises(BadInput, match="the seed must be a whole number from 0 to"):
        LoadTestOptions(seed=largest + 1)
    with pytest.raises(BadInput, match="the last must be at most"):
        LoadTestOptions(seed=largest, seeds=2)


def test_the_load_test_holds_its_network_and_threads_and_measures_its_cpu_work() -> None:
    options = LoadTestOptions(camera="64x36", stages=WorkerStages(network_ms=1.5, cpu_workers=3))
    table = (1.0,) * 64
    scenario = options.scenario(table, 2, "batch-all", 0, 2.0, 0.5)
    assert scenario.stages == WorkerStages(network_ms=1.5, pre_ms=2.0, post_ms=0.5, cpu_workers=3)
    plain = replace(options, camera=None).scenario(table, 2, "batch-all", 0, 2.0, 0.5)
    assert plain.stages == WorkerStages(network_ms=1.5)  # no camera: no CPU work, no threads
    with pytest.raises(BadInput, match="pre_ms and post_ms are not options"):
        LoadTestOptions(stages=WorkerStages(pre_ms=2.0))
    with pytest.raises(BadInput, match="CPU work needs 1 to 64 CPU threads"):
        LoadTestOptions(camera="64x36", stages=WorkerStages(cpu_workers=0))
