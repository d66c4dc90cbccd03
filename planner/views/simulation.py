"""A simulation's view: what the Simulate page and ``planner simulate`` show of one run.

``simulation_scenario`` is the one way a simulation's parameters become a ``Scenario``:
the scenario a plan's run of the same option is (``planner.plan.request.run_scenario``),
with the batch capped by the memory the sharing mode leaves (``memory_of``). ``simulate``
runs it. ``simulation_view`` composes what a person reads of the run: the headline
figures, the notes of a run far past the card's capacity (``planner.plan.overload``) and
the summary ``planner simulate`` prints, line by line. The page and the command line only
lay these out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner import display
from planner.curves.curve import Point
from planner.curves.fit import Edge, FittedCurve
from planner.errors import BadInput
from planner.plan.cascade import CascadeStep, memory_note, with_cascade_memory
from planner.plan.decoders import decoder_notes
from planner.plan.overload import overload_notes
from planner.plan.request import run_scenario
from planner.sim.calibration import Calibration
from planner.sim.memory import MemoryLimit, available, memory_limit, memory_model
from planner.sim.pipeline import PART_LABELS, PARTS
from planner.sim.results import Results
from planner.sim.scenario import Scenario, Sharing
from planner.sim.simulate import simulate
from planner.sim.split import FIRST_MODEL, ModelShare, model_ends, model_names, model_shares
from planner.views.table import Metric

__all__ = [
    "FIRST_MODEL",
    "MemoryLimit",
    "ModelShare",
    "SimulationView",
    "memory_of",
    "model_ends",
    "model_names",
    "model_shares",
    "simulate",
    "simulation_scenario",
    "simulation_view",
]

NOT_CALIBRATED = "not calibrated: the model's figures (planner loadtest calibrates a curve)"
"""What ``planner simulate`` says of a run on the model's own figures."""


def memory_of(
    points: Sequence[Point],
    sharing: Sharing,
    card_memory_gb: Callable[[], float | None],
    cascade: tuple[CascadeStep, ...] = (),
) -> MemoryLimit:
    """The largest batch that fits in the memory ``sharing`` leaves (SPEC §5.1), from the
    points' memory figures, a cascade's later models added (``planner.plan.cascade``);
    ``card_memory_gb`` is asked for the card's memory only where the mode's memory
    depends on it (not MIG's, nor an MPS limit). BadInput when not even one frame fits."""
    model, note = with_cascade_memory(memory_model(points), cascade)
    memory_gb = None
    if model is not None and available(sharing, None).mb is None:
        memory_gb = card_memory_gb()
    memory = memory_note(memory_limit(model, available(sharing, memory_gb)), note)
    if not memory.fits_one:
        raise BadInput(f"{memory.needs(1)}: no batch fits, so no session can be served")
    return memory


def simulation_scenario(
    fitted: FittedCurve,
    edge: Edge,
    policy: str,
    sessions: int,
    sharing: Sharing,
    *,
    per_request_ms: float,
    calibration: Calibration | None,
    spread: bool,
    memory: MemoryLimit,
    overhead_ms: float,
    **settings: Any,
) -> Scenario:
    """The scenario one simulation runs: ``policy`` at ``sessions`` under ``sharing`` on
    one edge of ``fitted``, its batches capped by ``memory``, built as a plan builds the
    run of the same option (``run_scenario``); ``settings`` are the scenario's other
    fields (frame rate, duration, phases, seed, the policy's parameters, stages, queue)."""
    return run_scenario(
        fitted,
        edge,
        policy,
        sessions,
        sharing,
        upto=max(64, sessions),
        per_request_ms=per_request_ms,
        calibration=calibration,
        spread=spread,
        memory_batch_limit=memory.batch_limit,
        overhead_ms=overhead_ms,
        **settings,
    )


@dataclass(frozen=True)
class SimulationView:
    """What a person reads of one run: its headline figures (the slowest session, the
    p99 latency, how busy the GPU and the CPU threads were), the notes of a run far past
    the card's capacity, and the summary ``planner simulate`` prints, one line each."""

    figures: tuple[Metric, ...]
    cpu_figures: tuple[Metric, ...]
    notes: tuple[str, ...]
    text: tuple[str, ...]
    models: tuple[ModelShare, ...] = ()
    """A cascade's batch time by model (``planner.sim.split``); empty without one."""


def simulation_view(
    results: Results,
    fitted: FittedCurve,
    *,
    calibration: Calibration | None = None,
    min_fps: float | None = None,
    first_model: str = FIRST_MODEL,
) -> SimulationView:
    """The view of ``results``, a run on ``fitted`` (with ``calibration``, if any); the
    slowest session's figure is judged against ``min_fps`` when one is given; a
    cascade's first model is named ``first_model``."""
    notes = (*overload_notes(results, fitted), *decoder_notes(results))
    models = model_shares(results.scenario, results.records, first_model)
    text = (
        *_summary(results),
        *_model_lines(models),
        *notes,
        calibration.description if calibration is not None else NOT_CALIBRATED,
    )
    return SimulationView(_figures(results, min_fps), _cpu_figures(results), notes, text, models)


def _model_lines(models: tuple[ModelShare, ...]) -> list[str]:
    """A cascade's batch time by model, one line each, in the chain's order."""
    if not models:
        return []
    width = max(len(m.model) for m in models)
    return [
        "each batch's time by model (mean / p99 / max per batch, share of the GPU's time):",
        *(
            f"  {m.model:<{width}} {display.ms_column(m.mean_ms)} {display.ms_column(m.p99_ms)} "
            f"{display.ms_column(m.max_ms)}  {display.fraction(m.share)}"
            for m in models
        ),
    ]


def _figures(results: Results, min_fps: float | None) -> tuple[Metric, ...]:
    s = results.scenario
    floor = (
        ""
        if min_fps is None
        else f"The plan's frame-rate floor: {display.fps(min_fps)} for the slowest session "
        "(Criteria to judge the run by). "
    )
    return (
        Metric(
            "Slowest session",
            display.fps(results.min_fps),
            floor + "A session's delivered frame rate is its source rate times the share of "
            "its frames delivered; frames still in flight when the run ends do not count "
            "against it.",
        ),
        Metric(
            f"p99 latency{' (end to end)' if s.overhead_ms else ''}",
            display.ms(results.e2e_latency.p99),
        ),
        Metric("GPU busy", display.fraction(results.gpu_busy_fraction)),
    )


def _cpu_figures(results: Results) -> tuple[Metric, ...]:
    pool = results.cpu
    if pool is None:
        return ()
    threads = "thread" if pool.workers == 1 else "threads"
    figures = [Metric(f"CPU ({pool.workers} {threads}) busy", display.fraction(pool.busy_fraction))]
    for name, stage in (("pre", pool.pre), ("post", pool.post)):
        if stage.wait_mean_ms is not None:
            figures.append(
                Metric(
                    f"Queue wait, {name} (mean / p99)",
                    f"{display.ms(stage.wait_mean_ms, unit=False)} / "
                    f"{display.ms(stage.wait_p99_ms or 0.0)}",
                )
            )
    return tuple(figures)


def chain_line(s: Scenario, took: np.ndarray) -> str:
    """A cascade's batch times in one line: the chain, their mean and their tail."""
    chain = ", then ".join(m.name or f"a model on {m.crops.words}" for m in s.cascade)
    return (
        f"batches run the chain (first model, then {chain}): mean "
        f"{display.ms(float(took.mean()))}, p99 {display.ms(float(np.percentile(took, 99)))}, "
        f"max {display.ms(float(took.max()))} per batch"
    )


def _summary(results: Results) -> list[str]:
    """The lines ``planner simulate`` prints of a run before its notes."""
    s = results.scenario
    doc = results.as_dict()
    lines = [
        f"{s.sessions} sessions, {s.policy}, {s.sharing.label}, {s.duration_s:g} s",
        f"fps per session: mean {display.fps(doc['mean_fps'], unit=False)}, "
        f"min {display.fps(doc['min_fps'], unit=False)}, "
        f"max {display.fps(doc['max_fps'], unit=False)} (Jain {doc['jain']:.3f})",
    ]
    for name, key in (("GPU latency", "latency_ms"), ("end-to-end", "e2e_latency_ms")):
        lat = doc[key]
        if lat["frames"]:
            lines.append(
                f"{name}: p50 {display.ms(lat['p50'])}, p90 {display.ms(lat['p90'])}, "
                f"p99 {display.ms(lat['p99'])}, max {display.ms(lat['max'])} "
                f"({lat['frames']} frames)"
            )
    dropped = "rejected or timed out" if s.queue == "all" else "expired"
    lines.append(
        f"overwritten {display.fraction(doc['overwritten_fraction'])}, {dropped} "
        f"{display.fraction(doc['expired_fraction'])}, GPU busy "
        f"{display.fraction(doc['gpu_busy_fraction'])}"
    )
    hist = ", ".join(f"{k}x{v}" for k, v in doc["batch_histogram"].items())
    lines.append(f"batches (size x count): {hist or 'none ran'}")
    if s.cascade and results.records.batch_size.size:
        lines.append(chain_line(s, results.records.batch_end - results.records.batch_start))
    if doc["starved_sessions"]:
        lines.append(f"starved sessions (below half the mean fps): {doc['starved_sessions']}")
    if s.memory_batch_limit is not None:
        lines.append(f"GPU memory: no batch holds more than {s.memory_batch_limit} frames")
    growth = results.queue
    if growth is not None:
        first, last = growth.p99_first_third_ms, growth.p99_last_third_ms
        if first is not None and last is not None:
            verdict = "the queue grows" if growth.grows else "the queue keeps up"
            verdict += (
                f" (p99 {display.ms(first)} in the first third of the run, "
                f"{display.ms(last)} in the last)"
            )
        else:
            verdict = "too few frames delivered to tell whether it keeps up"
        lines.append(
            f"server queues every frame: {verdict}; "
            f"{growth.queued_at_end:,} frames still queued at the end"
        )
    if results.cpu is not None:
        pool = results.cpu
        for name, stage in (("pre", pool.pre), ("post", pool.post)):
            if stage.jobs:
                lines.append(
                    f"CPU {name} jobs: {stage.jobs}, threads busy "
                    f"{display.fraction(stage.busy_fraction)}, queue wait mean "
                    f"{display.ms(stage.wait_mean_ms)}, p99 {display.ms(stage.wait_p99_ms)}"
                )
        lines.append(
            f"CPU threads ({pool.workers}) busy {display.fraction(pool.busy_fraction)} in all"
        )
    stages = results.stages
    if stages is not None and stages.mean is not None and stages.tail is not None:
        lines.append(f"end-to-end latency by stage (mean / p{stages.percentile:g} tail):")
        for part in PARTS:
            mean, tail = getattr(stages.mean, part), getattr(stages.tail, part)
            lines.append(
                f"  {PART_LABELS[part]:<22} {display.ms_column(mean)} {display.ms_column(tail)}"
            )
    return lines
