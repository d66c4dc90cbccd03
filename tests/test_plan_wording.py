"""What the Plan page, the report and ``planner recommend`` say about one plan holds
true and follows the project's display rules (``planner.display``): the run behind the
headline when the stability condition ended the search, one precision per column, the
stage table's tail beside the latency at the cap, and the page's captions."""

from __future__ import annotations

from urllib.parse import parse_qs

from streamlit.testing.v1 import AppTest

from tests.conftest import run

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
