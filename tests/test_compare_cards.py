"""Comparing cards in the library and on the command line (the Compare page renders the
same ``compare_cards``)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from planner.links.urls import decode
from planner.plan.compare_cards import compare_cards, settle
from planner.plan.outcomes import Recommendation
from planner.plan.params import CompareParams, PlanParams
from planner.plan.recommend import recommend
from planner.plan.request import Request
from planner.plan.resolve import plan_inputs
from planner.store.repository import Store
from tests.test_dashboard_pages import ignored, open_page, query

QUEUED = {"queue": "all", "max_queue_size": "64", "cards": "server-24gb", "policies": "triton",
          "seeds": "2", "duration_s": "5"}  # fmt: skip
QUICK = {"seeds": 2, "duration_s": 5.0, "precision": "fp16", "resolution": "512x288"}


def test_each_card_is_planned_with_the_same_criteria(store: Store) -> None:
    params = CompareParams(budget_ms=40.0, peak_sessions=100, **QUICK)  # type: ignore[arg-type]
    seen: list[tuple[int, int]] = []
    plans = compare_cards(store, params, progress=lambda done, total: seen.append((done, total)))
    assert [p.curve.card for p in plans] == ["laptop-8gb", "server-24gb"]
    assert seen == [(1, 2), (2, 2)]
    for plan in plans:
        alone = recommend(
            plan_inputs(
                PlanParams(curve=plan.curve.id, budget_ms=40.0, peak_sessions=100, seeds=2,
                           duration_s=5.0),
                store,
            ).request
        )  # fmt: skip
        assert plan.result is not None and alone.recommended is not None
        assert plan.result.recommended is not None
        assert plan.result.recommended.seats == alone.recommended.seats
        row = plan.as_dict()
        assert row["seats"] == alone.recommended.seats
        assert row["seats_per_card"] == alone.recommended.seats_per_card
        assert row["gpus_for_peak"] == (alone.fleet.gpus if alone.fleet else None)
        assert row["measure_next"] == alone.measure_next


def test_cards_without_a_curve_of_the_model_are_left_out_and_named(store: Store) -> None:
    params, ignored = settle(store, CompareParams(cards=("server-24gb", "nosuchcard")))
    assert params.cards == ("server-24gb",)
    assert ignored == ["ignored cards 'nosuchcard': no curve of 'ball-detector' on them"]


def test_compare_cards_command(cli) -> None:
    run = cli("compare-cards", "--precision", "fp16", "--resolution", "512x288", "--seeds", "2",
              "--duration-s", "5", "--json")  # fmt: skip
    assert run.status == 0, run.err
    doc = run.json
    assert doc["model"] == "ball-detector"
    assert [r["card"] for r in doc["curves"]] == ["laptop-8gb", "server-24gb"]
    assert doc["curves"][0]["seats_per_card"] == 3
    text = cli("compare-cards", "--cards", "server-24gb", "--seeds", "1", "--duration-s", "5")
    assert text.status == 0 and "server-24gb" in text.out and "seats per card" in text.out
    bad = cli("compare-cards", "--cards", "nosuchcard")
    assert bad.status == 2 and "nosuchcard" in bad.err
    worse = cli("compare-cards", "--budget-ms", "abc", "--percentile", "100")
    assert worse.status == 2
    assert "--budget-ms: not a number" in worse.err and "--percentile: must be" in worse.err


def test_cards_are_compared_under_the_plans_way_of_serving(store: Store) -> None:
    # A link from a plan that queues every frame keeps its queue on the Compare page, and
    # each card is planned under it.
    params, dropped = decode(CompareParams, QUEUED)
    assert dropped == []
    assert (params.queue, params.max_queue_size) == ("all", 64)
    requests: list[Request] = []

    def planned(request: Request) -> Recommendation:
        requests.append(request)
        return recommend(request)

    compare_cards(store, params, recommend_with=planned)
    assert requests and {(r.queue, r.max_queue_size) for r in requests} == {("all", 64)}
    _, dropped = decode(CompareParams, {"max_queue_size": "64"})
    assert dropped == [
        "ignored max_queue_size: max_queue_size applies to queue=all only; the queue is newest"
    ]


def test_compare_cards_command_takes_the_queue(cli) -> None:
    # A server that times every request out after 1 µs serves nobody; one that keeps each
    # session's newest frame serves a few: the options reach every card's plan.
    common = ("compare-cards", "--cards", "server-24gb", "--policies", "triton", "--seeds",
              "2", "--duration-s", "5", "--json")  # fmt: skip
    queued = cli(*common, "--queue", "all", "--queue-timeout-us", "1")
    newest = cli(*common)
    assert queued.status == 0 and newest.status == 0, queued.err + newest.err
    assert queued.json["curves"][0]["seats"] == "0"
    assert newest.json["curves"][0]["seats"] != "0"
    bad = cli("compare-cards", "--max-queue-size", "8")
    assert bad.status == 2
    assert bad.err.strip() == (
        "planner: --max-queue-size applies to --queue all only; the queue is newest"
    )


def test_the_compare_page_keeps_a_links_queue(app: AppTest) -> None:
    open_page(app, "compare.py", QUEUED)
    assert ignored(app) == []
    assert app.selectbox(key="cmp_queue").value == "all"
    assert app.number_input(key="cmp_max_queue_size").value == 64
    assert query(app)["queue"] == "all" and query(app)["max_queue_size"] == "64"
