"""A cascade's batch time split by model (SPEC §6.3): worked out again from a run's
records, the split ends where the engines ended each batch, gives each later model its
table's time at the batch's inputs, and is shown by ``planner simulate`` (text and JSON)
and on the Simulate page's timeline."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from jsonschema import Draft202012Validator

from planner.cli.schema import schema
from planner.sim.cascade import CascadeModel
from planner.sim.crops import Crops
from planner.sim.engine_fast import run_fast
from planner.sim.engine_reference import run_reference
from planner.sim.scenario import Scenario, Sharing
from planner.sim.simulate import simulate
from planner.sim.split import model_ends, model_shares, model_times
from planner.views.simulation import simulation_view

from .test_cascade import CLASSIFIER, DETECTOR

FIRST = tuple(float(v) for v in DETECTOR.table(64))
THEN = tuple(float(v) for v in CLASSIFIER.table(16))  # large inputs split into calls


def _scenario(**changes: Any) -> Scenario:
    chain = (
        CascadeModel(THEN, Crops("poisson", mean=2.5), "classifier"),
        CascadeModel(THEN, Crops(k=2), "ocr"),
    )
    base = Scenario(latency_ms=FIRST, sessions=10, policy="batch-all", duration_s=2.0, seed=4,
                    cascade=chain)  # fmt: skip
    return base.with_(**changes)


@pytest.mark.parametrize("engine", [run_fast, run_reference])
@pytest.mark.parametrize("queue", ["newest", "all"])
@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("spread", [False, True])
def test_the_split_ends_each_batch_where_the_engine_ended_it(
    engine: Any, queue: str, shared: bool, spread: bool
) -> None:
    sharing = Sharing.of("time-slicing", cotenants=(0.5,)) if shared else Sharing()
    scenario = _scenario(queue=queue, sharing=sharing, spread=(0.15,) * 64 if spread else ())
    records = engine(scenario)
    assert records.batch_size.size > 10
    ends = model_ends(scenario, records)
    assert ends.shape == (records.batch_size.size, 3)
    assert np.array_equal(ends[:, -1], records.batch_end)  # to the last bit
    times = model_times(scenario, records)
    assert np.all(times > 0)
    # Time-slicing only stretches the work: every model takes at least its exclusive time.
    if not spread:
        assert np.all(times[:, 0] >= np.asarray(FIRST)[records.batch_size - 1] - 1e-9)


def test_a_fixed_chain_gives_each_model_its_table_at_the_batch_inputs() -> None:
    then = tuple(float(v) for v in CLASSIFIER.table(256))
    scenario = _scenario(cascade=(CascadeModel(then, Crops(k=3), "classifier"),))
    records = run_fast(scenario)
    times = model_times(scenario, records)
    b = records.batch_size
    assert np.allclose(times[:, 0], np.asarray(FIRST)[b - 1], rtol=0.0, atol=1e-9)
    assert np.allclose(times[:, 1], np.asarray(then)[3 * b - 1], rtol=0.0, atol=1e-9)


def test_drawn_crops_make_the_later_models_time_vary_and_shares_add_up() -> None:
    scenario = _scenario()
    results = simulate(scenario)
    shares = model_shares(scenario, results.records, "detector")
    assert [s.model for s in shares] == ["detector", "classifier", "ocr"]
    assert sum(s.share for s in shares) == pytest.approx(1.0)
    times = model_times(scenario, results.records)
    assert times[:, 1].std() > 0  # Poisson crops: batches of one size differ
    for j, share in enumerate(shares):
        assert share.mean_ms == pytest.approx(float(times[:, j].mean()))
        assert share.max_ms == pytest.approx(float(times[:, j].max()))
    # A run without a cascade has no split to show.
    plain = simulate(scenario.with_(cascade=()))
    assert model_shares(plain.scenario, plain.records) == ()
    assert simulation_view(plain, DETECTOR).models == ()
    text = simulation_view(results, DETECTOR, first_model="detector").text
    at = text.index(next(x for x in text if x.startswith("each batch's time by model")))
    assert [x.split()[0] for x in text[at + 1 : at + 4]] == ["detector", "classifier", "ocr"]


def _stored(db_path: Any) -> tuple[str, str]:
    from planner.store.repository import Store

    store = Store(db_path)
    try:
        curves = store.curves()
        return curves[0].id, curves[1].id
    finally:
        store.close()


def test_the_command_line_prints_the_split_and_its_json(cli: Any, db_path: Any) -> None:
    first, second = _stored(db_path)
    common = ("simulate", "--curve", first, "--sessions", "4", "--duration-s", "2")
    doc = cli(*common, "--cascade", f"{second}:poisson=2", "--json").json
    problems = list(Draft202012Validator(schema("simulate")).iter_errors(doc))
    assert problems == []
    models = doc["cascade_models"]
    assert len(models) == 2  # the curve's model, then the one on its crops
    assert sum(m["share"] for m in models) == pytest.approx(1.0, abs=1e-3)
    assert all(m["mean_ms"] <= m["p99_ms"] <= m["max_ms"] for m in models)
    assert cli(*common, "--json").json["cascade_models"] is None
    run = cli(*common, "--cascade", f"{second}:3")
    assert run.status == 0, run.err
    assert "each batch's time by model" in run.out


def test_the_simulate_page_draws_each_model_of_a_batch_on_the_timeline(app: Any) -> None:
    from planner.links.urls import encode
    from planner.plan.params import SimulateParams

    from .test_dashboard_pages import open_page
    from .test_plan_worker import _ids

    first, other = _ids()
    linked = SimulateParams(curve=first, sessions=4, duration_s=2.0, cascade=(f"{other}:3",))
    open_page(app, "simulate.py", encode(linked))
    assert not app.exception
    spec = json.loads(app.get_by_key("sim_chart_timeline_0").proto.spec)
    names = [t.get("name", "") for t in spec["data"]]
    gpu = [n for n in names if n.startswith("batch on the GPU")]
    assert len(gpu) == 2 and "classifier" in gpu[1]
    table = app.get_by_key("sim_models_0")
    assert table is not None
    # Without the chain, the batches are drawn whole.
    app.button(key="sim_cascade_remove_0").click()
    app.run()
    assert not app.exception
    spec = json.loads(app.get_by_key("sim_chart_timeline_0").proto.spec)
    assert not any(t.get("name", "").startswith("batch on the GPU") for t in spec["data"])
