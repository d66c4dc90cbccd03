"""``planner fit`` as a script would use it."""

from __future__ import annotations

import pytest

KEYS = {"points", "model", "predictions", "loo", "measure_next", "measure_next_basis"}
PREDICTION_KEYS = {"batch", "latency_ms", "low_ms", "high_ms", "extrapolated"}


def laptop_fp16_id(cli) -> str:
    (curve,) = [
        c
        for c in cli("curves", "list", "--json").json
        if c["card"] == "laptop-8gb" and c["precision"] == "fp16" and c["resolution"] == "512x288"
    ]
    return curve["id"]


def test_points_give_exactly_the_documented_document(cli) -> None:
    run = cli("fit", "--points", "1:8.0,3:20.0", "--json")
    assert run.status == 0, run.err
    doc = run.json
    assert set(doc) == KEYS
    assert doc["points"] == [[1, 8.0], [3, 20.0]]
    assert isinstance(doc["model"], str) and "\n" not in doc["model"]
    assert doc["loo"] is None
    assert isinstance(doc["measure_next"], int) and doc["measure_next"] not in (1, 3)
    predictions = doc["predictions"]
    assert [p["batch"] for p in predictions] == list(range(1, 65))
    for p in predictions:
        assert set(p) == PREDICTION_KEYS
        assert p["low_ms"] <= p["latency_ms"] <= p["high_ms"]
        assert p["extrapolated"] == (p["batch"] > 3)
    assert predictions[1]["latency_ms"] == pytest.approx(14.0)
    latencies = [p["latency_ms"] for p in predictions]
    assert latencies == sorted(latencies)


def test_a_stored_curve_reports_leave_one_out_against_the_straight_line(cli) -> None:
    run = cli("fit", "--curve", laptop_fp16_id(cli), "--upto", "32", "--json")
    assert run.status == 0, run.err
    doc = run.json
    assert len(doc["predictions"]) == 32
    assert [b for b, _ in doc["points"]] == [1, 2, 3, 4, 8, 16]
    assert set(doc["loo"]) == {"fit", "straight_line"}
    assert doc["loo"]["fit"] <= doc["loo"]["straight_line"]


def test_upto_reaches_4096(cli) -> None:
    doc = cli("fit", "--points", "1:8.0,3:20.0", "--upto", "4096", "--json").json
    assert len(doc["predictions"]) == 4096
    last = doc["predictions"][-1]
    assert last["batch"] == 4096 and last["extrapolated"]
    assert last["low_ms"] <= last["latency_ms"] <= last["high_ms"]


def test_points_in_any_order_give_the_same_answer(cli) -> None:
    one = cli("fit", "--points", "4:46.15,1:9.82,3:32.71,2:20.36", "--json")
    two = cli("fit", "--points", "1:9.82,2:20.36,3:32.71,4:46.15", "--json")
    assert one.out == two.out


def test_plain_output_is_a_table_with_the_assumptions(cli) -> None:
    run = cli("fit", "--points", "1:9.82,2:20.36,3:32.71,4:46.15")
    assert run.status == 0
    assert "latency_ms" in run.out and "low_ms" in run.out and "high_ms" in run.out
    assert "measured" in run.out and "extrapolated" in run.out
    assert "assumptions:" in run.out and "leave-one-out" in run.out
    assert "measure next: batch" in run.out


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--points", "1:0"], "above zero"),
        (["--points", "1:-4"], "above zero"),
        (["--points", "0:5"], "below 1"),
        (["--points", "1:8,abc"], "BATCH:LATENCY_MS"),
        (["--points", "1:8,2:nan"], "finite"),
        (["--points", ""], "empty"),
        (["--points", "1:8", "--upto", "0"], "--upto"),
        (["--points", "1:8", "--upto", "4097"], "--upto"),
        (["--points", "1:8", "--upto", "ten"], "--upto"),
        (["--points", "1:8", "--upto", "2.5"], "--upto"),
        (["--curve", "nosuchcurve"], "no curve"),
    ],
)
def test_bad_input_exits_2_with_a_reason(cli, args: list[str], reason: str) -> None:
    run = cli("fit", *args, "--json")
    assert run.status == 2
    assert reason in run.err
    assert run.out == ""


def test_exactly_one_source_of_points_is_required(cli) -> None:
    assert cli("fit", "--json").status == 2
    both = cli("fit", "--points", "1:8", "--curve", "x", "--json")
    assert both.status == 2 and "not allowed with" in both.err


def test_bench_reports_the_fit_figures(cli) -> None:
    run = cli("bench", "--only", "fit", "--json")
    assert run.status == 0, run.err
    figures = run.json["fit"]
    for key in ("fit_and_eval_ms", "straight_line_and_eval_ms", "measure_next_64_ms"):
        assert figures[key] > 0
