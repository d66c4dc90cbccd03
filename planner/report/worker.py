"""The worker drawn as its stages in a plan report (SPEC §5.3, §6.3): the decoding of the
streams, the CPU work before the GPU, each model of the chain, the CPU work after, each
with the time it takes at the cap of the option the report answers with.

``worker_stages`` works the figures out from the plan's request and the option's runs at
its cap: the batch size that carried the most frames there (the batch a person sizes the
worker for; the cap itself where no run was made), each model's time on that batch at the
expected crops (``planner.plan.cascade.stage_times``, the central edge of its curve), the
decode time per frame on what the option's instance decodes on (its video decoders, or
the CPU where it has none: ``planner.plan.decoders``) and the CPU stages' work per
frame. ``stages_table`` and ``stages_figure`` lay them out from numbers only; every name
in them is the renderer's to escape (the figure escapes its own for Plotly's pseudo-HTML).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from planner import display
from planner.errors import BadInput
from planner.plan.cascade import stage_times
from planner.plan.outcomes import Option, Recommendation
from planner.report.figures import COLOURS, plotly_text
from planner.views.table import Table

DEPLOYMENT_NOTE = (
    "The deployment files need nothing new for a chain of models: the worker runs its "
    "models one after the other on each batch, in one process on the card, so the "
    "session cap, the batcher's settings and the sharing mode they carry are the "
    "worker's; the later models are called on the crops by the worker, not batched by a "
    "server of their own."
)
"""What the report says of the deployment files of a plan whose worker runs a chain."""

DECODE_DEPLOYMENT_NOTE = (
    "The deployment files need nothing new for the decode stage: the worker decodes its "
    "streams itself (on the card's video decoders, or on the CPU where its instance has "
    "none), and under MIG the profile they name is the one whose decoders were counted; "
    "the session cap they carry already stops where the decoders would fall behind."
)
"""What the report says of the deployment files of a plan whose worker decodes on
decoders it has counted."""

UNCOUNTED_DECODE_NOTE = (
    "The deployment files need nothing new for the decode stage, but the session cap "
    "they carry does not account for the decoders of every option: where their count is "
    "unknown, decoding was taken as a delay that never queues. Give the count (decoders) "
    "to plan a cap that stops where they would fall behind."
)
"""The same, where some option's decoder count is unknown."""


def decode_deployment_note(request: Any, options: Any) -> str | None:
    """What the report says of the deployment files of a plan that decodes (None for
    one that does not): whether the cap they carry accounts for the decoders."""
    decoders = getattr(request, "decoders", None)
    if decoders is None:
        return None
    for option in options:
        try:
            if not decoders.decoding(option.sharing).known:
                return UNCOUNTED_DECODE_NOTE
        except BadInput:  # no decoder and no CPU time: the plan has said so already
            continue
    return DECODE_DEPLOYMENT_NOTE


AXIS = "each stage's work, one after the other (ms; waits not drawn)"


@dataclass(frozen=True)
class StageTime:
    """One stage of the worker: what it is, where it runs, its time (ms) and what that
    time is for (a frame, or the batch at the cap)."""

    stage: str
    runs_on: str
    ms: float
    per: str


@dataclass(frozen=True)
class WorkerStages:
    """The worker's stages in order, for a batch of ``batch`` frames at the cap of
    ``option`` (None when the plan has no option)."""

    option: Option | None
    batch: int
    stages: tuple[StageTime, ...]


def batch_at_cap(option: Option) -> int:
    """The batch size that carried the most frames at the option's cap (the cap where
    no run was made there)."""
    sizes = option.at_cap.batch_sizes if option.at_cap is not None else ()
    frames = np.asarray(sizes, dtype=np.float64) * np.arange(len(sizes))
    if frames.size and frames.max() > 0:
        return int(np.argmax(frames))
    return max(option.cap, 1)


def worker_stages(result: Recommendation) -> WorkerStages | None:
    """The worker's stages at the cap of the plan's answer (the recommended option, or
    the one that came closest); None when the worker runs one model, decodes nothing and
    has no CPU stage."""
    request: Any = result.request
    cascade = tuple(getattr(request, "cascade", ()))
    stages = getattr(request, "stages", None)
    pre = float(getattr(stages, "pre_ms", 0.0) or 0.0)
    post = float(getattr(stages, "post_ms", 0.0) or 0.0)
    option = getattr(result, "closest", None)  # a plan with no option has none
    decode = None if option is None else decode_stage(request, option)
    if option is None or not (cascade or pre or post or decode):
        return None
    batch = batch_at_cap(option)
    times = stage_times(cascade, request.curve_for(option.sharing), batch)
    names = [request.model_name, *(step.name for step in cascade)]
    rows: list[StageTime] = [decode] if decode is not None else []
    if pre:
        rows.append(StageTime("CPU work before the GPU", "a CPU thread", pre, "per frame"))
    for j, (name, ms) in enumerate(zip(names, times, strict=True)):
        on = "the batch's frames" if j == 0 else f"the crops ({cascade[j - 1].crops.words})"
        rows.append(StageTime(name, f"the GPU, on {on}", ms, f"per batch of {batch}"))
    if post:
        rows.append(StageTime("CPU work after the GPU", "a CPU thread", post, "per frame"))
    return WorkerStages(option, batch, tuple(rows))


def decode_stage(request: Any, option: Option) -> StageTime | None:
    """The decode stage of ``option``'s instance: its time per frame on one decoder engine
    (or on the CPU where the instance has none); None when the plan decodes nothing."""
    decoders = getattr(request, "decoders", None)
    if decoders is None:
        return None
    try:
        decoding = decoders.decoding(option.sharing)
    except BadInput:  # no decoder and no CPU time: the plan has said so already
        return None
    if decoding.on_cpu:
        on = "the CPU (no video decoder on this instance)"
    elif not decoding.known:
        on = "the video decoders (how many is unknown: a delay that never queues)"
    else:
        on = f"{decoding.engines} video decoder{'' if decoding.engines == 1 else 's'}"
    return StageTime(f"decode ({decoding.codec})", on, decoding.decode_ms, "per frame")


def stages_table(worker: WorkerStages) -> Table:
    """The stages as a table of text cells, in the order a frame passes them."""
    return Table(
        ("stage", "runs on", "time at the cap", "for"),
        tuple((s.stage, s.runs_on, display.ms(s.ms), s.per) for s in worker.stages),
    )


def stages_figure(worker: WorkerStages) -> go.Figure:
    """The stages one after the other on a time axis: a bar per stage from where the one
    before ends, for a frame in a batch of the size at the cap."""
    data: list[dict[str, Any]] = []
    start = 0.0
    for index, s in enumerate(worker.stages):
        name = plotly_text(s.stage)
        data.append(
            {
                "type": "bar",
                "orientation": "h",
                "base": [start],
                "x": [s.ms],
                "y": [name],
                "name": name,
                "marker": {"color": COLOURS[index % len(COLOURS)]},
                "hovertemplate": f"%{{x:,.3~r}} ms {plotly_text(s.per)}<extra></extra>",
            }
        )
        start += s.ms
    layout = {
        "title": {
            "text": f"The worker's stages at the cap (a batch of {worker.batch})",
            "x": 0,
            "xanchor": "left",
        },
        "height": 120 + 40 * len(worker.stages),
        "margin": {"l": 160, "r": 30, "t": 50, "b": 55},
        "showlegend": False,
        "xaxis": {"title": {"text": AXIS}},
        "yaxis": {"autorange": "reversed"},
    }
    return go.Figure(data=data, layout=layout)
