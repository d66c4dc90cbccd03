"""A study's view: what the Studies page and ``planner study`` show of a stored study.

``study_view`` composes, for the two axes chosen (``settle`` picks them as the page's
first view does: the link's, else the first two) and the others held at their values, the
summary sentence, the grid of the chosen figure (``planner.studies.view.grid``) with the
text of each cell, as a heatmap draws it and as a table prints it, the cheapest cost per
seat-hour at each latency budget (the front), the cells table with each cell's Plan link,
and a link to the Plan of every cell by where it sits. The page and the command line only
lay these out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from planner import display
from planner.curves.curve import Curve
from planner.links.urls import decode, encode
from planner.plan.params import PlanParams
from planner.spans import from_fields
from planner.studies.params import StudyParams
from planner.studies.store import Member
from planner.studies.study import Study
from planner.studies.view import (
    METRICS,
    Grid,
    axes,
    axis_words,
    coordinates,
    front,
    grid,
    label,
    value,
)
from planner.views.table import Link, Table

__all__ = [
    "METRICS",
    "FrontPoint",
    "StudyView",
    "axes",
    "axis_words",
    "curve_names",
    "grid_text",
    "held",
    "plan_link",
    "settle",
    "study_view",
]

SINGLE_CELL = "This study has a single cell: there is no axis to draw."
HELD_NOTE = (
    "One cell per combination; the other axes held as chosen above. Open a cell's Plan "
    "from the table."
)


@dataclass(frozen=True)
class FrontPoint:
    """The cheapest cell at one latency budget: the budget (ms, as its axis writes it),
    its cost per seat-hour (a figure and its text), the curve and sharing mode that gave
    it, and its cell."""

    budget: str
    cost: float
    cost_text: str
    label: str
    member: Member


@dataclass(frozen=True)
class StudyView:
    """What a person reads of a stored study over two axes: its name and summary, the
    axes with more than one value (and their values), the parameters settled, the note
    of a study with a single cell, the grid of the chosen figure (``None`` with fewer than
    one axis) with its cells' text and as a table, the note of a figure no cell has, the
    front, the cells table (one row per cell the held axes select, its Plan link last)
    and every cell's Plan, by where it sits."""

    name: str
    summary: str
    axes: Mapping[str, list[str]]
    params: StudyParams
    single: str | None
    grid: Grid | None
    grid_text: tuple[tuple[str, ...], ...]
    heatmap: Table | None
    no_figure: str | None
    front: tuple[FrontPoint, ...]
    cells: Table
    plans: tuple[Link, ...]
    names: Mapping[str, str]


def curve_names(curves: Iterable[Curve], ids: Iterable[str]) -> dict[str, str]:
    """Each curve of a study by its model, card, input and precision (its id added where
    two read the same; a curve no longer stored is left out, and so named by its id)."""
    wanted = set(ids)
    found = {c.id: c.label for c in curves if c.id in wanted}
    repeated = {n for n in found.values() if list(found.values()).count(n) > 1}
    return {i: f"{n} ({i})" if n in repeated else n for i, n in found.items()}


def plan_link(member: Member) -> str:
    """The Plan page of a cell, as a relative link."""
    params, _ = decode(PlanParams, member.params)
    return "/?" + urlencode(encode(params), quote_via=quote, safe=",:")


def held(params: StudyParams) -> dict[str, str]:
    """The values the other axes are held at, by axis."""
    return dict(item.split("=", 1) for item in params.hold if "=" in item)


def settle(members: Sequence[Member], params: StudyParams) -> StudyParams:
    """``params`` with the axes the page shows first: the link's where the study has
    them, else its first two; every other axis held at the link's value or its first."""
    every = axes(members)
    names = list(every)
    if not names:
        return params
    x_axis = params.x_axis if params.x_axis in every else names[0]
    others = [n for n in names if n != x_axis] or [x_axis]
    y_axis = params.y_axis if params.y_axis in others else others[0]
    link = held(params)
    hold = {
        name: link[name] if link.get(name) in every[name] else every[name][0]
        for name in names
        if name not in (x_axis, y_axis)
    }
    return StudyParams(
        study=params.study,
        metric=params.metric,
        x_axis=x_axis,
        y_axis=y_axis,
        hold=tuple(f"{k}={v}" for k, v in hold.items()),
    )


def study_view(
    study: Study, members: Sequence[Member], params: StudyParams, names: Mapping[str, str]
) -> StudyView:
    """The view of ``study`` (its ``members``) over the axes ``params`` chose; ``names``
    names its curves (``curve_names``)."""
    done = [m for m in members if m.result is not None]
    failed = [m for m in done if m.result is not None and m.result.status != "ok"]
    summary = (
        f"{study.name}: {len(members)} cells, {len(done)} computed"
        + (f", {len(failed)} failed" if failed else "")
        + (f" · {study.description}" if study.description else "")
    )
    every = axes(members)
    fixed = held(params)
    chosen = None
    text: tuple[tuple[str, ...], ...] = ()
    heatmap = None
    no_figure = None
    cheapest: tuple[FrontPoint, ...] = ()
    if params.x_axis and params.y_axis:
        chosen = grid(members, params.x_axis, params.y_axis, fixed, params.metric)
        text = grid_text(chosen, params.metric)
        corner = f"{axis_words(chosen.y_axis)} \\ {axis_words(chosen.x_axis)}"
        heatmap = Table(
            (corner, *(names.get(x, x) for x in chosen.x)),
            tuple(
                (names.get(y, y), *(cell or display.MISSING for cell in row))
                for y, row in zip(chosen.y, text, strict=True)
            ),
        )
        if all(value(m, params.metric) is None for m in members):
            no_figure = f"No cell of this study has a figure for {METRICS[params.metric]}" + (
                ": per-day figures need a demand profile (`profile` among the study's "
                "fixed values or axes)."
                if params.metric.startswith(("cost_per_day", "day_"))
                else "."
            )
        cheapest = tuple(
            FrontPoint(
                budget,
                cost,
                display.money(cost),
                f"{names.get(m.curve_id, m.curve_id)}, "
                f"{label(m.coordinates.get('modes', ['exclusive']))}",
                m,
            )
            for budget, cost, m in front(members, fixed)
        )
    return StudyView(
        name=study.name,
        summary=summary,
        axes=every,
        params=params,
        single=None if every else SINGLE_CELL,
        grid=chosen,
        grid_text=text,
        heatmap=heatmap,
        no_figure=no_figure,
        front=cheapest,
        cells=_cells(members, params, names),
        plans=tuple(
            Link(
                ", ".join(f"{axis_words(k)} {names.get(v, v)}" for k, v in coordinates(m).items()),
                plan_link(m),
            )
            for m in members
        ),
        names=names,
    )


def grid_text(chosen: Grid, metric: str) -> tuple[tuple[str, ...], ...]:
    """Each cell's figure as written in the grid (empty where none): cost in dollars."""
    money = metric == "cost_per_seat_hour"
    return tuple(
        tuple("" if v is None else (display.money(v) if money else f"{v:g}") for v in row)
        for row in chosen.z
    )


def _cells(members: Sequence[Member], params: StudyParams, names: Mapping[str, str]) -> Table:
    fixed = held(params)
    rows = []
    for member in members:
        where = coordinates(member)
        if not all(where.get(k) == v for k, v in fixed.items()):
            continue
        result = member.result
        outputs = result.outputs if result is not None else {}
        seats, option = outputs.get("seats"), outputs.get("option")
        rows.append(
            {
                **{
                    axis_words(k): names.get(v, v)
                    for k, v in where.items()
                    if k in (params.x_axis, params.y_axis)
                },
                "seats per card": display.MISSING if seats is None else str(seats),
                "with": display.MISSING if option is None else str(option),
                "cost per seat-hour": display.span(
                    from_fields(outputs, "cost_per_seat_hour"), display.money
                ),
                "GPUs for peak": display.span(from_fields(outputs, "gpus")),
                "cost per day": display.span(from_fields(outputs, "cost_per_day"), display.money),
                "status": "not computed" if result is None else result.status,
                "plan": plan_link(member),
            }
        )
    return Table.of(rows)
