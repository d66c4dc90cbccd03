"""``planner bench --only measure``: the harness's timing against PyTorch's own benchmark
timer on the same work."""

from __future__ import annotations

from collections.abc import Callable

from planner.bench.registry import Figures, section
from planner.measure.timing import synchronizer, time_calls


@section("measure")
def timing_overhead(progress: Callable[[str], None]) -> Figures:
    """The harness's timing against ``torch.utils.benchmark.Timer`` on the same work.

    A trivial operation (adding two 16-element tensors) shows the harness's own cost per
    call: it synchronises and reads the clock around every call, where the Timer times
    blocks of many calls. The reference model at batch 1 (512x288 FP16 on a GPU, 64x36
    FP32 on the CPU) shows whether the two agree on real work. Both run on the device
    ``planner measure`` would choose, with the same number of CPU threads.
    """
    from planner.errors import BadInput
    from planner.measure.devices import describe, require_torch, resolve_device

    try:
        torch = require_torch()
    except BadInput as exc:
        return {"skipped": exc.problems[0]}
    from torch.utils import benchmark

    from planner.measure.refmodel import IN_CHANNELS, build_reference_model

    device = resolve_device(None)
    threads = torch.get_num_threads()
    synchronize = synchronizer(torch, device)
    figures: Figures = {"device": describe(device)["device_name"], "threads": threads}

    progress("bench: measure: trivial operation")
    a = torch.ones(16, device=device)
    b = torch.ones(16, device=device)
    ours = time_calls(lambda: a + b, synchronize, warmup=100, rounds=3, repetitions=2000)
    theirs = benchmark.Timer("a + b", globals={"a": a, "b": b}, num_threads=threads)
    theirs_ms = theirs.blocked_autorange(min_run_time=1.0).median * 1e3
    figures["trivial_harness_us"] = ours.median_of_round_medians * 1e3
    figures["trivial_timer_us"] = theirs_ms * 1e3
    figures["trivial_ratio"] = ours.median_of_round_medians / theirs_ms

    on_gpu = device != "cpu"
    width, height = (512, 288) if on_gpu else (64, 36)
    dtype = torch.float16 if on_gpu else torch.float32
    model = build_reference_model().to(device=device, dtype=dtype)
    x = torch.randn(1, IN_CHANNELS, height, width, device=device, dtype=dtype)
    figures["reference_input"] = f"{width}x{height} {'fp16' if on_gpu else 'fp32'} batch 1"
    progress(f"bench: measure: reference model, {figures['reference_input']}")
    previous = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = True
    try:
        with torch.inference_mode():
            ours = time_calls(
                lambda: model(x), synchronize, warmup=10, rounds=3, repetitions=30 if on_gpu else 10
            )
            theirs = benchmark.Timer(
                "model(x)", globals={"model": model, "x": x}, num_threads=threads
            )
            theirs_ms = theirs.blocked_autorange(min_run_time=2.0).median * 1e3
    finally:
        torch.backends.cudnn.benchmark = previous
    figures["reference_harness_ms"] = ours.median_of_round_medians
    figures["reference_timer_ms"] = theirs_ms
    figures["reference_ratio"] = ours.median_of_round_medians / theirs_ms
    return figures
