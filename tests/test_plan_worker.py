"""The Plan page's chain of models and co-tenants by workload (SPEC §6.3): a link carries
them into the page, the page's controls write them into its link, and the page shows what
the library derives from a co-tenant's workload."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from planner.curves.curve import Point, make_curve
from planner.links.urls import decode, encode
from planner.plan.cotenants import workloads_of
from planner.plan.params import PlanParams

from .test_dashboard_pages import QUICK, db, expected, headline_of, ignored, open_page, plain, query


def _ids() -> tuple[str, str]:
    """The server's built-in detector curve (the plan's) and a classifier stored beside it
    (the later model's, run on the detector's crops)."""
    first = next(c.id for c in db().curves() if c.card == "server-24gb")
    points = [Point(1, 1.5), Point(8, 3.0), Point(32, 8.0)]
    classifier = make_curve(
        model="classifier",
        card="server-24gb",
        precision="fp16",
        resolution="224x224",
        points=points,
    )
    (stored,) = db().add_curves([classifier])
    return first, stored.id


def _markdown(app: AppTest) -> str:
    return "\n".join(m.value for m in app.markdown)


def test_a_linked_chain_holds_fewer_seats_and_the_reason_names_it(app: AppTest) -> None:
    first, other = _ids()
    alone = PlanParams(curve=first, budget_ms=100.0, policies=("batch-all",), **QUICK)
    chained = PlanParams(
        curve=first, budget_ms=100.0, policies=("batch-all",), cascade=(f"{other}:3",), **QUICK
    )
    single, chain = expected(alone), expected(chained)
    assert single.recommended is not None and chain.recommended is not None
    assert chain.recommended.cap < single.recommended.cap
    open_page(app, "plan.py", encode(chained))
    assert ignored(app) == []
    assert app.title[0].value == headline_of(chain)
    assert "the chain of models binds" in _markdown(app)
    assert any("3 crops per input" in c.value for c in app.caption)
    assert query(app) == encode(chained)  # the link round-trips
    # The same plan without the chain, on a page of its own, holds more seats.
    without = open_page(AppTest.from_file(app._script_path, default_timeout=120), "plan.py",
                        encode(alone))  # fmt: skip
    assert without.title[0].value == headline_of(single)
    assert "the chain of models binds" not in _markdown(without)


def test_the_chain_controls_write_the_link_parameter(app: AppTest) -> None:
    first, other = _ids()
    open_page(
        app,
        "plan.py",
        {"curve": first, "budget_ms": "100", **{k: str(v) for k, v in QUICK.items()}},
    )
    assert "cascade" not in query(app)  # no chain, no parameter: the old link
    app.selectbox(key="plan_cascade_curve").set_value(other)
    app.radio(key="plan_cascade_kind").set_value("poisson")
    app.number_input(key="plan_cascade_crops").set_value(2.5)
    app.button(key="plan_cascade_add").click()
    app.run()
    assert not app.exception
    assert query(app)["cascade"] == f"{other}:poisson=2.5"
    params, problems = decode(PlanParams, query(app))
    assert problems == [] and params.cascade == (f"{other}:poisson=2.5",)
    assert app.title[0].value == headline_of(expected(params))
    app.button(key="plan_cascade_remove_0").click()
    app.run()
    assert not app.exception
    assert "cascade" not in query(app)


def test_a_co_tenant_by_workload_shows_its_derivation_and_is_linked(app: AppTest) -> None:
    first, other = _ids()
    params = PlanParams(
        curve=first,
        budget_ms=100.0,
        policies=("batch-all",),
        cotenant_curve=(other,),
        cotenant_batch=(4.0,),
        cotenant_rps=(20.0,),
        **QUICK,
    )
    open_page(app, "plan.py", encode(params))
    assert ignored(app) == []
    assert app.text_input(key="plan_cotenants").value == ""  # no duty cycles were given
    shown = [plain(c.value) for c in app.caption if "in busy periods of" in plain(c.value)]
    (workload,) = workloads_of(params, db())
    assert shown == [f"C{workload.derivation[1:]}."]
    assert "20 frames/s in batches of 4" in shown[0] and "is busy 20 / 4 x" in shown[0]
    assert app.title[0].value == headline_of(expected(params))
    assert query(app) == encode(params)
    # Another co-tenant added on the page goes into the link beside the first.
    app.selectbox(key="plan_cotenant_pick").set_value(other)
    app.number_input(key="plan_cotenant_pick_batch").set_value(8)
    app.number_input(key="plan_cotenant_pick_rps").set_value(10.0)
    app.button(key="plan_cotenant_add").click()
    app.run()
    assert not app.exception
    got, problems = decode(PlanParams, query(app))
    assert problems == []
    assert (got.cotenant_curve, got.cotenant_batch, got.cotenant_rps) == (
        (other, other),
        (4.0, 8.0),
        (20.0, 10.0),
    )
    assert len([c for c in app.caption if "in busy periods of" in plain(c.value)]) == 2


def test_the_simulate_page_keeps_a_linked_chain_says_so_and_can_drop_it(app: AppTest) -> None:
    from planner.plan.params import SimulateParams

    first, other = _ids()
    linked = SimulateParams(curve=first, sessions=4, duration_s=2.0, cascade=(f"{other}:3",))
    open_page(app, "simulate.py", encode(linked))
    assert not app.exception
    assert ignored(app) == []
    assert any(plain(c.value).startswith("2. classifier") for c in app.caption)
    assert query(app)["cascade"] == f"{other}:3"  # kept in the page's own link
    app.button(key="sim_cascade_remove_0").click()
    app.run()
    assert not app.exception
    assert "cascade" not in query(app)
