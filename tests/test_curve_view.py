"""A curve's view (``planner.views.curve``): the Curves page, ``planner curves show`` and
``planner fit`` show the same metadata, points, fit, leave-one-out figures, advice and
assumptions of one curve, each before its own escaping; and the page draws the view's
series rather than fitting anything itself."""

from __future__ import annotations

import json
from typing import Any

from streamlit.testing.v1 import AppTest

from dashboard.state import store
from planner.cli.output import plain
from planner.curves.curve import Point, make_curve
from planner.views.curve import CurveView, curve_view
from planner.views.table import Table
from tests.conftest import run
from tests.test_dashboard import traces_of
from tests.test_plan_view import cells, text_table, unescaped

# Long notes (said below the table), a flag, a point the fit must reconcile, and enough
# points for leave-one-out: everything the view says is there.
CURVE = make_curve(
    model="ball-detector <b>v2</b>", card="l4", precision="fp16", resolution="512x288",
    points=[Point(1, 6.1, p10_ms=5.9, p90_ms=6.4, n=30), Point(2, 10.4, n=30),
            Point(4, 9.8, n=30), Point(8, 37.2, n=30), Point(16, 71.0, n=30)],
    environment={"notes": "; ".join(["measured on a quiet node"] * 4), "driver": "550.1",
                 "drift_warning": "batch 1 moved +12.0% (6.10 -> 6.83 ms)"},
)  # fmt: skip


def page_records(app: AppTest, key: str) -> list[dict[str, str]]:
    """A page's table read back as text cells: ticks as the view's yes and no."""
    frame = app.get_by_key(key).dataframe[0].value
    return [
        {
            str(k): ("yes" if v is True else "no" if v is False else unescaped(str(v)))
            for k, v in row.items()
        }
        for row in frame.to_dict("records")
    ]


def test_the_page_and_the_commands_show_the_same_curve(app: AppTest, cli: Any) -> None:
    (stored,) = store().add_curves([CURVE])
    view: CurveView = curve_view(stored)
    fit = view.fit
    assert view.flag is not None and view.long_metadata and fit.reconciled is not None
    assert fit.loo is not None and fit.measure_next is not None and len(fit.loo_table.rows) == 5

    app.query_params["curve"] = stored.id
    app.switch_page("dashboard/pages/curves.py")
    run(app)

    # The page.
    assert unescaped(app.subheader[0].value) == view.title
    assert page_records(app, "curve_metadata") == view.metadata.records
    assert page_records(app, "curve_loo") == fit.loo_table.records
    captions = [unescaped(c.value) for c in app.caption]
    for name, text in view.long_metadata:
        assert f"**{name}**: {text}" in captions
    markdown = [unescaped(m.value) for m in app.markdown]
    assert f"**The fit.** {fit.description}." in markdown
    assert f"**{fit.loo.label}** ({fit.loo.help}): {fit.loo.value}." in markdown
    (advice,) = [unescaped(i.value) for i in app.info if "next**" in i.value]
    assert advice.startswith(f"**Measure {fit.measure_next.value} next**, {fit.measure_next.help}.")
    warnings = [unescaped(w.value) for w in app.warning]
    assert fit.reconciled in warnings
    assert f"**{view.flag.label}: {view.flag.value}.** {view.flag.help}" in warnings
    assumed = [unescaped(m.value) for m in app.expander[0].markdown]
    assert assumed == ["\n".join(f"- {a}" for a in fit.assumptions)]

    # The page draws the view's series: the measured points and the central line.
    specs = {
        s["layout"]["title"]["text"]: s
        for s in (json.loads(c.proto.spec) for c in app.get("plotly_chart"))
    }
    traces = traces_of(specs["Latency per batched call"])
    assert traces["measured (a cross: reconciled)"]["x"] == list(fit.series.measured)
    assert traces["measured (a cross: reconciled)"]["y"] == list(fit.series.measured_ms)
    assert traces["fit"]["y"][: stored.points[-1].batch] == list(
        fit.series.central[: stored.points[-1].batch]
    )
    loo_bars = specs["Leave-one-out: error predicting each point"]["data"][0]
    assert loo_bars["x"] == [str(bar.batch) for bar in fit.loo_bars]

    # ``planner curves show``.
    shown = cli("curves", "show", stored.id)
    assert shown.status == 0, shown.err
    lines = shown.out.splitlines()
    assert lines[0] == f"{view.id}  {view.title}  [{view.source}]"
    for field, value in (*view.metadata.rows, *view.long_metadata):
        if field not in ("id", "source"):
            assert f"  {field}: {value}" in lines
    assert f"  flagged: {view.flag.value}. {view.flag.help}" in lines
    assert text_table(shown.out, view.points.header, len(view.points.rows)) == cells(view.points)

    # ``planner fit`` of the same curve, to the batch the page's charts reach.
    fitted = cli("fit", "--curve", stored.id, "--upto", str(fit.upto))
    assert fitted.status == 0, fitted.err
    lines = fitted.out.splitlines()
    assert f"model: {fit.description}" in lines
    assert f"leave-one-out ({fit.loo.help}): {fit.loo.value}." in lines
    assert any(
        line.startswith(f"measure next: {fit.measure_next.value} ({fit.measure_next.help};")
        for line in lines
    )
    assert [ln.removeprefix("  - ") for ln in lines[lines.index("assumptions:") + 1 :]] == list(
        fit.assumptions
    )
    predictions: Table = fit.predictions
    assert text_table(fitted.out, predictions.header, len(predictions.rows)) == cells(predictions)
    document = cli("fit", "--curve", stored.id, "--upto", str(fit.upto), "--json").json
    assert document == json.loads(json.dumps(plain(fit.document)))
