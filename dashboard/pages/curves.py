"""Curves: browse, upload, edit, delete and download measured batch curves."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import streamlit as st

from dashboard.charts import Fitted, fit_figure, latency_figure, loo_figure, per_frame_figure
from dashboard.state import store
from dashboard.tables import (
    curve_rows,
    download_name,
    long_metadata,
    loo_rows,
    metadata_rows,
    point_columns,
    point_rows,
    points_from_rows,
)
from dashboard.text import md, md_list
from dashboard.ui import (
    FORGET,
    apply_next_run,
    flash,
    set_next_run,
    show_flash,
    show_problems,
    table,
)
from dashboard.uploads import UploadForm, preview
from planner import measure_next
from planner.curve import PRECISIONS, Curve
from planner.errors import BadInput, NotFound
from planner.fit import fit_curve
from planner.imports import FORMATS, MAX_FILE_BYTES
from planner.imports.native import to_csv
from planner.store import Store

BROWSE, UPLOAD = "Stored curves", "Upload"
PREVIEW_CURVES = 20  # drawn in the upload preview; a 5 MiB file can hold thousands
TABLE_COLUMNS: dict[str, Any] = {
    "id": st.column_config.TextColumn("id", width="medium"),
    "points": st.column_config.NumberColumn("points", format="%d", width="small"),
}
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
    table(curve_rows(curves), key="curves_table", column_config=TABLE_COLUMNS)
    st.caption(f"{len(curves)} of {len(everything)} stored curves. Latency is per batched call.")
    if not curves:
        return

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
        format_func=lambda i: f"{by_id[i].label}  ({i})",
        key="curve",
    )
    if chosen is not None:
        st.query_params["curve"] = chosen
        detail(db, by_id[chosen])


def detail(db: Store, curve: Curve) -> None:
    st.subheader(md(curve.label), anchor=False)  # no in-page link made of user text
    links = st.columns(3)
    links[0].page_link(
        "dashboard/pages/plan.py",
        label="Plan seats with this curve",
        icon=":material/event_seat:",
        query_params={"curve": curve.id},
    )
    links[1].page_link(
        "dashboard/pages/simulate.py",
        label="Simulate sessions on it",
        icon=":material/timeline:",
        query_params={"curve": curve.id},
    )
    diagnostics(curve)
    about, points = st.columns(2, gap="large")
    with about:
        st.markdown("**About this curve**")
        table(
            metadata_rows(curve),
            key="curve_metadata",
            height="content",
            column_config={"value": st.column_config.TextColumn("value", width="large")},
        )
        for name, text in long_metadata(curve):
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


def diagnostics(curve: Curve) -> None:
    """How well the points pin the curve down: the fit with its band against the
    straight-line method, throughput and time per frame, leave-one-out errors, reconciled
    points and the batch size worth measuring next."""
    fit = fit_curve(curve.points)
    entry = [Fitted(curve.label, curve.points, fit)]
    upto = min(max(32, 2 * curve.points[-1].batch), 256)
    left, right = st.columns(2)
    left.plotly_chart(
        fit_figure(entry, upto=upto, straight=True), width="stretch", key="chart_latency"
    )
    right.plotly_chart(
        fit_figure(entry, view="per_frame", upto=upto), width="stretch", key="chart_per_frame"
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
        fit_figure(entry, view="throughput", upto=upto), width="stretch", key="chart_throughput"
    )
    with right:
        st.markdown(f"**The fit.** {md(fit.description)}.")
        if fit.reconciled:
            names = ", ".join(str(b) for b in fit.reconciled)
            st.warning(
                f"Measured latency fell with batch size, which the fit does not allow: the "
                f"points were reconciled to the nearest non-decreasing curve, and batch "
                f"{names} could not be honoured (likely noise). They show as crosses.",
                icon=":material/warning:",
            )
        advice = measure_next.for_curve(fit)
        if advice.batch is not None:
            st.info(
                f"**Measure batch {advice.batch} next**, relative to {advice.basis}. A plan "
                "weights the batch sizes its decision rests on, so the Plan page may name "
                "another batch for this curve.",
                icon=":material/straighten:",
            )
        loo = fit.loo
        if loo is None:
            st.caption(
                "Leave-one-out needs three points or more: with fewer, each point is needed "
                "to draw the curve at all."
            )
        else:
            inside = sum(p.inside for p in loo.points)
            st.markdown(
                f"**Leave-one-out** (each point predicted from the others): the fit is off "
                f"by {loo.fit:.1%} on average, the straight-line method by "
                f"{loo.straight_line:.1%}; {inside} of {len(loo.points)} points fell inside "
                "the predicted band."
            )
    if loo is not None:
        left, right = st.columns(2)
        figure = loo_figure(fit)
        if figure is not None:
            left.plotly_chart(figure, width="stretch", key="chart_loo")
        with right:
            table(loo_rows(fit), key="curve_loo")
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


def upload(db: Store) -> None:
    st.markdown(
        "Add curves from benchmark files: the planner's own CSV or JSON, or what a "
        "benchmarking tool wrote. Nothing is stored until you press **Save**, and a file "
        "with a bad row stores nothing."
    )
    files = st.file_uploader(
        "Benchmark files",
        accept_multiple_files=True,
        key="upload_files",
        help=f"Formats: {', '.join(FORMATS[1:])}, recognised from the content. "
        f"At most {MAX_FILE_BYTES // 1024 // 1024} MiB per file.",
    )
    fmt = st.selectbox(
        "Format",
        FORMATS,
        key="upload_format",
        format_func=lambda f: "recognise from the content" if f == "auto" else f,
    )
    st.markdown("**Metadata** for what the files do not state (leave empty to use the file's)")
    row1 = st.columns(3)
    model = row1[0].text_input("Model", key="upload_model", placeholder="e.g. ball-detector")
    card = row1[1].selectbox(
        "Card",
        [c.name for c in db.cards()],
        index=None,
        accept_new_options=True,
        placeholder="pick or type a card",
        key="upload_card",
    )
    precision = row1[2].selectbox(
        "Precision", PRECISIONS, index=None, placeholder="as in the file", key="upload_precision"
    )
    row2 = st.columns(3)
    resolution = row2[0].text_input(
        "Input resolution", key="upload_resolution", placeholder="WIDTHxHEIGHT, e.g. 512x288"
    )
    mig_profile = row2[1].text_input(
        "MIG profile measured on", key="upload_mig_profile", placeholder="e.g. 3g.40gb"
    )
    notes = row2[2].text_input("Notes", key="upload_notes")
    row3 = st.columns(2)
    batch = row3[0].text_input(
        "perf_analyzer batch size (its -b)",
        key="upload_batch",
        placeholder="one value, or one per file: 1,2,4",
    )
    config = row3[1].text_input(
        "Model Analyzer config to import", key="upload_config", placeholder="e.g. add_sub_config_2"
    )
    if not files:
        st.info("Choose one or more files to see what they contain.")
        return

    form = UploadForm(model, card, precision, resolution, mig_profile, notes, batch, config)
    try:
        result = preview([(f.name, f.getvalue()) for f in files], form, fmt)
    except BadInput as exc:
        show_problems(
            f"{len(exc.problems)} problem(s) found; nothing was stored. Fix the file or the "
            "metadata above and upload it again.",
            exc.problems,
        )
        return

    stored = {c.id for c in db.curves()}
    fresh = [c for c in result.curves if c.id not in stored]
    st.markdown(f"**Preview**: {len(result.curves)} curve(s) read from {len(files)} file(s)")
    table(curve_rows(result.curves, stored), key="upload_preview", column_config=TABLE_COLUMNS)
    if result.notes:
        st.info(f"**Notes from the import**\n\n{md_list(result.notes)}")
    else:
        st.success("Every row is valid; the import has no remarks.")
    shown = result.curves[:PREVIEW_CURVES]
    left, right = st.columns(2)
    left.plotly_chart(latency_figure(shown), width="stretch", key="upload_chart_latency")
    right.plotly_chart(per_frame_figure(shown), width="stretch", key="upload_chart_per_frame")
    if len(result.curves) > len(shown):
        st.caption(
            f"The charts and the points below show the first {len(shown)} of "
            f"{len(result.curves):,} curves; the table above lists them all."
        )
    for index, curve in enumerate(shown):
        with st.expander(f"Points of {md(curve.label)}"):
            table(point_rows(curve), key=f"upload_points_{index}")

    if not fresh:
        st.info("Every curve in these files is already stored; saving would change nothing.")
    if st.button(
        f"Save {len(fresh)} new curve(s)" if fresh else "Save",
        key="upload_save",
        type="primary",
        disabled=not fresh,
        icon=":material/save:",
    ):
        saved = db.add_curves(fresh)
        names = "; ".join(f"{md(c.label)} ({c.id})" for c in saved)
        flash("success", f"Saved {len(saved)} curve(s): {names}.")
        set_next_run(tab=BROWSE, model=None, card=None, precision=None, curve=saved[0].id)
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
