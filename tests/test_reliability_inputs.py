"""Reliability: bad files, bad command-line arguments and bad links.

Every case here was found by (or is a relative of) an outside probe of the planner. The
rule they all check: bad input of any kind gets one clear line per problem, exit status 2
on the command line, and changes nothing stored; never a traceback, never a hang, never
unbounded output. Files are generated on the fly; the large ones are as large as the
upload limit allows and no larger.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from planner.curves.curve import MIN_LATENCY_MS
from planner.curves.imports import MAX_FILE_BYTES, ImportOptions, read_files
from planner.curves.imports.base import MAX_COLUMNS, MAX_JSON_DEPTH, MAX_PROBLEMS_PER_FILE
from planner.errors import BadInput
from planner.links.urls import decode
from planner.plan.params import CompareParams, PlanParams, SimulateParams

NATIVE = "batch,latency_ms,model,card\n"
PERF_HEADER = (
    "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"
    "Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,"
    "p50 latency,p90 latency,p95 latency,p99 latency\n"
)
PERF_ROW = "1,100,10,200,20,30,4000,40,5,4300,4500,4600,4800\n"
MA_HEADER = (
    "Model,Batch,Concurrency,Model Config Path,Instance Group,Max Batch Size,Satisfies "
    "Constraints,Throughput (infer/sec),p99 Latency (ms)\n"
)
NEXUS = (
    "tensorflow:resnet:1\nTesla_T4\nForward latency\nbatch,latency(us),std(us),memory(B),repeat\n"
)
HUGE_NUMBER = "9" * 5000
WIDE = 100_000  # columns in the probe's header


def deep_json(levels: int) -> str:
    return "[" * levels + "]" * levels


def native(rows: str, header: str = NATIVE) -> bytes:
    return (header + rows).encode()


# (id, file name, content, options, text one of the problems must contain)
FILES: list[tuple[str, str, bytes, dict[str, Any], str]] = [
    ("empty", "a.csv", b"", {}, "file is empty"),
    ("blank", "a.csv", b" \n\t\n", {}, "file is empty"),
    ("nul", "a.csv", b"batch,latency_ms\n1,\x005\n", {}, "NUL bytes"),
    ("latin-1", "a.csv", "batch,latency_ms\n1,5 µs\n".encode("latin-1"), {}, "not UTF-8"),
    ("utf-16", "a.csv", "batch,latency_ms\n1,5\n".encode("utf-16"), {}, "not UTF-8"),
    ("binary", "a.bin", bytes(range(1, 256)) * 4, {}, "not UTF-8"),
    ("over limit", "a.csv", native("1,5,m,c\n" * (MAX_FILE_BYTES // 8 + 1)), {}, "limit"),
    ("prose", "a.txt", b"hello, world\nnot a table\n", {}, "not a format the planner reads"),
    ("console", "a.txt", b"*** Measurement Settings ***\n  Batch size: 4\n", {}, "-f FILE.csv"),
    ("header only", "a.csv", native(""), {}, "no data rows"),
    ("no latency", "a.csv", b"batch,model\n1,m\n", {"format": "csv"}, "missing required"),
    ("repeated column", "a.csv", b"batch,latency_ms,batch\n1,5,1\n", {}, "more than once"),
    (
        "wide header",
        "a.csv",
        ("batch,latency_ms," + ",".join(f"c{i}" for i in range(WIDE)) + "\n1,5\n").encode(),
        {},
        f"more than the {MAX_COLUMNS}",
    ),
    ("long field", "a.csv", native(f'1,5,"{"m" * 200_000}",c\n'), {}, "not a readable CSV"),
    ("long first line", "a.csv", ("x" * 200_000 + "\n1,5\n").encode(), {}, "not a format"),
    ("open quote", "a.csv", native('1,5,"m,c\n2,9,m,c\n'), {}, "card is missing"),
    ("wide row", "a.csv", native("1,5,m,c,extra\n"), {}, "5 cells but the header has 4"),
    ("batch 0", "a.csv", native("0,5,m,c\n"), {}, "batch '0' is below 1"),
    ("batch -1", "a.csv", native("-1,5,m,c\n"), {}, "is below 1"),
    ("batch 1.5", "a.csv", native("1.5,5,m,c\n"), {}, "not a whole number"),
    ("batch huge", "a.csv", native(f"{HUGE_NUMBER},5,m,c\n"), {}, "not a finite number"),
    ("batch nan", "a.csv", native("nan,5,m,c\n"), {}, "not a finite number"),
    ("latency inf", "a.csv", native("1,inf,m,c\n"), {}, "not a finite number"),
    ("latency -1", "a.csv", native("1,-1,m,c\n"), {}, "must be above zero"),
    ("latency 0", "a.csv", native("1,0,m,c\n"), {}, "must be above zero"),
    ("latency 1e-300", "a.csv", native("1,1e-300,m,c\n"), {}, "below 0.001 ms (1 µs)"),
    ("latency 1e7", "a.csv", native("1,1e7,m,c\n"), {}, "implausibly large"),
    ("latency huge", "a.csv", native(f"1,{HUGE_NUMBER},m,c\n"), {}, "not a finite number"),
    (
        "p90 -1",
        "a.csv",
        b"batch,latency_ms,p90_ms,model,card\n1,5,-1,m,c\n",
        {},
        "p90_ms '-1' is negative",
    ),
    (
        "p99 1e-9",
        "a.csv",
        b"batch,latency_ms,p99_ms,model,card\n1,5,1e-9,m,c\n",
        {},
        "p99_ms 1e-09 is below",
    ),
    ("n 2.5", "a.csv", b"batch,latency_ms,n,model,card\n1,5,2.5,m,c\n", {}, "not a whole number"),
    (
        "memory abc",
        "a.csv",
        b"batch,latency_ms,memory_mb,model,card\n1,5,abc,m,c\n",
        {},
        "not a number",
    ),
    ("control char", "a.csv", native("1,5,m\x07,c\n"), {}, "control characters"),
    ("long name", "a.csv", native(f"1,5,{'m' * 300},c\n"), {}, "longer than 200"),
    ("precision fp8", "a.csv", b"batch,latency_ms,precision,model,card\n1,5,fp8,m,c\n", {}, "fp8"),
    (
        "resolution",
        "a.csv",
        b"batch,latency_ms,resolution,model,card\n1,5,wide,m,c\n",
        {},
        "WIDTHxHEIGHT",
    ),
    ("batch twice", "a.csv", native("1,5,m,c\n1,6,m,c\n"), {}, "already given"),
    ("no model", "a.csv", b"batch,latency_ms\n1,5\n", {}, "model is missing"),
    (
        "option clash",
        "a.csv",
        native("1,5,m,c\n"),
        {"model": "other"},
        "'m' in the file but 'other'",
    ),
    ("bad json", "a.json", b'{"points": [', {}, "not valid JSON"),
    ("json 10000 deep", "a.json", deep_json(10_000).encode(), {}, "nested more than"),
    ("json 40 deep", "a.json", deep_json(MAX_JSON_DEPTH + 8).encode(), {}, "nested more than"),
    (
        "json huge batch",
        "a.json",
        f'[{{"batch": {HUGE_NUMBER}, "latency_ms": 5, "model": "m", "card": "c"}}]'.encode(),
        {},
        "not a finite number",
    ),
    (
        "json huge latency",
        "a.json",
        f'[{{"batch": 1, "latency_ms": {HUGE_NUMBER}.5, "model": "m", "card": "c"}}]'.encode(),
        {},
        "not a finite number",
    ),
    ("json string", "a.json", b'"points"', {"format": "json"}, "expected a JSON object or list"),
    ("json null", "a.json", b"null", {"format": "json"}, "expected a JSON object or list"),
    ("json no points", "a.json", b'{"model": "m"}', {}, "expected a 'points' list"),
    ("json points text", "a.json", b'{"points": "1:5"}', {}, "expected a 'points' list"),
    (
        "json empty points",
        "a.json",
        b'{"points": [], "model": "m", "card": "c"}',
        {},
        "has no points",
    ),
    (
        "json point text",
        "a.json",
        b'{"points": ["1:5"], "model": "m", "card": "c"}',
        {},
        "expected an object",
    ),
    (
        "json NaN",
        "a.json",
        b'[{"batch": 1, "latency_ms": NaN, "model": "m", "card": "c"}]',
        {},
        "not a finite number",
    ),
    (
        "json bool batch",
        "a.json",
        b'[{"batch": true, "latency_ms": 5, "model": "m", "card": "c"}]',
        {},
        "batch True is not a number",
    ),
    (
        "json deep environment",
        "a.json",
        (
            '{"model": "m", "card": "c", "points": [{"batch": 1, "latency_ms": 5}], '
            '"environment": {"x": ' + deep_json(MAX_JSON_DEPTH + 2) + "}}"
        ).encode(),
        {},
        "nested more than",
    ),
    ("perf header only", "p.csv", PERF_HEADER.encode(), {"batch": (1,)}, "no data rows"),
    (
        "perf no batch",
        "p.csv",
        (PERF_HEADER + PERF_ROW).encode(),
        {"model": "m", "card": "c"},
        "--batch",
    ),
    (
        "perf negative p50",
        "p.csv",
        (PERF_HEADER + PERF_ROW.replace("4300", "-4300")).encode(),
        {"batch": (1,), "model": "m", "card": "c"},
        "p50 latency '-4300'",
    ),
    (
        "perf long field",
        "p.csv",
        (PERF_HEADER + "1," + "9" * 200_000 + "\n").encode(),
        {"batch": (1,)},
        "not a readable CSV",
    ),
    (
        "perf wide",
        "p.csv",
        (PERF_HEADER.strip() + ",x" * WIDE + "\n" + PERF_ROW).encode(),
        {"batch": (1,)},
        f"more than the {MAX_COLUMNS}",
    ),
    ("ma server only", "m.csv", b"Model,GPU UUID\nresnet,GPU-1\n", {}, "holds no batch curve"),
    (
        "ma bad values",
        "m.csv",
        (MA_HEADER + "resnet,x,1,resnet_config_0,1:GPU,8,Yes,100,-5\n").encode(),
        {},
        "batch 'x' is not a number",
    ),
    ("nexus no rows", "n.txt", NEXUS.encode(), {}, "no data rows"),
    (
        "nexus bad batch",
        "n.txt",
        (NEXUS + "0,5000,10,1000,10\n").encode(),
        {},
        "batch '0' is below 1",
    ),
    (
        "nexus wide",
        "n.txt",
        NEXUS.replace("repeat", "repeat" + ",x" * WIDE).encode(),
        {},
        f"more than the {MAX_COLUMNS}",
    ),
    (
        "nexus latency 0",
        "n.txt",
        (NEXUS + "1,0,10,1000,10\n").encode(),
        {},
        "latency '0' must be above zero",
    ),
]


def options_of(extra: dict[str, Any]) -> tuple[ImportOptions, str]:
    extra = dict(extra)
    fmt = extra.pop("format", "auto")
    return ImportOptions(**extra), fmt


@pytest.mark.parametrize(
    ("name", "content", "extra", "expected"),
    [case[1:] for case in FILES],
    ids=[case[0] for case in FILES],
)
def test_every_bad_file_is_refused_in_a_few_plain_lines(
    name: str, content: bytes, extra: dict[str, Any], expected: str
) -> None:
    options, fmt = options_of(extra)
    with pytest.raises(BadInput) as raised:
        read_files([(name, content)], options, fmt)
    problems = raised.value.problems
    assert any(expected in p for p in problems), problems
    assert 1 <= len(problems) <= MAX_PROBLEMS_PER_FILE + 1
    for problem in problems:
        assert "\n" not in problem and len(problem) <= 600, problem[:500]


def test_bad_files_on_the_command_line_exit_2_and_store_nothing(
    cli: Any, tmp_path: Path, db_path: Path
) -> None:
    """The same files through ``planner curves import``: exit 2, one line per problem,
    no traceback, and the store is not even opened."""
    for case, name, content, extra, expected in FILES:
        path = tmp_path / name
        path.write_bytes(content)
        args: list[str] = []
        for option, value in extra.items():
            args += [f"--{option}", ",".join(map(str, value)) if option == "batch" else value]
        run = cli("curves", "import", path, *args)
        assert run.status == 2, (case, run.err[:300])
        lines = run.err.splitlines()
        assert all(line.startswith("planner: ") for line in lines), (case, lines[:3])
        assert expected in run.err and "Traceback" not in run.err, case
        assert run.out == ""
    assert not db_path.exists()


def test_deep_json_and_long_numbers_are_one_line_each(cli: Any, tmp_path: Path) -> None:
    """Issue 11.3: a JSON document nested 10,000 deep (RecursionError), a 5,000-digit
    JSON number (ValueError) and a CSV field over 128 KiB (csv.Error) each give one line
    and exit 2."""
    cases = {
        "deep.json": deep_json(10_000),
        "number.json": f'{{"model": "m", "card": "c", "points": [{{"batch": {HUGE_NUMBER}, '
        '"latency_ms": 5}]}',
        "field.csv": NATIVE + f'1,5,"{"m" * 200_000}",c\n',
    }
    for name, text in cases.items():
        path = tmp_path / name
        path.write_text(text)
        run = cli("curves", "import", path)
        assert run.status == 2, run.err[-500:]
        assert len(run.err.splitlines()) == 1 and "Traceback" not in run.err, run.err[:500]


def test_a_header_of_100000_columns_is_refused_at_once() -> None:
    """Issue 11.4: the duplicate-column check is linear and the width is bounded (it took
    144 s to refuse this header, one ``list.count`` per column)."""
    header = "batch,latency_ms," + ",".join(f"c{i}" for i in range(WIDE))
    with pytest.raises(BadInput) as raised:
        read_files([("wide.csv", f"{header}\n1,5\n".encode())])
    assert raised.value.problems == [
        f"wide.csv line 1: the header has {WIDE + 2:,} columns, more than the {MAX_COLUMNS} "
        "a table may have"
    ]


def test_a_million_bad_rows_make_a_report_of_51_lines(cli: Any, tmp_path: Path) -> None:
    """Issue 11.5 (SPEC 3.1): the first 50 problems per file, then how many more of each
    kind; the report does not grow with the file."""
    path = tmp_path / "bad.csv"
    rows = 1_000_000
    path.write_bytes(b"batch,latency_ms\n" + b"0,5\n" * (rows // 2) + b"1,x\n" * (rows // 2))
    run = cli("curves", "import", path, "--model", "m", "--card", "c")
    assert run.status == 2
    lines = run.err.splitlines()
    assert len(lines) == MAX_PROBLEMS_PER_FILE + 1
    assert lines[0] == f"planner: {path} line 2: batch '0' is below 1"
    assert lines[-1] == (
        f"planner: {path}: … and {rows - MAX_PROBLEMS_PER_FILE:,} more ("
        f"{rows // 2:,} × latency_ms … is not a number; "
        f"{rows // 2 - MAX_PROBLEMS_PER_FILE:,} × batch … is below …)"
    )


def test_problems_of_two_files_are_bounded_per_file() -> None:
    bad = native("0,5,m,c\n" * 120)
    with pytest.raises(BadInput) as raised:
        read_files([("one.csv", bad), ("two.csv", bad)])
    problems = raised.value.problems
    assert len(problems) == 2 * (MAX_PROBLEMS_PER_FILE + 1)
    assert problems[MAX_PROBLEMS_PER_FILE] == (
        "one.csv: … and 70 more of the same kinds (70 × batch … is below …)"
    )
    assert problems[-1].startswith("two.csv: … and 70 more")


def test_the_size_limit_holds_while_reading_a_pipe(cli: Any, tmp_path: Path) -> None:
    """Issue 11.7: the limit is enforced while reading. A pipe (like /dev/zero) reports
    size 0, and the command used to read all of it; now it stops just past the limit."""
    fifo = tmp_path / "endless.csv"
    os.mkfifo(fifo)
    offered = 3 * MAX_FILE_BYTES
    written = 0

    def feed() -> None:
        nonlocal written
        chunk = b"1,5,m,c\n" * 8192
        try:
            with fifo.open("wb") as pipe:
                pipe.write(NATIVE.encode())
                while written < offered:
                    pipe.write(chunk)
                    written += len(chunk)
        except BrokenPipeError:
            pass  # the reader stopped reading: what this test wants

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    run = cli("curves", "import", fifo)
    writer.join(timeout=60)
    assert run.status == 2
    assert run.err == f"planner: {fifo}: file is larger than the 5 MiB limit for imports\n"
    assert written < MAX_FILE_BYTES + 2**20  # the limit, a pipe buffer and a chunk


def test_dev_zero_is_refused_without_reading_it_all(cli: Any) -> None:
    run = cli("curves", "import", "/dev/zero")
    assert run.status == 2 and "larger than the 5 MiB limit" in run.err


def test_latencies_below_a_microsecond_are_refused_everywhere(cli: Any, tmp_path: Path) -> None:
    """Issue 11.10: 1e-300 ms made a 300-digit throughput and '8 seats, p99 0.0 ms'."""
    floor = f"below {MIN_LATENCY_MS:g} ms (1 µs)"
    fit = cli("fit", "--points", "1:1e-300,2:2e-300")
    assert fit.status == 2 and fit.err.count(floor) == 2, fit.err
    recommend = cli("recommend", "--points", "1:1e-300,2:2e-300", "--seeds", "1")
    assert recommend.status == 2 and floor in recommend.err
    budget = cli("recommend", "--points", "1:5", "--budget-ms", "1e-300", "--seeds", "1")
    assert budget.status == 2 and "--budget-ms: must be from 0.001" in budget.err
    slo = cli("simulate", "--points", "1:5", "--sessions", "2", "--policy", "aimd",
              "--slo-ms", "1e-300")  # fmt: skip
    assert slo.status == 2 and "--slo-ms '1e-300' must be from 0.001" in slo.err
    path = tmp_path / "fast.csv"
    path.write_text(NATIVE + "1,1e-300,m,c\n")
    assert floor in cli("curves", "import", path).err
    params, ignored = decode(PlanParams, {"points": "1:1e-300,2:5"})
    assert params.points is None and floor in ignored[0]
    params, ignored = decode(PlanParams, {"budget_ms": "1e-300"})
    assert params.budget_ms == 50 and "must be from 0.001" in ignored[0]
    assert cli("fit", "--points", f"1:{MIN_LATENCY_MS}").status == 0  # the floor itself is fine


def test_seeds_are_read_as_integers(cli: Any) -> None:
    """Issue 11.9: --seed went through a float, so 2**53 and 2**53 + 1 were one seed and
    the range message said '9.22337e+18'."""
    common = ("simulate", "--points", "1:9.82,2:20.36,4:46.15", "--sessions", "4",
              "--duration-s", "2", "--json")  # fmt: skip
    low = cli(*common, "--seed", str(2**53))
    high = cli(*common, "--seed", str(2**53 + 1))
    assert low.status == high.status == 0
    assert low.json != high.json  # other phases, another run
    too_big = cli(*common, "--seed", str(2**63))
    assert too_big.status == 2
    expected = f"planner: --seed '{2**63}' must be a whole number from 0 to {2**63 - 1}\n"
    assert too_big.err == expected
    assert "is not exact as written" in cli(*common, "--seed", "1e30").err
    assert cli(*common, "--seed", "1e3").json == cli(*common, "--seed", "1000").json


# ---------------------------------------------------------------------------------------
# Command-line arguments: each of these is refused with exit 2 and no traceback.

POINTS = ("--points", "1:9.82,2:20.36,4:46.15")
SIM = ("simulate", *POINTS, "--sessions", "2", "--duration-s", "1")
REC = ("recommend", *POINTS, "--seeds", "1", "--duration-s", "1", "--max-sessions", "4")
ARGUMENTS: list[tuple[str, ...]] = [
    (),
    ("warp",),
    ("fit", "--points", ""),
    ("fit", "--points", "1:"),
    ("fit", "--points", ":5"),
    ("fit", "--points", "a:b"),
    ("fit", "--points", "1:5,1:6"),
    ("fit", "--points", "0:5"),
    ("fit", "--points", "1:-5"),
    ("fit", "--points", "1:nan"),
    ("fit", "--points", "1:inf"),
    ("fit", "--points", "99999:5"),
    ("fit", "--points", f"1:{HUGE_NUMBER}"),
    ("fit", "--points", "1:5", "--upto", "0"),
    ("fit", "--points", "1:5", "--upto", "abc"),
    ("fit", "--curve", "nosuchcurve1"),
    ("simulate", *POINTS, "--sessions", "0"),
    ("simulate", *POINTS, "--sessions", "4097"),
    ("simulate", *POINTS, "--sessions", "two"),
    ("simulate", *POINTS, "--sessions", "1.5"),
    ("simulate", *POINTS, "--sessions", HUGE_NUMBER),
    (*SIM, "--seed", "-1"),
    (*SIM, "--seed", "abc"),
    (*SIM, "--seed", "0.5"),
    (*SIM, "--seed", str(2**64)),
    (*SIM, "--fps", "0"),
    (*SIM, "--fps", "nan"),
    (*SIM, "--fps", "30,30,30"),
    (*SIM, "--duration-s", "0"),
    (*SIM, "--duration-s", "1e9"),
    (*SIM, "--jitter-ms", "-1"),
    (*SIM, "--overhead-ms", "inf"),
    (*SIM, "--policy", "fastest"),
    (*SIM, "--max-batch", "4"),
    (*SIM, "--policy", "max-batch", "--max-batch", "0"),
    (*SIM, "--policy", "max-batch", "--max-batch", "99999"),
    (*SIM, "--policy", "aimd", "--slo-ms", "0"),
    (*SIM, "--mode", "mps", "--mps-share", "0"),
    (*SIM, "--mode", "mps", "--mps-share", "101"),
    (*SIM, "--mode", "time-slicing", "--cotenants", "1.5"),
    (*SIM, "--mode", "time-slicing", "--cotenants", "x"),
    (*SIM, "--mode", "time-slicing", "--busy-period-ms", "0"),
    (*SIM, "--cotenants", "0.5"),
    (*SIM, "--mode", "mig", "--mig-profile", "9g.99gb", "--card", "a100-80gb"),
    (*SIM, "--frames", "/nonexistent/folder/frames.csv"),
    (*REC, "--budget-ms", "0"),
    (*REC, "--budget-ms", "-5"),
    (*REC, "--budget-ms", "abc"),
    (*REC, "--percentile", "101"),
    (*REC, "--min-fps", "-1"),
    (*REC, "--seeds", "0"),
    (*REC, "--seeds", "1.5"),
    (*REC, "--seeds", str(2**70)),
    (*REC, "--max-sessions", "0"),
    (*REC, "--headroom", "-1"),
    (*REC, "--price-per-hour", "nan"),
    (*REC, "--policies", "bogus"),
    (*REC, "--modes", "bogus"),
    (*REC, "--peak-sessions", "0"),
    ("recommend", "--curve", "nosuchcurve1"),
    ("link", *POINTS, "--budget-ms", "abc"),
    ("link", "--curve", "nosuchcurve1"),
    ("curves", "show", "nosuchcurve1"),
    ("curves", "show", ""),
    ("curves", "show", "x\x07"),
    ("curves", "delete", "nosuchcurve1"),
    ("curves", "export", "nosuchcurve1"),
    ("curves", "import", "/nonexistent.csv"),
    ("curves", "import", "/"),
    ("curves", "import", "/dev/null"),
    ("curves", "import", "--format", "xml", "/dev/null"),
    ("cards", "set-price", "t4", "-1"),
    ("cards", "set-price", "t4", "nan"),
    ("cards", "set-price", "t4", "abc"),
    ("cards", "set-price", "no-such-card", "1"),
    ("measure", "--batches", "0", "--device", "cpu"),
    ("measure", "--precision", "fp8", "--device", "cpu"),
    ("measure", "--device", "tpu"),
    ("measure", "--warmup", "-1", "--device", "cpu"),
    ("measure", "--resolution", "512", "--device", "cpu"),
    ("measure", "--model-file", "/nonexistent.pt", "--device", "cpu"),
    ("bench", "--only", "warp-drive"),
]


@pytest.mark.parametrize("args", ARGUMENTS, ids=[" ".join(a)[:60] or "none" for a in ARGUMENTS])
def test_bad_arguments_exit_2_without_a_traceback(cli: Any, args: tuple[str, ...]) -> None:
    before = cli("curves", "list", "--json").json if args[:1] in (("curves",), ("cards",)) else None
    run = cli(*args)
    assert run.status == 2, run.err[-500:]
    assert "Traceback" not in run.err and run.err.strip()
    lines = run.err.splitlines()
    if run.err.startswith("usage:"):  # argparse's own: its usage, then one error line
        assert lines[-1].startswith("planner") and ": error: " in lines[-1], run.err
    else:  # ours: one line per problem
        assert all(line.startswith("planner: ") and len(line) <= 600 for line in lines), lines
    if before is not None:
        assert cli("curves", "list", "--json").json == before


# ---------------------------------------------------------------------------------------
# Links: every bad parameter falls back to its default with one message; none raises.

LINKS: list[dict[str, Any]] = [
    {"budget_ms": "abc"},
    {"budget_ms": "1e-300"},
    {"budget_ms": "-1"},
    {"budget_ms": "nan"},
    {"budget_ms": "inf"},
    {"budget_ms": "1e400"},
    {"budget_ms": "5" * 10_000},
    {"budget_ms": ["40", "50"]},
    {"points": "1:1e-300"},
    {"points": "garbage"},
    {"points": ",".join(f"{b}:{b}" for b in range(1, 2000))},
    {"points": f"1:{HUGE_NUMBER}"},
    {"curve": "<script>alert(1)</script>"},
    {"curve": "'; DROP TABLE curves; --"},
    {"plan": "../../etc/passwd"},
    {"seeds": "1e3"},
    {"seeds": str(2**53 + 1)},
    {"seed": "9" * 30},
    {"sessions": "99999999999999999999999"},
    {"policies": "a,b"},
    {"modes": ""},
    {"fps": "0"},
    {"phases": "x"},
    {"percentile": "\u202e99"},
    {"min_fps": "1\x00"},
    {"model": "m" * 1000},
    {"card": "![t](http://127.0.0.1:8799/pixel.png)"},
    {"unknown": "1", "\x07": "2"},
]


@pytest.mark.parametrize("query", LINKS, ids=[json.dumps(q)[:40] for q in LINKS])
def test_bad_links_fall_back_with_one_message_each(query: dict[str, Any]) -> None:
    loader: Callable[[str], Any] = lambda _id: {}  # noqa: E731 - a saved plan, found empty
    for cls in (PlanParams, SimulateParams, CompareParams):
        params, ignored = (
            decode(cls, query, load_plan=loader) if cls is PlanParams else decode(cls, query)
        )
        assert isinstance(params, cls)
        assert all("\n" not in m and len(m) <= 600 for m in ignored), ignored


def test_rows_of_spaces_are_blank_rows() -> None:
    result = read_files([("a.csv", native("1,5,m,c\n  ,  ,  , \n,,,\n2,9,m,c\n"))])
    assert result.curves[0].batches == (1, 2)
