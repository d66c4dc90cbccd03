"""Share links: every valid parameter set survives a link, and no link breaks a page."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.curves.curve import MAX_BATCH, PRECISIONS, Point
from planner.errors import BadInput, NotFound
from planner.links.codecs import (
    CURVE_ID,
    Bool,
    Cascade,
    CascadeEntry,
    Choice,
    CotenantCurves,
    CurveIds,
    Float,
    Int,
    Maybe,
    Numbers,
    Pattern,
    Points,
    Precision,
    Resolution,
    Subset,
    Text,
    Texts,
    number_text,
)
from planner.links.parameters import DEFAULT_POLICIES, MODES, PARAMETERS, ParameterSet, schema
from planner.links.urls import (
    decode,
    encode,
    linked_curve,
    saved_params,
    saved_plan_url,
    self_contained,
    url,
)
from planner.plan.params import CompareParams, PlanParams, SimulateParams
from planner.plan.resolve import plan_inputs, simulation_inputs
from planner.sim.crops import Crops
from planner.store.repository import Store
from planner.studies.params import StudyParams

PARAM_SETS = (PlanParams, SimulateParams, CompareParams, StudyParams)


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
            exclude_max=codec.below_high,
            allow_nan=False,
            allow_subnormal=codec.low == 0,
        )
    if isinstance(codec, Bool):
        return st.booleans()
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
    if isinstance(codec, CurveIds):
        return st.lists(st.from_regex(CURVE_ID, fullmatch=True), max_size=3).map(tuple)
    if isinstance(codec, Cascade):
        return st.lists(cascade_entries(), max_size=3).map(codec.check)
    if isinstance(codec, CotenantCurves):  # stored curve ids, or points given inline
        points = values(Points()).map(
            lambda ps: ",".join(f"{p.batch}:{number_text(p.latency_ms)}" for p in ps)
        )
        entry = st.from_regex(CURVE_ID, fullmatch=True) | points
        return st.lists(entry, max_size=3).map(codec.check)
    raise AssertionError(f"no strategy for {codec!r}")


def cascade_entries() -> st.SearchStrategy[str]:
    """A later model of a cascade as a link carries it: fixed, Poisson or histogram crops,
    with or without its largest batch."""
    crops = st.one_of(
        st.integers(0, 1000).map(lambda k: Crops("fixed", k=k)),
        st.floats(0.01, 1000).map(lambda m: Crops("poisson", mean=round(m, 3))),
        st.dictionaries(st.integers(0, 1000), st.floats(0.01, 1), min_size=1, max_size=5).map(
            lambda d: Crops("hist", shares=tuple(d.items()))
        ),
    )
    return st.builds(
        lambda curve, law, largest: CascadeEntry(curve, law, largest).text,
        st.from_regex(CURVE_ID, fullmatch=True),
        crops,
        st.none() | st.integers(1, MAX_BATCH),
    )


def _valid(codec: Any, text: str) -> bool:
    try:
        codec.check(text)
    except BadInput:
        return False
    return True


def _settle(cls: type[ParameterSet], drawn: dict[str, Any]) -> dict[str, Any]:
    """Make a draw obey the cross-field rules (tested on their own below) the way ``decode``
    does: reset the fields each conflict names to their defaults, until none is left."""
    specs = schema(cls)
    for _ in range(len(specs)):
        found = cls.conflicts(drawn)
        if not found:
            return drawn
        for names, _message in found:
            for name in names:
                drawn[name] = specs[name].default
    raise AssertionError(f"conflicts do not settle: {cls.conflicts(drawn)}")


def params_of(cls: type[ParameterSet]) -> st.SearchStrategy[Any]:
    fields = {name: values(p.codec) for name, p in schema(cls).items()}
    return st.fixed_dictionaries(fields).map(lambda d: cls(**_settle(cls, d)))


any_params = st.one_of(*(params_of(cls) for cls in PARAM_SETS))


# ---------------------------------------------------------------------------------------
# Properties.


@settings(max_examples=300, deadline=None)
@given(any_params)
def test_decode_of_encode_is_identity(params: ParameterSet) -> None:
    assert decode(type(params), encode(params)) == (params, [])
    assert decode(type(params), encode(params, include_defaults=True)) == (params, [])


@settings(max_examples=200, deadline=None)
@given(any_params)
def test_a_link_url_reopens_the_same_parameters(params: ParameterSet) -> None:
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
    cls: type[ParameterSet], query: dict[str, Any]
) -> None:
    params, ignored = decode(cls, query)
    assert isinstance(params, cls)
    assert all(isinstance(m, str) and m.startswith("ignored ") for m in ignored)
    # Whatever survived is kept exactly: encoding it again and decoding gives it back.
    assert decode(cls, encode(params)) == (params, [])


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(PARAM_SETS), st.text(max_size=200))
def test_decode_survives_tampered_values_of_every_parameter(
    cls: type[ParameterSet], text: str
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
        "ignored percentile='150': must be above 0 and below 100; using the default 99",
        "ignored policies='fifo,batch-all': 'fifo' not among "
        + ", ".join(DEFAULT_POLICIES)
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


@pytest.mark.parametrize("empty", ["", "  ", [""], ["", " "]])
def test_an_empty_plan_id_is_ignored_with_a_message(empty: str | list[str]) -> None:
    # ``/?plan=`` used to pass for a saved plan, and the page stopped on its id ''.
    def load(plan_id: str) -> dict[str, Any]:
        raise AssertionError(f"no plan should be loaded, not {plan_id!r}")

    assert decode(PlanParams, {"plan": empty}, load_plan=load) == (
        PlanParams(),
        ["ignored plan: empty"],
    )
    params, ignored = decode(PlanParams, {"plan": empty, "budget_ms": "60"}, load_plan=load)
    assert params == PlanParams(budget_ms=60) and ignored == ["ignored plan: empty"]


def test_every_parameter_has_a_valid_default_and_a_description() -> None:
    for name, parameter in PARAMETERS.items():
        assert parameter.doc, name
        assert parameter.codec.check(parameter.default) == parameter.default, name
    assert set(PARAMETERS) == {n for cls in PARAM_SETS for n in schema(cls)}
    assert PlanParams().modes is None and PlanParams().policies == DEFAULT_POLICIES
    assert set(MODES) == {"exclusive", "time-slicing", "mps", "mig"}


# ---------------------------------------------------------------------------------------
# A link that decodes resolves to a plan or a simulation (the link codecs carry the
# library's own limits), or says exactly which of its parameters it ignored.


def _query_of(cls: type[ParameterSet]) -> st.SearchStrategy[dict[str, str]]:
    """Query strings as a person or a program might write them: valid values, numbers out
    of any range, and junk, for any subset of the parameters (the curve left to the
    server's default, and no calibration, cascade or co-tenant curve: they name what a
    store holds)."""
    out: dict[str, st.SearchStrategy[str]] = {}
    stored = ("calibration", "cascade", "cotenant_curve")
    for name, parameter in schema(cls).items():
        if name in ("curve", "points", "model", "card", "precision", "resolution", *stored):
            continue
        codec = parameter.codec
        inner = codec.inner if isinstance(codec, Maybe) else codec
        valid = values(inner).map(inner.format)
        wild = st.one_of(
            st.floats(-1e6, 1e7, allow_nan=False).map(repr),
            st.integers(-10, 10**7).map(str),
            st.sampled_from(["abc", "", "1e999", "nan", "0", "-0"]),
        )
        out[name] = st.one_of(valid, valid, wild)
    return st.dictionaries(st.sampled_from(sorted(out)), st.nothing()).flatmap(
        lambda _: st.fixed_dictionaries({}, optional=out)
    )


def _changed(cls: type[ParameterSet], query: dict[str, str], params: ParameterSet) -> set[str]:
    """The query's parameters that did not end up in ``params`` as given."""
    specs = schema(cls)
    out = set()
    for name, text in query.items():
        try:
            given = specs[name].codec.parse(text) if text.strip() else None
        except BadInput:
            out.add(name)
            continue
        if given is not None and getattr(params, name) != given:
            out.add(name)
    return out


def _ignored_names(messages: list[str]) -> set[str]:
    """The parameters that messages such as ``ignored a, b: why`` or ``ignored a='x': why``
    name."""
    out = set()
    for message in messages:
        head = re.split(r"[:=]", message.removeprefix("ignored "), maxsplit=1)[0]
        out.update(name.strip() for name in head.split(","))
    return out


def _resolves(cls: type[ParameterSet], params: Any) -> None:
    db = Store(_STORE_PATH)
    try:
        if cls is PlanParams:
            plan_inputs(params, db)
        else:
            simulation_inputs(params, db)
    except BadInput as exc:
        # Only what a link cannot know without the store: the card's MIG profiles.
        assert all("MIG" in p for p in exc.problems), exc.problems
    finally:
        db.close()


_STORE_PATH = Path(tempfile.mkdtemp(prefix="links-")) / "planner.duckdb"


@pytest.mark.parametrize("cls", [PlanParams, SimulateParams])
def test_every_link_that_decodes_resolves_or_says_what_it_ignored(
    cls: type[ParameterSet],
) -> None:
    @settings(max_examples=150, deadline=None)
    @given(_query_of(cls))
    def check(query: dict[str, str]) -> None:
        params, ignored = decode(cls, query)
        changed = _changed(cls, query, params)
        assert _ignored_names(ignored) == changed, (query, ignored)
        _resolves(cls, params)

    check()
