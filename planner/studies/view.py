"""A stored study seen over two of its axes (the Study page and ``planner study``'s
summaries): a grid of one figure per cell, the others axes held at chosen values, and
the front of cost per seat against the latency budget."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from planner.sim.policies import POLICIES
from planner.studies.store import Member

METRICS: dict[str, str] = {
    "seats_per_card": "seats per card",
    "cost_per_seat_hour": "USD per seat-hour",
    "cost_per_day": "USD per day over the demand profile (autoscaled)",
    "day_gpu_hours": "GPU-hours per day over the demand profile (autoscaled)",
}
CURVE_AXIS = "curve"
"""The study's curves are an axis too, named by curve id."""


_AXIS_WORDS = {
    CURVE_AXIS: "model and card",
    "budget_ms": "latency budget (ms)",
    "min_fps": "frame-rate floor (fps)",
    "modes": "sharing mode",
    "policies": "policy",
    "percentile": "latency percentile",
    "price_per_hour": "price per card-hour (USD)",
    "mps_share": "MPS compute share (%)",
    "queue": "server queue",
    "spread": "batch-time spread",
    "cotenants": "co-tenants' duty cycles",
    "cotenant_memory_mb": "co-tenants' memory (MB)",
    "cpu_workers": "CPU threads for pre and post work",
    "max_queue_size": "server queue bound (requests)",
    "queue_timeout_us": "server queue timeout (µs)",
    "timeout_action": "server queue timeout action",
    "max_queue_delay_us": "batcher's longest wait (µs)",
    "max_batch": "largest batch",
    "search": "cap search",
    "other_jobs": "rest of the card to other jobs",
    "jitter_ms": "arrival jitter (ms)",
    "crops": "crops per frame of the chain",
    "decode_ms": "decode time per frame on a video decoder (ms)",
    "decoders": "video decoders",
    "codec": "streams' codec",
    "cpu_decode_ms": "CPU decode time per frame (ms)",
}


def axis_words(name: str) -> str:
    """An axis as people read it (``latency budget (ms)``, not ``budget_ms``): its own
    words where the study page names it, else the plan parameter's description with its
    unit in brackets (``per-frame overhead outside the GPU (ms)``)."""
    if name in _AXIS_WORDS:
        return _AXIS_WORDS[name]
    from planner.links.parameters import PARAMETERS

    found = PARAMETERS.get(name)
    if found is None:
        return name
    short = found.doc.split(" (")[0].split(";")[0].split(": ")[-1]
    words, _, unit = short.rpartition(", ")
    unit = {"us": "µs"}.get(unit, unit)
    return f"{words} ({unit})" if words and unit in ("ms", "µs", "fps", "MB", "USD") else short


def label(value: Any) -> str:
    """An axis value as people read it (``all`` for every policy)."""
    if isinstance(value, list | tuple):
        if list(value) == list(POLICIES):
            return "all"
        return ",".join(str(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def coordinates(member: Member) -> dict[str, str]:
    """A member's place on every axis, the curve included, as labels."""
    return {CURVE_AXIS: member.curve_id, **{k: label(v) for k, v in member.coordinates.items()}}


def axes(members: Sequence[Member]) -> dict[str, list[str]]:
    """Every axis with more than one value, and its values in the study's order."""
    seen: dict[str, dict[str, None]] = {}
    for member in members:
        for name, value in coordinates(member).items():
            seen.setdefault(name, {})[value] = None
    return {name: list(values) for name, values in seen.items() if len(values) > 1}


def value(member: Member, metric: str) -> float | None:
    """The member's figure (None before it is computed, or when it failed)."""
    result = member.result
    if result is None or result.status != "ok":
        return None
    found = result.outputs.get(metric)
    return None if found is None else float(found)


@dataclass(frozen=True)
class Grid:
    """A metric over two axes: ``z[j][i]`` at ``x[i]``, ``y[j]``, and its member."""

    x_axis: str
    y_axis: str
    x: list[str]
    y: list[str]
    z: list[list[float | None]]
    members: list[list[Member | None]]


def grid(
    members: Sequence[Member],
    x_axis: str,
    y_axis: str,
    fixed: Mapping[str, str],
    metric: str,
) -> Grid:
    """``metric`` over ``x_axis`` and ``y_axis``, every other axis held at ``fixed`` (its
    first value where ``fixed`` does not say)."""
    every = axes(members)
    held = {name: fixed.get(name, values[0]) for name, values in every.items()
            if name not in (x_axis, y_axis)}  # fmt: skip
    xs, ys = every.get(x_axis, []), every.get(y_axis, [])
    cells: dict[tuple[str, str], Member] = {}
    for member in members:
        where = coordinates(member)
        if all(where.get(k) == v for k, v in held.items()):
            cells[(where.get(x_axis, ""), where.get(y_axis, ""))] = member
    z = [[value(cells[(x, y)], metric) if (x, y) in cells else None for x in xs] for y in ys]
    chosen = [[cells.get((x, y)) for x in xs] for y in ys]
    return Grid(x_axis, y_axis, xs, ys, z, chosen)


def front(
    members: Sequence[Member], fixed: Mapping[str, str], along: str = "budget_ms"
) -> list[tuple[str, float, Member]]:
    """The cheapest cell per value of ``along`` (cost per seat-hour), every other axis
    but the curve and the sharing mode held at ``fixed``: what each budget costs at best."""
    every = axes(members)
    free = {along, CURVE_AXIS, "modes", "policies"}
    held = {name: fixed.get(name, values[0]) for name, values in every.items()
            if name not in free}  # fmt: skip
    best: dict[str, tuple[float, Member]] = {}
    for member in members:
        where = coordinates(member)
        cost = value(member, "cost_per_seat_hour")
        if cost is None or not all(where.get(k) == v for k, v in held.items()):
            continue
        key = where.get(along, "")
        if key not in best or cost < best[key][0]:
            best[key] = (cost, member)
    order = every.get(along, list(best))
    return [(k, best[k][0], best[k][1]) for k in order if k in best]


def params_of(member: Member) -> dict[str, str]:
    """The cell's plan parameters as a link carries them."""
    return dict(member.params)


def describe(member: Member) -> str:
    """The cell's coordinates in one line."""
    return json.dumps(coordinates(member))
