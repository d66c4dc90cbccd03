"""The DuckDB store: built-in data, idempotence, atomicity, threads and the file lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import types
from pathlib import Path
from typing import Any

import duckdb
import pytest

from planner.curves.curve import Point, make_curve
from planner.errors import BadInput, NotFound, StoreLocked
from planner.store.repository import Store
from planner.store.schema import SCHEMA_VERSION

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


def hold(path: Path, seconds: float) -> subprocess.Popen[str]:
    """Another process that opens the store file itself and keeps it for ``seconds``
    (as a long write would); returns once the file is held."""
    code = (
        "import sys, time, duckdb\n"
        f"con = duckdb.connect({str(path)!r})\n"
        "print('held', flush=True)\n"
        f"time.sleep({seconds})\n"
        "con.close()\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def planner(db: Path, *args: str, wait_s: float | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("PLANNER_DB_WAIT_S", None)
    if wait_s is not None:
        env["PLANNER_DB_WAIT_S"] = str(wait_s)
    return subprocess.run(
        [sys.executable, "-m", "planner", "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_an_open_store_holds_no_file_between_operations(store: Store, db_path: Path) -> None:
    # The dashboard keeps a Store for its whole life; commands must still get in.
    probe = planner(db_path, "cards", "set-price", "t4", "0.35")
    assert probe.returncode == 0, probe.stderr
    assert store.card("t4").price_per_hour == 0.35


def test_a_command_waits_for_a_briefly_held_store(store: Store, db_path: Path) -> None:
    holder = hold(db_path, 1.5)
    try:
        probe = planner(db_path, "curves", "list", "--json")
    finally:
        holder.wait(timeout=30)
    assert probe.returncode == 0, probe.stderr
    assert len(json.loads(probe.stdout)) == 5


def test_a_store_held_too_long_gives_one_line_naming_the_holder(
    store: Store, db_path: Path
) -> None:
    holder = hold(db_path, 30)
    try:
        probe = planner(db_path, "curves", "list", wait_s=0.3)
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert probe.returncode == 2
    lines = probe.stderr.strip().splitlines()
    assert len(lines) == 1, probe.stderr
    assert f"is busy: process {holder.pid} held it for more than 0.3 s" in lines[0]
    assert "PLANNER_DB_WAIT_S" in lines[0] and "Traceback" not in probe.stderr


def test_lock_error_type_and_wait_option(db_path: Path) -> None:
    Store(db_path).close()
    holder = hold(db_path, 30)
    try:
        with pytest.raises(StoreLocked, match="is busy"):
            Store(db_path, wait_s=0.2)
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_eight_commands_importing_at_once_all_store_their_curve(
    store: Store, db_path: Path, tmp_path: Path
) -> None:
    files = []
    for i in range(8):
        path = tmp_path / f"card-{i}.csv"
        path.write_text(
            f"batch,latency_ms,model,card\n1,{5 + i},m,card-{i}\n2,{9 + i},m,card-{i}\n"
        )
        files.append(path)
    env = {**os.environ, "PLANNER_DB_WAIT_S": "120"}  # a slow machine may queue them
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "planner", "--db", str(db_path), "curves", "import", str(f)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for f in files
    ]
    results = [(r.wait(timeout=300), r.communicate()[1]) for r in runs]
    assert [status for status, _ in results] == [0] * 8, results
    assert sorted(c.card for c in store.curves(model="m")) == [f"card-{i}" for i in range(8)]


def test_the_wait_comes_from_the_environment(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLANNER_DB_WAIT_S", "2.5")
    assert Store(db_path).wait_s == 2.5
    monkeypatch.setenv("PLANNER_DB_WAIT_S", "soon")
    with pytest.raises(BadInput, match="PLANNER_DB_WAIT_S"):
        Store(db_path)


def test_many_curves_go_in_as_one_bulk_import(store: Store) -> None:
    many = [curve(model=f"bulk-{i}", latencies=(1.0 + i, 2.0 + i, 4.0 + i)) for i in range(300)]
    stored = store.add_curves([*many, many[0]])
    assert [c.id for c in stored] == [c.id for c in many] + [many[0].id]
    assert all(c.created_at is not None for c in stored)
    again = store.curves(model="bulk-7")
    assert len(again) == 1 and again[0].latencies == (8.0, 9.0, 11.0)
    assert store.add_curves(many[:3]) == stored[:3]  # stored once, returned as stored


class Counting:
    """A DuckDB connection that counts the statements sent through it."""

    def __init__(self, inner: Any, counts: dict[str, int]) -> None:
        self._inner = inner
        self._counts = counts

    def cursor(self) -> Counting:
        return Counting(self._inner.cursor(), self._counts)

    def execute(self, *args: Any, **kwargs: Any) -> Counting:
        self._counts["statements"] += 1
        self._inner.execute(*args, **kwargs)
        return self

    def executemany(self, sql: str, rows: Any) -> Counting:
        rows = list(rows)
        self._counts["statements"] += len(rows)
        self._inner.executemany(sql, rows)
        return self

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_many_curves_go_in_as_a_few_statements(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 11.8: a statement per point (executemany) took 172 s for a 5 MiB file; the
    number of statements an import sends no longer grows with its curves or points."""
    import planner.store.repository as store_module

    counts = {"statements": 0}
    shim = types.SimpleNamespace(**{n: getattr(duckdb, n) for n in dir(duckdb) if n[0] != "_"})
    shim.connect = lambda *a, **k: Counting(duckdb.connect(*a, **k), counts)
    monkeypatch.setattr(store_module, "duckdb", shim)
    monkeypatch.setattr(store_module, "_ROOT", None, raising=False)
    opened = Store(db_path)
    many = [curve(model=f"bulk-{i}", latencies=(1.0 + i, 2.0 + i, 4.0 + i)) for i in range(300)]
    counts["statements"] = 0
    stored = opened.add_curves(many)
    assert len(stored) == 300 and stored[7].latencies == (8.0, 9.0, 11.0)
    assert counts["statements"] <= 20, counts


def test_a_second_store_of_the_file_joins_a_batch(store: Store, db_path: Path) -> None:
    other = Store(db_path)
    with store.batch():
        (added,) = other.add_curves([curve(model="joined")])
        assert store.curve(added.id) == added
    assert other.curve(added.id) == added


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
    assert row is not None and row[0] == SCHEMA_VERSION


def test_a_schema_2_store_gains_curve_flags_renames_and_plan_names(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    with Store(path) as fresh:
        drifted = make_curve(
            model="m", card="t4", points=[Point(1, 38.5), Point(2, 70.0)],
            environment={"drift_warning": "batch 1 moved +6178.2% (38.50 -> 2417.00 ms)"},
        )  # fmt: skip
        fresh.add_curves([drifted, curve(model="steady")])
        plan_id = fresh.save_plan({"budget_ms": "40"})
    # Turn it into what schema 2 wrote: no flag, rename or plan name columns.
    with duckdb.connect(str(path)) as raw:
        for table, column in (("curves", "flag"), ("curves", "renamed_from"),
                              ("plans", "name"), ("plans", "headline")):  # fmt: skip
            raw.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        raw.execute("DELETE FROM schema_version")
        raw.execute("INSERT INTO schema_version VALUES (2, now())")
    with Store(path) as reopened:
        flagged = reopened.curve(drifted.id)
        assert flagged.flag is not None and "2417.00 ms" in flagged.flag
        assert reopened.curves(model="steady")[0].flag is None
        renamed = reopened.rename_curve(flagged.id, model="ball-detector")
        assert renamed.renamed_from == flagged.id and reopened.curve(flagged.id) == flagged
        (old,) = reopened.plans()
        assert (old.id, old.name, old.headline) == (plan_id, None, None)
        reopened.save_plan({"budget_ms": "40"}, name="spring peak")
        assert reopened.plans()[0].name == "spring peak"
    with duckdb.connect(str(path)) as raw:
        row = raw.execute("SELECT max(version) FROM schema_version").fetchone()
    assert row is not None and row[0] == SCHEMA_VERSION == 6


def test_renaming_a_curve_makes_a_new_one_and_keeps_the_old(store: Store) -> None:
    old = store.curves(card="server-24gb")[0]
    renamed = store.rename_curve(old.id, model="ball-detector-v2", card="l4")
    assert (renamed.model, renamed.card, renamed.points) == ("ball-detector-v2", "l4", old.points)
    assert renamed.id != old.id and renamed.renamed_from == old.id
    assert store.curve(old.id) == old and store.curve(renamed.id).renamed_from == old.id
    with pytest.raises(BadInput, match="nothing to rename"):
        store.rename_curve(old.id, model=old.model)
    with pytest.raises(BadInput, match="model"):
        store.rename_curve(old.id, model="two\nlines")


def test_saved_plans_are_listed_newest_first_with_name_and_headline(store: Store) -> None:
    first = store.save_plan({"budget_ms": "40"}, name="tight", headline="2 seats per card")
    second = store.save_plan({"budget_ms": "60"})
    listed = store.plans()
    assert {p.id for p in listed} == {first, second}
    named = next(p for p in listed if p.id == first)
    assert (named.name, named.headline, dict(named.params)) == (
        "tight", "2 seats per card", {"budget_ms": "40"},
    )  # fmt: skip
    assert store.save_plan({"budget_ms": "40"}) == first  # saving again keeps the name
    assert next(p for p in store.plans() if p.id == first).name == "tight"
    with pytest.raises(BadInput, match="plan name"):
        store.save_plan({"budget_ms": "40"}, name="x" * 500)


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
