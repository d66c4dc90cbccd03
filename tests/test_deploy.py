"""Deployment settings (SPEC §5.3): every file parses with a parser of its format, states
its assumption, and carries the recommendation's numbers, for every sharing mode and
every batching policy.

The Triton snippet is parsed against Triton's own schema: the fields below are those of
``ModelConfig``, ``ModelDynamicBatching`` and ``ModelInstanceGroup`` in
triton-inference-server/common, ``protobuf/model_config.proto`` (field names, numbers and
types as declared there), so a misspelt or invented field fails to parse.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
import yaml
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format

from planner.curves.cards import Card
from planner.curves.curve import Point
from planner.curves.fit import fit_curve
from planner.errors import BadInput
from planner.plan.deploy import choose_option, deployment, mps_memory_mb, option_key
from planner.plan.outcomes import Recommendation
from planner.plan.recommend import recommend
from planner.plan.request import Criteria, Request
from planner.sim.policies import POLICIES
from planner.sim.scenario import Sharing

CURVE = fit_curve([Point(1, 8.0), Point(2, 12.0), Point(4, 20.0), Point(8, 36.0)])
SHARINGS = (
    Sharing(),
    Sharing.of("time-slicing", cotenants=(0.3, 0.2)),
    Sharing.of("mps", mps_share=50.0),
    Sharing.of("mig", mig_profile="3g.40gb", mig_slices=3, mig_total=7, mig_instances=2),
)
CARD = Card(name="a100-80gb", memory_gb=80.0)


def quick(**changes: Any) -> Recommendation:
    fields: dict[str, Any] = {
        "curve": CURVE,
        "criteria": Criteria(budget_ms=60.0, min_fps=25.0),
        "sharings": SHARINGS,
        "seeds": 1,
        "duration_s": 2.0,
        "max_sessions": 10,
        **changes,
    }
    return recommend(Request(**fields))


@pytest.fixture(scope="module")
def result() -> Recommendation:
    return quick()


def triton_schema() -> Any:
    """A ``ModelConfig`` message class with the fields of Triton's model_config.proto that
    the snippet may use (names, numbers and types as declared there)."""
    proto = descriptor_pb2.FileDescriptorProto(name="model_config.proto", package="inference")
    f = descriptor_pb2.FieldDescriptorProto
    batching = proto.message_type.add(name="ModelDynamicBatching")
    batching.field.add(
        name="preferred_batch_size", number=1, type=f.TYPE_INT32, label=f.LABEL_REPEATED
    )
    batching.field.add(
        name="max_queue_delay_microseconds", number=2, type=f.TYPE_UINT64, label=f.LABEL_OPTIONAL
    )
    group = proto.message_type.add(name="ModelInstanceGroup")
    kind = group.enum_type.add(name="Kind")
    for number, name in enumerate(("KIND_AUTO", "KIND_GPU", "KIND_CPU", "KIND_MODEL")):
        kind.value.add(name=name, number=number)
    group.field.add(name="name", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    group.field.add(name="count", number=2, type=f.TYPE_INT32, label=f.LABEL_OPTIONAL)
    group.field.add(
        name="kind",
        number=4,
        type=f.TYPE_ENUM,
        type_name=".inference.ModelInstanceGroup.Kind",
        label=f.LABEL_OPTIONAL,
    )
    config = proto.message_type.add(name="ModelConfig")
    config.field.add(name="name", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    config.field.add(name="max_batch_size", number=4, type=f.TYPE_INT32, label=f.LABEL_OPTIONAL)
    config.field.add(
        name="instance_group",
        number=7,
        type=f.TYPE_MESSAGE,
        type_name=".inference.ModelInstanceGroup",
        label=f.LABEL_REPEATED,
    )
    config.field.add(
        name="dynamic_batching",
        number=11,
        type=f.TYPE_MESSAGE,
        type_name=".inference.ModelDynamicBatching",
        label=f.LABEL_OPTIONAL,
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("inference.ModelConfig"))


MODEL_CONFIG = triton_schema()


def env_values(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines of an environment file, comments left out."""
    out = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key] = value
    return out


def read(file: Any) -> Any:
    """A deployment file parsed by a parser of its format."""
    if file.format == "json":
        return json.loads(file.text)
    if file.format == "yaml":
        return yaml.safe_load(file.text)
    if file.format == "pbtxt":
        return text_format.Parse(file.text, MODEL_CONFIG())
    assert file.format == "env"
    return env_values(file.text)


@pytest.mark.parametrize("mode", [s.mode for s in SHARINGS])
@pytest.mark.parametrize("policy", list(POLICIES))
def test_every_option_deploys_with_the_recommendations_numbers(
    result: Recommendation, policy: str, mode: str
) -> None:
    option = next(o for o in result.options if (o.policy, o.mode) == (policy, mode))
    assert option.cap >= 1  # the criteria leave every option a seat, so each deploys
    files = {f.name: f for f in deployment(result, option, CARD)}
    for file in files.values():
        read(file)  # parses
        assert file.assumption and file.assumption[:40] in " ".join(file.text.split())
    scenario = result.request.scenario(policy, option.sharing, "central", option.cap, 0)

    worker = read(files["worker.json"])
    assert worker["comment"] == files["worker.json"].assumption
    assert worker["session_cap"] == option.cap
    assert worker["seats_per_card"] == option.seats_per_card
    assert worker["instances_per_card"] == option.per_card
    assert worker["policy"] == policy and worker["sharing"]["mode"] == mode
    assert worker["policy_parameters"] == {
        name: scenario.param(name) for name in POLICIES[policy].params
    }
    assert worker["criteria"]["latency_budget_ms"] == 60.0

    expected_files = {"worker.json"}
    if policy in ("triton", "max-batch", "batch-all"):
        expected_files.add("config.pbtxt")
        config = read(files["config.pbtxt"])
        if policy == "batch-all":
            assert config.max_batch_size == option.cap
            assert config.dynamic_batching.max_queue_delay_microseconds == 0
        else:
            assert config.max_batch_size == scenario.param("max_batch")
            delay = scenario.param("max_queue_delay_us") if policy == "triton" else 0
            assert config.dynamic_batching.max_queue_delay_microseconds == delay
        assert [(g.count, g.kind) for g in config.instance_group] == [(1, 1)]  # KIND_GPU
    if mode == "time-slicing":
        expected_files.add("time-slicing.yaml")
        plugin = read(files["time-slicing.yaml"])
        assert plugin["version"] == "v1"
        (resource,) = plugin["sharing"]["timeSlicing"]["resources"]
        assert resource == {"name": "nvidia.com/gpu", "replicas": 3}  # us + 2 co-tenants
        assert plugin["sharing"]["timeSlicing"]["failRequestsGreaterThanOne"] is True
    if mode == "mps":
        expected_files.add("mps.env")
        env = read(files["mps.env"])
        assert float(env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"]) == option.sharing.settings.mps_share
        # 50% of 80 GB: 40960 MB, for device 0.
        assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=40960M"
    if mode == "mig":
        expected_files.add("mig-parted.yaml")
        mig = read(files["mig-parted.yaml"])
        (devices,) = mig["mig-configs"]["seat-planner"]
        assert devices == {
            "devices": "all",
            "mig-enabled": True,
            "mig-devices": {"3g.40gb": option.per_card},
        }
        assert option.per_card == 2
    assert set(files) == expected_files


def test_a_batching_policy_with_its_own_parameters_deploys_them() -> None:
    result = quick(
        policies=("triton",), sharings=(Sharing(),), max_batch=3, max_queue_delay_us=1500.4
    )
    (triton,) = [f for f in deployment(result) if f.name == "config.pbtxt"]
    config = read(triton)
    assert config.max_batch_size == 3
    assert config.dynamic_batching.max_queue_delay_microseconds == 1500
    assert "1500.4 µs rounded to whole µs" in triton.text


def test_an_objective_policy_deploys_its_gpu_side_objective() -> None:
    result = quick(policies=("deadline",), sharings=(Sharing(),))
    worker = read(deployment(result)[0])
    # The budget minus the per-frame overhead (0 here): the objective simulated.
    assert worker["policy_parameters"] == {"slo_ms": 60}
    assert math.isclose(result.request.objective_ms, 60.0)


def test_mig_for_other_jobs_configures_our_one_instance_and_says_so() -> None:
    result = quick(policies=("oldest-first",), sharings=(SHARINGS[3],), other_jobs=True)
    mig = next(f for f in deployment(result) if f.name == "mig-parted.yaml")
    assert read(mig)["mig-configs"]["seat-planner"][0]["mig-devices"] == {"3g.40gb": 1}
    assert "the rest of the card is other jobs'" in mig.assumption


def test_mps_without_the_cards_memory_says_what_to_set() -> None:
    result = quick(policies=("oldest-first",), sharings=(SHARINGS[2],))
    option = result.options[0]
    assert mps_memory_mb(option, None) is None
    env = next(f for f in deployment(result, option, None) if f.name == "mps.env")
    assert "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT" not in read(env)
    assert "# CUDA_MPS_PINNED_DEVICE_MEM_LIMIT: the card's memory is not in" in env.text


def test_an_option_is_chosen_by_policy_and_mode(result: Recommendation) -> None:
    assert choose_option(result, None) is result.recommended
    holding = [o for o in result.options if o.cap >= 1]
    last = holding[-1]
    assert choose_option(result, option_key(last)) is last
    assert choose_option(result, f" {last.policy.upper()} ").policy == last.policy
    with pytest.raises(BadInput, match="has no option 'fastest,exclusive'"):
        choose_option(result, "fastest,exclusive")
    nothing = quick(criteria=Criteria(budget_ms=1.0), policies=("oldest-first",))
    with pytest.raises(BadInput, match="nothing to deploy"):
        choose_option(nothing, None)
    with pytest.raises(BadInput, match="holds no session; there is nothing to deploy"):
        deployment(nothing, nothing.options[0])
