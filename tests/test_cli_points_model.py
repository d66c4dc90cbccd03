"""Points given on the command line can name their model, as a link's embedded points do,
instead of reading "unnamed model" in every line about the plan."""

from __future__ import annotations

from typing import Any

PLAN = ("recommend", "--points", "1:10,8:30", "--card", "t4", "--seeds", "2", "--duration-s",
        "5", "--policies", "batch-all")  # fmt: skip


def test_recommend_names_the_model_of_its_points(cli: Any) -> None:
    named = cli(*PLAN, "--model", "ball-detector")
    assert named.status == 0, named.err
    assert "curve: ball-detector on t4 (" in named.err and "unnamed model" not in named.err
    link = cli("link", "--points", "1:10,8:30", "--model", "ball-detector")
    assert link.status == 0 and "model=ball-detector" in link.out


def test_a_stored_curve_keeps_its_own_model(cli: Any) -> None:
    curve = cli("curves", "list", "--json").json[0]["id"]
    refused = cli("recommend", "--curve", curve, "--model", "other")
    assert refused.status == 2
    assert refused.err.strip() == (
        "planner: --model names the model of --points; a stored curve names its own"
    )
