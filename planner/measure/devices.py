"""The device a measurement runs on: choosing it, describing it, and naming its card.

A measured curve is only as useful as the record of what it was measured on, so this
module gathers what can be read about the device (name, memory, driver, CUDA and cuDNN
versions, clocks, CPU model) without failing when a piece is unreadable: a missing
``nvidia-smi`` or an unreadable ``/proc/cpuinfo`` leaves that field out.

PyTorch is imported inside the functions that need it, never at module import.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from planner import __version__
from planner.curves.cards import Card
from planner.errors import BadInput

METAL = "mps"
"""Apple's Metal GPU backend, under the name PyTorch and ``--device`` give it (``mps``, for
Metal Performance Shaders). It has nothing to do with NVIDIA's Multi-Process Service, the
sharing mode ``mps`` of ``planner.sim.sharing``; this code calls it Metal."""
DEVICES = ("cuda", "cpu", METAL)
"""Devices a measurement can run on: NVIDIA (or ROCm) GPUs, the CPU, Apple's Metal."""

INSTALL_HINT = (
    "install PyTorch for your platform (https://pytorch.org/get-started/locally/), then "
    "the planner's measure extra from its checkout: pip install -e '.[measure]'"
)
MEMORY_TOLERANCE = 0.15
"""How far a device's reported memory may be from a catalogue card's and still be it
(drivers reserve some memory; vendors round)."""

_MIG_IN_NAME = re.compile(r"\bMIG\s+(\d+g\.\d+gb(?:\+me)?)", re.IGNORECASE)
_TRADEMARKS = re.compile(r"\((?:r|tm|c)\)", re.IGNORECASE)


def require_torch() -> Any:
    """The ``torch`` module, or BadInput saying how to install it."""
    try:
        import torch
    except ModuleNotFoundError:
        raise BadInput(f"PyTorch is not installed; {INSTALL_HINT}") from None
    return torch


def clean_device(value: str | None) -> str | None:
    """``cuda``, ``cpu`` or ``mps`` (any case), or None for "choose for me"."""
    if value is None or not value.strip():
        return None
    device = value.strip().lower()
    if device not in DEVICES:
        raise BadInput(f"device {value!r} is not one of {', '.join(DEVICES)}")
    return device


def resolve_device(requested: str | None) -> str:
    """The device to measure on: the one requested, else CUDA, else Metal, else the CPU.

    Raises BadInput when the requested device is not usable here, saying why.
    """
    torch = require_torch()
    device = clean_device(requested)
    cuda = torch.cuda.is_available()
    metal = _metal_available(torch)
    if device is None:
        return "cuda" if cuda else METAL if metal else "cpu"
    if device == "cuda" and not cuda:
        if torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
            why = f"this PyTorch ({torch.__version__}) was built without CUDA"
        else:
            why = "no CUDA device is visible (check the driver and CUDA_VISIBLE_DEVICES)"
        raise BadInput(f"--device cuda: CUDA is not available here: {why}")
    if device == METAL and not metal:
        raise BadInput(
            "--device mps: Apple's Metal backend is not available here (it needs an Apple "
            "silicon Mac and a PyTorch built with MPS)"
        )
    return device


def local_device() -> str:
    """The device a measurement here would run on when none is asked for (``cuda``,
    ``mps`` or ``cpu``); BadInput when PyTorch is not installed."""
    return resolve_device(None)


def _metal_available(torch: Any) -> bool:
    backend = getattr(torch.backends, "mps", None)  # PyTorch's name for Metal
    return bool(backend is not None and backend.is_available())


def describe(device: str) -> dict[str, Any]:
    """What can be read about ``device`` and the software around it, as flat metadata.

    Keys are present only when their value could be read. ``device_name`` is always set.
    """
    torch = require_torch()
    info: dict[str, Any] = {
        "device": device,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
        "planner": __version__,
        "measured_at": datetime.now(UTC).replace(microsecond=0).isoformat(),
    }
    if device == "cuda":
        index = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        info["device_name"] = props.name
        info["device_memory_gib"] = round(props.total_memory / 2**30, 1)
        info["compute_capability"] = f"{props.major}.{props.minor}"
        info["multiprocessors"] = props.multi_processor_count
        if torch.version.cuda:
            info["cuda"] = torch.version.cuda
        if getattr(torch.version, "hip", None):
            info["hip"] = torch.version.hip
        if torch.backends.cudnn.is_available():
            info["cudnn"] = str(torch.backends.cudnn.version())
        # FP32 convolutions run on TF32 tensor cores by default on Ampere and newer: an
        # "fp32" curve means that unless this says otherwise.
        info["tf32_convolutions"] = bool(torch.backends.cudnn.allow_tf32)
        info["tf32_matmul"] = bool(torch.backends.cuda.matmul.allow_tf32)
        uuid = getattr(props, "uuid", None)
        info.update(nvidia_smi(str(uuid) if uuid is not None else None))
        info["cpu"] = cpu_model()
    elif device == METAL:
        info["device_name"] = apple_chip() or "Apple GPU (Metal)"
        info["macos"] = platform.mac_ver()[0]
    else:
        info["device_name"] = cpu_model()
        info["cpu"] = info["device_name"]
        info["cpu_threads"] = torch.get_num_threads()
        info["cpu_cores"] = os.cpu_count()
    return info


def nvidia_smi(uuid: str | None = None) -> dict[str, Any]:
    """Driver version and current clocks from ``nvidia-smi``, or nothing when unavailable.

    Clocks move with load (an idle card reads a fraction of its boost clock), so callers
    read them right after the measured work, while the card is still warm. ``uuid``
    picks the right row when several GPUs are present.
    """
    executable = shutil.which("nvidia-smi")
    if executable is None:
        return {}
    fields = ("uuid", "driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm", "pstate")
    try:
        done = subprocess.run(
            [executable, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return {}
    if done.returncode != 0:
        return {}
    rows = [[cell.strip() for cell in line.split(",")] for line in done.stdout.splitlines()]
    rows = [row for row in rows if len(row) == len(fields)]
    if uuid is not None:
        wanted = uuid.lower().removeprefix("gpu-")
        matching = [r for r in rows if r[0].lower().removeprefix("gpu-") == wanted]
        rows = matching or (rows if len(rows) == 1 else [])
    if len(rows) != 1:
        return {}
    values = dict(zip(fields, rows[0], strict=True))
    out: dict[str, Any] = {}
    if _readable(values["driver_version"]):
        out["driver"] = values["driver_version"]
    clocks = [
        f"{label} {values[key]} MHz"
        for label, key in (
            ("SM", "clocks.sm"),
            ("memory", "clocks.mem"),
            ("max SM", "clocks.max.sm"),
        )
        if _readable(values[key])
    ]
    if clocks:
        out["clocks"] = ", ".join(clocks)
    if _readable(values["pstate"]):
        out["pstate"] = values["pstate"]
    return out


def _readable(value: str) -> bool:
    return bool(value) and not value.startswith("[") and value.lower() not in ("n/a", "")


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, ``sysctl`` on macOS)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    chip = apple_chip()
    if chip:
        return chip
    return platform.processor() or platform.machine() or "unknown CPU"


def apple_chip() -> str | None:
    """The chip of a Mac (``Apple M2 Pro``), or None elsewhere."""
    if platform.system() != "Darwin":
        return None
    try:
        done = subprocess.run(
            ["sysctl", "-n", "machdep.cpu.brand_string"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    name = done.stdout.strip()
    return name if done.returncode == 0 and name else None


def slug(text: str) -> str:
    """A card-name-like slug: ``NVIDIA GeForce RTX 4090`` -> ``nvidia-geforce-rtx-4090``.

    Trademark marks and a trailing clock speed (``CPU @ 2.90GHz``) are dropped.
    """
    text = _TRADEMARKS.sub(" ", text).split("@")[0]
    words = re.findall(r"[a-z0-9]+(?:\.[a-z0-9]+)*", text.lower())
    words = [w for w in words if w not in ("cpu", "processor")]
    return "-".join(words)[:80] or "unknown"


def mig_profile_in_name(device_name: str) -> str | None:
    """The MIG profile a device name states (``... MIG 3g.40gb``), or None."""
    match = _MIG_IN_NAME.search(device_name)
    return match[1].lower() if match else None


def default_card_name(info: dict[str, Any], catalogue: Iterable[Card] = ()) -> str:
    """The card name a measurement is stored under when ``--card`` is not given.

    A GPU that is unambiguously a catalogue card gets that card's name, so its curves
    meet the card's MIG profiles and price (``NVIDIA H200`` with 140 GiB -> ``h200-141gb``):
    the catalogue name's first word must be a word of the device name, and the memory
    must agree within 15% (or, on a MIG instance, the card must offer that profile).
    Any other GPU is named by a slug of its name (``nvidia-geforce-rtx-4090``); the CPU
    by ``cpu-`` and a slug of its model (``cpu-intel-xeon-platinum-8375c``); a Mac's GPU
    by a slug of its chip (``apple-m2-pro``).
    """
    name = str(info.get("device_name") or "unknown")
    device = info.get("device")
    if device == "cpu":
        return f"cpu-{slug(name)}"
    if device != "cuda":
        return slug(name)
    words = set(re.findall(r"[a-z0-9]+", name.lower()))
    profile = mig_profile_in_name(name)
    memory = info.get("device_memory_gib")
    matches = []
    for card in catalogue:
        if card.name.split("-")[0] not in words:
            continue
        if profile is not None:
            if any(p.name == profile for p in card.mig_profiles):
                matches.append(card)
        elif (
            memory is not None
            and card.memory_gb
            and abs(float(memory) - card.memory_gb) <= MEMORY_TOLERANCE * card.memory_gb
        ):
            matches.append(card)
    if len(matches) == 1:
        return matches[0].name
    return slug(_MIG_IN_NAME.sub("", name))


def host() -> dict[str, Any]:
    """The machine this process runs on: its CPU, cores, system and the Python and NumPy
    versions (what benchmark figures and load tests were measured on)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import numpy

    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "numpy": numpy.__version__,
    }
