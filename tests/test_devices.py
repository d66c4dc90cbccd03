"""What a measurement records about its device, and the card name it derives."""

from __future__ import annotations

import io
import subprocess
import sys
from typing import Any

import pytest

from planner.cli.measure import DESCRIPTION, ProgressBar
from planner.curves.cards import builtin_catalogue
from planner.curves.curve import Point
from planner.errors import BadInput
from planner.measure import devices
from planner.measure.harness import MeasureProgress


@pytest.mark.parametrize(
    ("name", "memory_gib", "card"),
    [
        ("NVIDIA H200", 139.8, "h200-141gb"),
        ("NVIDIA H100 80GB HBM3", 79.1, "h100-80gb"),
        ("NVIDIA A100-SXM4-80GB", 79.3, "a100-80gb"),
        ("NVIDIA A100-SXM4-40GB", 39.4, "a100-40gb"),
        ("Tesla T4", 14.6, "t4"),
        ("NVIDIA A10", 22.1, "a10"),
        ("NVIDIA L4", 22.0, "l4"),
        ("NVIDIA L40S", 44.4, "nvidia-l40s"),  # "l4" is not a word of "L40S"
        ("NVIDIA H100 NVL", 93.1, "nvidia-h100-nvl"),  # an H100, but not the 80 GB one
        ("NVIDIA GeForce RTX 4090 Laptop GPU", 15.6, "nvidia-geforce-rtx-4090-laptop-gpu"),
    ],
)
def test_gpu_card_names(name: str, memory_gib: float, card: str) -> None:
    info = {"device": "cuda", "device_name": name, "device_memory_gib": memory_gib}
    assert devices.default_card_name(info, builtin_catalogue()) == card


def test_a_mig_instance_is_named_by_the_card_offering_its_profile() -> None:
    name = "NVIDIA A100-SXM4-40GB MIG 3g.20gb"
    info = {"device": "cuda", "device_name": name, "device_memory_gib": 19.5}
    assert devices.mig_profile_in_name(name) == "3g.20gb"
    assert devices.default_card_name(info, builtin_catalogue()) == "a100-40gb"
    assert devices.mig_profile_in_name("NVIDIA H200") is None


def test_cpu_and_mac_names() -> None:
    cpu = {"device": "cpu", "device_name": "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz"}
    assert devices.default_card_name(cpu) == "cpu-intel-xeon-platinum-8375c"
    amd = {"device": "cpu", "device_name": "AMD EPYC 7763 64-Core Processor"}
    assert devices.default_card_name(amd) == "cpu-amd-epyc-7763-64-core"
    assert devices.default_card_name({"device": "mps", "device_name": "Apple M2 Pro"}) == (
        "apple-m2-pro"
    )


def fake_smi(monkeypatch: pytest.MonkeyPatch, stdout: str, returncode: int = 0) -> list[Any]:
    calls: list[Any] = []

    def run(args: list[str], **_kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(args)
        return subprocess.CompletedProcess(args, returncode, stdout, "")

    monkeypatch.setattr(devices.shutil, "which", lambda _name: "/usr/bin/nvidia-smi")
    monkeypatch.setattr(devices.subprocess, "run", run)
    return calls


def test_nvidia_smi_driver_and_clocks(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_smi(monkeypatch, "GPU-aaaa-1, 580.159.03, 1980, 3201, 1980, P0\n")
    assert devices.nvidia_smi() == {
        "driver": "580.159.03",
        "clocks": "SM 1980 MHz, memory 3201 MHz, max SM 1980 MHz",
        "pstate": "P0",
    }


def test_nvidia_smi_picks_the_measured_gpu_and_skips_unreadable_fields(monkeypatch) -> None:
    fake_smi(
        monkeypatch,
        "GPU-aaaa, 550.54, 1410, 1593, 1410, P0\nGPU-bbbb, 550.54, [N/A], 1593, [N/A], P2\n",
    )
    assert devices.nvidia_smi("bbbb") == {
        "driver": "550.54",
        "clocks": "memory 1593 MHz",
        "pstate": "P2",
    }
    assert devices.nvidia_smi(None) == {}  # two GPUs, none named: do not guess


def test_nvidia_smi_absent_or_failing_gives_nothing(monkeypatch) -> None:
    monkeypatch.setattr(devices.shutil, "which", lambda _name: None)
    assert devices.nvidia_smi() == {}
    fake_smi(monkeypatch, "NVIDIA-SMI has failed", returncode=9)
    assert devices.nvidia_smi() == {}


@pytest.mark.torch
def test_describe_the_cpu() -> None:
    info = devices.describe("cpu")
    assert info["device"] == "cpu" and info["device_name"] == info["cpu"]
    assert info["torch"] and info["measured_at"] and info["cpu_threads"] >= 1


def test_progress_bar_on_a_terminal_and_in_a_log() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    point = Point(1, 9.82, p10_ms=9.7, p50_ms=9.8, p90_ms=10.1, n=90)
    events = [
        MeasureProgress(0.0, "fp16", 1, "warm-up"),
        MeasureProgress(0.5, "fp16", 1, "round 1 of 3"),
        MeasureProgress(0.5, "fp16", 1, "done", point),
        MeasureProgress(1.0, "fp16", 2, "round 3 of 3"),
    ]
    terminal, log = Terminal(), io.StringIO()
    for stream in (terminal, log):
        bar = ProgressBar(stream)
        for event in events:
            bar(event)
        bar.close()
    assert log.getvalue() == "fp16 batch 1: 9.82 ms (p10 9.70, p90 10.10, n 90)\n"
    drawn = terminal.getvalue()
    assert "\r[" in drawn and "fp16 batch 1: warm-up" in drawn
    assert "fp16 batch 1: 9.82 ms (p10 9.70, p90 10.10, n 90)\n" in drawn
    assert "100%  fp16 batch 2: round 3 of 3" in drawn
    assert drawn.endswith("\r\x1b[K")  # the bar is wiped at the end


def test_without_pytorch_the_hint_is_a_command_that_works_from_the_checkout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # import fails
    with pytest.raises(BadInput) as caught:
        devices.require_torch()
    (line,) = caught.value.problems
    assert "pip install -e '.[measure]'" in line
    assert "gpu-seat-planner[" not in line  # no index has the package under that name


def test_the_measure_help_names_the_checkout_install() -> None:
    text = " ".join(DESCRIPTION.split())
    assert "pip install -e '.[measure]'" in text and "gpu-seat-planner[" not in text
