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
    assert simulator["sweep_spread_ratio"] > 0 and simulator["single_spread_ratio"] > 0
    assert simulator["sweep_queue_all_ratio"] > 0 and simulator["single_queue_all_ratio"] > 0
    assert simulator["sweep_cpu_stage"] == "pre 3 ms and post 1 ms per frame on 4 CPU threads"
    assert "35 runs" in simulator["sweep_reference_sample"]
    assert simulator["cascade_ns_per_frame"] > 0 and simulator["single_model_ns_per_frame"] > 0
    assert simulator["cascade_ratio"] > 0
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
    # The README's first command compiles ahead: that step and the answer after it.
    assert first["compile_s"] > 0 and first["first_answer_s"] > 0
    assert first["first_answer_target_s"] == 3
    assert isinstance(first["first_answer_within_target"], bool)
    assert first["dashboard_after_compile_first_headline_s"] > 0
    assert first["load_before"] >= 0 and first["load_after"] >= 0


def test_bench_import_and_store_sections(cli) -> None:
    run = cli("bench", "--only", "import,store", "--json")
    assert run.status == 0, run.err
    doc = run.json
    bulk = doc["import"]
    assert 140_000 < bulk["rows"] < 150_000 and bulk["file_mib"] <= 5
    assert bulk["curves"] == bulk["rows"] // 8  # whole curves of 8 points
    for key in ("command_empty_s", "command_filled_s", "command_empty_cpu_s", "process_empty_s",
                "process_filled_s", "parse_s", "store_s", "store_speedup"):  # fmt: skip
        assert bulk[key] > 0, key
    assert bulk["target_s"] == 3 and isinstance(bulk["within_target"], bool)
    assert bulk["load_before"] >= 0 and bulk["load_after"] >= 0  # what the times ran beside
    store = doc["store"]
    for key in ("own_instance_ms", "attach_detach_ms", "curves_ms", "plan_rerun_reads_ms",
                "open_connection_cursor_ms", "got_file_after_release_ms"):  # fmt: skip
        assert store[key] > 0, key
    assert store["waited_for_holder_s"] > 0.5  # it waited for the holder, then got the file


def test_bench_cancel_reports_how_long_work_goes_on_after_a_cancel(cli) -> None:
    run = cli("bench", "--only", "cancel", "--json")
    assert run.status == 0, run.err
    cancel = run.json["cancel"]
    assert cancel["chunks_before_cancel"] >= 1
    assert cancel["chunks_after_cancel"] <= 1  # at most the chunk in flight finishes
    assert cancel["after_cancel_s"] > 0 and cancel["chunk_s_median"] > 0


def test_bench_study_compares_one_process_the_pool_and_ray(cli) -> None:
    run = cli("bench", "--only", "study", "--json")
    assert run.status == 0, run.err
    study = run.json["study"]
    assert study["cells"] == 48 and study["workers"] >= 1
    for key in ("one_steady_cells_per_s", "pool_steady_cells_per_s", "pool_speedup",
                "ray_steady_cells_per_s", "ray_over_pool"):  # fmt: skip
        assert study[key] > 0, key


def test_the_big_plans_are_the_command_lines_and_are_timed_with_the_load_beside() -> None:
    # The bench times the A100 plan exactly as ``planner recommend --points ... --card
    # a100-80gb`` asks it, and reports each plan's time with its target and the load.
    from dataclasses import replace

    from planner.bench.sim import A100_PLAN_TARGET_S, a100_request, timed_plan
    from planner.cli import build_parser
    from planner.cli.planning import plan_params
    from planner.plan.resolve import plan_inputs

    points = "1:0.76,2:0.81,4:0.93,8:1.14,16:1.54,32:2.45,64:4.27,128:7.81,256:14.74"
    args = build_parser().parse_args(["recommend", "--points", points, "--card", "a100-80gb"])
    assert plan_inputs(plan_params(args), None).request == a100_request()
    small = replace(a100_request(), max_sessions=3, seeds=1, duration_s=1.0)
    figures = timed_plan(small)
    assert figures["wall_s"] > 0 and figures["cpu_s"] >= 0 and figures["frames"] > 0
    assert figures["load_before"] >= 0 and figures["load_after"] >= 0
    # 3 seats likely; the uncalibrated range's margin (0.674 x 3) takes the low end to 2.
    assert figures["seats"] == "2–3" and A100_PLAN_TARGET_S == 5.0
