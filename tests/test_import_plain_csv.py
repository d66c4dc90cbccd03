"""The planner's CSV read column by column (a file whose every row is good) gives what the
row-by-row reading gives: the same rows, notes and problems; and any other file is left
to the row-by-row reading, which says what is wrong line by line."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.bench.store import bulk_file
from planner.curves.curve import Point
from planner.curves.imports import ImportOptions, ImportProblems, read_files
from planner.curves.imports.native import _parse_by_row, _parse_plain, parse_csv
from planner.curves.imports.rows import ParsedFile
from planner.store.repository import Store


def _same(plain: ParsedFile, by_row: ParsedFile) -> None:
    assert plain.rows == by_row.rows
    assert plain.notes == by_row.notes
    assert plain.problems is not None and by_row.problems is not None
    assert plain.problems.lines() == by_row.problems.lines()


GOOD = {
    "bulk": bulk_file(20_000).decode(),
    "crlf, blank lines, spaces": (
        "\r\n\r\n batch , latency_ms ,model,card\r\n1, 9.5 ,m,laptop\r\n2,19.25,m,laptop\r\n"
    ),
    "no metadata columns": "batch,latency_ms\n1,9.5\n2,19\n4,37.5\n",
    "unknown column and empty spread": (
        "batch,latency_ms,p10_ms,p99_ms,n,colour,model,card,precision,resolution\n"
        "1,9.5,,, ,red,m,t4,FP16, 512 x 288\n2,19,,,,blue,m,t4,fp16,512x288\n"
    ),
    "interleaved curves, notes, MIG and a guarded formula": (
        "batch,latency_ms,model,card,mig_profile,notes\n"
        "1,9.5,a,a100,1g.10gb,first\n1,8,'=b,a100,,\n2,19,a,a100,1g.10gb,second\n"
        "2,15,'=b,a100,,\n"
    ),
    "one row": "batch,latency_ms,model,card\n4096,1e6,m,c\n",
    "the smallest latency": "batch,latency_ms,model,card\n1,0.001,m,c\n2,1_000,m,c\n",
}


@pytest.mark.parametrize("text", GOOD.values(), ids=GOOD.keys())
def test_a_good_file_is_read_column_by_column_as_row_by_row(text: str) -> None:
    options = ImportOptions(model="m", card="laptop")
    plain = _parse_plain("f.csv", text, options)
    assert plain is not None  # read column by column
    _same(plain, _parse_by_row("f.csv", text, options))


def test_options_that_disagree_or_override_say_the_same_either_way() -> None:
    text = "batch,latency_ms,model,card\n1,9.5,m,t4\n2,19,m,t4\n1,8,n,t4\n"
    for options in (
        ImportOptions(model="other"),
        ImportOptions(model="other", override=frozenset({"model"})),
        ImportOptions(card="T4", precision="fp16"),
    ):
        plain = _parse_plain("f.csv", text, options)
        assert plain is not None
        _same(plain, _parse_by_row("f.csv", text, options))
    plain = _parse_plain("f.csv", text, ImportOptions(model="other"))
    assert plain is not None and plain.problems
    assert plain.problems.lines() == [
        "f.csv lines 2–3: model is 'm' in the file but 'other' was given (--model); "
        "add --override model to store it as 'other'",
        "f.csv line 4: model is 'n' in the file but 'other' was given (--model); "
        "add --override model to store it as 'other'",
    ]


BAD = {
    "a word for a batch": "batch,latency_ms,model,card\nx,9.5,m,c\n",
    "half a batch": "batch,latency_ms,model,card\n1.5,9.5,m,c\n",
    "batch 0": "batch,latency_ms,model,card\n0,9.5,m,c\n",
    "too large a batch": "batch,latency_ms,model,card\n4097,9.5,m,c\n",
    "an empty latency": "batch,latency_ms,model,card\n1,,m,c\n",
    "NaN": "batch,latency_ms,model,card\n1,nan,m,c\n",
    "infinity": "batch,latency_ms,model,card\n1,inf,m,c\n",
    "below a microsecond": "batch,latency_ms,model,card\n1,0.0009,m,c\n",
    "too slow": "batch,latency_ms,model,card\n1,1000001,m,c\n",
    "a spread figure": "batch,latency_ms,p99_ms,model,card\n1,9.5,10,m,c\n",
    "a quoted cell": 'batch,latency_ms,model,card\n1,9.5,"m, v2",c\n',
    "a short row": "batch,latency_ms,model,card\n1,9.5,m\n",
    "a long row": "batch,latency_ms,model,card\n1,9.5,m,c,\n",
    "a blank line between rows": "batch,latency_ms,model,card\n1,9.5,m,c\n\n2,19,m,c\n",
    "a bare carriage return": "batch,latency_ms,model,card\r1,9.5,m,c\r",
    "no rows": "batch,latency_ms,model,card\n",
}


@pytest.mark.parametrize("text", BAD.values(), ids=BAD.keys())
def test_any_other_file_is_read_row_by_row(text: str) -> None:
    assert _parse_plain("f.csv", text, ImportOptions()) is None


def test_a_bad_row_reports_all_its_problems_with_its_line() -> None:
    text = "batch,latency_ms,model,card\n" + "1,9.5,m,c\n" * 3 + "0,-1,m,c\n"
    with pytest.raises(ImportProblems) as raised:
        read_files([("f.csv", text.encode())])
    assert raised.value.problems == [
        "f.csv line 5: batch '0' is below 1",
        "f.csv line 5: latency_ms '-1' must be above zero",
    ]


CELLS = st.sampled_from(
    ["1", "2", "4", " 8 ", "16.0", "0", "1.5", "x", "", "9.5", "1e-4", "inf", "3_0", "m", "n"]
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(CELLS, CELLS, st.sampled_from(["m", "n", "'=m", " m "]), CELLS), max_size=8),
    st.sampled_from(["\n", "\r\n"]),
)
def test_whatever_the_cells_either_reading_gives_the_same(
    rows: list[tuple[str, str, str, str]], newline: str
) -> None:
    text = newline.join(["batch,latency_ms,model,precision", *map(",".join, rows)]) + newline
    options = ImportOptions(card="t4")
    plain = _parse_plain("f.csv", text, options)
    if plain is None:
        return
    try:
        by_row = _parse_by_row("f.csv", text, options)
    except Exception as exc:  # the column reading must refuse it the same way
        pytest.fail(f"read column by column, refused row by row: {exc}")
    _same(plain, by_row)


def test_a_big_file_stores_what_it_read(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Points go in from arrays: the stored points are the points read, spread included."""
    text = bulk_file(30_000).decode() + "".join(
        f"{b},{b * 2.5},spread,t4,fp16,512x288\n" for b in (1, 2, 4)
    )
    curves = read_files([("f.csv", text.encode())]).curves
    spread_file = b"batch,latency_ms,p10_ms,p99_ms,n,model,card\n1,2,1.5,,7,s,t4\n2,3,,3.5,,s,t4\n"
    spread = read_files([("s.csv", spread_file)]).curves
    store = Store(tmp_path / "s.duckdb", load_builtins=False)
    stored = store.add_curves([*curves, *spread])
    assert [c.id for c in stored] == [c.id for c in [*curves, *spread]]
    again = {c.id: c for c in store.curves()}
    assert all(again[c.id].points == c.points for c in [*curves, *spread])
    assert again[spread[0].id].points == (
        Point(1, 2.0, p10_ms=1.5, n=7),
        Point(2, 3.0, p99_ms=3.5),
    )
    assert store.add_curves([*curves, *spread]) == stored  # the second time: as stored


def test_parse_csv_takes_either_reading() -> None:
    good = GOOD["no metadata columns"]
    assert (
        parse_csv("f.csv", good, ImportOptions(model="m", card="c")).rows
        == _parse_by_row("f.csv", good, ImportOptions(model="m", card="c")).rows
    )
    bad = BAD["a blank line between rows"]
    assert [r.where for r in parse_csv("f.csv", bad, ImportOptions()).rows] == [
        "f.csv line 2",
        "f.csv line 4",
    ]


def test_a_curve_id_is_the_head_of_the_digest_in_base32() -> None:
    """Curve ids never change (saved plans name their curves by id): the short way to
    them gives what Base32 of the whole digest gives."""
    import base64
    import hashlib

    from planner.curves.curve import _base32_head, curve_id

    for seed in range(2_000):
        digest = hashlib.sha256(str(seed).encode()).digest()
        assert _base32_head(digest) == base64.b32encode(digest).decode().lower()[:12]
    # and an id stored before this way of computing it
    assert (
        curve_id("ball-detector", "laptop-8gb", "fp16", "512x288", None, (Point(1, 9.82),))
        == (
            base64.b32encode(
                hashlib.sha256(
                    b'["ball-detector","laptop-8gb","fp16","512x288","",[[1,"9.820000"]]]'
                ).digest()
            )
            .decode()
            .lower()[:12]
        )
    )
