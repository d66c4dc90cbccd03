"""The measurement harness: the reference model, the method, and what survives failures.

Most tests measure test doubles against a fake clock, so the figures are exact and no
test depends on how fast this machine is; the reference model itself is measured on the
CPU at 64x36 with a handful of calls.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from planner.errors import BadInput
from planner.measure import harness as measure_module
from planner.measure.devices import resolve_device
from planner.measure.harness import (
    MeasurementFailed,
    MeasureOptions,
    MeasureProgress,
    ModelSpec,
    device_memory_mb,
    measure_curves,
    parse_batches,
    parse_input_shape,
    parse_precisions,
)
from planner.measure.refmodel import HEATMAPS, IN_CHANNELS, build_reference_model, parameter_count
from planner.measure.timing import Timing
from tests.conftest import TORCH_MISSING

torch = pytest.importorskip("torch", reason=TORCH_MISSING)

QUICK = ("--warmup", "2", "--rounds", "2", "--repetitions", "2", "--device", "cpu")

pytestmark = [
    pytest.mark.torch,
    # TorchScript is deprecated in recent PyTorch releases but still what many teams ship.
    pytest.mark.filterwarnings("ignore:`torch.jit.*:DeprecationWarning"),
]

gpu = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


class FakeClock:
    """A nanosecond clock that only moves when a test double says its call took time."""

    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns

    def advance(self, ms: float) -> None:
        self.ns += round(ms * 1e6)


class Double(torch.nn.Module):
    """A model whose call takes ``latency(batch, call_number)`` ms on a fake clock, and
    which can misbehave at one batch size (``fail_at``) the way a real model does."""

    def __init__(
        self,
        clock: FakeClock | None,
        latency: Callable[[int, int], float] = lambda batch, _call: 1.0 + batch,
        *,
        fail_at: int | None = None,
        error: Callable[[], BaseException] | None = None,
    ) -> None:
        super().__init__()
        self.clock = clock
        self.latency = latency
        self.fail_at = fail_at
        self.error = error
        self.calls = 0
        self.batches_seen: list[int] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch = x.shape[0]
        self.calls += 1
        self.batches_seen.append(batch)
        if self.fail_at is not None and batch >= self.fail_at and self.error is not None:
            raise self.error()
        if self.clock is not None:
            self.clock.advance(self.latency(batch, self.calls))
        return x.sum(dim=1, keepdim=True)


def options(**overrides: Any) -> MeasureOptions:
    values: dict[str, Any] = {
        "batches": (1, 2, 4),
        "resolution": "16x8",
        "device": "cpu",
        "warmup": 1,
        "rounds": 2,
        "repetitions": 3,
    }
    values.update(overrides)
    return MeasureOptions(**values)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(autouse=True)
def one_cpu_thread() -> Iterator[None]:
    """One intra-op thread: on a small shared machine, OpenMP's spinning worker threads
    compete with other processes and make each call on these tiny inputs up to 100x
    slower (seen: seconds instead of 30 ms per call of the reference model at 64x36)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# -- the reference model ----------------------------------------------------------------


def test_reference_model_has_the_study_models_size() -> None:
    count = parameter_count(build_reference_model())
    assert abs(count - 1.49e6) <= 0.10 * 1.49e6, count


def test_reference_model_outputs_full_resolution_heatmaps() -> None:
    model = build_reference_model()
    seen: list[tuple[int, ...]] = []
    model.head.register_forward_hook(lambda _m, inputs, _o: seen.append(tuple(inputs[0].shape)))
    with torch.inference_mode():
        out = model(torch.randn(2, IN_CHANNELS, 36, 64))
        odd = model(torch.randn(1, IN_CHANNELS, 37, 65))  # not a multiple of 8
    assert tuple(out.shape) == (2, HEATMAPS, 36, 64)
    assert tuple(odd.shape) == (1, HEATMAPS, 37, 65)
    # The head reads the full-resolution branch: the network never left full resolution.
    assert seen[0][-2:] == (36, 64)


def test_reference_model_is_the_same_network_each_time_and_leaves_the_rng_alone() -> None:
    torch.manual_seed(123)
    expected = torch.rand(1)
    torch.manual_seed(123)
    first, second = build_reference_model(), build_reference_model()
    assert torch.rand(1) == expected
    for a, b in zip(first.parameters(), second.parameters(), strict=True):
        assert torch.equal(a, b)


# -- the method, exactly, on a fake clock -------------------------------------------------


def test_point_is_the_median_of_round_medians_with_spread_over_all_calls(clock) -> None:
    # Batch 1's nine timed calls, by round: medians 1, 2, 9 -> point 2 ms; over all nine
    # calls the median is 3 ms, p10 1 ms, p90 9 ms.
    script = [1, 1, 9, 2, 2, 9, 3, 9, 9]
    double = Double(clock, lambda b, n: script[n - 1] if b == 1 and n <= 9 else 2.0 * b)
    result = measure_curves(
        options(batches=(1, 2), warmup=0, rounds=3, repetitions=3), module=double, clock=clock
    )
    (curve,) = result.curves
    first, second = curve.points
    assert (first.latency_ms, first.p10_ms, first.p50_ms, first.p90_ms) == (2.0, 1.0, 3.0, 9.0)
    assert first.n == 9
    assert second.latency_ms == 4.0 and second.p10_ms == second.p90_ms == 4.0
    assert curve.source == "measured" and curve.precision == "fp32"
    assert curve.resolution == "16x8" and curve.model == "Double"
    assert curve.environment["model_source"] == "a module given to measure_curves (Double)"


def test_timing_percentiles_agree_with_numpy() -> None:
    import numpy

    timing = Timing(((5.0, 1.0, 3.5), (2.0, 8.0, 4.0), (7.5, 6.0, 0.5)))
    for q in (10, 50, 90):
        assert timing.percentile(q) == pytest.approx(numpy.percentile(timing.samples, q))


def test_warmup_calls_are_made_and_not_timed(clock) -> None:
    double = Double(clock, lambda _b, n: 100.0 if n <= 4 else 3.0)  # slow first calls
    result = measure_curves(
        options(batches=(1,), warmup=4, rounds=2, repetitions=2), module=double, clock=clock
    )
    assert result.curves[0].points[0].latency_ms == 3.0
    # 4 warm-up + 4 timed calls, then the drift check: 4 warm-up + 4 timed again
    assert double.calls == 16


def test_progress_runs_from_zero_to_one_and_reports_every_point(clock) -> None:
    events: list[MeasureProgress] = []
    measure_curves(
        options(precisions=("fp32", "bf16")), events.append, module=Double(clock), clock=clock
    )
    fractions = [e.fraction for e in events]
    assert fractions == sorted(fractions) and fractions[0] == 0 and fractions[-1] == 1
    done = [(e.precision, e.batch) for e in events if e.stage == "done"]
    assert done == [("fp32", 1), ("fp32", 2), ("fp32", 4), ("bf16", 1), ("bf16", 2), ("bf16", 4)]
    assert all(e.point is not None for e in events if e.stage == "done")
    assert "fp32 batch 4: 5.00 ms" in [e for e in events if e.stage == "done"][2].message


def test_each_precision_is_its_own_curve_at_that_precision(clock) -> None:
    dtypes: list[torch.dtype] = []

    class Recorder(Double):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            dtypes.append(x.dtype)
            return super().forward(x)

    result = measure_curves(
        options(precisions=("fp16", "bf16")), module=Recorder(clock), clock=clock
    )
    assert [c.precision for c in result.curves] == ["fp16", "bf16"]
    assert set(dtypes) == {torch.float16, torch.bfloat16}
    assert result.curves[0].id != result.curves[1].id


# -- robustness -------------------------------------------------------------------------


def out_of_memory() -> BaseException:
    return torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")


def test_out_of_memory_keeps_the_smaller_batches_and_names_the_batch(clock) -> None:
    double = Double(clock, fail_at=4, error=out_of_memory)
    result = measure_curves(options(batches=(1, 2, 4, 8)), module=double, clock=clock)
    (curve,) = result.curves
    assert curve.batches == (1, 2)
    assert 8 not in double.batches_seen  # the sweep ended at the first failure
    (warning,) = result.warnings
    assert "out of memory at batch 4" in warning and "kept batches 1, 2" in warning
    assert curve.environment["stopped"].startswith("out of memory at batch 4")
    assert "drift_check" in curve.environment  # batch 1 still fits: checked as usual
    assert not result.interrupted


def test_out_of_memory_at_the_first_batch_measures_nothing(clock) -> None:
    double = Double(clock, fail_at=1, error=out_of_memory)
    with pytest.raises(MeasurementFailed, match="out of memory at batch 1"):
        measure_curves(options(), module=double, clock=clock)


def test_cli_out_of_memory_stores_what_was_measured(cli, monkeypatch, tmp_path) -> None:
    double = Double(None, fail_at=4, error=out_of_memory)
    monkeypatch.setattr(measure_module, "load_model", lambda _spec, _device: double)
    out = tmp_path / "curve.csv"
    run = cli("measure", "--batches", "1,2,4,8", "--resolution", "16x8", *QUICK,
              "--store", "--out", out)  # fmt: skip
    assert run.status == 0, run.err
    assert "out of memory at batch 4" in run.err
    stored = [c for c in cli("curves", "list", "--json").json if c["source"] == "measured"]
    assert len(stored) == 1 and stored[0]["batches"] == [1, 2]
    assert out.read_text().count("\n") == 3  # header and two points


def test_drift_of_batch_one_is_reported(clock) -> None:
    # Batch 1 takes 10 ms while the sweep runs and 11 ms when measured again at the end.
    state = {"checking": False}

    def latency(batch: int, _call: int) -> float:
        if batch == 4:
            state["checking"] = True
        return (11.0 if state["checking"] else 10.0) if batch == 1 else 5.0 * batch

    result = measure_curves(options(), module=Double(clock, latency), clock=clock)
    (curve,) = result.curves
    assert curve.points[0].latency_ms == 10.0  # the point itself is kept as measured
    (warning,) = result.warnings
    assert "batch 1 moved +10.0%" in warning and "10.00 -> 11.00 ms" in warning
    assert curve.environment["drift_warning"] in warning
    assert "11.00 ms against 10.00 ms (+10.0%)" in curve.environment["drift_check"]
    assert "moved +10.0%" in curve.environment["notes"]
    # Flagged, so that it does not become a curve like any other.
    assert curve.flag is not None and "drift check failed" in curve.flag
    assert "10.00 -> 11.00 ms" in curve.flag


def test_small_drift_is_recorded_without_a_warning(clock) -> None:
    # The study's own check: 9.82 ms, then 9.77 ms after minutes of load.
    state = {"checking": False}

    def latency(batch: int, _call: int) -> float:
        if batch == 4:
            state["checking"] = True
        return (9.77 if state["checking"] else 9.82) if batch == 1 else 20.0 * batch

    result = measure_curves(options(), module=Double(clock, latency), clock=clock)
    assert result.warnings == ()
    assert "9.77 ms against 9.82 ms (-0.5%)" in result.curves[0].environment["drift_check"]
    assert "drift_warning" not in result.curves[0].environment
    assert result.curves[0].flag is None


def test_ctrl_c_keeps_the_completed_points(clock) -> None:
    double = Double(clock, fail_at=4, error=KeyboardInterrupt)
    result = measure_curves(
        options(batches=(1, 2, 4, 8), precisions=("fp32", "fp16")), module=double, clock=clock
    )
    assert result.interrupted
    (curve,) = result.curves
    assert curve.batches == (1, 2) and curve.precision == "fp32"
    assert "interrupted" in result.warnings[0] and "fp16 not measured" in result.warnings[0]
    assert "batches 4, 8 not measured" in curve.environment["interrupted"]


def test_cli_ctrl_c_writes_and_stores_the_completed_points(cli, monkeypatch, tmp_path) -> None:
    double = Double(None, fail_at=4, error=KeyboardInterrupt)
    monkeypatch.setattr(measure_module, "load_model", lambda _spec, _device: double)
    out = tmp_path / "partial.json"
    run = cli("measure", "--batches", "1,2,4", "--resolution", "16x8", *QUICK,
              "--store", "--out", out, "--json")  # fmt: skip
    assert run.status == 130
    assert "interrupted" in run.err
    (printed,) = run.json
    assert printed["batches"] == [1, 2]
    assert json.loads(out.read_text())[0]["batches"] == [1, 2]
    assert any(c["id"] == printed["id"] for c in cli("curves", "list", "--json").json)


def test_unsupported_precision_is_a_message_and_other_precisions_go_on(clock) -> None:
    def half_unsupported() -> BaseException:
        return NotImplementedError("\"slow_conv2d_cpu\" not implemented for 'Half'")

    class NoHalf(Double):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.dtype == torch.float16:
                raise half_unsupported()
            return super().forward(x)

    result = measure_curves(options(precisions=("fp16", "fp32")), module=NoHalf(clock), clock=clock)
    assert [c.precision for c in result.curves] == ["fp32"]
    (warning,) = result.warnings
    assert "fp16: the model failed at batch 1 on cpu" in warning and "try fp32" in warning
    with pytest.raises(MeasurementFailed, match="not implemented for 'Half'"):
        measure_curves(options(precisions=("fp16",)), module=NoHalf(clock), clock=clock)


def test_a_bug_in_the_harness_is_not_mistaken_for_a_model_failure(clock) -> None:
    def broken_progress(_event: MeasureProgress) -> None:
        raise ZeroDivisionError("bug")

    with pytest.raises(ZeroDivisionError):
        measure_curves(options(), broken_progress, module=Double(clock), clock=clock)


# -- the reference model through the command line ----------------------------------------


def test_measure_reference_model_and_import_the_csv(cli, tmp_path) -> None:
    out = tmp_path / "measured.csv"
    run = cli("measure", "--resolution", "64x36", "--batches", "1,2,4", *QUICK,
              "--out", out, "--json")  # fmt: skip
    assert run.status == 0, run.err
    (curve,) = run.json
    assert curve["source"] == "measured" and curve["model"] == "ball-detector"
    assert curve["resolution"] == "64x36" and curve["precision"] == "fp32"
    assert curve["card"].startswith("cpu-")
    assert curve["batches"] == [1, 2, 4]
    for point in curve["points"]:
        assert point["latency_ms"] > 0 and point["n"] == 4
        assert point["p10_ms"] <= point["p50_ms"] <= point["p90_ms"]
    env = curve["environment"]
    for key in ("torch", "device_name", "cpu", "measured_at", "method", "drift_check"):
        assert env[key], key
    assert env["parameters"] == parameter_count(build_reference_model())
    assert (env["warmup"], env["rounds"], env["repetitions"]) == (2, 2, 2)
    assert "fp32 batch 4:" in run.err  # one progress line per point when not a terminal

    imported = cli("curves", "import", out, "--json")
    assert imported.status == 0, imported.err
    (again,) = imported.json
    assert again["id"] == curve["id"]
    assert [p["latency_ms"] for p in again["points"]] == [p["latency_ms"] for p in curve["points"]]
    assert again["points"][0]["p90_ms"] == curve["points"][0]["p90_ms"]


def test_json_out_file_keeps_the_metadata_and_imports(cli, monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(measure_module, "load_model", lambda _spec, _device: Double(None))
    out = tmp_path / "measured.json"
    run = cli("measure", "--resolution", "16x8", "--batches", "1,2", *QUICK, "--out", out,
              "--card", "my-card", "--model", "my-model")  # fmt: skip
    assert run.status == 0, run.err
    assert "my-model on my-card, 16x8 FP32" in run.out
    imported = cli("curves", "import", out, "--json")
    assert imported.status == 0, imported.err
    (curve,) = imported.json
    assert curve["card"] == "my-card" and curve["environment"]["method"].startswith("warm-up 2")


# -- model files --------------------------------------------------------------------------


class TinyNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


@pytest.fixture
def torchscript_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.pt"
    torch.jit.save(torch.jit.script(TinyNet().eval()), str(path))
    return path


def export_file(tmp_path: Path, *, dynamic: bool) -> Path:
    path = tmp_path / ("tiny-dynamic.pt2" if dynamic else "tiny-fixed.pt2")
    shapes = {"x": {0: torch.export.Dim("batch", min=1, max=64)}} if dynamic else None
    program = torch.export.export(
        TinyNet().eval(), (torch.randn(2 if dynamic else 1, 3, 8, 12),), dynamic_shapes=shapes
    )
    torch.export.save(program, str(path))
    return path


def test_torchscript_file_loads_and_measures(cli, torchscript_file) -> None:
    run = cli("measure", "--model-file", torchscript_file, "--input-shape", "3,8,12",
              "--batches", "1,2", *QUICK, "--json")  # fmt: skip
    assert run.status == 0, run.err
    (curve,) = run.json
    assert curve["model"] == "tiny" and curve["resolution"] == "12x8"
    assert curve["batches"] == [1, 2]
    env = curve["environment"]
    assert env["model_sha256"] == hashlib.sha256(torchscript_file.read_bytes()).hexdigest()
    assert env["model_file"] == str(torchscript_file) and env["input_shape"] == "3,8,12"


def test_export_archive_loads_and_measures(cli, tmp_path) -> None:
    path = export_file(tmp_path, dynamic=True)
    run = cli("measure", "--model-file", path, "--input-shape", "3,8,12", "--batches", "1,3",
              *QUICK, "--precision", "fp32,bf16", "--json")  # fmt: skip
    assert run.status == 0, run.err
    assert [(c["precision"], c["batches"]) for c in run.json] == [
        ("fp32", [1, 3]),
        ("bf16", [1, 3]),
    ]


def test_export_archive_with_a_fixed_batch_says_how_to_fix_it(cli, tmp_path) -> None:
    path = export_file(tmp_path, dynamic=False)
    run = cli("measure", "--model-file", path, "--input-shape", "3,8,12", "--batches", "1,2",
              *QUICK, "--json")  # fmt: skip
    assert run.status == 0, run.err
    assert run.json[0]["batches"] == [1]
    assert "failed at batch 2" in run.err and "only the batch sizes it was exported" in run.err


def test_a_file_that_is_no_model_is_refused_in_one_line(cli, tmp_path) -> None:
    path = tmp_path / "notes.pt"
    path.write_text("not a model")
    run = cli("measure", "--model-file", path, "--input-shape", "3,8,8", *QUICK)
    assert run.status == 2
    (line,) = run.err.strip().splitlines()
    assert "neither a TorchScript file nor a torch.export archive" in line


# -- options ------------------------------------------------------------------------------


@pytest.fixture
def no_cuda(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    yield


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--batches", "0"), "--batches: batch '0' is below 1"),
        (("--batches", "1,two"), "--batches: batch 'two' is not a number"),
        (("--precision", "fp8"), "--precision: precision 'fp8' is not one of fp32, fp16, bf16"),
        (("--precision", "int8"), "int8 is not measured by the harness"),
        (("--warmup", "ten"), "--warmup 'ten' is not a whole number"),
        (("--rounds", "0"), "rounds 0 must be from 1 to 1,000"),
        (("--resolution", "512"), "resolution '512' is not WIDTHxHEIGHT"),
        (("--model-file", "missing.pt", "--input-shape", "3,8,8"), "missing.pt does not exist"),
        (("--device", "tpu"), "device 'tpu' is not one of cuda, cpu, mps"),
        (("--device", "cuda"), "--device cuda: CUDA is not available here"),
        (("--input-shape", "3,8,8"), "the reference model takes --resolution"),
        (("--out", "no-such-folder/curve.csv"), "the folder no-such-folder does not exist"),
        (("--out", "."), "--out . is a folder"),
    ],
)
def test_bad_options_exit_2_with_one_line(cli, no_cuda, args, expected) -> None:
    before = cli("curves", "list", "--json").json
    run = cli("measure", *args, "--store")
    assert run.status == 2
    (line,) = run.err.strip().splitlines()
    assert expected in line
    assert cli("curves", "list", "--json").json == before


def test_bad_input_shape_exits_2_with_one_line(cli, torchscript_file) -> None:
    for shape in ("3,x", "3,8", "3,0,8"):
        run = cli("measure", "--model-file", torchscript_file, "--input-shape", shape)
        assert run.status == 2
        (line,) = run.err.strip().splitlines()
        assert "--input-shape" in line


def test_several_bad_options_are_all_reported(cli) -> None:
    run = cli("measure", "--batches", "0", "--precision", "fp8", "--model-file", "nope.pt")
    assert run.status == 2
    assert len(run.err.strip().splitlines()) == 3


def test_options_validate_on_construction() -> None:
    with pytest.raises(BadInput, match="needs --input-shape"):
        MeasureOptions(model=ModelSpec(path=Path("m.pt")))
    with pytest.raises(BadInput, match="disagrees with --input-shape"):
        MeasureOptions(model=ModelSpec(Path("m.pt"), (3, 8, 12)), resolution="16x16")
    with pytest.raises(BadInput, match="is empty"):
        MeasureOptions(batches=())
    same = MeasureOptions(batches=(4, 1, 2, 2), precisions=("FP16",), device="CPU")
    assert same.batches == (1, 2, 4) and same.precisions == ("fp16",) and same.device == "cpu"
    assert same.input_shape == (9, 288, 512) and same.resolution == "512x288"
    assert parse_batches("8, 1,2") == (1, 2, 8)
    assert parse_precisions("fp16,fp32,fp16") == ("fp16", "fp32")
    assert parse_input_shape("9x288x512") == (9, 288, 512)


def test_help_mentions_every_option_and_the_model_file_risk(cli) -> None:
    from planner.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices["measure"]
    run = cli("measure", "--help")
    assert run.status == 0
    flat = " ".join(run.out.split())
    for action in sub._actions:
        for flag in action.option_strings:
            assert flag in run.out, flag
        if action.help and action.dest != "help":
            assert " ".join(action.help.split("%(")[0].split())[:40] in flat, action.dest
    assert "runs code from it" in flat


# -- the bench section ----------------------------------------------------------------------


def test_bench_section_compares_the_harness_with_torch_benchmark(cli) -> None:
    run = cli("bench", "--only", "measure", "--json")
    assert run.status == 0, run.err
    figures = run.json["measure"]
    assert figures["trivial_harness_us"] > 0 and figures["trivial_timer_us"] > 0
    ratio = figures["trivial_harness_us"] / figures["trivial_timer_us"]
    assert figures["trivial_ratio"] == pytest.approx(ratio)
    on_cpu = resolve_device(None) == "cpu"
    assert figures["reference_input"] == ("64x36 fp32" if on_cpu else "512x288 fp16") + " batch 1"
    assert figures["reference_harness_ms"] > 0 and figures["reference_timer_ms"] > 0


def test_bench_section_without_torch_reports_it(monkeypatch) -> None:
    import planner.measure.devices
    from planner.bench.measure import timing_overhead

    def missing() -> None:
        raise BadInput("PyTorch is not installed; install it")

    monkeypatch.setattr(planner.measure.devices, "require_torch", missing)
    assert timing_overhead(lambda _m: None) == {"skipped": "PyTorch is not installed; install it"}


def test_memory_is_the_devices_used_memory_on_cuda_and_not_measured_elsewhere(clock) -> None:
    free, total = 3 * 2**30, 8 * 2**30
    fake = SimpleNamespace(cuda=SimpleNamespace(mem_get_info=lambda: (free, total)))
    assert device_memory_mb(fake, "cuda") == 5 * 1024.0  # MB of 2^20 bytes
    assert device_memory_mb(fake, "cpu") is None
    result = measure_curves(options(), module=Double(clock), clock=clock)
    (curve,) = result.curves
    assert all(p.memory_mb is None for p in curve.points)
    assert curve.environment["memory_basis"] == (
        "not measured on cpu: the points carry no memory_mb"
    )


# -- on a real GPU ----------------------------------------------------------------------------


@gpu
@needs_cuda
def test_cuda_sweep_at_the_study_resolution(cli, tmp_path) -> None:
    out = tmp_path / "gpu.csv"
    run = cli("measure", "--device", "cuda", "--precision", "fp16,fp32", "--batches", "1,2,4",
              "--warmup", "5", "--rounds", "2", "--repetitions", "10", "--out", out,
              "--json")  # fmt: skip
    assert run.status == 0, run.err
    fp16, fp32 = run.json
    assert (fp16["precision"], fp32["precision"]) == ("fp16", "fp32")
    assert fp16["resolution"] == "512x288"
    for curve in (fp16, fp32):
        assert curve["batches"] == [1, 2, 4]
        memory = [p["memory_mb"] for p in curve["points"]]
        # The device's used memory, CUDA context included: hundreds of MB even at batch 1.
        assert memory[0] > 100 and memory == sorted(memory)
        env = curve["environment"]
        assert env["memory_basis"].startswith("device memory in use")
        assert env["device"] == "cuda" and env["device_name"] and env["cuda"]
        assert "drift_check" in env
    assert cli("curves", "import", out).status == 0


@gpu
@needs_cuda
def test_cuda_channels_last_and_real_out_of_memory() -> None:
    class Hog(torch.nn.Module):
        """Asks for more memory than the card has once the batch reaches 4."""

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if x.shape[0] >= 4:
                total = torch.cuda.get_device_properties(0).total_memory
                torch.empty(total * 2, dtype=torch.uint8, device=x.device)
            return x * 2

    result = measure_curves(
        options(device="cuda", batches=(1, 2, 4), channels_last=True), module=Hog()
    )
    (curve,) = result.curves
    assert curve.batches == (1, 2)
    assert "out of memory at batch 4" in result.warnings[0]
