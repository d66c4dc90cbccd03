"""Seats per card (SPEC §3.5): the simulated cap of one instance of the worker times the
instances one card holds, and everything that is sized, priced and ranked on it."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from planner.curves.curve import Point
from planner.links.urls import decode, encode
from planner.plan.outcomes import Option, Recommendation
from planner.plan.params import PlanParams
from planner.plan.pareto import dominated
from planner.plan.recommend import recommend
from planner.plan.resolve import plan_inputs
from planner.sim.scenario import Sharing
from planner.sim.sharing import card_fraction, instances_per_card
from planner.store.repository import Store

# The laptop card at 256x144 FP16 (SPEC §2.3): batching pays, so a slice of a card slows
# a batch of one less than in proportion to its share.
SMALL = (Point(1, 4.69), Point(4, 9.29))
PRICE = 4.2  # USD per card-hour


def plan(store: Store, **changes: object) -> Recommendation:
    values: dict[str, object] = {"policies": ("oldest-first",), **changes}
    params = PlanParams(points=SMALL, card="h100-80gb", seeds=2, duration_s=10.0,
                        peak_sessions=200, price_per_hour=PRICE, **values)  # type: ignore[arg-type]  # fmt: skip
    return recommend(plan_inputs(params, store).request)


def option(result: Recommendation, mode: str) -> Option:
    return next(o for o in result.options if o.mode == mode)


def test_a_mig_card_holds_as_many_instances_as_the_vendor_allows(store: Store) -> None:
    result = plan(store, modes=("exclusive", "mig"), mig_profile="1g.10gb")
    mig = option(result, "mig")
    assert mig.cap >= 1 and mig.per_card == 7  # seven 1g.10gb instances fit on an H100
    assert mig.seats_per_card == 7 * mig.cap
    assert mig.seats == str(7 * mig.cap) or mig.seats.startswith(str(7 * mig.cap_low))
    assert mig.derived and "(derived)" in mig.label
    doc = mig.as_dict()
    assert (doc["instances_per_card"], doc["seats_per_card"]) == (7, 7 * mig.cap)
    assert doc["derived"] is True and doc["cap"] == mig.cap

    # The recommended option is the one with the most seats per card, and its fleet is
    # sized and priced on them.
    best = result.recommended
    assert best is not None
    assert best.seats_per_card == max(o.seats_per_card for o in result.options)
    fleet = result.fleet
    assert fleet is not None
    assert fleet.gpus == math.ceil(200 * 1.2 / best.seats_per_card - 1e-9)
    assert fleet.cost_per_seat_hour == pytest.approx(PRICE / best.seats_per_card)


def test_a_profile_that_fits_fewer_times_than_its_slices_counts_what_fits(store: Store) -> None:
    # 1g.20gb takes one of seven compute slices but a quarter of the memory: four fit.
    mig = option(plan(store, modes=("mig",), mig_profile="1g.20gb"), "mig")
    assert mig.per_card == 4 and mig.seats_per_card == 4 * mig.cap
    plus_me = option(plan(store, modes=("mig",), mig_profile="1g.10gb+me"), "mig")
    assert plus_me.per_card == 1


def test_mps_counts_floor_100_over_the_share_clients(store: Store) -> None:
    result = plan(store, modes=("mps",), mps_share=30.0)
    mps = option(result, "mps")
    assert mps.per_card == 3 and mps.seats_per_card == 3 * mps.cap and mps.derived
    assert result.fleet is not None
    assert result.fleet.cost_per_seat_hour == pytest.approx(PRICE / (3 * mps.cap))


def test_when_the_rest_of_the_card_runs_other_jobs_a_seat_pays_our_part(store: Store) -> None:
    result = plan(store, modes=("mig",), mig_profile="1g.10gb", other_jobs=True)
    mig = option(result, "mig")
    assert mig.per_card == 1 and mig.seats_per_card == mig.cap
    assert mig.card_share == pytest.approx(1 / 7)
    assert result.fleet is not None
    assert result.fleet.gpus == math.ceil(200 * 1.2 / mig.cap - 1e-9)
    assert result.fleet.cost_per_seat_hour == pytest.approx(PRICE / 7 / mig.cap)
    assert any("other jobs" in a for a in result.assumptions)
    alone = plan(store, modes=("mig",), mig_profile="1g.10gb")
    assert any("same worker" in a for a in alone.assumptions)


def test_dominance_and_ranking_use_seats_per_card(store: Store) -> None:
    result = plan(store, modes=("exclusive", "mig"), mig_profile="1g.10gb",
                  policies=("oldest-first", "batch-all"))  # fmt: skip
    by_mode = {o.mode: o for o in result.options if o.policy == "oldest-first"}
    exclusive, mig = by_mode["exclusive"], by_mode["mig"]
    # Fewer seats per MIG instance than on the whole card, more per card.
    assert mig.cap < exclusive.cap and mig.seats_per_card > exclusive.seats_per_card
    assert result.options.index(mig) < result.options.index(exclusive)
    beaten = dict(zip(result.options, dominated(result.options), strict=True))
    assert beaten[mig] is None or beaten[mig].seats_per_card >= mig.seats_per_card


def test_instances_and_fractions_per_mode() -> None:
    assert instances_per_card(Sharing()) == 1 and card_fraction(Sharing()) == 1
    slicing = Sharing.of("time-slicing", cotenants=(0.5, 0.9))
    assert instances_per_card(slicing) == 1 and card_fraction(slicing) == pytest.approx(1 / 3)
    assert instances_per_card(Sharing.of("mps", mps_share=50.0)) == 2
    assert instances_per_card(Sharing.of("mps", mps_share=33.0)) == 3
    assert instances_per_card(Sharing.of("mps", mps_share=100.0)) == 1
    mig = Sharing.of("mig", mig_profile="2g.20gb", mig_slices=2, mig_total=7, mig_instances=3)
    assert instances_per_card(mig) == 3 and card_fraction(mig) == pytest.approx(1 / 3)
    # A hand-added card without the vendor's count falls back to whole slices.
    bare = Sharing.of("mig", mig_profile="2g.x", mig_slices=2, mig_total=7)
    assert instances_per_card(bare) == 3


def test_other_jobs_travels_in_links() -> None:
    params = PlanParams(other_jobs=True, mig_profile="1g.10gb")
    query = encode(params)
    assert query["other_jobs"] == "1"
    assert decode(PlanParams, query) == (params, [])
    assert "other_jobs" not in encode(PlanParams())


def test_recommend_json_and_text_carry_seats_per_card(cli) -> None:
    run = cli("recommend", "--points", "1:4.69,4:9.29", "--card", "h100-80gb",
              "--modes", "mig", "--mig-profile", "1g.10gb", "--policies", "oldest-first",
              "--seeds", "1", "--duration-s", "5", "--peak-sessions", "200", "--json")  # fmt: skip
    assert run.status == 0, run.err
    doc = run.json
    best = doc["recommended"]
    assert best["instances_per_card"] == 7
    assert best["seats_per_card"] == 7 * best["cap"]
    assert doc["fleet"]["seats_per_card"] == best["seats_per_card"]
    assert doc["fleet"]["gpus"] == math.ceil(240 / best["seats_per_card"] - 1e-9)
    text = cli("recommend", "--points", "1:4.69,4:9.29", "--card", "h100-80gb",
               "--modes", "mig", "--mig-profile", "1g.10gb", "--policies", "oldest-first",
               "--seeds", "1", "--duration-s", "5", "--other-jobs")  # fmt: skip
    assert text.status == 0, text.err
    assert "seats per card" in text.out and "(derived)" in text.out


def test_the_plan_page_shows_seats_per_instance_and_per_card(db_path: Path) -> None:
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    st.cache_resource.clear()
    app = AppTest.from_file(str(Path(__file__).parent.parent / "app.py"), default_timeout=120)
    query = {"points": "1:4.69,4:9.29", "card": "h100-80gb", "modes": "mig",
             "mig_profile": "1g.10gb", "policies": "oldest-first", "seeds": "2",
             "duration_s": "10", "peak_sessions": "200"}  # fmt: skip
    for key, value in query.items():
        app.query_params[key] = value
    app.run()
    assert not app.exception, app.exception
    with Store(str(db_path)) as store:
        alone = plan(store, modes=("mig",), mig_profile="1g.10gb")
    mig = option(alone, "mig")
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Seats per card"] == mig.seats and mig.per_card == 7
    assert f"p99 latency at {mig.cap} per instance" in metrics
    assert metrics["GPUs for 200 at peak"].startswith(
        str(math.ceil(200 * 1.2 / mig.seats_per_card - 1e-9))
    )

    # The rest of the card runs other jobs: a card counts one instance of ours.
    app.checkbox(key="plan_other_jobs").check().run()
    assert not app.exception, app.exception
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Seats per card"] == str(mig.cap) or metrics["Seats per card"].startswith(
        str(mig.cap_low)
    )
    assert app.query_params.get("other_jobs") == "1"  # the link carries it
    st.cache_resource.clear()
