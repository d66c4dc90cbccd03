"""Share links: every valid parameter set survives a link, and no link breaks a page."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.curve import MAX_BATCH, PRECISIONS, Point
from planner.errors import BadInput, NotFound
from planner.links import (
    MODES,
    PARAMETERS,
    POLICIES,
    Choice,
    CompareParams,
    Float,
    Int,
    LinkParams,
    Maybe,
    Numbers,
    Pattern,
    PlanParams,
    Points,
    Precision,
    Resolution,
    SimulateParams,
    Subset,
    Text,
    Texts,
    decode,
    encode,
    linked_curve,
    saved_params,
    saved_plan_url,
    schema,
    self_contained,
    url,
)
from planner.store import Store

PARAM_SETS = (PlanParams, SimulateParams, CompareParams)


# ---------------------------------------------------------------------------------------
# Strategies for valid values, derived from each parameter's codec.


def values(codec: Any) -> st.SearchStrategy[Any]:
    if isinstance(codec, Maybe):
        return st.none() | values(codec.inner)
    if isinstance(codec, Int):
        return st.integers(codec.low, codec.high)
    if isinstance(codec, Float):
        return st.floats(
            codec.low,
            codec.high,
            exclude_min=codec.above_low,
            allow_nan=False,
            allow_subnormal=codec.low == 0,
        )
    if isinstance(codec, Choice):
        return st.sampled_from(codec.choices)
    if isinstance(codec, Subset):
        return st.lists(st.sampled_from(codec.choices), min_size=1, unique=True).map(tuple)
    if isinstance(codec, Numbers):
        return st.lists(values(codec.item), min_size=codec.min_len, max_size=8).map(tuple)
    if isinstance(codec, Texts):
        return st.lists(values(codec.item), max_size=4, unique=True).map(tuple)
    if isinstance(codec, Text):
        return st.text(max_size=30).filter(lambda t: _valid(codec, t)).map(codec.check)
    if isinstance(codec, Pattern):
        return st.from_regex(codec.pattern, fullmatch=True)
    if isinstance(codec, Precision):
        return st.sampled_from(PRECISIONS)
    if isinstance(codec, Resolution):
        return st.builds(lambda w, h: f"{w}x{h}", st.integers(1, 99999), st.integers(1, 99999))
    if isinstance(codec, Points):
        pairs = st.dictionaries(
            st.integers(1, MAX_BATCH),
            st.floats(1e-3, 1e6, allow_nan=False),
            min_size=1,
            max_size=12,
        )
        return pairs.map(lambda d: tuple(Point(b, v) for b, v in sorted(d.items())))
    raise AssertionError(f"no strategy for {codec!r}")


def _valid(codec: Any, text: str) -> bool:
    try:
        codec.check(text)
    except BadInput:
        return False
    return True


def _settle(cls: type[LinkParams], drawn: dict[str, Any]) -> dict[str, Any]:
    """Make a draw obey the cross-field rules, which are tested on their own below."""
    if "points" in drawn:
        if drawn["points"] is None:
            for label in ("model", "card", "precision", "resolution"):
                drawn[label] = None
        else:
            drawn["curve"] = None
    if cls is SimulateParams and len(drawn["fps"]) not in (1, drawn["sessions"]):
        drawn["fps"] = drawn["fps"][:1]
    memory = drawn.get("cotenant_memory_mb") or ()
    if len(memory) not in (0, 1, len(drawn.get("cotenants") or ())):
        drawn["cotenant_memory_mb"] = memory[:1]
    return drawn


def params_of(cls: type[LinkParams]) -> st.SearchStrategy[Any]:
    fields = {name: values(p.codec) for name, p in schema(cls).items()}
    return st.fixed_dictionaries(fields).map(lambda d: cls(**_settle(cls, d)))


any_params = st.one_of(*(params_of(cls) for cls in PARAM_SETS))


# ---------------------------------------------------------------------------------------
# Properties.


@settings(max_examples=300, deadline=None)
@given(any_params)
def test_decode_of_encode_is_identity(params: LinkParams) -> None:
    assert decode(type(params), encode(params)) == (params, [])
    assert decode(type(params), encode(params, include_defaults=True)) == (params, [])


@settings(max_examples=200, deadline=None)
@given(any_params)
def test_a_link_url_reopens_the_same_parameters(params: LinkParams) -> None:
    link = url("http://planner.example:8501/", params)
    parts = urlsplit(link)
    assert parts.path == "/" + type(params).page_path
    query = parse_qs(parts.query, keep_blank_values=True)
    assert decode(type(params), query) == (params, [])


names = st.sampled_from(sorted(PARAMETERS)) | st.text(max_size=12)
raw_values = st.text(max_size=60) | st.lists(st.text(max_size=20), max_size=3)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(PARAM_SETS), st.dictionaries(names, raw_values, max_size=8))
def test_decode_never_raises_and_explains_what_it_dropped(
    cls: type[LinkParams], query: dict[str, Any]
) -> None:
    params, ignored = decode(cls, query)
    assert isinstance(params, cls)
    assert all(isinstance(m, str) and m.startswith("ignored ") for m in ignored)
    # Whatever survived is kept exactly: encoding it again and decoding gives it back.
    assert decode(cls, encode(params)) == (params, [])


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(PARAM_SETS), st.text(max_size=200))
def test_decode_survives_tampered_values_of_every_parameter(
    cls: type[LinkParams], text: str
) -> None:
    for name in schema(cls):
        params, ignored = decode(cls, {name: text})
        assert isinstance(params, cls)
        assert len(ignored) <= 2  # the bad value, plus at most one conflict it caused


def test_decode_survives_values_that_are_not_text() -> None:
    query: Any = {"budget_ms": 40, "seeds": None, "policies": [["a"]], 7: "x", "min_fps": b"20"}
    params, ignored = decode(PlanParams, query)
    assert params == PlanParams(budget_ms=40)
    assert len(ignored) == 4


# ---------------------------------------------------------------------------------------
# Behaviour, example by example.


def test_defaults_are_left_out_so_links_stay_short() -> None:
    assert encode(PlanParams()) == {}
    assert url("http://h:8501", PlanParams()) == "http://h:8501/"
    assert encode(PlanParams(budget_ms=40.0, seeds=4)) == {"budget_ms": "40", "seeds": "4"}


def test_plan_links_open_the_landing_page_at_the_root() -> None:
    assert (
        url("http://h:8501/", PlanParams(budget_ms=30, policies=("batch-all", "oldest-first")))
        == "http://h:8501/?budget_ms=30&policies=batch-all,oldest-first"
    )
    assert url("http://h/app", SimulateParams(sessions=5)) == "http://h/app/simulate?sessions=5"
    assert url("http://h", CompareParams(cards=("t4", "l4"))) == "http://h/compare?cards=t4,l4"


def test_lists_keep_their_order_and_drop_repeats() -> None:
    params, ignored = decode(PlanParams, {"policies": "Batch-All, oldest-first,batch-all"})
    assert params.policies == ("batch-all", "oldest-first") and ignored == []
    assert decode(PlanParams, {"policies": ["triton", "triton"]})[0].policies == ("triton",)


def test_each_bad_parameter_gives_one_message_and_its_default() -> None:
    params, ignored = decode(
        PlanParams,
        {
            "budget_ms": "abc",
            "percentile": "150",
            "policies": "fifo,batch-all",
            "min_fps": "nan",
            "colour": "blue",
            "cotenants": "0.5,2",
            "seeds": ["1", "2"],
            "curve": "../../etc/passwd",
        },
    )
    assert params == PlanParams()
    assert ignored == [
        "ignored budget_ms='abc': not a number; using the default 50",
        "ignored percentile='150': must be above 0 and at most 100; using the default 99",
        "ignored policies='fifo,batch-all': 'fifo' not among "
        + ", ".join(POLICIES)
        + "; using the default (all)",
        "ignored min_fps='nan': not a finite number; using the default 28.5",
        "ignored unknown parameter 'colour'",
        "ignored cotenants='0.5,2': item 2 must be from 0 to 1; using the default (none)",
        "ignored seeds: given 2 times with different values",
        "ignored curve='../../etc/passwd': not of the form a 12-character curve id; left unset",
    ]


def test_messages_quote_hostile_text_safely() -> None:
    _, ignored = decode(PlanParams, {"budget_ms": "<script>\x00" + "x" * 100})
    (message,) = ignored
    assert "\\x00" in message and "…" in message and len(message) < 160


def test_streamlit_parameters_and_empty_values_are_not_errors() -> None:
    params, ignored = decode(PlanParams, {"embed": "true", "budget_ms": "", "modes": [""]})
    assert (params, ignored) == (PlanParams(), [])


def test_curve_id_and_points_together_keep_the_points() -> None:
    params, ignored = decode(PlanParams, {"curve": "abcdefghijkl", "points": "1:9.82,2:20.36"})
    assert params.curve is None and params.points == (Point(1, 9.82), Point(2, 20.36))
    assert ignored == ["ignored curve: curve and points were both given; the points are used"]


def test_labels_without_points_are_dropped() -> None:
    params, ignored = decode(PlanParams, {"model": "m", "card": "t4", "budget_ms": "30"})
    assert params == PlanParams(budget_ms=30)
    assert ignored == ["ignored model, card: model, card only describe embedded points"]


def test_simulation_fps_must_match_the_sessions() -> None:
    ok, ignored = decode(SimulateParams, {"sessions": "3", "fps": "30,15,30"})
    assert ok.fps == (30.0, 15.0, 30.0) and ignored == []
    bad, ignored = decode(SimulateParams, {"sessions": "3", "fps": "30,15"})
    assert bad.fps == (30.0,) and bad.sessions == 3
    assert ignored == ["ignored fps: fps has 2 values for 3 sessions (needs 1 or 3)"]


def test_invalid_parameters_cannot_be_constructed() -> None:
    with pytest.raises(BadInput) as info:
        PlanParams(budget_ms=-1, policies=("fifo",), seeds=0)
    assert len(info.value.problems) == 3
    with pytest.raises(BadInput, match="only describe embedded points"):
        PlanParams(model="m")
    with pytest.raises(BadInput, match="2 values for 3 sessions"):
        SimulateParams(sessions=3, fps=(30, 15))
    with pytest.raises(BadInput, match="comma"):
        CompareParams(cards=("a,b",))


def test_construction_normalises_values() -> None:
    params = PlanParams(budget_ms=40, policies=["Batch-All"], modes=("MPS",), mig_profile="3G.40GB")
    assert params.budget_ms == 40.0 and isinstance(params.budget_ms, float)
    assert params.policies == ("batch-all",) and params.modes == ("mps",)
    assert params.mig_profile == "3g.40gb"


def test_self_contained_link_reopens_the_same_curve(store: Store) -> None:
    curve = store.curves(card="laptop-8gb", precision="fp16")[0]
    plan = PlanParams(curve=curve.id, budget_ms=40)
    portable = self_contained(plan, curve)
    link = url("http://elsewhere:8501", portable)
    assert "curve=" not in link and "points=1:9.82,2:20.36," in link
    reopened, ignored = decode(PlanParams, parse_qs(urlsplit(link).query))
    assert ignored == [] and reopened == portable
    embedded = linked_curve(reopened)
    assert embedded is not None and embedded.id == curve.id
    assert linked_curve(plan) is None


def test_saved_plans_round_trip_through_the_store(store: Store) -> None:
    plan = PlanParams(curve=store.curves()[0].id, budget_ms=35, peak_sessions=100)
    plan_id = store.save_plan(saved_params(plan))
    assert saved_plan_url("http://h:8501/", plan_id) == f"http://h:8501/?plan={plan_id}"
    assert store.plans_using(plan.curve or "") == [plan_id]
    reopened, ignored = decode(PlanParams, {"plan": plan_id}, load_plan=store.plan)
    assert (reopened, ignored) == (plan, [])
    # Parameters next to the id override the saved ones.
    tweaked, _ = decode(PlanParams, {"plan": plan_id, "budget_ms": "60"}, load_plan=store.plan)
    assert tweaked.budget_ms == 60 and tweaked.peak_sessions == 100


def test_unknown_or_malformed_plan_ids_open_the_defaults() -> None:
    def load(plan_id: str) -> dict[str, Any]:
        raise NotFound(plan_id)

    assert decode(PlanParams, {"plan": "0123456789"}, load_plan=load) == (
        PlanParams(),
        ["ignored plan='0123456789': no saved plan with that id on this server"],
    )
    _, ignored = decode(PlanParams, {"plan": "'; DROP TABLE plans"}, load_plan=load)
    assert ignored == [
        'ignored plan="\'; DROP TABLE plans": not a saved plan id; using the defaults'
    ]
    with pytest.raises(BadInput):
        saved_plan_url("http://h", "../x")


def test_every_parameter_has_a_valid_default_and_a_description() -> None:
    for name, parameter in PARAMETERS.items():
        assert parameter.doc, name
        assert parameter.codec.check(parameter.default) == parameter.default, name
    assert set(PARAMETERS) == {n for cls in PARAM_SETS for n in schema(cls)}
    assert PlanParams().modes is None and PlanParams().policies == POLICIES
    assert set(MODES) == {"exclusive", "time-slicing", "mps", "mig"}
