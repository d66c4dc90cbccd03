"""Demand profiles in the store (schema 4): stored by name, never silently replaced, and
added to stores written by earlier versions."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from planner.demand.profiles import DemandProfile, read_profile_csv, typed_profile
from planner.errors import BadInput, NotFound
from planner.store.repository import Store
from planner.store.schema import SCHEMA_VERSION


def test_a_profile_is_stored_by_name_and_reads_back_the_same(store: Store) -> None:
    assert store.profiles() == []
    typed = typed_profile("Office-EU", [float(h % 7) for h in range(24)])
    stored = store.save_profile(typed)
    assert stored == typed
    uploaded = read_profile_csv("morning", "m.csv", b"time,sessions\n08:00,1.5\n08:30,2\n")
    store.save_profile(uploaded)
    again = store.profile("MORNING")
    assert again == uploaded and again.start == "08:00" and again.step_minutes == 30
    assert [p.name for p in store.profiles()] == ["morning", "office-eu"]


def test_a_name_is_not_silently_replaced(store: Store) -> None:
    store.save_profile(typed_profile("p", [1.0] * 24))
    store.save_profile(typed_profile("p", [1.0] * 24))  # the same values: nothing to do
    with pytest.raises(BadInput, match="stored with other values"):
        store.save_profile(typed_profile("p", [2.0] * 24))
    assert store.profile("p").sessions == (1.0,) * 24
    store.save_profile(typed_profile("p", [2.0] * 24), replace=True)
    assert store.profile("p").sessions == (2.0,) * 24


def test_a_built_in_shapes_name_cannot_be_taken(store: Store) -> None:
    with pytest.raises(BadInput, match="built-in shape"):
        store.save_profile(DemandProfile("office-hours", (1.0,) * 24))
    assert store.profiles() == []


def test_deleting_a_profile_that_saved_plans_name_asks_first(store: Store) -> None:
    store.save_profile(typed_profile("busy", [3.0] * 24))
    plan = store.save_plan({"profile": "busy", "budget_ms": "50"})
    with pytest.raises(BadInput, match=f"named by 1 saved plan\\(s\\) \\({plan}\\)"):
        store.delete_profile("busy")
    assert store.profile("busy")
    store.delete_profile("busy", force=True)
    with pytest.raises(NotFound, match="no stored demand profile called 'busy'"):
        store.profile("busy")
    with pytest.raises(NotFound):
        store.profile("not a name!")


def test_saved_plans_are_listed_newest_first(store: Store) -> None:
    first = store.save_plan({"budget_ms": "40"})
    assert [plan.id for plan in store.plans()] == [first]


@pytest.mark.parametrize("version", [2, 3])
def test_a_store_of_schema_2_or_3_gains_the_profiles_table(tmp_path: Path, version: int) -> None:
    path = tmp_path / "old.duckdb"
    with Store(path) as fresh:
        plan = fresh.save_plan({"budget_ms": "40"})
    # Turn it into what an earlier version wrote: no profiles table.
    with duckdb.connect(str(path)) as raw:
        raw.execute("DROP TABLE demand_profiles")
        raw.execute("DELETE FROM schema_version")
        raw.execute("INSERT INTO schema_version VALUES (?, now())", [version])
    with Store(path) as reopened:
        assert reopened.profiles() == []
        reopened.save_profile(typed_profile("after-upgrade", [1.0] * 24))
        assert reopened.plan(plan) == {"budget_ms": "40"}  # nothing else changed
    with duckdb.connect(str(path)) as raw:
        row = raw.execute("SELECT max(version) FROM schema_version").fetchone()
    assert row is not None and row[0] == SCHEMA_VERSION == 6
    with Store(path) as third:  # opening again migrates nothing more
        assert [p.name for p in third.profiles()] == ["after-upgrade"]


def test_the_migration_step_can_run_on_a_store_that_has_the_table(tmp_path: Path) -> None:
    # A schema-3 file that already has the table (e.g. a migration interrupted after it)
    # upgrades without losing the stored profiles.
    path = tmp_path / "half.duckdb"
    with Store(path) as fresh:
        fresh.save_profile(typed_profile("kept", [1.0] * 24))
    with duckdb.connect(str(path)) as raw:
        raw.execute("DELETE FROM schema_version")
        raw.execute("INSERT INTO schema_version VALUES (3, now())")
    with Store(path) as reopened:
        assert reopened.profile("kept").sessions == (1.0,) * 24
