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
    assert "35 runs" in simulator["sweep_reference_sample"]
    recommend = doc["recommend"]
    assert recommend["wall_s"] > 0 and recommend["simulations"] > 0
    assert recommend["options"] == 28  # 7 policies x 4 sharing modes
    assert recommend["recommended"].startswith("3 seats per card")


def test_bench_unknown_section_exits_2(cli) -> None:
    run = cli("bench", "--only", "warp-drive")
    assert run.status == 2 and "unknown benchmark section" in run.err
