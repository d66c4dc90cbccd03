"""Measuring on every card type of a Ray cluster: one GPU task per accelerator type, on a
node of that type, curves brought back with the node's metadata and stored centrally.

The cluster is Ray's own test cluster (``ray.cluster_utils.Cluster``): nodes that declare
a logical GPU and an ``accelerator_type:*`` resource stand in for GPU machines, and the
harness runs on their CPU at a tiny input.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.errors import BadInput
from planner.measure.cluster import accelerator_types, measure_on_cluster
from planner.measure.options import MeasureOptions
from planner.store.repository import Store

pytestmark = pytest.mark.torch

TINY = MeasureOptions(batches=(1, 2), precisions=("fp32",), resolution="32x18", device="cpu",
                      warmup=1, rounds=1, repetitions=2)  # fmt: skip


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason="the cluster extra (pip install -e '.[cluster]')")
    from ray.cluster_utils import Cluster

    home = tmp_path_factory.mktemp("ray-home")
    saved = {k: os.environ.get(k) for k in ("HOME", "RAY_AUTH_MODE")}
    os.environ["HOME"] = str(home)  # Ray writes its files under ~/.ray
    os.environ["RAY_AUTH_MODE"] = "disabled"
    made = Cluster(initialize_head=True, connect=True, head_node_args={"num_cpus": 1})
    for kind in ("FAKE_A", "FAKE_B"):
        made.add_node(num_cpus=1, num_gpus=1, resources={f"accelerator_type:{kind}": 1})
    made.wait_for_nodes()
    try:
        yield made
    finally:
        ray.shutdown()
        made.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def test_each_accelerator_type_is_measured_on_a_node_of_its_type(cluster: Any) -> None:
    import ray

    assert accelerator_types(ray.cluster_resources()) == ["FAKE_A", "FAKE_B"]
    result = measure_on_cluster(TINY)
    kinds = sorted(c.environment["cluster_node"]["accelerator_type"] for c in result.curves)
    assert kinds == ["FAKE_A", "FAKE_B"]
    head = ray.get_runtime_context().get_node_id()
    nodes = {c.environment["cluster_node"]["ray_node_id"] for c in result.curves}
    assert len(nodes) == 2 and head not in nodes  # never the node without a GPU
    for curve in result.curves:
        assert [p.batch for p in curve.points] == [1, 2]


def test_asking_for_a_type_the_cluster_lacks_is_refused(cluster: Any) -> None:
    with pytest.raises(BadInput, match="no A100 nodes"):
        measure_on_cluster(TINY, accelerators=["A100"])


def test_measure_cluster_command_stores_the_curves_centrally(
    cluster: Any, cli: Any, db_path: Path
) -> None:
    tiny = ("--device", "cpu", "--resolution", "32x18", "--batches", "1,2", "--precision",
            "fp32", "--warmup", "1", "--rounds", "1", "--repetitions", "2")  # fmt: skip
    run = cli("measure", "--cluster", "ray", "--accelerators", "FAKE_B", *tiny, "--store",
              "--json")  # fmt: skip
    assert run.status == 0, run.err
    (doc,) = run.json
    assert doc["environment"]["cluster_node"]["accelerator_type"] == "FAKE_B"
    with Store(db_path) as store:
        stored = store.curve(doc["id"])
    assert stored.environment["cluster_node"]["accelerator_type"] == "FAKE_B"


def test_cluster_options_without_cluster_are_refused(cli: Any) -> None:
    run = cli("measure", "--accelerators", "A100", "--device", "cpu")
    assert run.status == 2 and "need --cluster ray" in run.err
