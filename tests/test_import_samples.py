"""Every real tool file in the shared samples directory imports correctly or is refused.

The test is parametrised over the directory listing, so a new sample is picked up at
once; it fails until its expected outcome is written down in ``EXPECTED``. Options follow
each file's provenance in ``SOURCES.md`` (batch sizes of perf_analyzer runs in
particular). Values are checked against the files themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from planner.curves.curve import Curve
from planner.curves.imports import ImportOptions, ImportResult, detect_format, read_files
from planner.errors import BadInput
from tests.conftest import SAMPLES, SAMPLES_MISSING

if not SAMPLES.is_dir():
    pytest.skip(SAMPLES_MISSING, allow_module_level=True)

Check = Callable[[ImportResult], None]


@dataclass(frozen=True)
class Imports:
    """The file imports with these options; ``check`` looks at the result."""

    check: Check
    options: ImportOptions = field(default_factory=lambda: ImportOptions(card="t4"))
    format: str | None = None  # what auto-detection must say


@dataclass(frozen=True)
class Refused:
    """The file is refused, with every one of these phrases in the reason."""

    reasons: tuple[str, ...]
    options: ImportOptions = field(default_factory=lambda: ImportOptions(card="t4"))


def by_config(result: ImportResult) -> dict[str, dict[int, float]]:
    """{model_config: {batch: latency_ms}} of a Model Analyzer import."""
    return {
        c.environment["model_config"]: dict(zip(c.batches, c.latencies, strict=True))
        for c in result.curves
    }


def only(result: ImportResult) -> Curve:
    (curve,) = result.curves
    return curve


def perf_point(
    latency: float,
    p90: float | None,
    p99: float | None,
    batch: int,
    line: int,
    load: str,
    basis: str,
) -> Check:
    """A perf_analyzer import: one point at ``batch`` taken from ``line``."""

    def check(result: ImportResult) -> None:
        curve = only(result)
        (point,) = curve.points
        assert point.batch == batch
        assert point.latency_ms == pytest.approx(latency)
        assert point.p90_ms == (None if p90 is None else pytest.approx(p90))
        assert point.p99_ms == (None if p99 is None else pytest.approx(p99))
        assert f"line {line} ({load})" in result.notes[0]
        assert basis in curve.environment["latency_basis"]
        assert curve.model == "m" and curve.card == "t4"

    return check


def nexus_profile(model: str, n: int, first: tuple[float, float, float], last: float) -> Check:
    """A Nexus import: ``n`` points, batch 1 = (latency, std, memory in MB), last latency."""

    def check(result: ImportResult) -> None:
        curve = only(result)
        assert curve.model == model and curve.card == "TITAN X (Pascal)"
        assert curve.batches == tuple(range(1, n + 1))
        p1 = curve.points[0]
        assert (p1.latency_ms, p1.std_ms, p1.memory_mb) == pytest.approx(first)
        assert curve.points[-1].latency_ms == pytest.approx(last)
        assert curve.environment["device"] == "TITAN_X_(Pascal)"
        assert "mean" in curve.environment["latency_basis"]

    return check


def check_unet34(result: ImportResult) -> None:
    configs = by_config(result)
    # 16 configs; config_7 and config_10 measured the same 55.0 ms, which is one curve.
    assert len(result.curves) == 15
    assert configs["unet34_config_5"] == {1: 56.1}
    assert configs["unet34_config_14"] == {1: 86.3}
    assert configs["unet34_config_7; unet34_config_10"] == {1: 55.0}
    assert {c.model for c in result.curves} == {"unet34"}
    assert all(c.points[0].p99_ms == c.points[0].latency_ms for c in result.curves)


def check_wav2vec(result: ImportResult) -> None:
    assert by_config(result) == {
        "wav2vec_py_config_0": {1: 2031.6},
        "wav2vec_py_config_default": {1: 1031.9},
        "wav2vec_py_config_1": {1: 3030.0},
    }


def check_add_sub_117(result: ImportResult) -> None:
    assert by_config(result) == {
        "add_sub_config_default": {1: 0.4, 2: 0.3},
        "add_sub_config_1": {1: 0.5, 2: 0.5},
        "add_sub_config_3": {1: 0.6, 2: 0.7},
        "add_sub_config_2; add_sub_config_0": {1: 0.5},
    }
    default = next(
        c for c in result.curves if c.environment["model_config"] == "add_sub_config_default"
    )
    assert default.environment["instance_group"] == "1/GPU"
    assert "max_batch_size" not in default.environment  # 1.17 has no such column


def check_add_sub_119(result: ImportResult) -> None:
    assert by_config(result) == {
        "add_sub_config_default; add_sub_config_1": {1: 0.5, 2: 0.5},
        "add_sub_config_3": {1: 0.7, 2: 0.7},
        "add_sub_config_0": {1: 0.5},
        "add_sub_config_2": {1: 0.6},
    }


def check_add_sub_133(result: ImportResult) -> None:
    assert by_config(result) == {
        "add_sub_config_default": {1: 0.5, 2: 0.7},
        "add_sub_config_1": {1: 0.6, 2: 0.6},
        "add_sub_config_3": {1: 0.8, 2: 0.8},
        "add_sub_config_0": {1: 0.6},
        "add_sub_config_2": {1: 0.8},
    }
    assert any("add_sub_config_default: used line 5 (batch 1" in n for n in result.notes)


def check_bls(result: ImportResult) -> None:
    assert by_config(result) == {
        "bls_config_6": {1: 2.2},
        "bls_config_7": {1: 2.1},
        "bls_config_5": {1: 2.0},
        "bls_config_default": {1: 1.7},
    }
    skipped = next(n for n in result.notes if "skipped" in n)
    assert "bls_config_0 (no concurrency-1 row; the lowest concurrency is 2)" in skipped


def check_ensemble(result: ImportResult) -> None:
    assert by_config(result) == {
        "ensemble_add_sub_config_1; ensemble_add_sub_config_0; ensemble_add_sub_config_2": {1: 0.8},
        "ensemble_add_sub_config_default": {1: 0.9},
    }
    default = next(c for c in result.curves if c.latencies == (0.9,))
    assert default.environment["composing_configs"] == "add_config_default, sub_config_default"
    assert any("ensemble_add_sub_config_3 (no concurrency-1 row" in n for n in result.notes)


def check_request_rate(result: ImportResult) -> None:
    assert by_config(result) == {
        "add_sub_config_5; add_sub_config_default": {1: 1.4, 2: 1.5},
        "add_sub_config_7; add_sub_config_9": {1: 1.5, 2: 1.5},
        "add_sub_config_3": {1: 1.4, 2: 1.4},
        "add_sub_config_1": {1: 1.5, 2: 1.6},
        "add_sub_config_4; add_sub_config_6; add_sub_config_0; add_sub_config_2; "
        "add_sub_config_8": {1: 1.5},
    }
    assert any("lowest request rate 16/s" in n for n in result.notes)


PERF_GKE = ImportOptions(model="m", card="t4", batch=(2,))
PERF_B1 = ImportOptions(model="m", card="t4", batch=(1,))
P50 = "p50 latency of the lowest-load row"
MEAN = "a mean, not a median"

EXPECTED: dict[str, Imports | Refused] = {
    "SOURCES.md": Refused(("not a format the planner reads", "--format")),
    "model_analyzer_thirdparty__Triton_Backup_unet34__metrics-model-inference.csv": Imports(
        check_unet34, format="model-analyzer"
    ),
    "model_analyzer_thirdparty__test-docker_wav2vec_py__metrics-model-inference.csv": Imports(
        check_wav2vec, format="model-analyzer"
    ),
    "model_analyzer_v1.17dev__single-model_add_sub__metrics-model-inference__no-max-batch-size"
    ".csv": Imports(check_add_sub_117, format="model-analyzer"),
    "model_analyzer_v1.19dev__single-model_add_sub__metrics-model-inference__slash-instance"
    "-group.csv": Imports(check_add_sub_119, format="model-analyzer"),
    "model_analyzer_v1.33dev__bls__metrics-model-inference.csv": Imports(
        check_bls, format="model-analyzer"
    ),
    "model_analyzer_v1.33dev__ensemble_add_sub__metrics-model-inference.csv": Imports(
        check_ensemble, format="model-analyzer"
    ),
    "model_analyzer_v1.33dev__multi-model_resnet50+vgg19__metrics-model-inference.csv": Refused(
        ("line 2", "multi-model", "not one model's latency")
    ),
    "model_analyzer_v1.33dev__request-rate_add_sub__metrics-model-inference.csv": Imports(
        check_request_rate, format="model-analyzer"
    ),
    "model_analyzer_v1.33dev__single-model_add_sub__metrics-model-gpu.csv": Refused(
        ("GPU-metrics table", "no latency")
    ),
    "model_analyzer_v1.33dev__single-model_add_sub__metrics-model-inference.csv": Imports(
        check_add_sub_133, format="model-analyzer"
    ),
    "model_analyzer_v1.33dev__single-model_add_sub__metrics-server-only.csv": Refused(
        ("server-only table", "no latency")
    ),
    "nexus_profile_2018__TITAN_X_Pascal__caffe_vgg16_1.txt": Imports(
        nexus_profile("vgg16", 174, (6.2774, 0.0223517, 949944320 / 2**20), 611.194),
        options=ImportOptions(),
        format="nexus",
    ),
    "nexus_profile_2018__TITAN_X_Pascal__caffe_vgg_face_1.txt": Imports(
        nexus_profile("vgg_face", 173, (6.3527, 0.0235233, 977207296 / 2**20), 616.467),
        options=ImportOptions(),
        format="nexus",
    ),
    "nexus_profile_2018__TITAN_X_Pascal__caffe_vgg_s_1.txt": Imports(
        nexus_profile("vgg_s", 512, (3.0695, 0.012394, 645857280 / 2**20), 448.265),
        options=ImportOptions(),
        format="nexus",
    ),
    "nexus_profile_2018__TITAN_X_Pascal__darknet_yolo9000_1.txt": Imports(
        nexus_profile("yolo9000", 24, (21.6757, 0.168307, 1069481984 / 2**20), 467.635),
        options=ImportOptions(),
        format="nexus",
    ),
    # GKE BERT runs: -b 2 (SOURCES.md note A); the lowest concurrency is 4, and the rows
    # are sorted by throughput, so the chosen row is not always the first.
    "perf_analyzer_21.05__triton-server-gke-benchmark__perf_bert_base_gpu_trt.csv": Imports(
        perf_point(15.721, 24.389, 32.029, 2, 2, "concurrency 4", P50),
        options=PERF_GKE,
        format="perf-analyzer",
    ),
    "perf_analyzer_21.05__triton-server-gke-benchmark__perf_bert_base_gpu_trt_seqlen128.csv": (
        Imports(
            perf_point(6.934, 9.537, 17.101, 2, 2, "concurrency 4", P50),
            options=PERF_GKE,
            format="perf-analyzer",
        )
    ),
    "perf_analyzer_21.05__triton-server-gke-benchmark__perf_bert_base_tf_cpu.csv": Imports(
        perf_point(673.738, 685.047, 699.319, 2, 12, "concurrency 4", P50),
        options=PERF_GKE,
        format="perf-analyzer",
    ),
    "perf_analyzer_21.05__triton-server-gke-benchmark__perf_bert_distill_cpu_tf.csv": Imports(
        perf_point(2598.91, 2598.92, 2598.92, 2, 2, "concurrency 4", P50),
        options=PERF_GKE,
        format="perf-analyzer",
    ),
    # -b is not stated for this one; Model Analyzer's default is 1, and the row's own
    # throughput agrees (5868.79 infer/s x 336 µs / 2 outstanding = 0.99).
    "perf_analyzer__model_analyzer-repo__add_sub-results__verbose-csv_collect-metrics.csv": (
        Imports(
            perf_point(0.322, 0.428, 0.598, 1, 2, "concurrency 2", P50),
            options=PERF_B1,
            format="perf-analyzer",
        )
    ),
    "perf_client_19.05__triton-server-qa-legacy-baseline__16mb_latency_grpc_custom_sbatch1"
    "__no-percentiles.csv": Imports(
        # 1822 + 33685 + 53 + 15034 + 5 µs, from line 3 (concurrency 1 is the second row)
        perf_point(50.599, None, None, 1, 3, "concurrency 1", MEAN),
        options=PERF_B1,
        format="perf-analyzer",
    ),
    "perf_client_19.05__triton-server-qa-legacy-baseline__min_latency_grpc_plan_sbatch1"
    "__no-percentiles.csv": Imports(
        perf_point(0.143, None, None, 1, 2, "concurrency 1", MEAN),
        options=PERF_B1,
        format="perf-analyzer",
    ),
    "perf_client_19.07__triton-server-qa-baseline__min_latency_grpc_plan_sbatch1.csv": Imports(
        perf_point(0.195, 0.243, 0.278, 1, 2, "concurrency 1", P50),
        options=PERF_B1,
        format="perf-analyzer",
    ),
    # The companion console log says p50 313, p90 425, p99 487 usec at batch size 1.
    "perf_client_19.09__triton-server-qa-baseline__min_latency_grpc_plan_sbatch1.csv": Imports(
        perf_point(0.313, 0.425, 0.487, 1, 2, "concurrency 1", P50),
        options=PERF_B1,
        format="perf-analyzer",
    ),
    "perf_client_19.09__triton-server-qa-baseline__min_latency_grpc_plan_sbatch1.stdout.log": (
        Refused(("console output", "-f FILE.csv", "--batch 1"), options=PERF_B1)
    ),
}


def sample_names() -> list[str]:
    return sorted(p.name for p in SAMPLES.iterdir() if p.is_file())


def test_the_samples_directory_is_there() -> None:
    assert len(sample_names()) >= len(EXPECTED), f"samples missing under {SAMPLES}"


@pytest.mark.parametrize("name", sample_names(), ids=sample_names())
def test_sample_imports_correctly_or_is_refused_with_a_reason(name: str) -> None:
    expected = EXPECTED.get(name)
    assert expected is not None, f"new sample {name}: write its expected outcome in EXPECTED"
    data = (SAMPLES / name).read_bytes()
    if isinstance(expected, Refused):
        with pytest.raises(BadInput) as caught:
            read_files([(name, data)], expected.options)
        message = " ".join(caught.value.problems)
        for reason in expected.reasons:
            assert reason in message
        return
    result = read_files([(name, data)], expected.options)
    expected.check(result)
    # Detection looks at content, not at the name.
    assert detect_format("upload", data.decode("utf-8")) == expected.format


def test_every_expectation_names_an_existing_sample() -> None:
    assert set(EXPECTED) <= set(sample_names())


def test_the_cli_imports_or_refuses_every_sample_and_refusals_store_nothing(cli) -> None:
    for name in sample_names():
        expected = EXPECTED.get(name)
        options = expected.options if expected else ImportOptions(model="m", card="t4")
        args = ["curves", "import", SAMPLES / name, "--json"]
        for flag, value in (("--model", options.model), ("--card", options.card)):
            if value:
                args += [flag, value]
        if options.batch:
            args += ["--batch", ",".join(map(str, options.batch))]
        refused = isinstance(expected, Refused)
        before = cli("curves", "list", "--json").out if refused else None
        run = cli(*args)
        assert "Traceback" not in run.err
        if refused:
            assert run.status == 2 and run.out == ""
            assert all(line.startswith("planner: ") for line in run.err.strip().splitlines())
            assert cli("curves", "list", "--json").out == before
        else:
            assert run.status == 0, run.err
            assert run.json, name
