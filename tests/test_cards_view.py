"""A card comparison's view (planner.views.cards): the Compare page and ``planner
compare-cards`` show the same cells of each curve, written once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from planner.plan.compare_cards import compare_cards, settle
from planner.plan.params import CompareParams
from planner.store.repository import Store
from planner.views.cards import NOTHING_FITS, card_comparison_view

QUICK: dict[str, Any] = {
    "seeds": 2,
    "duration_s": 5.0,
    "precision": "fp16",
    "resolution": "512x288",
}


def test_the_page_and_the_command_show_the_same_cells(db_path: Path, cli: Any) -> None:
    with Store(db_path) as store:
        params, _ = settle(store, CompareParams(**QUICK))
        view = card_comparison_view(compare_cards(store, params), params)
    page, command = view.table, view.every_curve
    assert page.rows and len(page.rows) <= len(command.rows)
    for row in page.records:
        (same,) = [r for r in command.records if r["card"] == row["card"]]
        assert row["option"] == same["with"] != NOTHING_FITS
        assert row["seats per card"] == same["seats per card"]
        assert row["slowest session at cap (fps)"] == same["min fps"]
        assert row["measure next"].removeprefix("batch ") == same["measure next"]
    printed = cli("compare-cards", *(f"--{k.replace('_', '-')}={v}" for k, v in QUICK.items()))
    assert printed.status == 0, printed.err
    lines = printed.out.splitlines()
    assert lines[0].split() == " ".join(command.header).split()
    for line, cells in zip(lines[2:], command.rows, strict=True):
        assert line.split() == " ".join(cells).split()
