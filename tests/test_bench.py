"""``planner bench`` reports the figures the project tracks (their values are not asserted:
timings on shared machines are noise; docs/performance.md records them)."""

from __future__ import annotations


def test_bench_json_has_every_figure(cli) -> None:
    run = cli("bench", "--only", "fit,simulator,recommend", "--json")
    assert run.status == 0, run.err
    doc = run.json
    assert {"cpu", "cores"} <= set(doc["machine"])
    assert doc["fit"]["fit_and_eval_ms"] > 0
    simulator = doc["simulator"]
    for key in ("single_fast_ms", "single_reference_ms", "single_speedup", "sweep_fast_s",
                "sweep_reference_s", "sweep_speedup", "warmup_s"):  # fmt: skip
        assert simulator[key] > 0, key
    assert simulator["sweep_runs"] == 7 * 32 * 4
    assert simulator["sweep_cpu_stage_s"] > 0 and simulator["sweep_cpu_stage_ratio"] > 0
    assert simulator["sweep_cpu_stage"] == "pre 3 ms and post 1 ms per frame on 4 CPU threads"
    assert "35 runs" in simulator["sweep_reference_sample"]
    recommend = doc["recommend"]
    assert recommend["wall_s"] > 0 and recommend["simulations"] > 0
    assert recommend["options"] == 28  # 7 policies x 4 sharing modes
    assert recommend["recommended"].startswith("3 seats per card")


def test_bench_unknown_section_exits_2(cli) -> None:
    run = cli("bench", "--only", "warp-drive")
    assert run.status == 2 and "unknown benchmark section" in run.err


def test_bench_first_answer_times_a_cold_plan_and_the_dashboards_first_headline(cli) -> None:
    run = cli("bench", "--only", "first_answer", "--json")
    assert run.status == 0, run.err
    first = run.json["first_answer"]
    # A cold command compiles; the same command again loads the compiled code instead.
    assert first["cli_cold_plan_s"] > 0 and first["cli_warm_s"] > 0
    for key in ("dashboard_ready_s", "dashboard_first_headline_s", "dashboard_next_visitor_s",
                "dashboard_first_headline_after_3s_s"):  # fmt: skip
        assert first[key] > 0, key
    assert first["dashboard_headline"].startswith("3 seats per card")
