"""The recommendation with the worker beyond the GPU (SPEC §5.1): objectives net of the
time outside the GPU, the CPU pool and memory as binding constraints, the stage
breakdown at the cap, and the command line's options for them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from planner.curves.curve import Point
from planner.curves.fit import fit_curve
from planner.errors import BadInput
from planner.plan.recommend import recommend
from planner.plan.request import Criteria, Request
from planner.sim.scenario import Sharing
from planner.sim.stages import STAGE_FIELDS, WorkerStages
from tests.conftest import SAMPLES, needs_samples

SERVER = fit_curve([Point(1, 8.0), Point(3, 20.0)])
# The laptop's 256x144 FP16 points (batching pays), with memory: 1.5 GB + 0.5 GB per frame.
CHEAP = fit_curve([Point(1, 4.69, memory_mb=2000.0), Point(4, 9.29, memory_mb=3500.0)])
QUICK: dict[str, Any] = {"seeds": 3, "duration_s": 10.0}


def test_one_cpu_thread_decoding_12_ms_lowers_the_cap_and_is_named() -> None:
    """One thread decodes 1000 / 12 = 83 frames a second: 2 sessions at 30 fps, not 3."""
    plain = recommend(Request(curve=SERVER, criteria=Criteria(budget_ms=100.0)))
    staged = recommend(
        Request(
            curve=SERVER,
            criteria=Criteria(budget_ms=100.0),
            stages=WorkerStages(cpu_workers=1, pre_ms=12.0),
        )
    )
    assert plain.recommended is not None and staged.recommended is not None
    assert staged.recommended.cap == 2 < plain.recommended.cap
    for option in staged.options:
        assert option.cap == 2
        assert option.failures[0].constraint == "cpu"
        assert option.binding_constraint.startswith("at 3 sessions the one CPU thread is busy")
        assert "with unlimited threads it would meet the criteria" in option.binding_constraint
    assert staged.recommended.failures[0].sessions == 3
    assert "the one CPU thread is busy" in staged.summary


def test_the_cpu_pool_is_not_named_where_unlimited_threads_fail_too() -> None:
    # Four threads of 2 ms decode 2,000 frames a second: the GPU stops the next seat.
    result = recommend(
        Request(
            curve=SERVER,
            criteria=Criteria(budget_ms=100.0),
            stages=WorkerStages(cpu_workers=4, pre_ms=2.0),
        )
    )
    assert all(o.failures[0].constraint != "cpu" for o in result.options)
    assert result.recommended is not None and result.recommended.at_cap is not None
    cpu = result.recommended.at_cap.cpu
    assert cpu is not None and cpu.busy_fraction < 0.95


def test_policy_objectives_get_the_budget_less_the_time_outside_the_gpu() -> None:
    request = Request(
        curve=SERVER,
        criteria=Criteria(budget_ms=100.0, overhead_ms=3.0),
        stages=WorkerStages(network_ms=10.0, pre_ms=12.0, post_ms=5.0),
    )
    assert request.non_gpu_ms == 2 * 10.0 + 12.0 + 5.0 + 3.0
    assert request.objective_ms == 100.0 - 40.0
    scenario = request.scenario("deadline", Sharing(), "central", 2, 0)
    assert scenario.slo_ms == 60.0
    stages = scenario.stages
    assert (stages.network_ms, stages.pre_ms, stages.post_ms) == (10.0, 12.0, 5.0)


def test_memory_is_named_when_the_co_tenants_leave_too_little_of_the_card() -> None:
    # Idle co-tenants (duty 0) that hold 4 GB of an 8 GB card: 3.6 GB usable, so no batch
    # holds more than 4 frames; batch-all would hold more sessions without that limit.
    beside = Sharing.of("time-slicing", cotenants=(0.0,), cotenant_memory_mb=(4096.0,))
    result = recommend(
        Request(
            curve=CHEAP,
            sharings=(Sharing(), beside),
            policies=("batch-all",),
            card_memory_gb=8.0,
            **QUICK,
        )
    )
    by_mode = {o.mode: o for o in result.options}
    squeezed, whole = by_mode["time-slicing"], by_mode["exclusive"]
    assert squeezed.cap < whole.cap
    first = squeezed.failures[0]
    assert first.constraint == "memory" and first.sessions == squeezed.cap + 1
    assert first.detail.startswith(
        "batch 5 needs 3.9 GB of the 3.6 GB that fit beside the co-tenants, so no batch holds "
        "more than 4 frames (without that limit"
    )
    assert whole.failures[0].constraint != "memory"  # 11 frames fit on the whole card
    assert any("less the co-tenants' 4.0 GB" in a for a in result.assumptions)


def test_a_mig_instance_too_small_for_batch_one_holds_no_seat() -> None:
    big = fit_curve([Point(1, 4.69, memory_mb=6000.0), Point(4, 9.29, memory_mb=7500.0)])
    mig = Sharing.of("mig", mig_profile="1g.5gb", mig_slices=1, mig_total=7, mig_memory_gb=5.0)
    result = recommend(Request(curve=big, sharings=(Sharing(), mig), card_memory_gb=40.0, **QUICK))
    for option in (o for o in result.options if o.mode == "mig"):
        assert (option.cap, option.cap_low, option.cap_high) == (0, 0, 0)
        assert option.binding_constraint == (
            "at 1 session batch 1 needs 5.9 GB of the 4.5 GB that fit in a 1g.5gb instance: "
            "no batch fits"
        )
    assert result.recommended is not None and result.recommended.mode == "exclusive"
    only_mig = recommend(Request(curve=big, sharings=(mig,), card_memory_gb=40.0, **QUICK))
    assert only_mig.recommended is None
    assert "no batch fits" in only_mig.summary


def test_the_recommended_option_carries_its_latency_by_stage_at_the_cap() -> None:
    result = recommend(
        Request(
            curve=SERVER,
            criteria=Criteria(budget_ms=100.0, overhead_ms=2.0),
            stages=WorkerStages(network_ms=5.0, pre_ms=3.0, post_ms=1.0, cpu_workers=2),
            **QUICK,
        )
    )
    best = result.recommended
    assert best is not None and best.at_cap is not None and best.at_cap.stages is not None
    doc = best.as_dict()["stages_ms_at_cap"]
    mean, tail = doc["mean"], doc["tail"]
    assert mean["network"] == 10.0 and mean["overhead"] == 2.0
    assert mean["pre"] >= 3.0 and mean["post"] >= 1.0 and mean["gpu"] >= 8.0
    assert sum(tail.values()) >= sum(mean.values())
    # The detail comes from the same runs: the figures at the cap are unchanged.
    assert best.at_cap == best.history[best.cap - 1]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"pre_ms": -1.0}, "pre_ms) must be from 0 to 60000 ms"),
        ({"cpu_workers": 1025}, "a whole number from 0 to 1024 (0: unlimited)"),
        ({"network_ms": 30.0}, "leaves nothing of the 50 ms budget for the GPU"),
        ({"card_memory_gb": float("nan")}, "the card's memory must be a positive number of GB"),
    ],
)
def test_bad_worker_values_are_refused(changes: dict[str, Any], message: str) -> None:
    stages = {k: v for k, v in changes.items() if k in STAGE_FIELDS}
    others = {k: v for k, v in changes.items() if k not in STAGE_FIELDS}
    with pytest.raises(BadInput) as caught:
        Request(curve=SERVER, stages=WorkerStages(**stages), **others)
    assert any(message in p for p in caught.value.problems), caught.value.problems


# -- the command line ---------------------------------------------------------------------


def _server_id(cli: Any) -> str:
    curves = cli("curves", "list", "--json").json
    return next(c["id"] for c in curves if c["card"] == "server-24gb")


def test_cli_recommend_with_one_decoding_thread_names_the_cpu_pool(cli) -> None:
    server = _server_id(cli)
    plain = cli("recommend", "--curve", server, "--budget-ms", "100", "--json")
    staged = cli(
        "recommend",
        "--curve",
        server,
        "--cpu-workers",
        "1",
        "--pre-ms",
        "12",
        "--budget-ms",
        "100",
        "--json",
    )
    assert plain.status == 0 and staged.status == 0, staged.err
    before, after = plain.json["recommended"], staged.json["recommended"]
    assert after["cap"] == 2 < before["cap"]
    assert after["binding_constraint"].startswith("at 3 sessions the one CPU thread is busy")
    assert after["cpu_busy_fraction_at_cap"] > 0.5
    assert set(after["stages_ms_at_cap"]["mean"]) == {
        "network",
        "pre",
        "gpu_wait",
        "gpu",
        "post",
        "overhead",
    }
    text = cli(
        "recommend", "--curve", server, "--cpu-workers", "1", "--pre-ms", "12", "--budget-ms", "100"
    )
    assert "end-to-end latency at 2 sessions by stage" in text.out
    assert "pre (wait + work)" in text.out


def test_cli_memory_from_an_imported_file_binds_beside_the_co_tenants(cli, tmp_path) -> None:
    upload = tmp_path / "cheap.csv"
    upload.write_text("batch,latency_ms,memory_mb\n1,4.69,2000\n4,9.29,3500\n")
    imported = cli("curves", "import", upload, "--model", "m", "--card", "laptop-8gb", "--json")
    assert imported.status == 0, imported.err
    curve_id = imported.json[0]["id"]
    run = cli(
        "recommend",
        "--curve",
        curve_id,
        "--policies",
        "batch-all",
        "--modes",
        "time-slicing",
        "--cotenants",
        "0",
        "--cotenant-memory-mb",
        "4096",
        "--seeds",
        "3",
        "--duration-s",
        "10",
        "--json",
    )
    assert run.status == 0, run.err
    option = run.json["options"][0]
    assert option["binding_constraint"].startswith("at ")
    assert (
        "batch 5 needs 3.9 GB of the 3.6 GB that fit beside the co-tenants"
        in (option["binding_constraint"])
    )


def test_memory_in_a_nexus_profile_reaches_the_recommendations_assumptions(
    cli: Any, tmp_path: Path
) -> None:
    # A made-up 2018-layout profile: 1 GiB + 64 MiB per frame, batches 1-40.
    rows = [f"{b},{4000 + 900 * b},10,{(1024 + 64 * b) * 2**20}" for b in range(1, 41)]
    profile = tmp_path / "nexus_profile.txt"
    head = "caffe:made_up:1\nTesla_T4\nForward latency\nbatch,latency(us),std(us),memory(B)\n"
    profile.write_text(head + "\n".join(rows) + "\n")
    imported = cli("curves", "import", profile, "--card", "t4", "--json")
    assert imported.status == 0, imported.err
    assert imported.json[0]["points"][-1]["memory_mb"] == 1024 + 64 * 40
    run = cli("recommend", "--curve", imported.json[0]["id"], "--policies", "batch-all",
              "--seeds", "1", "--duration-s", "2", "--json")  # fmt: skip
    assert run.status == 0, run.err
    assert any(
        "the least-squares line through 40 measured batches" in a for a in run.json["assumptions"]
    )


@needs_samples
def test_cli_memory_flows_from_a_nexus_profile(cli) -> None:
    sample = SAMPLES / "nexus_profile_2018__TITAN_X_Pascal__caffe_vgg16_1.txt"
    imported = cli("curves", "import", sample, "--card", "t4", "--json")
    assert imported.status == 0, imported.err
    run = cli(
        "recommend",
        "--curve",
        imported.json[0]["id"],
        "--policies",
        "batch-all",
        "--seeds",
        "1",
        "--duration-s",
        "2",
        "--json",
    )
    assert run.status == 0, run.err
    assert any(
        a.startswith(
            "GPU memory: memory(b) = 0.8 GB + 64.0 MB x b, the least-squares line "
            "through 174 measured batches; a batch fits in 90% of the card's 16.0 GB"
        )
        for a in run.json["assumptions"]
    )


def test_cli_simulate_json_carries_the_stage_breakdown_and_the_cpu_pool(cli) -> None:
    run = cli(
        "simulate",
        "--points",
        "1:8,3:20",
        "--sessions",
        "3",
        "--policy",
        "batch-all",
        "--network-ms",
        "5",
        "--pre-ms",
        "12",
        "--post-ms",
        "2",
        "--cpu-workers",
        "1",
        "--duration-s",
        "5",
        "--json",
    )
    assert run.status == 0, run.err
    doc = run.json
    pool = doc["cpu_pool"]
    assert pool["workers"] == 1 and pool["busy_fraction"] > 0.95
    assert pool["pre"]["jobs"] > 0 and pool["post"]["jobs"] > 0
    assert pool["pre"]["wait_p99_ms"] >= pool["pre"]["wait_mean_ms"] >= 0
    stages = doc["stages_ms"]
    assert stages["mean"]["network"] == 10.0 and stages["percentile"] == 99.0
    assert sum(stages["mean"].values()) == pytest.approx(doc["e2e_latency_ms"]["p50"], rel=0.5)
    text = cli(
        "simulate",
        "--points",
        "1:8,3:20",
        "--sessions",
        "3",
        "--pre-ms",
        "12",
        "--cpu-workers",
        "1",
        "--duration-s",
        "2",
    )
    assert "CPU pre jobs:" in text.out and "end-to-end latency by stage" in text.out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--pre-ms", "-1"), "--pre-ms '-1' must be from 0 to 60000"),
        (("--network-ms", "abc"), "--network-ms 'abc' is not a number"),
        (("--cpu-workers", "2000"), "--cpu-workers '2000' must be a whole number from 0 to 1024"),
        (("--cpu-workers", "1.5"), "--cpu-workers '1.5' is not a whole number"),
        (
            ("--mode", "time-slicing", "--cotenants", "0.5", "--cotenant-memory-mb", "lots"),
            "--cotenant-memory-mb: 'lots' is not a number of MB",
        ),
        (("--mps-memory-mb", "100"), "--mps-memory-mb needs --mode mps"),
        (("--mode", "mps", "--mps-memory-mb", "-5"), "--mps-memory-mb '-5' must be from"),
    ],
)
def test_cli_simulate_refuses_bad_worker_values(cli, extra: tuple[str, ...], message: str) -> None:
    run = cli("simulate", "--points", "1:8,3:20", "--sessions", "2", *extra)
    assert run.status == 2
    assert message in run.err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--post-ms", "-3"), "--post-ms: must be from 0 to 60000"),
        (("--cpu-workers", "1025"), "--cpu-workers: must be from 0 to 1024"),
        (
            ("--cotenants", "0.5", "--cotenant-memory-mb", "4GB"),
            "--cotenant-memory-mb: item 1 not a number",
        ),
        (("--mps-memory-mb", "lots"), "--mps-memory-mb: not a number"),
        (("--network-ms", "25"), "leaves nothing of the 50 ms budget for the GPU"),
    ],
)
def test_cli_recommend_and_link_refuse_bad_worker_values(
    cli, extra: tuple[str, ...], message: str
) -> None:
    for command in ("recommend", "link"):
        args = (command, "--points", "1:8,3:20", *extra)
        if command == "link":
            args = (*args, "--save")
        run = cli(*args)
        assert run.status == 2, (command, run.out)
        assert message in run.err, (command, run.err)
