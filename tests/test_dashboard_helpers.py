"""The dashboard's plain helpers: tables, edited rows, upload form, charts, safe text."""

from __future__ import annotations

import base64
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from dashboard.charts import Fitted, fit_figure, latency_figure, loo_figure, per_frame_figure
from dashboard.controls import from_widget, to_widget
from dashboard.plan_charts import caps_figure, cost_figure, pareto_figure, sessions_figure
from dashboard.run_charts import fps_figure, latency_histogram, timeline_figure
from dashboard.tables import (
    curve_rows,
    download_name,
    long_metadata,
    loo_rows,
    metadata_rows,
    point_columns,
    point_rows,
    points_from_rows,
    run_rows,
    session_rows,
)
from dashboard.uploads import UploadForm, preview
from planner import display
from planner.curves.curve import Curve, Point, make_curve
from planner.curves.fit import fit_curve
from planner.curves.imports import MAX_FILE_BYTES
from planner.demand.fleet import gpus_for
from planner.errors import BadInput
from planner.links.parameters import DEFAULT_POLICIES
from planner.plan.pareto import dominated
from planner.plan.recommend import option_sweep, recommend
from planner.plan.request import Request
from planner.sim.scenario import MAX_FPS, Scenario, Sharing
from planner.sim.simulate import simulate
from planner.spans import Span
from planner.text import md
from planner.views.plan import option_rows

REPO = Path(__file__).resolve().parent.parent


def curve(points: list[Point] | None = None, **fields: Any) -> Curve:
    return make_curve(
        model=fields.get("model", "m"),
        card=fields.get("card", "t4"),
        precision="fp16",
        resolution="64x36",
        points=points or [Point(1, 5.0), Point(2, 9.0)],
        environment=fields.get("environment", {}),
    )


def test_points_from_rows_reads_what_a_data_editor_returns() -> None:
    rows = [
        {"batch": np.int64(2), "latency_ms": np.float64(9.5), "p10_ms": float("nan")},
        {"batch": 1.0, "latency_ms": "5", "n": 30.0},
        {"batch": None, "latency_ms": None},  # a row added and left empty
    ]
    assert points_from_rows(rows) == (Point(1, 5.0, n=30), Point(2, 9.5))


def test_points_from_rows_reports_every_bad_row_by_number() -> None:
    rows = [
        {"batch": 1, "latency_ms": 0},
        {"batch": 2.5, "latency_ms": 3},
        {"latency_ms": 4},
        {"batch": 4, "latency_ms": 8, "p90_ms": -1},
    ]
    with pytest.raises(BadInput) as info:
        points_from_rows(rows)
    assert [p.split(":")[0] for p in info.value.problems] == ["row 1", "row 2", "row 3", "row 4"]
    with pytest.raises(BadInput, match="at least one point"):
        points_from_rows([{"batch": None, "latency_ms": None}])
    with pytest.raises(BadInput, match="batch 2 appears twice"):
        points_from_rows([{"batch": 2, "latency_ms": 3}, {"batch": 2, "latency_ms": 4}])


def test_point_rows_show_only_the_columns_a_curve_has() -> None:
    with_spread = curve([Point(1, 5.0, p10_ms=4.9, p90_ms=5.2), Point(2, 9.0)])
    assert point_columns(with_spread) == ["batch", "latency_ms", "p10_ms", "p90_ms"]
    rows = point_rows(with_spread)
    assert rows[1] == {"batch": 2, "latency_ms": 9.0, "p10_ms": None, "p90_ms": None}
    assert points_from_rows(rows) == with_spread.points


def test_curve_and_metadata_rows() -> None:
    c = curve(environment={"driver": "550.1", "notes": "x" * 100})
    (row,) = curve_rows([c], stored={c.id})
    assert row["MIG profile"] == "-" and row["points"] == 2 and row["already stored"] is True
    fields = {r["field"]: r["value"] for r in metadata_rows(c)}
    assert fields["driver"] == "550.1" and "notes" not in fields
    assert long_metadata(c) == [("notes", "x" * 100)]


def test_download_names_are_safe_file_names() -> None:
    c = curve(model="../../etc/passwd", card="a b\\c")
    name = download_name(c)
    assert "/" not in name and "\\" not in name and " " not in name
    assert name.endswith(f"__{c.id}.csv")


def test_upload_form_reports_every_bad_field_at_once() -> None:
    form = UploadForm(resolution="wide", precision="fp8", batch="1, x", mig_profile="a\x00b")
    with pytest.raises(BadInput) as info:
        form.options()
    assert len(info.value.problems) == 4
    options = UploadForm(model=" m ", batch="1,2", resolution="640X360").options()
    assert (options.model, options.batch, options.resolution) == ("m", (1, 2), "640x360")


def test_preview_reads_files_and_stores_nothing() -> None:
    result = preview([("a.csv", b"batch,latency_ms\n1,5\n2,9\n")], UploadForm("m", "t4"), "auto")
    assert [c.batches for c in result.curves] == [(1, 2)]


def test_charts_label_every_axis_with_units_and_escape_names() -> None:
    spread = curve(
        [Point(1, 5.0, p10_ms=4.0, p90_ms=7.0), Point(4, 12.0, p10_ms=11.0, p90_ms=14.0)]
    )
    other = curve(model="<a href='https://example.com'>x</a>")
    figure = json.loads(latency_figure([spread, other]).to_json())
    assert figure["layout"]["xaxis"]["title"]["text"] == "batch size (frames per call)"
    assert figure["layout"]["yaxis"]["title"]["text"] == "latency per call (ms)"
    first, second = figure["data"]
    assert first["error_y"]["array"] == [2.0, 2.0] and first["error_y"]["arrayminus"] == [1.0, 1.0]
    assert "<a" not in second["name"] and "&lt;a" in second["name"]
    per_frame = json.loads(per_frame_figure([spread]).to_json())
    assert per_frame["data"][0]["y"] == [5.0, 3.0]
    assert per_frame["data"][0]["error_y"]["array"] == [2.0, 0.5]
    assert per_frame["layout"]["yaxis"]["title"]["text"] == "time per frame (ms)"
    wide = curve([Point(1, 1.0), Point(512, 300.0)])
    assert json.loads(latency_figure([wide]).to_json())["layout"]["xaxis"]["type"] == "log"


@given(st.text(max_size=80))
@example("0\r\\")  # a word that is only a backslash: one line, shown as given
def test_md_escapes_every_markdown_character(text: str) -> None:
    escaped = md(text)
    unescaped = escaped.replace("\\", "").replace("\u2060", "")  # escapes, word joiners
    # One line of the text's words; the escapes and joiners md adds are all it adds.
    assert unescaped == " ".join(text.split()).replace("\\", "").replace("\u2060", "")
    # What GitHub Markdown would link by itself, even escaped, is interrupted.
    seen = escaped.replace("\\", "")
    assert not re.search(r"(?i)(https?|mailto|xmpp):|www\.|[\w.+-]@", seen), escaped
    for i, ch in enumerate(escaped):
        if ch in "*_[]()`<>#!:$~|" and (i == 0 or escaped[i - 1] != "\\"):
            raise AssertionError(f"unescaped {ch!r} in {escaped!r}")


def test_streamlit_config_matches_the_importers() -> None:
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] * 1024 * 1024 == MAX_FILE_BYTES
    assert config["server"]["headless"] is True
    assert config["browser"]["gatherUsageStats"] is False
    assert config["theme"]["base"] == "light"


# ---------------------------------------------------------------------------------------
# Figures and tables of fits, recommendations and runs.


def _decoded(value: Any) -> list[Any]:
    if isinstance(value, dict) and "bdata" in value:
        return np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"]).tolist()
    return list(value)


def _spec(figure: Any) -> dict[str, Any]:
    spec: dict[str, Any] = json.loads(figure.to_json())
    return spec


def _axes(spec: dict[str, Any]) -> tuple[str, str]:
    return spec["layout"]["xaxis"]["title"]["text"], spec["layout"]["yaxis"]["title"]["text"]


LAPTOP = [Point(b, v) for b, v in [(1, 9.82), (2, 20.36), (4, 46.15), (8, 103.77)]]


def test_fit_figure_draws_band_fit_points_and_the_extrapolated_region() -> None:
    fit = fit_curve(LAPTOP)
    spec = _spec(fit_figure([Fitted("m <b>x</b>", LAPTOP, fit)], upto=16, straight=True))
    assert _axes(spec) == ("batch size (frames per call)", "latency per call (ms)")
    traces = {t["name"]: t for t in spec["data"]}
    assert set(traces) == {
        "band (optimistic to pessimistic)",
        "fit",
        "extrapolated",
        "measured (a cross: reconciled)",
        "straight-line method",
    }
    assert _decoded(traces["measured (a cross: reconciled)"]["y"]) == [9.82, 20.36, 46.15, 103.77]
    central = _decoded(traces["fit"]["y"])
    assert central[3] == pytest.approx(46.15) and np.isnan(central[10])  # 11 is extrapolated
    assert not np.isnan(_decoded(traces["extrapolated"]["y"])[10])
    (region,) = spec["layout"]["shapes"]
    assert (region["x0"], region["x1"]) == (8.5, 16.5)
    throughput = _spec(fit_figure([Fitted("m", LAPTOP, fit)], view="throughput", upto=8))
    assert _axes(throughput)[1] == "throughput (frames/s)"
    measured = next(t for t in throughput["data"] if t["name"].startswith("measured"))
    assert _decoded(measured["y"])[0] == pytest.approx(1000 / 9.82)
    several = _spec(
        fit_figure([Fitted("a <b>", LAPTOP, fit), Fitted("b", LAPTOP[:2], fit_curve(LAPTOP[:2]))])
    )
    assert "a &lt;b&gt;" in {t["name"] for t in several["data"]}
    assert several["layout"].get("shapes", []) == []


def test_loo_figure_and_rows_compare_the_fit_with_the_straight_line() -> None:
    fit = fit_curve(LAPTOP)
    spec = _spec(loo_figure(fit))
    assert _axes(spec) == ("batch size held out (frames per call)", "relative error (%)")
    rows = loo_rows(fit)
    assert [r["batch"] for r in rows] == [1, 2, 4, 8]
    assert fit.loo is not None
    first = fit.loo.points[0]
    assert rows[0]["fit error"] == display.fraction(first.error)
    assert rows[0]["measured (ms)"] == display.ms(first.measured_ms, unit=False)
    assert loo_figure(fit_curve(LAPTOP[:2])) is None and loo_rows(fit_curve(LAPTOP[:2])) == []


def test_plan_figures_and_option_rows() -> None:
    request = Request(curve=fit_curve(LAPTOP), seeds=2, duration_s=5.0)
    result = recommend(request)
    rows = option_sweep(request, Sharing(), range(1, 7), result.options)
    latency = _spec(sessions_figure(rows, metric="latency", limit=50.0, cap=3))
    assert _axes(latency) == ("concurrent sessions", "p99 latency, end to end (ms)")
    assert {t["name"] for t in latency["data"]} == set(request.policies)
    budget, cap = latency["layout"]["shapes"]
    assert (budget["y0"], cap["x0"]) == (50.0, 3)
    fps = _spec(sessions_figure(rows, metric="fps", limit=28.5))
    assert _axes(fps) == ("concurrent sessions", "slowest session (frames/s)")
    pareto = _spec(pareto_figure(result.options, dominated(result.options)))
    assert _axes(pareto) == ("p99 latency at the cap, end to end (ms)", "seats per card")
    table = option_rows(result.options, dominated(result.options), peak_sessions=40,
                        price_per_hour=3.0)  # fmt: skip
    best = result.options[0]
    assert table[0]["seats per card"] == best.seats
    assert table[0]["isolation (memory; faults)"] == "whole card"
    assert table[0]["GPUs for peak"] == str(gpus_for(40, 0.2, best.cap))
    assert table[0]["cost per seat-hour"] == display.money(3.0 / best.cap)
    assert list(table[0])[:4] == ["option", "seats per card", "GPUs for peak",
                                  "cost per seat-hour"]  # fmt: skip
    assert best.policy not in table[0]["next seat fails because"]  # the row names it
    caps = _spec(caps_figure(["a", "b"], [best, None]))
    assert _axes(caps)[1] == "seats per card" and caps["data"][0]["text"] == [best.seats, "0"]
    cost = _spec(cost_figure(["a", "b", "c"], [Span(0.5, 0.5, 0.5), None, Span(0.4, 0.5, 0.6)]))
    assert cost["data"][0]["text"] == ["$0.50", "no price", "$0.40–$0.60, likely $0.50"]
    bars = cost["data"][0]["error_y"]  # a range reaches from its low end to its high end
    assert bars["array"][2] == pytest.approx(0.1) and bars["arrayminus"][2] == pytest.approx(0.1)


def test_run_figures_and_rows_describe_one_simulation() -> None:
    table = tuple(float(v) for v in fit_curve(LAPTOP).table(64))
    results = simulate(Scenario(latency_ms=table, sessions=4, policy="oldest-first",
                                duration_s=2.0, overhead_ms=3.0))  # fmt: skip
    timeline = _spec(timeline_figure(results))
    assert _axes(timeline)[0] == "time since the start (ms)"
    assert timeline["layout"]["xaxis"]["range"] == [0, 400.0]
    assert timeline["layout"]["yaxis"]["ticktext"] == ["GPU", "0", "1", "2", "3"]
    fps = _spec(fps_figure(results))
    assert _axes(fps) == ("session", "delivered frames/s")
    bars = fps["data"][0]
    assert _decoded(bars["y"]) == pytest.approx(results.per_session_fps)
    histogram = _spec(latency_histogram(results))
    assert _axes(histogram) == ("latency (ms)", "frames")
    assert [t["name"] for t in histogram["data"]] == ["GPU side", "end to end (+3 ms)"]
    (row,) = run_rows([results])
    assert row["slowest session (fps)"] == display.fps(results.min_fps, unit=False)
    assert row["overwritten"] == display.fraction(results.overwritten_fraction)
    assert len(session_rows(results)) == 4


@given(
    st.lists(st.sampled_from(DEFAULT_POLICIES), min_size=1, unique=True),
    st.lists(st.floats(0, 1, allow_subnormal=False), max_size=5),
    st.lists(st.floats(1e-3, MAX_FPS, allow_subnormal=False), min_size=1, max_size=5),
)
def test_widget_values_round_trip_to_link_parameters(
    policies: list[str], cotenants: list[float], fps: list[float]
) -> None:
    for name, value in (("policies", tuple(policies)), ("cotenants", tuple(cotenants)),
                        ("fps", tuple(fps)), ("budget_ms", 40.0), ("mps_share", None)):  # fmt: skip
        assert from_widget(name, to_widget(name, value)) == value
    with pytest.raises(BadInput, match="item 2 not a number"):
        from_widget("cotenants", "0.5,lots")


def test_the_problem_box_shows_at_most_50_problems_and_counts_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A box of 2,000 problems was 2,000 bullets long; it is now 51, however many."""
    import dashboard.ui

    shown: list[str] = []
    monkeypatch.setattr(dashboard.ui.st, "error", shown.append)
    problems = [f"row {i}: batch '<b>{i}</b>' is not a number" for i in range(1, 2001)]
    dashboard.ui.show_problems("Nothing was stored:", problems)
    dashboard.ui.show_problems("Nothing was stored:", problems[:51])  # all of them fit
    many, few = shown
    bullets = many.split("\n\n", 1)[1].split("\n")
    assert many.startswith("**Nothing was stored:**") and len(bullets) == 51
    assert bullets[0] == f"- {md(problems[0])}" and "<b>" not in many  # literal text
    counted = "… and 1,950 more of the same kinds (1,950 × batch … is not a number)"
    assert bullets[-1] == f"- {md(counted)}"
    assert few.split("\n\n", 1)[1] == "\n".join(f"- {md(p)}" for p in problems[:51])


def test_a_one_point_curve_keeps_its_labels_apart_and_its_throughput_in_decimals() -> None:
    points = [Point(4, 2.0)]  # 2,000 frames/s: "~g" would tick it "2e+3"
    spec = _spec(fit_figure([Fitted("m", points, fit_curve(points))], view="throughput", upto=8))
    before, after = spec["layout"]["annotations"]
    # The label of the region before the point ends at its right edge, the one after
    # starts at its left edge: the measured point lies between them.
    assert (before["x"], before["xanchor"]) == (3.5, "right")
    assert (after["x"], after["xanchor"]) == (4.5, "left")
    tickformat = spec["layout"]["yaxis"]["tickformat"]
    assert tickformat.endswith("~r") and "," in tickformat  # decimals, thousands separated
    measured = next(t for t in spec["data"] if t["name"].startswith("measured"))
    assert "e" not in measured["hovertemplate"].split(":")[2].split("}")[0]
    assert _decoded(measured["y"]) == [pytest.approx(2000.0)]
    preview = _spec(latency_figure([make_curve(points=points, model="m", card="t4")]))
    assert preview["layout"]["yaxis"]["tickformat"] == tickformat
