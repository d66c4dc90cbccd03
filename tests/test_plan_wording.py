"""What the Plan page, the report and ``planner recommend`` say about one plan holds
true and follows the project's display rules (``planner.display``): the run behind the
headline when the stability condition ended the search, one precision per column, the
stage table's tail beside the latency at the cap, and the page's captions."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs

from streamlit.testing.v1 import AppTest

from tests.conftest import run
from tests.test_plan_view import text_table

# Batches serve 1,000 frames/s at most: 41 sessions at 24 fps hold, 42 (1,008 frames/s)
# fail the stability condition of a server that queues every frame, with no run.
QUEUE_ALL = {"points": "1:1,2:2,4:4,8:8,16:16", "policies": "triton", "queue": "all",
             "source_fps": "24", "budget_ms": "1000", "min_fps": "20", "seeds": "1",
             "duration_s": "10"}  # fmt: skip


def test_the_detail_link_names_the_count_the_stability_condition_failed(app: AppTest) -> None:
    app.query_params.update(QUEUE_ALL)
    run(app)
    (link,) = [x for x in app.get("page_link") if x.proto.page == "simulate"]
    assert link.proto.label == "See 42 sessions under triton in detail"
    opened = parse_qs(link.proto.query_string)
    assert opened["sessions"] == ["42"] and opened["policy"] == ["triton"]
    (said,) = [c.value for c in app.caption if "sessions without running them" in c.value]
    assert said.startswith("The plan judged 42 sessions without running them: at 42 sessions ")
    assert "the card would be busy 100%: the queue grows without end" in said
    # No draw ran at 42, so none is said to be the worst.
    assert "worst" not in said


A100 = "1:0.76,2:0.81,4:0.93,8:1.14,16:1.54,32:2.45,64:4.27,128:7.81,256:14.74"
# Three policies of the A100 plan: their slowest sessions at the cap get 30, 29.98 and
# 28.6 fps.
A100_PLAN = ("recommend", "--points", A100, "--card", "a100-80gb",
             "--policies", "oldest-first,round-robin,max-batch")  # fmt: skip
FPS = "slowest session at cap (fps)"


def test_a_column_of_frame_rates_has_one_precision(cli: Any) -> None:
    out = cli(*A100_PLAN)
    assert out.status == 0, out.err
    header = next(line for line in out.out.splitlines() if line.startswith("option "))
    names = tuple(re.split(r"\s{2,}", header.strip()))
    table = text_table(out.out, names, 3)
    rates = [row[names.index(FPS)] for row in table[1:]]
    assert any("." in r for r in rates)  # 28.6 fps needs its decimal ...
    assert all(re.fullmatch(r"\d+\.\d", r) for r in rates), rates  # ... so every row has one


def test_the_stage_table_says_its_tail_is_a_mean_beside_the_percentile_at_the_cap(
    cli: Any,
) -> None:
    out = cli(*A100_PLAN)
    assert out.status == 0, out.err
    stages = text_table(out.out, ("stage", "mean (ms)", "p99 and beyond, mean (ms)"), 7)
    total = float(stages[-1][2])
    lines = out.out.splitlines()
    header = next(line for line in lines if line.startswith("option "))
    names = tuple(re.split(r"\s{2,}", header.strip()))
    best = text_table(out.out, names, 1)[1]
    p99 = best[names.index("p99 latency at cap (ms)")]
    (note,) = [line for line in lines if line.startswith("At ") and "sessions under" in line]
    # The cap's own p99 and what the budget judges stand beside the tail's mean.
    assert f"The p99 latency there is {p99} ms, what the 50 ms budget is judged on." in note
    assert "the mean over the frames at or beyond that p99" in note
    assert total >= float(p99)


def captions(app: AppTest) -> list[str]:
    return [c.value for c in app.caption]


def test_a_floor_change_judged_on_runs_already_made_says_so(app: AppTest) -> None:
    app.query_params.update({"points": "1:8,4:20", "policies": "oldest-first,batch-all",
                             "seeds": "2", "duration_s": "5"})  # fmt: skip
    run(app)
    assert any(" options simulated (" in c for c in captions(app))
    # A lower floor asks nothing new of the simulator: every run it needs was made.
    app.number_input(key="plan_min_fps").set_value(20.0)
    run(app)
    said = [c for c in captions(app) if " options " in c]
    assert not any("(0 runs)" in c for c in said), said
    assert any("options judged on runs already simulated (no new run)" in c for c in said)


def test_the_charts_captions_hold_on_a_phone_and_past_64_sessions(app: AppTest) -> None:
    app.query_params.update({"points": A100, "card": "a100-80gb",
                             "policies": "oldest-first,max-batch"})  # fmt: skip
    run(app)
    said = captions(app)
    (sampled,) = [c for c in said if c.startswith("The session axis is sampled")]
    assert "beyond 64 sessions each policy is drawn at every count up to 16" not in sampled
    assert "beyond 64 sessions: each policy is drawn at every count up to 16, then" in sampled
    # The two charts stack on a phone: the caption names them by title, not by side.
    (both,) = [c for c in said if "*The batch curve the plan runs on*" in c]
    assert "*Seats per card against latency at the cap*" in both
    assert not any("Left:" in c or "Right:" in c for c in said)
