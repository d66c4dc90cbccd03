"""Co-tenants given by what they run (SPEC §6.3): a stored curve (or its points given
inline, ``1:5,4:12``), a batch and a request rate each, turned into the time-slicing
model's figures (``CotenantWorkload``: busy ``r / b x L(b)`` of the time in busy periods
of ``L(b)``, holding the curve's memory at that batch), which the answer shows. ``L(b)``
is the curve's fit with its band at that batch: each band edge of a plan runs the
co-tenant at that edge's time, and one busy all the time on the slow edge is refused."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner.curves.curve import parse_points_option
from planner.curves.fit import fit_curve
from planner.errors import BadInput, NotFound
from planner.links.codecs import is_points
from planner.sim.memory import memory_model
from planner.sim.sharing.time_slicing import CotenantWorkload
from planner.store.repository import Store

WORKLOAD_FIELDS = ("cotenant_curve", "cotenant_batch", "cotenant_rps")
"""The link parameters of co-tenants by workload: one entry each per co-tenant."""


def workload_conflicts(values: Mapping[str, Any]) -> list[tuple[tuple[str, ...], str]]:
    """Co-tenants by workload need a batch and a rate for every curve."""
    counts = [len(values.get(name) or ()) for name in WORKLOAD_FIELDS]
    if len(set(counts)) == 1:
        return []
    return [
        (
            tuple(name for name in WORKLOAD_FIELDS if values.get(name)),
            "give every co-tenant by workload a curve, a batch and a request rate "
            f"({counts[0]} curves, {counts[1]} batches, {counts[2]} rates)",
        )
    ]


def other_card(what: str, curve: Any, card: str | None) -> list[str]:
    """The problem of a curve measured on another card than ``card`` (none where either
    card is not known): its times and memory are that card's, not this one's."""
    if not card or not curve.card or curve.card.lower() == card.lower():
        return []
    return [
        f"{what}: curve {curve.id} was measured on {curve.card}, the plan's curve on "
        f"{card}; give a curve measured on {card}"
    ]


def workloads_of(
    values: Any, store: Store | None, card: str | None = None
) -> tuple[CotenantWorkload, ...]:
    """The co-tenants a plan or a simulation gives by workload, their curves read from
    the store and fitted (BadInput naming every problem, a curve measured on another card
    than ``card`` among them)."""
    curves = tuple(getattr(values, "cotenant_curve", ()) or ())
    if not curves:
        return ()
    if store is None and not all(is_points(c) for c in curves):
        raise BadInput("co-tenants given by curve need the store that holds their curves")
    batches = tuple(getattr(values, "cotenant_batch", ()) or ())
    rates = tuple(getattr(values, "cotenant_rps", ()) or ())
    problems = [m for _, m in workload_conflicts(vars(values))]
    if problems:
        raise BadInput(problems)
    out, problems = [], []
    for curve_id, batch, rps in zip(curves, batches, rates, strict=True):
        if is_points(curve_id):  # its points given inline: no store, no card to check
            points, name = parse_points_option(curve_id), f"a co-tenant on points {curve_id}"
        else:
            assert store is not None  # an id needs the store: refused above without one
            try:
                curve = store.curve(curve_id)
            except NotFound:
                problems.append(f"co-tenant curve: no stored curve has the id {curve_id}")
                continue
            wrong_card = other_card("co-tenant curve", curve, card)
            if wrong_card:
                problems.extend(wrong_card)
                continue
            points, name = curve.points, f"{curve.model} ({curve.id})"
        b = int(batch)
        central, fast, slow = (float(v[()]) for v in fit_curve(points).band(b))
        memory = memory_model(points)
        try:
            out.append(
                CotenantWorkload(
                    name,
                    b,
                    float(rps),
                    central,
                    None if memory is None else memory.at(b),
                    optimistic_ms=fast,
                    pessimistic_ms=slow,
                )
            )
        except BadInput as exc:
            problems.extend(exc.problems)
    if problems:
        raise BadInput(problems)
    return tuple(out)
