"""Curves: browse, upload, edit, delete and download measured batch curves. What a curve
shows is its view (``planner.views.curve``); the Upload tab is ``dashboard.curves_upload``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import streamlit as st

from dashboard.charts import loo_bars_figure, series_figure
from dashboard.curves_upload import BROWSE, TABLE_COLUMNS, UPLOAD, upload
from dashboard.state import store
from dashboard.tables import (
    curve_name,
    curve_rows,
    download_name,
    point_columns,
    point_rows,
    points_from_rows,
    typed,
)
from dashboard.ui import (
    FORGET,
    apply_next_run,
    flash,
    set_next_run,
    show_flash,
    show_problems,
    table,
)
from planner.curves.curve import PRECISIONS, Curve
from planner.curves.imports.native import to_csv
from planner.errors import BadInput, NotFound
from planner.store.repository import Store
from planner.text import md, md_list
from planner.views.curve import CurveView, FitView, curve_view

POINT_COLUMNS: dict[str, Any] = {
    "batch": st.column_config.NumberColumn("batch", min_value=1, step=1, format="%d"),
    "latency_ms": st.column_config.NumberColumn("latency (ms)", min_value=0.0),
    "p10_ms": st.column_config.NumberColumn("p10 (ms)", min_value=0.0),
    "p50_ms": st.column_config.NumberColumn("p50 (ms)", min_value=0.0),
    "p90_ms": st.column_config.NumberColumn("p90 (ms)", min_value=0.0),
    "p99_ms": st.column_config.NumberColumn("p99 (ms)", min_value=0.0),
    "std_ms": st.column_config.NumberColumn("std (ms)", min_value=0.0),
    "n": st.column_config.NumberColumn("runs", min_value=1, step=1, format="%d"),
    "memory_mb": st.column_config.NumberColumn("memory (MB)", min_value=0.0),
}


def browse(db: Store) -> None:
    everything = db.curves()
    if not everything:
        st.info("No curves are stored. Add one from a benchmark file under **Upload**.")
        return
    left, middle, right = st.columns(3)
    model = left.selectbox(
        "Model",
        sorted({c.model for c in everything}),
        index=None,
        placeholder="All models",
        key="model",
        bind="query-params",
    )
    card = middle.selectbox(
        "Card",
        sorted({c.card for c in everything}),
        index=None,
        placeholder="All cards",
        key="card",
        bind="query-params",
    )
    precision = right.selectbox(
        "Precision",
        [p for p in PRECISIONS if any(c.precision == p for c in everything)],
        index=None,
        placeholder="All precisions",
        key="precision",
        bind="query-params",
    )
    curves = [
        c
        for c in everything
        if model in (None, c.model) and card in (None, c.card) and precision in (None, c.precision)
    ]
    if not curves:
        no_match()
        return
    table(curve_rows(curves), key="curves_table", column_config=TABLE_COLUMNS)
    st.caption(f"{len(curves)} of {len(everything)} stored curves. Latency is per batched call.")

    by_id = {c.id: c for c in curves}
    # Kept in the URL by hand: a bound selectbox would write its label, not the id.
    linked = st.query_params.get("curve")
    if linked and all(c.id != linked for c in everything):
        st.warning(f"No stored curve has the id {md(repr(linked[:40]))}; showing another one.")
    if linked in by_id and "curve" not in st.session_state:
        st.session_state["curve"] = linked  # the link's choice, on the page's first run
    chosen = st.selectbox(
        "Curve to show",
        list(by_id),
        format_func=lambda i: f"{curve_name(by_id[i])}  ({i})",
        key="curve",
    )
    if chosen is not None:
        st.query_params["curve"] = chosen
        detail(db, by_id[chosen])


def no_match() -> None:
    """The empty state of the filters: say so, and offer to clear them."""
    st.info("No stored curve matches these filters.", icon=":material/filter_alt_off:")
    if st.button("Clear filters", key="curves_clear_filters", icon=":material/clear_all:"):
        set_next_run(model=None, card=None, precision=None)
        st.rerun()


def flagged(view: CurveView) -> None:
    """A flagged curve says why wherever it is shown in detail, and how to replace it."""
    if view.flag is None:
        return
    st.warning(
        f"**{view.flag.label}: {md(view.flag.value)}.** {view.flag.help}",
        icon=":material/warning:",
    )
    st.page_link(
        "dashboard/pages/measure.py",
        label="Measure it again",
        icon=":material/speed:",
    )


def detail(db: Store, curve: Curve) -> None:
    view = curve_view(curve)
    st.subheader(md(view.title), anchor=False)  # no in-page link made of user text
    flagged(view)
    links = st.columns(3)
    for column, link, page, icon in zip(
        links,
        view.links,
        ("dashboard/pages/plan.py", "dashboard/pages/simulate.py"),
        (":material/event_seat:", ":material/timeline:"),
        strict=False,
    ):
        column.page_link(page, label=link.what, icon=icon, query_params={"curve": view.id})
    diagnostics(view.fit)
    about, points = st.columns(2, gap="large")
    with about:
        st.markdown("**About this curve**")
        table(
            view.metadata.records,
            key="curve_metadata",
            height="content",
            column_config={"value": st.column_config.TextColumn("value", width="large")},
        )
        for name, text in view.long_metadata:
            st.caption(f"**{md(name)}**: {md(text)}")
        st.download_button(
            "Download CSV",
            data=to_csv([curve]),
            file_name=download_name(curve),
            mime="text/csv",
            key="curve_download",
            on_click="ignore",
            icon=":material/download:",
        )
        rename_controls(db, curve)
        delete_controls(db, curve)
    with points:
        st.markdown("**Points** (edit cells, add or remove rows)")
        editor_key = f"points_editor_{curve.id}"
        edited = st.data_editor(
            point_rows(curve),
            key=editor_key,
            num_rows="dynamic",
            hide_index=True,
            column_config={c: POINT_COLUMNS[c] for c in point_columns(curve)},
        )
        st.caption(
            "Saving edited points makes a **new curve with its own id**. This curve stays "
            "as it is, so saved plans that use it keep working; delete it afterwards if you "
            "no longer need it."
        )
        if st.button("Save as a new curve", key="points_save", icon=":material/save:"):
            save_edit(db, curve, edited, editor_key)


def diagnostics(fit: FitView) -> None:
    """How well the points pin the curve down: the fit with its band against the
    straight-line method, throughput and time per frame, leave-one-out errors, reconciled
    points and the batch size worth measuring next."""
    series = [fit.series]
    left, right = st.columns(2)
    left.plotly_chart(series_figure(series, straight=True), width="stretch", key="chart_latency")
    right.plotly_chart(
        series_figure(series, view="per_frame"), width="stretch", key="chart_per_frame"
    )
    st.caption(
        "The line is the fit (dotted where extrapolated), the shaded band how far it could "
        "be off, the dashed grey line the straight-line method (interpolate between "
        "neighbours, extend the nearest two points). Time per frame is the latency of a call "
        "divided by its batch size: where it falls as the batch grows, batching pays on this "
        "card; where it stays flat or rises, batching only adds waiting."
    )
    left, right = st.columns(2)
    left.plotly_chart(
        series_figure(series, view="throughput"), width="stretch", key="chart_throughput"
    )
    with right:
        st.markdown(f"**The fit.** {md(fit.description)}.")
        if fit.reconciled is not None:
            st.warning(fit.reconciled, icon=":material/warning:")
        advice = fit.measure_next
        if advice is not None:
            st.info(
                f"**Measure {advice.value} next**, {advice.help}. A plan weights the batch "
                "sizes its decision rests on, so the Plan page may name another batch for "
                "this curve.",
                icon=":material/straighten:",
            )
        if fit.loo is None:
            st.caption(fit.loo_note)
        else:
            st.markdown(f"**{fit.loo.label}** ({fit.loo.help}): {fit.loo.value}.")
    if fit.loo is not None:
        left, right = st.columns(2)
        left.plotly_chart(loo_bars_figure(fit.loo_bars), width="stretch", key="chart_loo")
        with right:
            table(typed(fit.loo_table), key="curve_loo")
    with st.expander("What the fit assumes"):
        st.markdown(md_list(fit.assumptions))


def save_edit(db: Store, curve: Curve, rows: list[dict[str, Any]], editor_key: str) -> None:
    try:
        points = points_from_rows(rows)
    except BadInput as exc:
        show_problems("The edited points were not saved:", exc.problems)
        return
    edited = curve.with_points(points, source="uploaded")
    if edited.id == curve.id:
        st.info("The points are unchanged, so there is nothing to save.")
        return
    edited = replace(edited, environment={**curve.environment, "edited_from": curve.id})
    saved = db.add_curves([edited])[0]
    flash(
        "success",
        f"Saved the edited points as a new curve, **{saved.id}**. "
        f"The original ({curve.id}) is unchanged.",
    )
    set_next_run(curve=saved.id, **{editor_key: FORGET})
    st.rerun()


def rename_controls(db: Store, curve: Curve) -> None:
    """Store the curve under another model or card name (a new curve, like an edit)."""
    with st.expander("Rename model or card"):
        left, right = st.columns(2)
        model = left.text_input("New model name", key=f"rename_model_{curve.id}",
                                placeholder=curve.model)  # fmt: skip
        card = right.text_input("New card name", key=f"rename_card_{curve.id}",
                                placeholder=curve.card)  # fmt: skip
        st.caption(
            "Renaming makes a **new curve with its own id** that records this one's id; this "
            "curve stays for the saved plans that use it."
        )
        if st.button("Save under the new names", key="curve_rename", icon=":material/edit:"):
            try:
                renamed = db.rename_curve(curve.id, model=model, card=card)
            except BadInput as exc:
                show_problems("The curve was not renamed:", exc.problems)
                return
            flash(
                "success",
                f"Saved as {md(renamed.label)}, a new curve **{renamed.id}** renamed from "
                f"{curve.id}; the original is unchanged.",
            )
            set_next_run(
                curve=renamed.id, model=None, card=None, precision=None,
                **{f"rename_model_{curve.id}": FORGET, f"rename_card_{curve.id}": FORGET},
            )  # fmt: skip
            st.rerun()


def delete_controls(db: Store, curve: Curve) -> None:
    if st.button("Delete curve", key="curve_delete", icon=":material/delete:"):
        if db.plans_using(curve.id):
            st.session_state["confirm_delete"] = curve.id
        else:
            delete(db, curve, force=False)
    if st.session_state.get("confirm_delete") != curve.id:
        return
    users = db.plans_using(curve.id)
    with st.container(border=True):
        st.warning(
            f"{len(users)} saved plan(s) use this curve: {md(', '.join(users))}. "
            "Their links will open with the default curve instead. Delete it anyway?"
        )
        yes, no = st.columns(2)
        if yes.button("Delete anyway", key="curve_delete_confirm", type="primary"):
            delete(db, curve, force=True)
        if no.button("Keep the curve", key="curve_delete_cancel"):
            st.session_state.pop("confirm_delete", None)
            st.rerun()


def delete(db: Store, curve: Curve, *, force: bool) -> None:
    try:
        db.delete_curve(curve.id, force=force)
    except (BadInput, NotFound) as exc:
        show_problems("The curve was not deleted:", exc.problems)
        return
    st.session_state.pop("confirm_delete", None)
    flash("success", f"Deleted curve {curve.id} ({md(curve.label)}).")
    set_next_run(curve=FORGET)
    st.query_params.pop("curve", None)
    st.rerun()


apply_next_run()
show_flash()
st.title("Batch curves")
st.caption(
    "A batch curve is the latency of one batched inference call at each batch size, measured "
    "for one model on one card, precision and input size. The planner simulates live "
    "sessions on these curves."
)
db = store()
view_browse, view_upload = st.tabs([BROWSE, UPLOAD], key="tab", bind="query-params")
with view_browse:
    browse(db)
with view_upload:
    upload(db)
