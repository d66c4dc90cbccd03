"""The rules of the benchmark-tool importers, on small files written for each rule.

The real files are covered by ``test_import_samples``; here each rule (which row, which
latency, which unit, which option wins) gets a file that isolates it, and every kind of
bad input is tried through the command line, where it must leave the store unchanged.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.curves.imports import (
    FORMATS,
    ImportOptions,
    ImportProblems,
    ImportResult,
    Wording,
    detect_format,
    fields_needed,
    read_files,
)
from planner.curves.imports.native import template_csv
from planner.errors import BadInput
from tests.conftest import SAMPLES, needs_samples

PERF_HEADER = (
    "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"
    "Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,"
    "p50 latency,p90 latency,p95 latency,p99 latency\n"
)
MA_HEADER = (
    "Model,Batch,Concurrency,Model Config Path,Instance Group,Max Batch Size,"
    "Satisfies Constraints,Throughput (infer/sec),p99 Latency (ms)\n"
)
# A profile in the 2019+ layout, written from uwsampl/nexus's profiler.cpp: a GPU UUID
# line, a repeat column, and pre/postprocess sections titled "(mean,std,repeat)" with the
# values right after. The input size is 288 high and 512 wide.
NEXUS_2019 = """\
tensorflow:ssd_mobilenet:1:288x512
Tesla_T4
GPU-0c9b6a52-3f1e-4d2a-9b7c-5e8f1a2b3c4d
Forward latency
batch,latency(us),std(us),memory(B),repeat
1,5120.5,60.25,1073741824,10
2,7340,88.1,1157627904,10
4,11800.3,120.7,1325400064,10
Preprocess latency (mean,std,repeat)
812.4,95.2,2000
Postprocess latency (mean,std,repeat)
45.1,7.9,2000
"""


def read(*files: tuple[str, str], **options: object) -> ImportResult:
    return read_files(
        [(name, text.encode()) for name, text in files],
        ImportOptions(**options),  # type: ignore[arg-type]
    )


def refused(*files: tuple[str, str], **options: object) -> str:
    with pytest.raises(BadInput) as caught:
        read(*files, **options)
    return "\n".join(caught.value.problems)


def perf_row(concurrency: int, throughput: float, p50: int, p90: int, p99: int) -> str:
    return f"{concurrency},{throughput},10,100,20,5,{p50 - 140},5,0,{p50},{p90},{p90 + 5},{p99}\n"


# -- perf_analyzer ---------------------------------------------------------------------


def test_perf_analyzer_takes_the_lowest_concurrency_row_not_the_first() -> None:
    # Sorted by throughput, as perf_analyzer writes it: concurrency 1 comes last.
    text = PERF_HEADER + perf_row(4, 900.0, 4000, 5000, 6000) + perf_row(1, 450.0, 2000, 2100, 2500)
    result = read(("p.csv", text), model="m", card="t4", batch=(1,))
    (curve,) = result.curves
    assert curve.points[0].as_dict() == {
        "batch": 1,
        "latency_ms": 2.0,
        "p50_ms": 2.0,
        "p90_ms": 2.1,
        "p99_ms": 2.5,
    }
    assert result.notes[0].startswith("p.csv: used line 3 (concurrency 1) as batch 1")
    assert curve.environment["import_rows"] == "batch 1: p.csv line 3 (concurrency 1)"
    assert not any("queueing" in n for n in result.notes)


def test_perf_analyzer_says_when_the_lowest_load_queues() -> None:
    text = PERF_HEADER + perf_row(4, 900.0, 4000, 5000, 6000) + perf_row(8, 950.0, 8000, 9000, 9500)
    result = read(("p.csv", text), model="m", card="t4", batch=(4,))
    assert result.curves[0].latencies == (4.0,)
    assert any("lowest concurrency in the file is 4, not 1" in n for n in result.notes)


def test_perf_analyzer_request_rate_takes_the_lowest_rate() -> None:
    header = PERF_HEADER.replace("Concurrency", "Request Rate")
    text = (
        header
        + "200,400,5,60,10,2,30,2,1,150,180,190,210\n50,100,5,60,10,2,30,2,1,110,130,140,170\n"
    )
    result = read(("r.csv", text), model="m", card="t4", batch=(2,))
    assert result.curves[0].latencies == (0.11,)
    assert "used line 3 (request rate 50)" in result.notes[0]
    assert any("about 0.0055 requests are in flight" in n for n in result.notes)


def test_perf_client_without_percentiles_uses_the_sum_of_components_as_a_mean() -> None:
    text = (
        "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"
        "Server Compute,Client Recv\n2,900,1,80,20,60,2\n1,6000,1,68,8,64,2\n"
    )
    result = read(("old.csv", text), model="m", card="t4", batch=(1,))
    (point,) = result.curves[0].points
    assert point.latency_ms == 0.143 and point.p50_ms is None and point.p99_ms is None
    assert "sum of the average latency components" in result.notes[0]
    assert "= 143 µs), an average, not a median" in result.notes[0]
    assert "a mean, not a median" in result.curves[0].environment["latency_basis"]


def test_perf_analyzer_files_one_per_batch_merge_into_one_curve_in_order() -> None:
    files = [
        (
            f"b{b}.csv",
            PERF_HEADER
            + perf_row(1, 500.0 * b, 1000 * b + 500, 0, 0).replace(",0,0\n", ",9000,9000\n"),
        )
        for b in (1, 2, 4)
    ]
    result = read(*files, model="m", card="t4", batch=(1, 2, 4))
    (curve,) = result.curves
    assert curve.batches == (1, 2, 4)
    assert curve.latencies == (1.5, 2.5, 4.5)
    assert curve.environment["import_rows"] == (
        "batch 1: b1.csv line 2 (concurrency 1); batch 2: b2.csv line 2 (concurrency 1); "
        "batch 4: b4.csv line 2 (concurrency 1)"
    )


def test_one_batch_value_applies_to_every_perf_analyzer_file() -> None:
    a = PERF_HEADER + perf_row(1, 500.0, 2000, 2100, 2200)
    b = PERF_HEADER + perf_row(1, 500.0, 2000, 2100, 2200)
    result = read(("a.csv", a), ("b.csv", b), model="m", card="t4", batch=(1,))
    assert result.curves[0].batches == (1,)


@needs_samples
def test_a_batch_that_the_throughput_contradicts_is_noted() -> None:
    gke = SAMPLES / "perf_analyzer_21.05__triton-server-gke-benchmark__perf_bert_base_gpu_trt.csv"
    wrong = read(("gke.csv", gke.read_text()), model="m", card="t4", batch=(1,))
    assert any(
        "--batch 1, but the row's throughput suggests batch of about 2" in n for n in wrong.notes
    )
    right = read(("gke.csv", gke.read_text()), model="m", card="t4", batch=(2,))
    assert not any("suggests" in n for n in right.notes)


def test_perf_analyzer_rows_with_a_trailing_comma_are_read_and_wider_rows_refused() -> None:
    ok = PERF_HEADER + perf_row(1, 500.0, 2000, 2100, 2200).replace("\n", ",\n")
    assert read(("t.csv", ok), model="m", card="t4", batch=(1,)).curves[0].latencies == (2.0,)
    wide = PERF_HEADER + perf_row(1, 500.0, 2000, 2100, 2200).replace("\n", ",7\n")
    assert "t.csv line 2: 14 cells but the header has 13" in refused(
        ("t.csv", wide), model="m", card="t4", batch=(1,)
    )


def test_perf_analyzer_reports_every_bad_cell_with_its_line() -> None:
    text = (
        PERF_HEADER
        + "1,500,10,100,20,5,abc,5,0,2000,2100,2200,2300\n0,x,10,100,20,5,1,5,0,0,1,1,1\n"
    )
    message = refused(("bad.csv", text), model="m", card="t4", batch=(1,))
    assert "bad.csv line 2: Server Compute Infer 'abc' is not a number" in message
    assert "bad.csv line 3: Concurrency '0' must be above zero" in message
    assert "bad.csv line 3: Inferences/Second 'x' is not a number" in message
    assert "bad.csv line 3: p50 latency '0' must be above zero" in message


# -- Model Analyzer --------------------------------------------------------------------


def ma_table(*rows: str) -> str:
    return MA_HEADER + "".join(r + "\n" for r in rows) + "\n"


ADD_SUB = ma_table(
    "add_sub,2,2,add_sub_config_0,1:GPU,8,Yes,13205.0,0.5",
    "add_sub,1,2,add_sub_config_0,1:GPU,8,Yes,6176.0,0.6",
    "add_sub,2,1,add_sub_config_0,1:GPU,8,Yes,4876.1,0.7",
    "add_sub,1,1,add_sub_config_0,1:GPU,8,Yes,2508.0,0.5",
    "add_sub,1,1,add_sub_config_1,2:GPU,2,No,2186.0,0.9",
    "add_sub,1,4,add_sub_config_2,2:GPU,2,Yes,6000.0,1.9",
)


def test_model_analyzer_stores_p99_of_concurrency_one_rows_as_the_latency() -> None:
    result = read(("ma.csv", ADD_SUB), card="a10")
    config_0 = next(c for c in result.curves if c.environment["model_config"] == "add_sub_config_0")
    assert [p.as_dict() for p in config_0.points] == [
        {"batch": 1, "latency_ms": 0.5, "p99_ms": 0.5},
        {"batch": 2, "latency_ms": 0.7, "p99_ms": 0.7},
    ]
    assert config_0.model == "add_sub" and config_0.card == "a10"
    assert config_0.environment["latency_basis"].startswith("p99 latency")
    assert config_0.environment["instance_group"] == "1:GPU"
    assert config_0.environment["max_batch_size"] == "8"
    assert (
        "ma.csv: config add_sub_config_0: used line 5 (batch 1, concurrency 1, p99 0.5 ms), "
        "line 4 (batch 2, concurrency 1, p99 0.7 ms)" in result.notes
    )
    assert (
        "ma.csv: the table's only latency is p99: stored as latency_ms and p99_ms" in result.notes
    )
    assert any(
        "add_sub_config_2 (no concurrency-1 row; the lowest concurrency is 4)" in n
        for n in result.notes
    )
    assert len(result.curves) == 2


def test_model_analyzer_config_picks_one_curve() -> None:
    result = read(("ma.csv", ADD_SUB), card="a10", config="add_sub_config_1")
    (curve,) = result.curves
    assert curve.environment["model_config"] == "add_sub_config_1"
    assert curve.latencies == (0.9,)


@needs_samples
def test_model_analyzer_config_of_an_ensemble_by_its_name() -> None:
    path = SAMPLES / "model_analyzer_v1.33dev__ensemble_add_sub__metrics-model-inference.csv"
    result = read(("e.csv", path.read_text()), card="a10", config="ensemble_add_sub_config_default")
    (curve,) = result.curves
    assert curve.latencies == (0.9,)
    assert curve.environment["composing_configs"] == "add_config_default, sub_config_default"


def test_model_analyzer_model_option_names_the_curve_and_keeps_the_triton_name() -> None:
    result = read(("ma.csv", ADD_SUB), card="a10", model="ball-detector", config="add_sub_config_0")
    (curve,) = result.curves
    assert curve.model == "ball-detector"
    assert curve.environment["triton_model"] == "add_sub"
    assert any("Triton model add_sub stored as model 'ball-detector'" in n for n in result.notes)


def test_model_analyzer_request_rate_rows_stand_for_concurrency_one_only_when_unloaded() -> None:
    header = MA_HEADER.replace("Concurrency", "Request Rate")
    text = header + (
        "m,1,100,m_config_0,1:GPU,4,Yes,100.0,2.0\n"  # 100/s x 2 ms = 0.2 in flight
        "m,1,400,m_config_0,1:GPU,4,Yes,400.0,2.5\n"
        "m,2,500,m_config_0,1:GPU,4,Yes,1000.0,4.0\n"  # 500/s x 4 ms = 2 in flight
    )
    result = read(("rr.csv", text), card="a10")
    (curve,) = result.curves
    assert curve.batches == (1,) and curve.latencies == (2.0,)
    assert any(
        "batch 2 skipped" in n and "about 2 requests are in flight" in n for n in result.notes
    )
    busy = header + "m,1,500,m_config_0,1:GPU,4,Yes,500.0,4.0\n"
    assert "no configuration has a row that stands for one request at a time" in refused(
        ("busy.csv", busy), card="a10"
    )


def test_model_analyzer_duplicate_concurrency_one_rows_that_disagree_are_refused() -> None:
    text = ma_table(
        "add_sub,1,1,add_sub_config_0,1:GPU,8,Yes,2508.0,0.5",
        "add_sub,1,1,add_sub_config_0,1:GPU,8,Yes,2400.0,0.8",
    )
    assert "ma.csv line 3: batch 1 was already given as 0.5 ms (ma.csv line 2)" in refused(
        ("ma.csv", text), card="a10"
    )


def test_model_analyzer_older_headers_read_by_name() -> None:
    # ~1.4-1.15 default columns: Preferred Batch Sizes and RAM Usage, no Max Batch Size.
    text = (
        "Model,Batch,Concurrency,Model Config Path,Instance Group,Preferred Batch Sizes,"
        "Satisfies Constraints,Throughput (infer/sec),p99 Latency (ms),RAM Usage (MB)\n"
        "resnet,1,1,resnet_i0,1/GPU,4 8,Yes,180.5,6.1,900\n"
    )
    assert read(("old.csv", text), card="t4").curves[0].latencies == (6.1,)


# -- Nexus -----------------------------------------------------------------------------


def test_nexus_2019_profile_with_uuid_and_repeat() -> None:
    result = read(("ssd.txt", NEXUS_2019))
    (curve,) = result.curves
    assert curve.model == "ssd_mobilenet" and curve.card == "Tesla T4"
    assert curve.resolution == "512x288"  # Nexus writes height x width
    assert curve.points[0].as_dict() == {
        "batch": 1,
        "latency_ms": 5.1205,
        "std_ms": 0.06025,
        "n": 10,
        "memory_mb": 1024.0,
    }
    assert curve.batches == (1, 2, 4)
    env = curve.environment
    assert env["device_uuid"] == "GPU-0c9b6a52-3f1e-4d2a-9b7c-5e8f1a2b3c4d"
    assert env["nexus_profile"] == "tensorflow:ssd_mobilenet:1:288x512"
    assert env["framework"] == "tensorflow"
    assert (env["preprocess_ms"], env["postprocess_ms"]) == (0.8124, 0.0451)
    assert env["import_rows"] == "ssd.txt lines 6-8 (Forward latency table)"
    assert detect_format("anything.csv", NEXUS_2019) == "nexus"


def test_nexus_options_name_the_curve_but_a_different_resolution_is_an_error() -> None:
    result = read(("ssd.txt", NEXUS_2019), model="detector", card="t4")
    (curve,) = result.curves
    assert (curve.model, curve.card) == ("detector", "t4")
    assert curve.environment["device"] == "Tesla_T4"
    assert "ssd.txt: device 'Tesla T4' stored as card 't4' (--card)" in result.notes
    assert "resolution is '512x288' in the file but '640x360' was given" in refused(
        ("ssd.txt", NEXUS_2019), resolution="640x360"
    )
    assert read(("ssd.txt", NEXUS_2019), resolution="512X288").curves[0].resolution == "512x288"


def test_nexuslb_six_column_layout_uses_peak_memory() -> None:
    text = (
        "tensorflow:resnet_0:1\nTesla_K80\nGenericCPU\nForward latency\n"
        "batch,latency(us),std(us),static memory(B),peak memory(B),repeat\n"
        "1,20232,638,536870912,1073741824,10\n"
        "2,30232,700,536870912,2147483648,10\n"
    )
    (curve,) = read(("lb.txt", text)).curves
    assert [p.memory_mb for p in curve.points] == [1024.0, 2048.0]  # peak, not static
    assert curve.latencies == (20.232, 30.232)


def test_nexus_header_units_are_honoured() -> None:
    text = NEXUS_2019.replace("latency(us),std(us)", "latency(ms),std(ms)")
    assert read(("ms.txt", text)).curves[0].latencies == (5120.5, 7340.0, 11800.3)


def test_nexus_without_per_query_sections_is_still_a_curve() -> None:
    truncated = NEXUS_2019.split("Preprocess")[0]
    (curve,) = read(("cut.txt", truncated)).curves
    assert curve.batches == (1, 2, 4) and "preprocess_ms" not in curve.environment


def test_nexus_bad_rows_are_reported_with_their_lines() -> None:
    text = NEXUS_2019.replace("2,7340,88.1", "2,fast,88.1").replace("4,11800.3", "0,11800.3")
    message = refused(("bad.txt", text))
    assert "bad.txt line 7: latency 'fast' is not a number" in message
    assert "bad.txt line 8: batch '0' is below 1" in message
    short = NEXUS_2019.replace("1,5120.5,60.25,1073741824,10", "1,5120.5,60.25")
    assert "bad.txt line 6: 3 cells but the header has 5" in refused(("bad.txt", short))


# -- detection and formats -------------------------------------------------------------


def test_detection_reads_content_and_an_unknown_file_gets_a_reason() -> None:
    assert detect_format("x.txt", "batch,latency_ms\n1,5\n") == "csv"
    assert detect_format("x.csv", '[{"batch": 1, "latency_ms": 5}]') == "json"
    assert detect_format("x.json", PERF_HEADER) == "perf-analyzer"
    assert detect_format("x.txt", MA_HEADER) == "model-analyzer"
    with pytest.raises(BadInput) as caught:
        detect_format("notes.txt", "hello,world\n1,2\n")
    (problem,) = caught.value.problems
    assert problem.startswith(
        "notes.txt: not a format the planner reads (first line 'hello,world')"
    )
    assert "perf_analyzer" in problem and "Model Analyzer" in problem and "Nexus" in problem


def test_format_option_forces_a_parser() -> None:
    with pytest.raises(BadInput) as caught:
        read_files([("n.txt", NEXUS_2019.encode())], ImportOptions(card="t4"), "perf-analyzer")
    assert "missing required column Concurrency or Request Rate" in caught.value.problems[0]


# -- bad input through the command line: a reason on stderr, nothing stored -------------


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


PERF_OK = PERF_HEADER + perf_row(1, 500.0, 2000, 2100, 2200)
BAD_INPUTS = {
    "perf header only": (
        [("p.csv", PERF_HEADER)],
        ["--batch", "1"],
        "has a header but no data rows",
    ),
    "perf missing p50": (
        [("p.csv", "Concurrency,Inferences/Second,p90 latency\n1,500,2000\n")],
        ["--batch", "1"],
        "line 1: missing required column(s) p50 latency",
    ),
    "perf non-numeric": (
        [("p.csv", PERF_OK.replace(",2000,2100,", ",2ms,2100,"))],
        ["--batch", "1"],
        "p.csv line 2: p50 latency '2ms' is not a number",
    ),
    "perf without --batch": (
        [("p.csv", PERF_OK)],
        [],
        "does not record the batch size; give the run's -b with --batch B",
    ),
    "wrong number of --batch values": (
        [("a.csv", PERF_OK), ("b.csv", PERF_OK), ("c.csv", PERF_OK)],
        ["--batch", "1,2"],
        "--batch has 2 values for 3 perf_analyzer files",
    ),
    "--batch with no perf file": (
        [("n.csv", "batch,latency_ms\n1,5\n")],
        ["--batch", "1"],
        "none of the files is a perf_analyzer CSV",
    ),
    "bad --batch value": ([("p.csv", PERF_OK)], ["--batch", "0"], "batch '0' is below 1"),
    "ma header only": ([("m.csv", MA_HEADER + "\n")], [], "has a header but no data rows"),
    "ma missing p99": (
        [("m.csv", "Model,Batch,Concurrency,Model Config Path\nm,1,1,m_config_0\n")],
        [],
        "line 1: missing required column(s) p99 Latency (ms)",
    ),
    "ma non-numeric": (
        [("m.csv", ma_table("m,1,1,m_config_0,1:GPU,4,Yes,100.0,fast"))],
        [],
        "m.csv line 2: p99 Latency (ms) 'fast' is not a number",
    ),
    "ma unknown --config": (
        [("m.csv", ADD_SUB)],
        ["--config", "add_sub_config_9"],
        "--config 'add_sub_config_9' is not in this table; its model configs are add_sub_config_0, "
        "add_sub_config_1, add_sub_config_2",
    ),
    "ma --config without a concurrency-1 row": (
        [("m.csv", ADD_SUB)],
        ["--config", "add_sub_config_2"],
        "--config 'add_sub_config_2' has no usable row: add_sub_config_2 (no concurrency-1 row",
    ),
    "--config with no Model Analyzer file": (
        [("p.csv", PERF_OK)],
        ["--batch", "1", "--config", "x"],
        "--config picks a model configuration of a Model Analyzer table",
    ),
    "nexus header only": (
        [("n.txt", NEXUS_2019.split("1,5120.5")[0])],
        [],
        "has a header but no data rows",
    ),
    "nexus missing latency column": (
        [("n.txt", NEXUS_2019.replace("latency(us),std(us)", "time,std(us)"))],
        [],
        "n.txt line 5: missing required column(s) latency",
    ),
    "nexus non-numeric": (
        [("n.txt", NEXUS_2019.replace("1073741824", "1GB"))],
        [],
        "n.txt line 6: memory '1GB' is not a number",
    ),
    "nexus bad profile id": (
        [("n.txt", NEXUS_2019.replace("tensorflow:ssd_mobilenet:1:288x512", "ssd:1"))],
        [],
        "n.txt line 1: profile id 'ssd:1' is not framework:model:version[:HxW]",
    ),
    "forced nexus on a CSV": (
        [("n.txt", "batch,latency_ms\n1,5\n")],
        ["--format", "nexus"],
        "not a Nexus profile",
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_tool_input_is_refused_with_a_reason_and_stores_nothing(
    cli, tmp_path: Path, case: str
) -> None:
    files, args, reason = BAD_INPUTS[case]
    paths = [write(tmp_path, name, text) for name, text in files]
    before = cli("curves", "list", "--json").out
    run = cli("curves", "import", *paths, "--model", "m", "--card", "t4", *args)
    assert run.status == 2
    assert reason in run.err
    assert "Traceback" not in run.err
    assert all(line.startswith("planner: ") for line in run.err.strip().splitlines())
    assert cli("curves", "list", "--json").out == before


def test_a_good_file_next_to_a_bad_one_stores_nothing(cli, tmp_path: Path) -> None:
    good = write(tmp_path, "good.csv", PERF_OK)
    bad = write(tmp_path, "bad.csv", PERF_HEADER)
    before = cli("curves", "list", "--json").out
    run = cli("curves", "import", good, bad, "--model", "m", "--card", "t4", "--batch", "1,2")
    assert run.status == 2 and "bad.csv: has a header but no data rows" in run.err
    assert cli("curves", "list", "--json").out == before


def test_cli_import_of_perf_files_prints_the_stored_curve_and_the_rows_used(
    cli, tmp_path: Path
) -> None:
    a = write(tmp_path, "b1.csv", PERF_HEADER + perf_row(1, 500.0, 2000, 2100, 2200))
    b = write(tmp_path, "b4.csv", PERF_HEADER + perf_row(1, 1000.0, 4000, 4200, 4400))
    run = cli("curves", "import", a, b, "--model", "m", "--card", "t4", "--batch", "1,4", "--json")
    assert run.status == 0, run.err
    (curve,) = run.json
    assert [(p["batch"], p["latency_ms"]) for p in curve["points"]] == [(1, 2.0), (4, 4.0)]
    assert "b1.csv: used line 2 (concurrency 1) as batch 1" in run.err


def test_help_lists_every_format(cli) -> None:
    run = cli("curves", "import", "--help")
    assert run.status == 0
    for fmt in FORMATS:
        assert fmt in run.out


# -- every problem of every file at once, in the words of the command line or the form --

FORM_WORDING = Wording(
    {"model": "“Model”", "card": "“Card”", "batch": "“Batch size of this run”",
     "config": "“Model Analyzer config”", "format": "“Format”",
     "override_model": "“Use this model name instead of the file's”",
     "override_card": "“Use this card name instead of the file's”"},
    form=True,
)  # fmt: skip


def test_five_files_report_every_problem_of_every_file_at_once() -> None:
    files = [
        ("good.csv", b"batch,latency_ms,model,card\n1,5,m,t4\n2,9,m,t4\n"),
        ("rows.csv", b"batch,latency_ms,model,card\n1,5,m,t4\n0,9,m,t4\n4,x,m,t4\n"),
        ("prose.txt", b"these are my notes about the benchmark\n"),
        ("perf.csv", PERF_OK.encode()),
        ("also-good.csv", b"batch,latency_ms,model,card\n4,16,m,t4\n"),
    ]
    with pytest.raises(ImportProblems) as raised:
        read_files(files)
    report = raised.value
    assert [f.name for f in report.files] == ["rows.csv", "prose.txt", "perf.csv"]
    by_name = {f.name: f for f in report.files}
    assert by_name["rows.csv"].format == "csv" and by_name["prose.txt"].format is None
    rows = by_name["rows.csv"].lines
    assert any("rows.csv line 3: batch" in line for line in rows)
    assert any("rows.csv line 4: latency_ms 'x'" in line for line in rows)
    assert "not a format the planner reads" in by_name["prose.txt"].lines[0]
    # The perf_analyzer file asks for everything it lacks, model first, in one pass.
    assert [line.split("; ")[1] for line in by_name["perf.csv"].lines] == [
        "give --model", "give --card", "give the run's -b with --batch B (one value, or one "
        "per perf_analyzer file)",
    ]  # fmt: skip
    assert report.count == 2 + 1 + 3
    assert report.problems == [line for f in report.files for line in f.lines]


def test_the_form_phrases_the_same_checks_in_its_own_fields() -> None:
    options = ImportOptions(wording=FORM_WORDING)
    with pytest.raises(ImportProblems) as raised:
        read_files([("perf.csv", PERF_OK.encode()), ("bare.csv", b"batch,latency_ms\n1,5\n")],
                   options)  # fmt: skip
    lines = raised.value.problems
    assert "perf.csv: a perf_analyzer CSV does not name the model; fill in “Model”" in lines
    assert (
        "perf.csv: a perf_analyzer CSV does not record the batch size; fill in “Batch size of "
        "this run” with the run's -b (one value, or one per perf_analyzer file)"
    ) in lines
    assert "bare.csv: model is missing (fill in “Model” or add a model column to the file)" in lines
    assert not any("--" in line for line in lines)
    with pytest.raises(BadInput) as refused:
        read_files([("x.txt", b"hello\n")], options)
    assert "choose one under “Format”" in refused.value.problems[0]


def test_a_name_that_disagrees_is_reported_once_per_file_with_its_lines() -> None:
    text = "batch,latency_ms,model,card\n" + "".join(
        f"{b},{b * 5},ball_detector_v2,t4\n" for b in (1, 2, 4, 8, 16, 32)
    )
    with pytest.raises(ImportProblems) as raised:
        read_files([("bd.csv", text.encode())], ImportOptions(model="ball-detector"))
    (line,) = raised.value.problems
    assert line == (
        "bd.csv lines 2–7: model is 'ball_detector_v2' in the file but 'ball-detector' was "
        "given (--model); add --override model to store it as 'ball-detector'"
    )
    form = ImportOptions(model="ball-detector", wording=FORM_WORDING)
    with pytest.raises(ImportProblems) as raised:
        read_files([("bd.csv", text.encode())], form)
    assert raised.value.problems == [
        "bd.csv lines 2–7: model is 'ball_detector_v2' in the file but “Model” says "
        "'ball-detector'; tick “Use this model name instead of the file's” to store it as "
        "'ball-detector'"
    ]


def test_an_explicit_override_stores_the_file_under_the_given_name() -> None:
    text = b"batch,latency_ms,model,card\n1,5,ball_detector_v2,t4\n2,9,ball_detector_v2,t4\n"
    options = ImportOptions(model="ball-detector", override=frozenset({"model"}))
    result = read_files([("bd.csv", text)], options)
    (curve,) = result.curves
    assert (curve.model, curve.card) == ("ball-detector", "t4")
    assert curve.environment["file_model"] == "ball_detector_v2"
    assert result.notes == [
        "bd.csv: model 'ball_detector_v2' in the file stored as 'ball-detector' (--model)"
    ]
    with pytest.raises(BadInput, match="--override model needs the name to use: give --model"):
        ImportOptions(override=frozenset({"model"}))
    with pytest.raises(BadInput, match="takes model and card"):
        ImportOptions(model="m", override=frozenset({"precision"}))


def test_cli_override_stores_the_given_name(cli, tmp_path: Path) -> None:
    path = write(tmp_path, "bd.csv", "batch,latency_ms,model,card\n1,5,bd_v2,t4\n")
    refused = cli("curves", "import", path, "--model", "ball-detector")
    assert refused.status == 2 and "add --override model to store it as" in refused.err
    run = cli("curves", "import", path, "--model", "ball-detector", "--override", "model",
              "--json")  # fmt: skip
    assert run.status == 0, run.err
    assert run.json[0]["model"] == "ball-detector"


def test_what_each_format_needs_from_the_user() -> None:
    assert fields_needed("perf-analyzer", PERF_OK) == ("model", "card", "batch")
    assert fields_needed("model-analyzer", ADD_SUB) == ("card",)
    assert fields_needed("nexus", NEXUS_2019) == ()
    assert fields_needed("csv", "batch,latency_ms\n1,5\n") == ("model", "card")
    assert fields_needed("csv", "batch,latency_ms,model\n1,5,m\n") == ("card",)
    assert fields_needed("csv", "batch,latency_ms,model,card\n1,5,m,c\n") == ()


def test_the_csv_template_reads_back_as_a_curve() -> None:
    result = read_files([("template.csv", template_csv().encode())])
    (curve,) = result.curves
    assert curve.batches == (1, 2, 4) and curve.label == "ball-detector on laptop-8gb, 512x288 FP16"
