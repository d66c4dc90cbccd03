"""Deployment settings: the files that apply a plan's option (SPEC §5.3).

For the recommended option (or another option of the plan) this writes what the people
who run the cluster apply, each file opening with the assumption it encodes:

- ``worker.json``: the worker's session cap and policy parameters (the values the
  simulation used), its sharing mode, and the criteria the cap was found under. JSON has
  no comments, so its assumption is the ``comment`` field.
- ``config.pbtxt`` for ``triton``, ``max-batch`` and ``batch-all``: the ``max_batch_size``
  and ``dynamic_batching { max_queue_delay_microseconds }`` lines of a Triton model
  configuration (field names from Triton's ``model_config.proto``: ``ModelConfig``
  and ``ModelDynamicBatching``), and one model instance per GPU (``instance_group``), as
  the simulation runs one batch at a time per GPU.
- the sharing mode's own file, whose name and text the mode gives (``SharingMode.deploy_file``):
  ``time-slicing.yaml``, the NVIDIA Kubernetes device plugin's sharing config
  (``sharing.timeSlicing.resources[].replicas``), replicas = the jobs planned on a card;
  ``mps.env``, ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`` (the planned share) and
  ``CUDA_MPS_PINNED_DEVICE_MEM_LIMIT`` (the same share of the card's memory);
  ``mig-parted.yaml``, the MIG profile and instance count per card, as an
  ``nvidia-mig-parted`` configuration. Exclusive use has none.

The text is written by hand (the library needs no YAML package); the tests read every
file back with a parser of its format. ``write`` puts the files in a folder.
"""

from __future__ import annotations

import errno
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from planner import display
from planner.curves.cards import Card
from planner.errors import BadInput
from planner.plan.outcomes import Option, Recommendation
from planner.sim.policies import POLICIES
from planner.sim.sharing.deployment import ModeFile, Target, comment
from planner.sim.sharing.mig import CONFIG_NAME
from planner.sim.sharing.mps import memory_limit_mb

__all__ = [
    "CONFIG_NAME",
    "TRITON_POLICIES",
    "DeployFile",
    "choose_option",
    "deployment",
    "mps_memory_mb",
    "option_key",
    "policy_parameters",
    "write",
]

FORMATS = {".json": "json", ".pbtxt": "pbtxt", ".yaml": "yaml", ".env": "env"}
"""A file's format by its extension."""


@dataclass(frozen=True)
class DeployFile:
    """One file to apply: its name, format, text, and the assumption it encodes."""

    name: str
    format: str  # "json", "pbtxt", "yaml" or "env"
    text: str
    assumption: str

    @classmethod
    def of(cls, file: ModeFile) -> DeployFile:
        """A sharing mode's file, its format read off its name."""
        return cls(file.name, FORMATS[PurePath(file.name).suffix], file.text, file.assumption)

    def as_dict(self) -> dict[str, str]:
        return {
            "name": self.name,
            "format": self.format,
            "assumption": self.assumption,
            "text": self.text,
        }


TRITON_POLICIES = ("triton", "max-batch", "batch-all")
"""Policies a Triton dynamic batcher reproduces (SPEC §2.2): batch-all is "whatever is
queued now" up to the session cap, max-batch the same up to B, triton waits up to D."""


def choose_option(result: Recommendation, spec: str | None) -> Option:
    """The option ``spec`` names (``POLICY`` or ``POLICY,MODE``), else the recommended one.

    BadInput when nothing holds a seat, or when ``spec`` names no option of the plan
    that holds one (the message lists those that do).
    """
    holding = [o for o in result.options if o.cap >= 1]
    if spec is None or not spec.strip():
        if result.recommended is None:
            raise BadInput("no option holds even one session; there is nothing to deploy")
        return result.recommended
    policy, _, mode = (part.strip().lower() for part in spec.partition(","))
    named = f"{policy},{mode}"
    found = [o for o in holding if option_key(o) == named or (not mode and o.policy == policy)]
    if not found:
        choices = ", ".join(f"{o.policy},{o.mode}" for o in holding) or "none"
        raise BadInput(
            f"the plan has no option {spec.strip()[:40]!r} that holds a seat "
            f"(options with a seat: {choices})"
        )
    return found[0]


def option_key(option: Option) -> str:
    """``POLICY,MODE``: how a link and ``--option`` name an option."""
    return f"{option.policy},{option.mode}"


def deployment(
    result: Recommendation, option: Option | None = None, card: Card | None = None
) -> tuple[DeployFile, ...]:
    """The files that apply ``option`` (default: the recommended one) of ``result``;
    ``card`` (the catalogue entry) gives the memory for the MPS limit."""
    chosen = option if option is not None else choose_option(result, None)
    if chosen.cap < 1:
        raise BadInput(f"{chosen.label} holds no session; there is nothing to deploy")
    files = [_worker(result, chosen)]
    if chosen.policy in TRITON_POLICIES:
        files.append(_triton(result, chosen))
    target = Target(
        label=chosen.label,
        per_card=chosen.per_card,
        other_jobs=result.request.other_jobs,
        card_memory_gb=card.memory_gb if card is not None else None,
    )
    own = chosen.sharing.kind.deploy_file(chosen.sharing, target)
    if own is not None:
        files.append(DeployFile.of(own))
    return tuple(files)


def write(files: Sequence[DeployFile], folder: Path) -> list[Path]:
    """Write ``files`` into ``folder`` (made if missing) and return their paths. A file
    already there is replaced; a symbolic link in its place is refused (it could point at
    any file of the user's), checked before anything is written, so nothing is
    half-written. BadInput says what could not be written."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        links = [str(folder / f.name) for f in files if (folder / f.name).is_symlink()]
        if links:
            raise BadInput(
                f"{', '.join(links)}: a symbolic link; nothing was written (remove it, or "
                "use another --out)"
            )
        paths = []
        for file in files:
            _write_new(folder / file.name, file.text)
            paths.append(folder / file.name)
    except OSError as exc:
        raise BadInput(f"cannot write to {folder}: {exc.strerror or exc}") from None
    return paths


def _write_new(path: Path, text: str) -> None:
    """Write ``path`` without following a link planted there: a symbolic link is refused,
    a regular file replaced."""
    if path.is_symlink():
        raise BadInput(
            f"{path} is a symbolic link; nothing was written (remove it or use another --out)"
        )
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        descriptor = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link planted between the check and the open
            raise BadInput(f"{path} is a symbolic link; nothing was written") from None
        raise
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(text)


def policy_parameters(result: Recommendation, option: Option) -> dict[str, float]:
    """The policy's parameters as the simulation used them (defaults filled in)."""
    scenario = result.request.scenario(option.policy, option.sharing, "central", option.cap, 0)
    return {name: scenario.param(name) for name in POLICIES[option.policy].params}


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _worker(result: Recommendation, option: Option) -> DeployFile:
    request = result.request
    criteria = request.criteria
    sharing = option.sharing
    unit = sharing.kind.worker_unit
    assumption = (
        f"One worker per {unit} serves at most {option.cap} session(s) with {option.policy}, "
        f"keeping only each session's newest frame, as simulated: the p{criteria.percentile:g} "
        f"end-to-end latency within {display.ms(criteria.budget_ms)} and the slowest session at "
        f"{display.fps(criteria.min_fps)} or more, for {display.fps(request.fps)} sources"
        + (
            f"; a card holds {option.per_card} such workers ({option.seats_per_card} seats)"
            if option.per_card > 1
            else ""
        )
        + ". Sessions beyond the cap go to another worker."
    )
    mode: dict[str, Any] = {"mode": option.mode, **sharing.kind.worker_settings(sharing)}
    document = {
        "comment": assumption,
        "option": option.label,
        "session_cap": option.cap,
        "session_cap_range": [min(option.cap_low, option.cap), max(option.cap_high, option.cap)],
        "instances_per_card": option.per_card,
        "seats_per_card": option.seats_per_card,
        "policy": option.policy,
        "policy_parameters": {k: _number(v) for k, v in policy_parameters(result, option).items()},
        "keep_newest_frame_only": True,
        "sharing": mode,
        "criteria": {
            "latency_budget_ms": criteria.budget_ms,
            "percentile": criteria.percentile,
            "min_fps": criteria.min_fps,
            "overhead_ms": criteria.overhead_ms,
            "max_overwritten": criteria.max_overwritten,
        },
        "fps_per_session": request.fps,
    }
    return DeployFile("worker.json", "json", json.dumps(document, indent=2) + "\n", assumption)


def _triton(result: Recommendation, option: Option) -> DeployFile:
    params = policy_parameters(result, option)
    if option.policy == "batch-all":
        # Every pending frame: at most one per session, so the cap bounds the batch.
        batch, delay = option.cap, 0.0
        why = (
            f"batch-all runs every waiting frame at once; with at most {option.cap} sessions "
            "that is at most one frame each, and Triton's default (no queue delay) batches "
            "whatever is queued now"
        )
    elif option.policy == "max-batch":
        batch, delay = int(params["max_batch"]), 0.0
        why = "max-batch runs up to B waiting frames at once without waiting for more"
    else:
        batch, delay = int(params["max_batch"]), params["max_queue_delay_us"]
        why = f"triton waits up to {delay:g} µs for a batch of {batch}"
    micros = round(delay)
    rounded = "" if math.isclose(micros, delay) else f" ({delay:g} µs rounded to whole µs)"
    assumption = (
        f"{why}; one model instance per GPU runs one batch at a time, as simulated. "
        "Triton does not replace a session's older frame with its newer one: the client "
        "must send only its newest frame while one is pending."
    )
    lines = [
        f"# Triton model configuration lines for {option.label}.",
        *comment(assumption),
        f"# max_queue_delay_microseconds{rounded}: how long a request waits for a fuller batch.",
        f"max_batch_size: {batch}",
        "dynamic_batching {",
        f"  max_queue_delay_microseconds: {micros}",
        "}",
        "instance_group [",
        "  {",
        "    count: 1",
        "    kind: KIND_GPU",
        "  }",
        "]",
    ]
    return DeployFile("config.pbtxt", "pbtxt", "\n".join(lines) + "\n", assumption)


def mps_memory_mb(option: Option, card: Card | None) -> int | None:
    """The MPS client's memory limit in MB: the planned share of the card's memory."""
    return memory_limit_mb(option.sharing, card.memory_gb if card is not None else None)
