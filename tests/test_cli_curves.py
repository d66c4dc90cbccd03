"""``planner curves`` and ``planner cards`` as a script would use them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FP16 = [9.82, 20.36, 32.71, 46.15, 103.77, 221.25]


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def ids(cli) -> list[str]:
    return [c["id"] for c in cli("curves", "list", "--json").json]


def test_list_json_shows_the_builtin_curves(cli) -> None:
    run = cli("curves", "list", "--json")
    assert run.status == 0
    listed = run.json
    for entry in listed:
        assert {"id", "model", "card", "precision", "resolution", "source", "n_points"} <= set(
            entry
        )
    (fp16,) = [
        c
        for c in listed
        if c["card"] == "laptop-8gb" and c["precision"] == "fp16" and c["resolution"] == "512x288"
    ]
    assert fp16["n_points"] == 6 and fp16["model"] == "ball-detector"
    shown = cli("curves", "show", fp16["id"], "--json").json
    assert [p["latency_ms"] for p in shown["points"]] == FP16
    assert [p["batch"] for p in shown["points"]] == [1, 2, 3, 4, 8, 16]


def test_plain_list_and_show_are_readable(cli) -> None:
    run = cli("curves", "list")
    assert run.status == 0 and "laptop-8gb" in run.out and "1,2,3,4,8,16" in run.out
    first = ids(cli)[0]
    assert "9.82" in cli("curves", "show", first).out


def test_import_csv_twice_yields_one_curve(cli, tmp_path: Path) -> None:
    path = write(tmp_path, "new.csv", "batch,latency_ms,p10_ms,p90_ms\n1,5.0,4.9,5.2\n2,8.5,,\n")
    before = ids(cli)
    first = cli(
        "curves",
        "import",
        path,
        "--model",
        "m",
        "--card",
        "t4",
        "--precision",
        "fp16",
        "--resolution",
        "640x360",
        "--json",
    )
    assert first.status == 0, first.err
    stored = first.json
    assert isinstance(stored, list) and len(stored) == 1
    assert stored[0]["points"][0] == {"batch": 1, "latency_ms": 5.0, "p10_ms": 4.9, "p90_ms": 5.2}
    again = cli(
        "curves",
        "import",
        path,
        "--model",
        "m",
        "--card",
        "t4",
        "--precision",
        "fp16",
        "--resolution",
        "640x360",
        "--json",
    )
    assert again.json[0]["id"] == stored[0]["id"]
    assert len(ids(cli)) == len(before) + 1


def test_files_with_the_same_metadata_merge(cli, tmp_path: Path) -> None:
    a = write(tmp_path, "a.csv", "batch,latency_ms\n1,5\n2,8\n")
    b = write(tmp_path, "b.csv", "batch,latency_ms\n4,14\n")
    run = cli("curves", "import", a, b, "--model", "m", "--card", "t4", "--json")
    assert run.status == 0, run.err
    (curve,) = run.json
    assert [p["batch"] for p in curve["points"]] == [1, 2, 4]


def test_export_and_reimport_round_trip_with_formula_text(cli, tmp_path: Path) -> None:
    src = write(
        tmp_path,
        "f.csv",
        'batch,latency_ms,model,card,notes\n1,5,m,t4,"=HYPERLINK(""http://x"",""y"")"\n2,9,m,t4,\n',
    )
    (curve,) = cli("curves", "import", src, "--json").json
    assert curve["environment"]["notes"] == '=HYPERLINK("http://x","y")'  # stored as text
    out = tmp_path / "out.csv"
    assert cli("curves", "export", curve["id"], "--out", out).status == 0
    exported = out.read_text()
    assert "'=HYPERLINK" in exported  # a spreadsheet will not evaluate it
    (again,) = cli("curves", "import", out, "--json").json
    assert again["id"] == curve["id"]
    assert again["environment"]["notes"] == curve["environment"]["notes"]
    js = tmp_path / "out.json"
    assert cli("curves", "export", curve["id"], "--format", "json", "--out", js).status == 0
    (from_json,) = cli("curves", "import", js, "--json").json
    assert from_json["id"] == curve["id"]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "empty"),
        (b"batch,latency_ms\n", "no data rows"),
        (b"batch,p50_ms\n1,5\n", "missing required column"),
        (b"batch,latency_ms\n1,abc\n", "line 2: latency_ms 'abc' is not a number"),
        (b"batch,latency_ms\n1,0\n", "line 2: latency_ms '0' must be above zero"),
        (b"batch,latency_ms\n1,-3\n", "must be above zero"),
        (b"batch,latency_ms\n1,nan\n", "not a finite number"),
        (b"batch,latency_ms\n1,inf\n", "not a finite number"),
        (b"batch,latency_ms\n0,5\n", "below 1"),
        (b"batch,latency_ms\n-2,5\n", "below 1"),
        (b"batch,latency_ms\n1.5,5\n", "not a whole number"),
        (b"batch,latency_ms\n100000,5\n", "above the largest supported batch"),
        (b"batch,latency_ms\n1,5\n1,6\n", "line 3: batch 1 was already given"),
        (b"batch,latency_ms\n1,5\n2,\xff\xfe\n", "not UTF-8"),
        (b"batch,latency_ms\n1,5\n2,x\n3,-1\n", "line 4"),
    ],
)
def test_bad_files_are_rejected_with_a_reason_and_store_nothing(
    cli, tmp_path: Path, content: bytes, reason: str
) -> None:
    before = ids(cli)
    path = write(tmp_path, "bad.csv", content)
    run = cli("curves", "import", path, "--model", "m", "--card", "t4")
    assert run.status == 2
    assert reason in run.err
    assert "Traceback" not in run.err
    assert all(line.startswith("planner: ") for line in run.err.strip().splitlines())
    assert ids(cli) == before


def test_one_bad_row_reports_every_bad_row_and_stores_nothing(cli, tmp_path: Path) -> None:
    before = ids(cli)
    path = write(tmp_path, "bad.csv", "batch,latency_ms\n1,5\n2,x\n3,-1\n4,20\n")
    run = cli("curves", "import", path, "--model", "m", "--card", "t4")
    assert run.status == 2
    assert "line 3" in run.err and "line 4" in run.err
    assert len(run.err.strip().splitlines()) == 2
    assert ids(cli) == before


def test_a_bom_is_accepted(cli, tmp_path: Path) -> None:
    path = write(tmp_path, "bom.csv", b"\xef\xbb\xbfbatch,latency_ms\n1,5\n")
    run = cli("curves", "import", path, "--model", "m", "--card", "t4", "--json")
    assert run.status == 0, run.err
    assert run.json[0]["points"] == [{"batch": 1, "latency_ms": 5.0}]


def test_an_oversized_file_is_refused(cli, tmp_path: Path) -> None:
    path = write(tmp_path, "big.csv", "batch,latency_ms\n" + "1,5\n" * 2_000_000)
    run = cli("curves", "import", path, "--model", "m", "--card", "t4")
    assert run.status == 2 and "MiB limit" in run.err


def test_unknown_format_and_missing_metadata(cli, tmp_path: Path) -> None:
    path = write(tmp_path, "ok.csv", "batch,latency_ms\n1,5\n")
    unknown = cli("curves", "import", path, "--format", "xlsx", "--model", "m", "--card", "t4")
    assert unknown.status == 2 and "unknown format 'xlsx'" in unknown.err
    missing = cli("curves", "import", path)
    assert missing.status == 2 and "--model" in missing.err and "--card" in missing.err


def test_conflicting_metadata_is_an_error(cli, tmp_path: Path) -> None:
    path = write(tmp_path, "m.csv", "batch,latency_ms,model\n1,5,resnet\n")
    run = cli("curves", "import", path, "--model", "yolo", "--card", "t4")
    assert run.status == 2 and "'resnet' in the file but 'yolo' was given" in run.err


def test_show_unknown_id_and_delete(cli) -> None:
    missing = cli("curves", "show", "nope", "--json")
    assert missing.status == 2 and missing.out == "" and "no curve with id 'nope'" in missing.err
    victim = ids(cli)[-1]
    assert cli("curves", "delete", victim).status == 0
    assert victim not in ids(cli)


def test_cards_list_and_set_price(cli) -> None:
    cards = cli("cards", "list", "--json").json
    a30 = next(c for c in cards if c["name"] == "a30")
    assert a30["mig"] and a30["mig_slices"] == 4
    assert [p["slices"] for p in a30["mig_profiles"]] == [1, 1, 2, 2, 4]
    set_run = cli("cards", "set-price", "a30", "1.20", "--json")
    assert set_run.status == 0 and set_run.json["price_per_hour"] == 1.2
    bad = cli("cards", "set-price", "a30", "cheap")
    assert bad.status == 2 and "not a number" in bad.err
    assert (
        next(c for c in cli("cards", "list", "--json").json if c["name"] == "a30")["price_per_hour"]
        == 1.2
    )


def test_json_output_is_only_json(cli) -> None:
    run = cli("curves", "list", "--json")
    json.loads(run.out)
    assert run.err == ""


def test_rename_stores_a_new_curve_that_records_the_old_one(cli) -> None:
    old = cli("curves", "list", "--json").json[0]
    run = cli("curves", "rename", old["id"], "--model", "ball-detector-v2", "--json")
    assert run.status == 0, run.err
    renamed = run.json
    assert renamed["model"] == "ball-detector-v2" and renamed["renamed_from"] == old["id"]
    assert renamed["id"] != old["id"] and old["id"] in ids(cli)  # the old one stays
    shown = cli("curves", "show", renamed["id"]).out
    assert f"renamed from: {old['id']}" in shown
    nothing = cli("curves", "rename", old["id"])
    assert nothing.status == 2 and "give --model or --card" in nothing.err


def test_reimporting_a_stored_curve_says_it_is_already_stored(cli, tmp_path: Path) -> None:
    path = write(tmp_path, "again.csv", "batch,latency_ms\n1,5.5\n2,9.0\n")
    labels = ("--model", "m", "--card", "t4", "--precision", "fp16", "--resolution", "640x360")
    first = cli("curves", "import", path, *labels)
    assert first.status == 0, first.err
    assert first.out.startswith("stored ") and "already" not in first.out + first.err
    again = cli("curves", "import", path, *labels)
    assert again.status == 0, again.err
    assert again.out.startswith("already stored ")
    assert again.out.split()[2] == first.out.split()[1]  # the same curve id
    assert "nothing new" in again.err


def test_a_csv_line_with_two_problems_reports_both(cli, tmp_path: Path) -> None:
    path = write(tmp_path, "two.csv", "batch,latency_ms\n1,5.0\n,-1\n4,abc\n")
    before = ids(cli)
    run = cli("curves", "import", path, "--model", "m", "--card", "t4")
    assert run.status == 2
    assert "two.csv line 3: batch is empty" in run.err
    assert "two.csv line 3: latency_ms '-1' must be above zero" in run.err
    assert "two.csv line 4: latency_ms 'abc'" in run.err
    assert ids(cli) == before  # nothing stored


def test_model_analyzer_configs_list_apart_with_their_config(cli, tmp_path: Path) -> None:
    from tests.test_import_tools import ADD_SUB

    path = write(tmp_path, "metrics-model-inference.csv", ADD_SUB)
    run = cli("curves", "import", path, "--card", "t4")
    assert run.status == 0, run.err
    lines = [line for line in run.out.splitlines() if line.startswith("stored ")]
    labels = [line.split("  ", 1)[1] for line in lines]
    assert labels == [
        "add_sub on t4, config add_sub_config_0  (2 points)",
        "add_sub on t4, config add_sub_config_1  (1 point)",
    ]


def _many_curves(count: int) -> str:
    """A planner CSV of ``count`` two-point curves (one model each, on one card)."""
    rows = [f"{b},{b * 4.5 + i * 0.01:.2f},model-{i:03d},t4" for i in range(count) for b in (1, 2)]
    return "batch,latency_ms,model,card\n" + "\n".join(rows) + "\n"


def test_an_import_opens_the_store_as_often_for_many_curves_as_for_few(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from planner.store.connection import StoreFile

    cli("curves", "list", "--json")  # the store exists, with its built-in curves
    opens: list[str] = []
    attach = StoreFile._attach

    def counted(self: StoreFile) -> object:
        opens.append(str(self.path))
        return attach(self)

    monkeypatch.setattr(StoreFile, "_attach", counted)

    def opens_of(*args: object) -> int:
        opens.clear()
        run = cli("curves", "import", *args)
        assert run.status == 0, run.err
        return len(opens)

    few, many = (
        write(tmp_path, "few.csv", _many_curves(3)),
        write(tmp_path, "many.csv", _many_curves(60)),
    )
    assert opens_of(few) == opens_of(many)  # into a store without them
    assert opens_of(few) == opens_of(many)  # and again, when every curve is stored
    assert opens_of(few) <= 2  # the store's own open, and one hold for the import


def test_an_import_says_which_of_its_curves_were_stored_before(cli, tmp_path: Path) -> None:
    cli("curves", "import", write(tmp_path, "first.csv", _many_curves(2)))
    run = cli("curves", "import", write(tmp_path, "more.csv", _many_curves(4)))
    assert run.status == 0, run.err
    verbs = [line.split("  ")[0].rsplit(" ", 1)[0] for line in run.out.splitlines()]
    assert verbs == ["already stored", "already stored", "stored", "stored"]
    assert "nothing new" not in run.err
