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
