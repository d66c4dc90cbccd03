"""A study's axis over the crops per frame of a chain of models (SPEC §5.4, §6.3): each
value is the plan of the fixed chain with those crops, the very cell the chain given
whole as an axis would be, and a value the chain cannot take fails its cell with why."""

from __future__ import annotations

from typing import Any

import pytest

from planner.curves.curve import Point, make_curve
from planner.errors import BadInput
from planner.links.urls import decode
from planner.plan.params import PlanParams
from planner.plan.recommend import recommend
from planner.plan.resolve import plan_inputs
from planner.store.repository import Store
from planner.studies.run import run_study
from planner.studies.store import load_study
from planner.studies.study import cells, study_from_dict
from planner.studies.view import axes, axis_words

QUICK: dict[str, Any] = {"seeds": 1, "duration_s": 2, "policies": "batch-all"}


def _classifier(store: Store) -> str:
    curve = make_curve(
        model="classifier", card="server-24gb", precision="fp16", resolution="224x224",
        points=[Point(1, 1.5), Point(8, 3.0), Point(32, 8.0)],
    )  # fmt: skip
    (stored,) = store.add_curves([curve])
    return stored.id


def _raw(other: str, **axes: Any) -> dict[str, Any]:
    return {
        "name": "crops",
        "curves": {"filters": [{"model": "ball-detector", "card": "server-24gb"}]},
        "fixed": {**QUICK, "budget_ms": 60, "cascade": [f"{other}:1:max=32"]},
        "axes": axes,
    }


def test_each_crops_value_is_the_plan_of_the_chain_with_those_crops(store: Store) -> None:
    other = _classifier(store)
    study = study_from_dict(_raw(other, crops=[1, 4, "poisson=2"]))
    assert study_from_dict(study.as_dict()) == study  # stored and read back the same
    found = cells(store, study)
    assert [c.params.cascade for c in found] == [
        (f"{other}:1:max=32",), (f"{other}:4:max=32",), (f"{other}:poisson=2:max=32",),
    ]  # fmt: skip
    # The same cells as the chain given whole as an axis: computed once for both.
    whole = {**_raw(other), "axes": {"cascade": [[f"{other}:1:max=32"], [f"{other}:4:max=32"],
                                                 [f"{other}:poisson=2:max=32"]]}}  # fmt: skip
    whole["fixed"] = {k: v for k, v in whole["fixed"].items() if k != "cascade"}
    assert [c.key for c in cells(store, study_from_dict(whole))] == [c.key for c in found]
    run_study(store, study, workers=1)
    _study, members = load_study(store, "crops")
    caps = {}
    for member in members:
        assert member.result is not None and member.result.status == "ok"
        params, ignored = decode(PlanParams, member.params)
        assert ignored == []
        alone = recommend(plan_inputs(params, store).request)
        assert alone.recommended is not None
        assert member.result.outputs["cap"] == alone.recommended.cap
        caps[member.coordinates["crops"]] = alone.recommended.cap
    assert caps["4"] <= caps["1"]  # more crops per frame: the chain takes longer
    assert axes(members)["crops"] == ["1", "4", "poisson=2"]
    assert axis_words("crops") == "crops per frame of the chain"


def test_a_list_gives_each_model_of_the_chain_its_crops(store: Store) -> None:
    other = _classifier(store)
    raw = _raw(other, crops=[[2, "hist=0:0.5,2:0.5"], [3]])
    raw["fixed"]["cascade"] = [f"{other}:1", f"{other}:1"]
    found = cells(store, study_from_dict(raw))
    assert found[0].params.cascade == (f"{other}:2", f"{other}:hist=0:0.5,2:0.5")
    assert found[1].params.cascade == (f"{other}:3", f"{other}:1")
    # More laws than models: that cell fails with the reason, the others stand.
    raw = _raw(other, crops=[3, [1, 2]])
    first, second = cells(store, study_from_dict(raw))
    assert first.problems == ()
    assert second.problems and "2 crop laws for a chain of 1 model" in second.problems[0]


@pytest.mark.parametrize(
    ("crops", "fixed", "message"),
    [
        ([1, 3], False, "give the chain under [fixed]"),
        (["poisson=-1"], True, "axes.crops[1]: the mean crops per frame must be"),
        ([True], True, "axes.crops[1]: a crop law is a count or text"),
        (["3", 3], True, "axes.crops: a value is listed twice"),
    ],
)
def test_a_bad_crops_axis_is_named(crops: list[Any], fixed: bool, message: str) -> None:
    raw = _raw("abcdefabcdef", crops=crops)
    if not fixed:
        del raw["fixed"]["cascade"]
    with pytest.raises(BadInput) as caught:
        study_from_dict(raw)
    assert any(message in p for p in caught.value.problems), caught.value.problems
