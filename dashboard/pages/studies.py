"""Studies: a stored grid of recommendations over two chosen axes, the cost of each
latency budget at best, and a link to the Plan of every cell; and a small study started
here."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

import streamlit as st

from dashboard import url_state
from dashboard.state import store
from dashboard.study_charts import front_figure, heatmap_figure
from dashboard.ui import flash, show_flash, show_problems, table
from planner import display
from planner.errors import BadInput, NotFound, PlannerError
from planner.links.urls import decode, encode
from planner.plan.params import PlanParams
from planner.spans import from_fields
from planner.studies.params import StudyParams
from planner.studies.run import StudyInterrupted, run_study
from planner.studies.store import Member, load_study, studies
from planner.studies.study import read_study
from planner.studies.view import (
    METRICS,
    axes,
    axis_words,
    coordinates,
    front,
    grid,
    value,
)
from planner.text import md
from planner.views.work import OverBudget, Work

PAGE_MAX_CELLS = 200
"""The largest study started from this page; larger ones run from the command line."""
EXAMPLE = """name = "a small study"

[curves]
filters = [{ model = "ball-detector", card = "server-24gb" }]

[fixed]
seeds = 2
duration_s = 5
peak_sessions = 100
price_per_hour = 2.0

[axes]
budget_ms = [30, 40, 50, 60]
policies = ["all", "batch-all", "oldest-first"]
"""


def plan_link(member: Member) -> str:
    """The Plan page of a cell, as a relative link."""
    params, _ = decode(PlanParams, member.params)
    return "/?" + urlencode(encode(params), quote_via=quote, safe=",:")


def controls(names: list[str], params: StudyParams) -> StudyParams:
    bar = st.sidebar
    bar.markdown("### What to show")
    chosen = bar.selectbox(
        "Study",
        names,
        index=names.index(params.study) if params.study in names else 0,
        key="study_name",
    )
    metric = bar.radio(
        "Figure per cell",
        list(METRICS),
        index=list(METRICS).index(params.metric),
        format_func=METRICS.__getitem__,
        key="study_metric",
    )
    return StudyParams(study=chosen, metric=metric)


def views(members: list[Member], params: StudyParams, curve_names: dict[str, str]) -> StudyParams:
    """The two axes shown and the values the others are held at; returns the params."""
    every = axes(members)
    names = list(every)
    if not names:
        st.info("This study has a single cell: there is no axis to draw.")
        return params
    x_default = params.x_axis if params.x_axis in every else names[0]
    left, right = st.columns(2)
    x_axis = left.selectbox(
        "Across", names, index=names.index(x_default), key="study_x", format_func=axis_words
    )
    others = [n for n in names if n != x_axis] or [x_axis]
    y_default = params.y_axis if params.y_axis in others else others[0]
    y_axis = right.selectbox(
        "Down", others, index=others.index(y_default), key="study_y", format_func=axis_words
    )
    held = dict(item.split("=", 1) for item in params.hold if "=" in item)
    rest = [n for n in names if n not in (x_axis, y_axis)]
    hold: dict[str, str] = {}
    if rest:
        columns = st.columns(min(len(rest), 4))
        for index, name in enumerate(rest):
            values = every[name]
            start = held.get(name, values[0])
            hold[name] = columns[index % len(columns)].selectbox(
                f"{axis_words(name)} held at",
                values,
                index=values.index(start) if start in values else 0,
                key=f"study_hold_{name}",
                format_func=lambda v: curve_names.get(v, v),
            )
    return StudyParams(
        study=params.study,
        metric=params.metric,
        x_axis=x_axis,
        y_axis=y_axis,
        hold=tuple(f"{k}={v}" for k, v in hold.items()),
    )


def cell_rows(
    members: list[Member], params: StudyParams, curve_names: dict[str, str]
) -> list[dict[str, Any]]:
    held = dict(item.split("=", 1) for item in params.hold if "=" in item)
    rows = []
    for member in members:
        where = coordinates(member)
        if not all(where.get(k) == v for k, v in held.items()):
            continue
        result = member.result
        outputs = result.outputs if result is not None else {}
        rows.append(
            {
                **{
                    axis_words(k): curve_names.get(v, v)
                    for k, v in where.items()
                    if k in (params.x_axis, params.y_axis)
                },
                "seats per card": outputs.get("seats"),
                "with": outputs.get("option"),
                "cost per seat-hour": display.span(
                    from_fields(outputs, "cost_per_seat_hour"), display.money
                ),
                "GPUs for peak": display.span(from_fields(outputs, "gpus")),
                "cost per day": display.span(from_fields(outputs, "cost_per_day"), display.money),
                "status": "not computed" if result is None else result.status,
                "plan": plan_link(member),
            }
        )
    return rows


def open_cell(members: list[Member], curve_names: dict[str, str]) -> None:
    """Any cell's Plan, picked by where it sits on the axes."""
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    labels = {
        m.key: ", ".join(
            f"{axis_words(k)} {curve_names.get(v, v)}" for k, v in coordinates(m).items()
        )
        for m in members
    }
    chosen = left.selectbox(
        "Open the Plan of a cell",
        list(labels),
        format_func=labels.__getitem__,
        key="study_open",
    )
    member = next(m for m in members if m.key == chosen)
    right.link_button("Open its plan", plan_link(member), icon=":material/open_in_new:")


def start_form() -> None:
    with st.expander("Start a small study here"):
        st.caption(
            f"Up to {PAGE_MAX_CELLS} cells, in this server's own process, taking turns with "
            "its other visitors and within one page's computation budget; larger studies "
            "run from the command line (`planner study FILE`, "
            "`--engine ray` for a cluster). The format is that of `examples/study.toml`."
        )
        text = st.text_area("Study file (TOML)", EXAMPLE, height=300, key="study_file")
        if st.button("Run the study", key="study_run", icon=":material/play_arrow:"):
            run_here(text)


def run_here(text: str) -> None:
    try:
        study = read_study("study.toml", text.encode("utf-8"))
        from planner.studies.study import cells

        count = len(cells(db, study))
    except (BadInput, NotFound) as exc:
        show_problems("This study cannot run:", exc.problems)
        return
    if count > PAGE_MAX_CELLS:
        show_problems(
            "This study is too large to run here:",
            [
                f"it has {count:,} cells; the page runs at most {PAGE_MAX_CELLS}. Save the file "
                "and run `planner study FILE` instead."
            ],
        )
        return
    bar = st.progress(0.0, text="Preparing the cells…")
    cells_done = [0, max(count, 1)]

    def chunk(current: Work) -> None:
        # Every chunk of simulation updates the bar: where Streamlit stops the study of a
        # visitor who left (or replaced this run), at the next chunk.
        share = min(current.done / current.budget, 1.0)
        bar.progress(
            share,
            text=f"{cells_done[0]} of {cells_done[1]} cells; "
            f"{current.done / 1e6:,.1f} million frames of this page's budget",
        )

    def show(state: Any) -> None:
        cells_done[:] = [state.done, max(state.total - state.skipped, 1)]

    try:
        # In this process, under the page's budget and in the server's turns: the study
        # interleaves with other visitors' plans chunk by chunk and starts no worker.
        summary = run_study(db, study, engine="here", work=Work(on_chunk=chunk), progress=show)
    except OverBudget as exc:
        show_problems(
            "The study stopped:",
            [
                f"it {exc.problems[0]}; the cells finished before are stored. Save the file "
                "and run `planner study FILE` to compute it without a budget."
            ],
        )
        return
    except (StudyInterrupted, PlannerError) as exc:
        show_problems("The study stopped:", getattr(exc, "problems", ["interrupted"]))
        return
    bar.empty()
    flash("success", f"Study {md(summary.study)}: {summary.computed} cells computed.")
    st.query_params.from_dict(encode(StudyParams(study=summary.study)))
    st.rerun()


def _curve_names(db: Any, ids: set[str]) -> dict[str, str]:
    """Each curve of the study by its model, card, input and precision (its id added
    where two read the same, or the id alone for a curve no longer stored)."""
    found = {c.id: c.label for c in db.curves() if c.id in ids}
    repeated = {n for n in found.values() if list(found.values()).count(n) > 1}
    return {i: f"{n} ({i})" if n in repeated else n for i, n in found.items()}


# ---------------------------------------------------------------------------------------

show_flash()
db = store()
names = studies(db)
st.title("Studies", anchor=False)
link = url_state.opened(StudyParams)
params = link.params if link is not None else StudyParams()
if link is not None:
    url_state.show_ignored(link.ignored)
if not names:
    st.info(
        "No study is stored yet. Run one from the command line (`planner study "
        "examples/study.toml`) or start a small one below.",
        icon=":material/grid_on:",
    )
    start_form()
    st.stop()

if params.study is not None and params.study not in names:
    st.warning(
        f"The link's study {md(params.study[:80])!s} is not stored here: it was ignored, "
        "and the newest study is shown."
    )
    params = StudyParams(metric=params.metric)
params = controls(names, params)
try:
    study, members = load_study(db, params.study or names[0])
except NotFound as exc:
    show_problems("This study cannot be shown:", exc.problems)
    st.stop()
curve_names = _curve_names(db, {m.curve_id for m in members})
done = [m for m in members if m.result is not None]
failed = [m for m in done if m.result is not None and m.result.status != "ok"]
st.caption(
    f"{md(study.name)}: {len(members)} cells, {len(done)} computed"
    + (f", {len(failed)} failed" if failed else "")
    + (f" · {md(study.description)}" if study.description else "")
)
params = views(members, params, curve_names)
url_state.publish(params)
if params.x_axis and params.y_axis:
    held = dict(item.split("=", 1) for item in params.hold if "=" in item)
    view = grid(members, params.x_axis, params.y_axis, held, params.metric)
    if all(value(m, params.metric) is None for m in members):
        st.info(
            f"No cell of this study has a figure for {METRICS[params.metric]}"
            + (
                ": per-day figures need a demand profile (`profile` among the study's "
                "fixed values or axes)."
                if params.metric.startswith(("cost_per_day", "day_"))
                else "."
            )
        )
    st.plotly_chart(
        heatmap_figure(view, params.metric, names=curve_names),
        width="stretch",
        key="study_heatmap",
    )
    cheapest = front(members, held)
    if len(cheapest) > 1:
        st.plotly_chart(
            front_figure(cheapest, names=curve_names), width="stretch", key="study_front"
        )
    st.caption(
        "One cell per combination; the other axes held as chosen above. Open a cell's Plan "
        "from the table."
    )
table(
    cell_rows(members, params, curve_names),
    key="study_cells",
    column_config={
        "plan": st.column_config.LinkColumn("plan", display_text="open the plan"),
        "USD per seat-hour": st.column_config.NumberColumn(format="$%.3f"),
        "USD per day": st.column_config.NumberColumn(format="$%.2f"),
    },
)
open_cell(members, curve_names)
start_form()
