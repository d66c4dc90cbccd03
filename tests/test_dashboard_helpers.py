"""The dashboard's plain helpers: tables, edited rows, upload form, charts, safe text."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard.charts import latency_figure, per_frame_figure
from dashboard.tables import (
    curve_rows,
    download_name,
    long_metadata,
    metadata_rows,
    point_columns,
    point_rows,
    points_from_rows,
)
from dashboard.text import md
from dashboard.uploads import UploadForm, preview
from planner.curve import Curve, Point, make_curve
from planner.errors import BadInput
from planner.imports import MAX_FILE_BYTES

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
def test_md_escapes_every_markdown_character(text: str) -> None:
    escaped = md(text)
    unescaped = escaped.replace("\\", "")
    assert unescaped == " ".join(text.replace("\\", "").split())
    for i, ch in enumerate(escaped):
        if ch in "*_[]()`<>#!:$~|" and (i == 0 or escaped[i - 1] != "\\"):
            raise AssertionError(f"unescaped {ch!r} in {escaped!r}")


def test_streamlit_config_matches_the_importers() -> None:
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] * 1024 * 1024 == MAX_FILE_BYTES
    assert config["server"]["headless"] is True
    assert config["browser"]["gatherUsageStats"] is False
    assert config["theme"]["base"] == "light"
