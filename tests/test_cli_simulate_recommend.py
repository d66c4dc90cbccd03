"""``planner simulate`` and ``planner recommend`` as scripts use them."""

from __future__ import annotations

from pathlib import Path

import pytest

LAPTOP = "1:9.82,2:20.36,3:32.71,4:46.15,8:103.77,16:221.25"
SIMULATE_KEYS = {
    "sessions", "policy", "per_session_fps", "mean_fps", "min_fps", "max_fps", "jain",
    "latency_ms", "e2e_latency_ms", "overwritten_fraction", "expired_fraction",
    "gpu_busy_fraction", "batch_histogram", "starved_sessions",
}  # fmt: skip
OPTION_KEYS = {
    "policy", "mode", "cap", "cap_low", "cap_high", "binding_constraint", "extrapolated",
    "isolation", "percentile", "latency_ms_at_cap", "frames_at_cap", "low_confidence",
    "min_fps_at_cap",
}  # fmt: skip


def test_simulate_json(cli) -> None:
    run = cli("simulate", "--points", LAPTOP, "--sessions", "5", "--policy", "oldest-first",
              "--seed", "1", "--json")  # fmt: skip
    assert run.status == 0, run.err
    doc = run.json
    assert set(doc) >= SIMULATE_KEYS
    assert doc["sessions"] == 5 and len(doc["per_session_fps"]) == 5
    assert set(doc["latency_ms"]) == {"p50", "p90", "p99", "max", "frames"}
    assert all(k.isdigit() for k in doc["batch_histogram"])


def test_simulate_a_stored_curve_with_mixed_fps_and_frames_file(cli, tmp_path: Path) -> None:
    curve = next(c for c in cli("curves", "list", "--json").json if c["n_points"] == 6)
    frames = tmp_path / "frames.csv"
    run = cli("simulate", "--curve", curve["id"], "--sessions", "3", "--policy", "batch-all",
              "--fps", "30,30,15", "--duration-s", "2", "--frames", frames)  # fmt: skip
    assert run.status == 0, run.err
    assert "3 sessions, batch-all" in run.out
    header = frames.read_text().splitlines()[0]
    assert header.startswith("session,frame,batch,arrival_ms")


def test_simulate_under_each_sharing_mode(cli) -> None:
    base = ("simulate", "--points", LAPTOP, "--sessions", "2", "--duration-s", "2", "--json")
    sliced = cli(*base, "--mode", "time-slicing", "--cotenants", "1,1").json
    alone = cli(*base).json
    assert sliced["latency_ms"]["p50"] > 2.5 * alone["latency_ms"]["p50"]
    mps = cli(*base, "--mode", "mps", "--mps-share", "50")
    assert mps.status == 0 and mps.json["mode"] == "mps"
    mig = cli(*base, "--mode", "mig", "--mig-profile", "3g.40gb", "--card", "a100-80gb")
    assert mig.status == 0, mig.err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--sessions", "3", "--fps", "30,15"), "2 frame rates for 3 sessions"),
        (("--sessions", "0"), "--sessions '0' must be a whole number from 1 to 4096"),
        (("--sessions", "two"), "--sessions 'two' is not a number"),
        (("--sessions", "2", "--max-batch", "4"), "--max-batch does not apply to the oldest-first"),
        (("--sessions", "2", "--mode", "time-slicing"), "time-slicing needs co-tenants"),
        (
            (
                "--sessions",
                "2",
                "--mode",
                "mig",
                "--mig-profile",
                "3g.40gb",
                "--card",
                "laptop-8gb",
            ),
            "does not support MIG",
        ),
        (("--sessions", "2", "--cotenants", "0.5"), "--cotenants needs --mode time-slicing"),
        (("--sessions", "2", "--phases", "chaos"), "invalid choice"),
    ],
)
def test_simulate_bad_options_exit_2(cli, extra: tuple[str, ...], message: str) -> None:
    run = cli("simulate", "--points", LAPTOP, *extra, "--json")
    assert run.status == 2
    assert message in run.err
    assert run.out == ""


def test_simulate_bad_points_exit_2(cli) -> None:
    run = cli("simulate", "--points", "1:0,2:5", "--sessions", "2")
    assert run.status == 2 and "above zero" in run.err


def test_recommend_json_on_the_laptop_curve(cli) -> None:
    run = cli("recommend", "--points", LAPTOP, "--json")
    assert run.status == 0, run.err
    doc = run.json
    assert set(doc) >= {"recommended", "summary", "options", "measure_next", "fleet"}
    assert len(doc["options"]) == 7
    for option in doc["options"]:
        assert set(option) >= OPTION_KEYS
        assert option["cap"] == 3 and option["mode"] == "exclusive"
    assert doc["recommended"]["cap"] == 3
    assert doc["fleet"] is None


def test_recommend_default_and_explicit_modes(cli) -> None:
    run = cli("recommend", "--points", LAPTOP, "--policies", "oldest-first", "--cotenants",
              "0.9,0.9", "--mps-share", "50", "--max-sessions", "6", "--json")  # fmt: skip
    assert run.status == 0, run.err
    modes = [o["mode"] for o in run.json["options"]]
    assert sorted(modes) == ["exclusive", "mps", "time-slicing"]
    only = cli("recommend", "--points", LAPTOP, "--policies", "batch-all", "--modes", "mps",
               "--max-sessions", "6", "--json")  # fmt: skip
    assert [o["mode"] for o in only.json["options"]] == ["mps"]


def test_recommend_fleet_with_a_stored_price(cli) -> None:
    curve = next(c for c in cli("curves", "list", "--json").json if c["n_points"] == 6)
    assert cli("cards", "set-price", curve["card"], "0.9").status == 0
    run = cli("recommend", "--curve", curve["id"], "--policies", "round-robin",
              "--peak-sessions", "30", "--json")  # fmt: skip
    fleet = run.json["fleet"]
    assert fleet["price_per_hour"] == 0.9
    assert fleet["gpus"] == 12  # ceil(30 * 1.2 / 3)
    assert fleet["cost_per_seat_hour"] == pytest.approx(0.3)


def test_recommend_when_nothing_meets_the_budget_exits_0(cli) -> None:
    run = cli("recommend", "--points", LAPTOP, "--budget-ms", "5", "--json")
    assert run.status == 0
    assert run.json["recommended"] is None
    assert run.json["summary"].startswith("No option holds even one session")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--budget-ms", "-1"), "--budget-ms"),
        (("--policies", "fifo"), "fifo"),
        (("--modes", "vgpu"), "vgpu"),
        (("--cotenants", "1.5"), "--cotenants: item 1 must be from 0 to 1"),
        (("--mig-profile", "3g.40gb", "--card", "laptop-8gb"), "does not support MIG"),
        (("--seeds", "0"), "--seeds"),
        (("--percentile", "abc"), "--percentile"),
    ],
)
def test_recommend_bad_options_exit_2(cli, extra: tuple[str, ...], message: str) -> None:
    run = cli("recommend", "--points", LAPTOP, *extra, "--json")
    assert run.status == 2, run.out
    assert message in run.err
    assert run.out == ""


def test_recommend_takes_up_to_4096_sessions_and_refuses_more_in_one_line(cli) -> None:
    run = cli("recommend", "--points", LAPTOP, "--max-sessions", "5000", "--json")
    assert run.status == 2, run.out
    assert run.err.strip() == "planner: --max-sessions: must be from 1 to 4096"
    # The laptop card fails within a few sessions, so 4,096 costs nothing more than 8.
    quick = ("--seeds", "1", "--duration-s", "2", "--policies", "batch-all", "--json")
    wide = cli("recommend", "--points", LAPTOP, "--max-sessions", "4096", *quick)
    assert wide.status == 0, wide.err
    narrow = cli("recommend", "--points", LAPTOP, "--max-sessions", "8", *quick)
    assert wide.json["options"][0]["cap"] == narrow.json["options"][0]["cap"] < 8


def test_recommend_searches_exhaustively_when_asked(cli) -> None:
    quick = ("--seeds", "2", "--duration-s", "2", "--policies", "batch-all,oldest-first")
    caps = {}
    for search in ("bracketed", "exhaustive"):
        run = cli("recommend", "--points", "1:0.5,8:2.0", *quick, "--search", search, "--json")
        assert run.status == 0, run.err
        caps[search] = [(o["policy"], o["cap"], o["cap_low"], o["cap_high"])
                        for o in run.json["options"]]  # fmt: skip
    assert caps["bracketed"] == caps["exhaustive"]
    assert max(cap for _, cap, _, _ in caps["exhaustive"]) > 16  # beyond the exhaustive start
    bad = cli("recommend", "--points", LAPTOP, "--search", "quick")
    assert bad.status == 2 and "--search" in bad.err


def test_a_floor_equal_to_the_source_rate_keeps_the_seats_of_the_default_floor(cli) -> None:
    base = ("recommend", "--points", LAPTOP, "--policies", "oldest-first", "--seeds", "2",
            "--duration-s", "30", "--json")  # fmt: skip
    default = cli(*base)
    every_frame = cli(*base, "--min-fps", "30")
    assert default.status == every_frame.status == 0
    assert every_frame.json["recommended"]["cap"] == default.json["recommended"]["cap"] == 3
    assert "above the source frame rate" not in every_frame.err


def test_a_floor_above_the_source_rate_is_warned_about(cli) -> None:
    run = cli("recommend", "--points", LAPTOP, "--policies", "oldest-first", "--source-fps",
              "25", "--min-fps", "28.5")  # fmt: skip
    assert run.status == 0, run.err
    assert (
        "warning: the frame-rate floor (28.5 fps) is above the source frame rate (25 fps)"
        in run.err
    )
    assert run.out.startswith("No seat fits these criteria")
