"""The DuckDB store: built-in data, idempotence, atomicity, threads and the file lock."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import pytest

from planner.curve import Point, make_curve
from planner.errors import BadInput, NotFound
from planner.store import Store

FP16 = (9.82, 20.36, 32.71, 46.15, 103.77, 221.25)


def curve(model: str = "m", card: str = "laptop-8gb", latencies: tuple[float, ...] = (5.0, 9.0)):
    return make_curve(
        model=model,
        card=card,
        precision="fp16",
        resolution="64x36",
        points=[Point(b, v) for b, v in enumerate(latencies, start=1)],
    )


def test_new_store_holds_the_builtin_curves_and_catalogue(store: Store) -> None:
    curves = store.curves()
    assert len(curves) == 5
    fp16 = [
        c
        for c in curves
        if (c.card, c.precision, c.resolution) == ("laptop-8gb", "fp16", "512x288")
    ]
    assert len(fp16) == 1
    assert fp16[0].batches == (1, 2, 3, 4, 8, 16)
    assert fp16[0].latencies == FP16
    assert fp16[0].source == "built-in"
    assert store.curves(card="server-24gb")[0].latencies == (8.0, 20.0)
    names = {c.name for c in store.cards()}
    assert {"laptop-8gb", "server-24gb", "t4", "a100-80gb", "h200-141gb"} <= names
    assert store.card("A100-80GB").profile("3g.40gb").slices == 3
    assert store.card("a30").mig_slices == 4
    assert not store.card("laptop-8gb").mig
    assert all(c.price_per_hour is None for c in store.cards())


def test_builtins_load_once(db_path: Path) -> None:
    with Store(db_path) as first:
        doomed = first.curves(card="server-24gb")[0]
        first.delete_curve(doomed.id)
    with Store(db_path) as again:
        assert len(again.curves()) == 4  # a deleted built-in stays deleted


def test_adding_the_same_curve_twice_stores_one(store: Store) -> None:
    store.add_curves([curve()])
    store.add_curves([curve()])
    assert len(store.curves(model="m")) == 1


def test_editing_points_makes_a_new_curve(store: Store) -> None:
    (old,) = store.add_curves([curve()])
    (new,) = store.add_curves([old.with_points([Point(1, 5.0), Point(2, 9.5)])])
    assert new.id != old.id
    assert {c.id for c in store.curves(model="m")} == {old.id, new.id}


def test_a_failing_write_stores_nothing(store: Store) -> None:
    before = store.curves()

    class Broken:
        card = "laptop-8gb"

    with pytest.raises(AttributeError):
        store.add_curves([curve("good"), Broken()])  # type: ignore[list-item]
    assert store.curves() == before


def test_eight_threads_importing_at_once_lose_nothing(store: Store) -> None:
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(5):
                store.add_curves([curve(model=f"model-{i}-{j}", card=f"new-card-{j}")])
                store.curves()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(store.curves()) == 5 + 40
    assert {f"new-card-{j}" for j in range(5)} <= {c.name for c in store.cards()}


def test_unknown_card_is_added_and_known_card_keeps_its_spelling(store: Store) -> None:
    (stored,) = store.add_curves([curve(card="LAPTOP-8GB")])
    assert stored.card == "laptop-8gb"
    store.add_curves([curve(card="rtx-4090")])
    assert store.card("rtx-4090").description == "added by an import"


def test_prices_are_set_by_the_user(store: Store) -> None:
    assert store.set_price("t4", "0.35").price_per_hour == 0.35
    with pytest.raises(BadInput):
        store.set_price("t4", "-1")
    with pytest.raises(BadInput):
        store.set_price("t4", "nan")
    with pytest.raises(NotFound):
        store.set_price("no-such-card", 1)
    assert store.card("t4").price_per_hour == 0.35


def test_deleting_a_curve_used_by_a_saved_plan_asks_first(store: Store) -> None:
    (stored,) = store.add_curves([curve()])
    plan = store.save_plan({"curve": stored.id, "budget_ms": 50})
    assert store.plan(plan) == {"curve": stored.id, "budget_ms": 50}
    assert store.save_plan({"budget_ms": 50, "curve": stored.id}) == plan
    with pytest.raises(BadInput, match="saved plan"):
        store.delete_curve(stored.id)
    store.delete_curve(stored.id, force=True)
    with pytest.raises(NotFound):
        store.curve(stored.id)


def test_a_second_process_gets_a_one_line_lock_error(db_path: Path) -> None:
    with Store(db_path):
        probe = subprocess.run(
            [sys.executable, "-m", "planner", "--db", str(db_path), "curves", "list"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert probe.returncode == 2
    lines = probe.stderr.strip().splitlines()
    assert len(lines) == 1, probe.stderr
    assert "in use by process" in lines[0] and "Traceback" not in probe.stderr


def test_lock_error_type(db_path: Path) -> None:
    code = (
        "import sys\n"
        "from planner.store import Store\n"
        "from planner.errors import StoreLocked\n"
        "try:\n"
        f"    Store({str(db_path)!r})\n"
        "except StoreLocked as e:\n"
        "    print('locked:', e); sys.exit(0)\n"
        "sys.exit(1)\n"
    )
    with Store(db_path):
        probe = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.startswith("locked:")


def test_a_schema_1_store_gains_each_mig_profiles_memory_and_instance_count(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.duckdb"
    Store(path).close()
    # Turn it into what schema 1 wrote: no memory or instance count per profile.
    with duckdb.connect(str(path)) as raw:
        raw.execute("ALTER TABLE mig_profiles DROP COLUMN memory_gb")
        raw.execute("ALTER TABLE mig_profiles DROP COLUMN max_instances")
        raw.execute("DELETE FROM schema_version")
        raw.execute("INSERT INTO schema_version VALUES (1, now())")
    with Store(path) as reopened:
        profile = reopened.card("h100-80gb").profile("1g.20gb")
        assert (profile.memory_gb, profile.max_instances) == (20.0, 4)
        assert reopened.card("a100-40gb").profile("1g.5gb+me").max_instances == 1
    with duckdb.connect(str(path)) as raw:
        row = raw.execute("SELECT max(version) FROM schema_version").fetchone()
    assert row is not None and row[0] == 2


def test_the_catalogue_gives_every_mig_profile_its_memory_and_instance_count(store) -> None:
    for card in store.cards():
        for profile in card.mig_profiles:
            assert profile.memory_gb is not None and profile.max_instances is not None, profile
            assert 1 <= profile.max_instances <= card.mig_slices
            assert profile.memory_gb <= card.memory_gb
    # Not always slices / profile slices: the vendor's counts (NVIDIA MIG User Guide).
    h100 = store.card("h100-80gb")
    assert [h100.profile(n).max_instances for n in ("1g.10gb", "1g.10gb+me", "1g.20gb",
            "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")] == [7, 1, 4, 3, 2, 1, 1]  # fmt: skip
