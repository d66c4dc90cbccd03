"""An import format is one object in one registry: a format defined here, and nowhere
else, is detected, parsed, offered by the command line and the upload form, and stored;
unregistered, it is unknown everywhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.uploads import needed
from planner.curves.curve import make_point
from planner.curves.imports import (
    BUILT_IN,
    FORMAT_NAMES,
    FORMATS,
    IMPORT_FORMATS,
    NEEDS,
    ImportFormat,
    ImportOptions,
    detect_format,
    read_files,
    register,
    unregister,
)
from planner.curves.imports.base import ParsedFile, Problems, Row, tool_metadata
from planner.errors import BadInput
from tests.test_dashboard import open_curves

TOY = "# toy latency table\n1\t5.5\n2\t9.25\n4\t17.0\n"


class ToyTable(ImportFormat):
    """A toy format: a ``# toy`` line, then ``batch<TAB>milliseconds`` lines; the file
    names neither the model nor the card."""

    name = "toy"
    title = "toy table"
    expected = "a toy table (# toy, then batch<TAB>ms)"
    needs = ("model", "card")

    def detect(self, text: str) -> bool:
        return text.lstrip().startswith("# toy")

    def parse(self, name: str, text: str, options: ImportOptions) -> ParsedFile:
        parsed = ParsedFile(name=name, format=self.name)
        problems = Problems(name)
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip() or line.startswith("#"):
                continue
            where = f"{name} line {number}"
            batch, _, ms = line.partition("\t")
            try:
                point = make_point({"batch": batch, "latency_ms": ms})
                metadata = tool_metadata({}, {}, options, where)
            except BadInput as exc:
                problems.extend(f"{where}: {p}" for p in exc.problems)
                continue
            parsed.rows.append(Row(point, metadata, where, {"import_format": self.name}))
        problems.check()
        return parsed


@pytest.fixture
def toy() -> Iterator[ImportFormat]:
    kind = register(ToyTable())
    try:
        yield kind
    finally:
        if kind.name in IMPORT_FORMATS:
            unregister(kind.name)


def test_the_registry_holds_the_built_in_formats_in_the_order_they_are_offered() -> None:
    assert list(IMPORT_FORMATS) == ["csv", "json", "perf-analyzer", "model-analyzer", "nexus"]
    assert list(FORMATS) == ["auto", *IMPORT_FORMATS] and FORMATS[1:] == tuple(IMPORT_FORMATS)
    assert [kind.name for kind in BUILT_IN] == list(IMPORT_FORMATS)
    assert FORMAT_NAMES["perf-analyzer"] == "perf_analyzer CSV"
    assert NEEDS["perf-analyzer"] == ("model", "card", "batch") and NEEDS["csv"] == ()
    with pytest.raises(ValueError, match="already registered"):
        register(BUILT_IN[0])


def test_a_file_no_format_reads_is_told_what_every_registered_format_looks_like(toy) -> None:
    with pytest.raises(BadInput) as refused:
        detect_format("notes.txt", "hello\nworld\n")
    message = refused.value.problems[0]
    for kind in IMPORT_FORMATS.values():
        assert kind.expected in message
    assert "a toy table (# toy, then batch<TAB>ms)" in message
    assert message.endswith("(auto, csv, json, perf-analyzer, model-analyzer, nexus, toy)")


def test_a_registered_format_is_detected_read_and_says_what_it_needs(toy) -> None:
    assert detect_format("t.txt", TOY) == "toy"
    assert FORMATS[-1] == "toy" and FORMAT_NAMES["toy"] == "toy table"
    assert needed([("t.txt", TOY.encode())], "auto") == {
        "model": ["t.txt (toy table)"],
        "card": ["t.txt (toy table)"],
    }
    (curve,) = read_files([("t.txt", TOY.encode())], ImportOptions(model="m", card="t4")).curves
    assert [(p.batch, p.latency_ms) for p in curve.points] == [(1, 5.5), (2, 9.25), (4, 17.0)]
    with pytest.raises(BadInput) as lacking:
        read_files([("t.txt", TOY.encode())], ImportOptions(card="t4"))
    assert lacking.value.problems == ["t.txt: a toy table does not name the model; give --model"]


def test_the_command_line_imports_and_stores_a_registered_format(toy, cli, tmp_path: Path) -> None:
    path = tmp_path / "t.txt"
    path.write_text(TOY, encoding="utf-8")
    assert "toy (toy table; needs --model, --card)" in " ".join(
        cli("curves", "import", "--help").out.split()
    )
    run = cli("curves", "import", path, "--format", "toy", "--model", "m", "--card", "t4", "--json")
    assert run.status == 0, run.err
    (stored,) = run.json
    assert stored["environment"]["import_format"] == "toy"
    assert cli("curves", "show", stored["id"], "--json").json["points"][2]["latency_ms"] == 17.0
    again = cli("curves", "import", path, "--model", "m", "--card", "t4")  # detected
    assert again.status == 0 and again.out.startswith(f"already stored {stored['id']}")


def test_the_upload_form_offers_a_registered_format(toy, app: AppTest) -> None:
    open_curves(app)
    assert app.selectbox(key="upload_format").options[-1] == "toy"


def test_an_unregistered_format_is_unknown_everywhere(toy, cli, tmp_path: Path) -> None:
    unregister("toy")
    assert "toy" not in FORMATS and "toy" not in FORMAT_NAMES
    with pytest.raises(BadInput, match="not a format the planner reads"):
        detect_format("t.txt", TOY)
    path = tmp_path / "t.txt"
    path.write_text(TOY, encoding="utf-8")
    run = cli("curves", "import", path, "--format", "toy", "--model", "m", "--card", "t4")
    assert run.status == 2 and "unknown format 'toy'" in run.err
