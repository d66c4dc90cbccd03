"""The planner's records in its store: cards, curves and their points, saved plans and
demand profiles (``Store``).

Every operation runs in one short transaction of the store file (``StoreFile.read`` and
``write``, ``planner.store.connection``): an import either stores every curve it read or
none. Opening an empty file creates the schema and loads the built-in measurements once;
a ``meta`` row remembers that, so deleting a built-in curve is not undone on the next open.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from itertools import starmap
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from planner import collector
from planner.curves.cards import Card, MigProfile, builtin_catalogue, card_from_dict, clean_price
from planner.curves.curve import (
    MAX_TEXT,
    OPTIONAL_POINT_FIELDS,
    Curve,
    Point,
    clean_text,
)
from planner.demand.profiles import SHAPES, DemandProfile, clean_profile_name
from planner.errors import BadInput, NotFound
from planner.paths import measurements_dir
from planner.store.connection import StoreFile, timestamp


def _plan_text(params: Mapping[str, Any]) -> str:
    return json.dumps(dict(params), sort_keys=True, separators=(",", ":"))


def plan_key(params: Mapping[str, Any]) -> str:
    """The short id a plan with these stored parameters (``saved_params``) is saved
    under: the same plan, saved or not, has the same one."""
    return hashlib.sha256(_plan_text(params).encode("utf-8")).hexdigest()[:10]


@dataclass(frozen=True)
class SavedPlan:
    """A saved plan: its short id, the name it was saved under (if any), when, the
    headline it had then, and its parameters as stored (link parameter texts)."""

    id: str
    name: str | None
    created_at: datetime
    headline: str | None
    params: Mapping[str, Any]


_POINT_COLUMNS = ("batch", "latency_ms", *OPTIONAL_POINT_FIELDS)
_SELECT_CURVES = (
    "SELECT id, model, card, precision, resolution, mig_profile, source, created_at, environment, "
    "flag, renamed_from FROM curves"
)
_INSERT_CURVES = (
    "INSERT INTO curves (id, model, card, precision, resolution, mig_profile, source, "
    "created_at, environment, flag, renamed_from) SELECT unnest($1::VARCHAR[]), "
    "unnest($2::VARCHAR[]), unnest($3::VARCHAR[]), unnest($4::VARCHAR[]), "
    "unnest($5::VARCHAR[]), unnest($6::VARCHAR[]), unnest($7::VARCHAR[]), "
    "unnest($8::TIMESTAMP[]), unnest($9::VARCHAR[]), unnest($10::VARCHAR[]), "
    "unnest($11::VARCHAR[])"
)
# The points of an import go in from NumPy arrays the statement reads as a table
# (``_INCOMING``, registered on the write's own connection for the statement): 150,000
# points are sent in a few milliseconds where lists of Python values took a second. NaN
# stands for an empty spread cell (no stored figure is NaN: the checks refuse it).
_INCOMING = "incoming_points"
_INSERT_POINTS = (
    "INSERT INTO points (curve_id, batch, latency_ms, p10_ms, p50_ms, p90_ms, p99_ms, std_ms, "
    "n, memory_mb) SELECT curve_id, batch, latency_ms, nullif_nan(p10_ms), nullif_nan(p50_ms), "
    "nullif_nan(p90_ms), nullif_nan(p99_ms), nullif_nan(std_ms), nullif_nan(n), "
    "nullif_nan(memory_mb) FROM incoming_points"
)
_NULLIF_NAN = (
    "CREATE OR REPLACE TEMP MACRO nullif_nan(x) AS CASE WHEN isnan(x) THEN NULL ELSE x END"
)
_point_values = attrgetter(*_POINT_COLUMNS)
_SELECT_POINTS = (
    "SELECT curve_id, batch, latency_ms, p10_ms, p50_ms, p90_ms, p99_ms, std_ms, n, memory_mb "
    "FROM points WHERE curve_id IN (SELECT unnest($1::VARCHAR[])) ORDER BY curve_id, batch"
)


class Store(StoreFile):
    """A DuckDB-backed store of cards, curves and plans, shared by threads and processes.

    ``Store()`` uses ``PLANNER_DB`` or the per-user default; ``Store(path)`` a given file.
    The object holds no connection between operations (``planner.store.connection``);
    ``batch()`` holds one across a few of them. ``wait_s`` is how long an operation waits
    for a file another process holds (default ``PLANNER_DB_WAIT_S``, else 10 s).
    ``read_only`` is true when the user may not write the file. A new, empty file gets
    the card catalogue and the built-in curves unless ``load_builtins`` is false.
    """

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        load_builtins: bool = True,
        wait_s: float | None = None,
    ) -> None:
        super().__init__(path, wait_s=wait_s)
        if self.created and load_builtins:
            self._load_builtins()

    def _load_builtins(self) -> None:
        """Load the card catalogue and the built-in curves, once per store file."""
        from planner.curves.imports import ImportOptions, read_files

        files = sorted((measurements_dir() / "curves").glob("*.json"))
        result = read_files(
            [(f.name, f.read_bytes()) for f in files], ImportOptions(source="built-in")
        )
        with self.write() as cur:
            again = cur.execute("SELECT value FROM meta WHERE key = 'builtins_loaded'").fetchone()
            if again:
                return
            for card in builtin_catalogue():
                self._insert_card(cur, card)
            self._insert_curves(cur, result.curves)
            cur.execute("INSERT INTO meta VALUES ('builtins_loaded', ?)", [timestamp().isoformat()])

    # -- cards --------------------------------------------------------------------------

    def cards(self) -> list[Card]:
        """Every card, catalogue first, then by name."""
        return list(self.remembered(("cards",), self._read_cards))

    def _read_cards(self) -> list[Card]:
        with self.read() as cur:
            rows = cur.execute(
                "SELECT name, memory_gb, description, mig, mig_slices, price_per_hour, builtin "
                "FROM cards ORDER BY builtin DESC, name"
            ).fetchall()
            profiles = cur.execute(
                "SELECT card, name, slices, memory_gb, max_instances FROM mig_profiles "
                "ORDER BY card, position"
            ).fetchall()
        by_card: dict[str, list[MigProfile]] = {}
        for card, name, slices, memory, instances in profiles:
            by_card.setdefault(card, []).append(MigProfile(name, slices, memory, instances))
        return [
            Card(
                name=name,
                memory_gb=memory,
                description=description,
                mig=mig,
                mig_slices=slices,
                mig_profiles=tuple(by_card.get(name, ())),
                price_per_hour=price,
                builtin=builtin,
            )
            for name, memory, description, mig, slices, price, builtin in rows
        ]

    def card(self, name: str) -> Card:
        """The card called ``name`` (case-insensitive), or NotFound."""
        wanted = name.strip().lower()
        for card in self.cards():
            if card.name.lower() == wanted:
                return card
        raise NotFound(f"no card called {name!r}; `planner cards list` shows the cards")

    def set_price(self, name: str, usd_per_hour: object) -> Card:
        """Set a card's hourly price in USD (the only way prices enter the planner)."""
        price = clean_price(usd_per_hour)
        with self.batch():
            card = self.card(name)
            with self.write() as cur:
                cur.execute(
                    "UPDATE cards SET price_per_hour = ? WHERE name = ?", [price, card.name]
                )
            return self.card(card.name)

    def _insert_card(self, cur: duckdb.DuckDBPyConnection, card: Card) -> None:
        cur.execute(
            "INSERT INTO cards (name, memory_gb, description, mig, mig_slices, price_per_hour, "
            "builtin) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [
                card.name,
                card.memory_gb,
                card.description,
                card.mig,
                card.mig_slices,
                card.price_per_hour,
                card.builtin,
            ],
        )
        for position, profile in enumerate(card.mig_profiles):
            cur.execute(
                "INSERT INTO mig_profiles (card, name, slices, position, memory_gb, max_instances) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [
                    card.name,
                    profile.name,
                    profile.slices,
                    position,
                    profile.memory_gb,
                    profile.max_instances,
                ],
            )

    # -- curves -------------------------------------------------------------------------

    def add_curves(self, curves: Sequence[Curve]) -> list[Curve]:
        """Store curves atomically; a curve already stored (same id) is left as it is.

        Returns the stored curves (with creation times), in the order given. Many curves
        go in as a few bulk statements, not a statement per point.
        """
        with collector.paused(), self.write() as cur:  # see planner.collector
            ids, added = self._insert_curves(cur, curves)
            stored = self._curves_by_id(cur, [i for i in ids if i not in added])
        for curve_id, curve in stored.items():
            # Found under the id the import computed from the same fields (ids do not
            # change between versions: saved plans name their curves by id), so it need
            # not be hashed again for each of thousands of curves.
            curve.__dict__["id"] = curve_id  # where ``Curve.id`` keeps it once computed
        stored.update(added)
        return [stored[i] for i in ids]

    def _insert_curves(
        self, cur: duckdb.DuckDBPyConnection, curves: Iterable[Curve]
    ) -> tuple[list[str], dict[str, Curve]]:
        """Insert the curves not stored yet. Returns the ids of all of them, in order, and
        the ones inserted now as they read back (creation time set, environment through
        JSON). A curve's card takes the stored spelling of a known card; an unknown card
        is added."""
        known = dict(cur.execute("SELECT lower(name), name FROM cards").fetchall())
        ids: list[str] = []
        incoming: dict[str, Curve] = {}
        for curve in curves:
            card = known.get(curve.card.lower())
            if card is None:
                self._insert_card(
                    cur, card_from_dict({"name": curve.card, "description": "added by an import"})
                )
                card = known[curve.card.lower()] = curve.card
            if card != curve.card:
                curve = replace(curve, card=card)
            curve_id = curve.id
            ids.append(curve_id)
            incoming.setdefault(curve_id, curve)
        if not incoming:
            return ids, {}
        stored = {
            row[0]
            for row in cur.execute(
                "SELECT id FROM curves WHERE id IN (SELECT unnest($1::VARCHAR[]))",
                [list(incoming)],
            ).fetchall()
        }
        new = {i: c for i, c in incoming.items() if i not in stored}
        if not new:
            return ids, {}
        now = timestamp()
        created = [c.created_at.replace(tzinfo=None) if c.created_at else now for c in new.values()]
        environments = [
            json.dumps(dict(c.environment), sort_keys=True, default=str) for c in new.values()
        ]
        cur.execute(
            _INSERT_CURVES,
            [
                list(new),
                [c.model for c in new.values()],
                [c.card for c in new.values()],
                [c.precision for c in new.values()],
                [c.resolution for c in new.values()],
                [c.mig_profile for c in new.values()],
                [c.source for c in new.values()],
                created,
                environments,
                [c.flag for c in new.values()],
                [c.renamed_from for c in new.values()],
            ],
        )
        self._insert_points(cur, new)
        added = {
            curve_id: curve.recorded(when.replace(tzinfo=UTC), json.loads(environment))
            for (curve_id, curve), when, environment in zip(
                new.items(), created, environments, strict=True
            )
        }
        return ids, added

    @staticmethod
    def _insert_points(cur: duckdb.DuckDBPyConnection, curves: Mapping[str, Curve]) -> None:
        """Insert the points of these curves (by id) in one statement (see _INCOMING)."""
        owners = [i for i, c in curves.items() for _ in c.points]
        points = [p for c in curves.values() for p in c.points]
        table: dict[str, np.ndarray] = {"curve_id": np.array(owners, dtype=object)}
        for name, values in zip(
            _POINT_COLUMNS, zip(*map(_point_values, points), strict=True), strict=True
        ):
            if name == "batch":
                table[name] = np.array(values, dtype=np.int64)
            elif values.count(None) == len(values):  # most files leave the spread empty
                table[name] = np.full(len(values), np.nan)
            else:
                table[name] = np.array(
                    [np.nan if v is None else v for v in values], dtype=np.float64
                )
        cur.execute(_NULLIF_NAN)
        cur.register(_INCOMING, table)
        try:
            cur.execute(_INSERT_POINTS)
        finally:
            cur.unregister(_INCOMING)

    def curves(
        self,
        *,
        model: str | None = None,
        card: str | None = None,
        precision: str | None = None,
    ) -> list[Curve]:
        """Stored curves, optionally filtered, ordered by model, card, resolution, precision."""
        key = ("curves", model, card, precision)
        return list(self.remembered(key, lambda: self._read_curves(model, card, precision)))

    def _read_curves(
        self, model: str | None, card: str | None, precision: str | None
    ) -> list[Curve]:
        with self.read() as cur:
            rows = cur.execute(
                _SELECT_CURVES + " WHERE ($model IS NULL OR lower(model) = lower($model))"
                " AND ($card IS NULL OR lower(card) = lower($card))"
                " AND ($precision IS NULL OR lower(precision) = lower($precision))"
                " ORDER BY model, card, mig_profile NULLS FIRST, resolution DESC, precision,"
                " created_at, id",
                {"model": model or None, "card": card or None, "precision": precision or None},
            ).fetchall()
            points = self._points(cur, [r[0] for r in rows])
        return [self._curve_from_row(row, points.get(row[0], ())) for row in rows]

    def curve(self, curve_id: str) -> Curve:
        """The curve with this id, or NotFound."""
        text = clean_text(curve_id, "curve id") or ""

        def read() -> Curve:
            with self.read() as cur:
                found = self._curves_by_id(cur, [text])
            if text not in found:
                raise NotFound(f"no curve with id {text!r}; `planner curves list` shows the ids")
            return found[text]

        return self.remembered(("curve", text), read)

    def stored_curve_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of these curve ids the store holds, in one read however many there are
        (an import asks this of every curve it read)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return set()
        with self.read() as cur:
            rows = cur.execute(
                "SELECT id FROM curves WHERE id IN (SELECT unnest($1::VARCHAR[]))", [wanted]
            ).fetchall()
        return {row[0] for row in rows}

    def _curves_by_id(self, cur: duckdb.DuckDBPyConnection, ids: Sequence[str]) -> dict[str, Curve]:
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        rows = cur.execute(
            _SELECT_CURVES + " WHERE id IN (SELECT unnest($1::VARCHAR[]))", [wanted]
        ).fetchall()
        points = self._points(cur, [r[0] for r in rows])
        return {row[0]: self._curve_from_row(row, points.get(row[0], ())) for row in rows}

    @staticmethod
    def _points(cur: duckdb.DuckDBPyConnection, ids: Sequence[str]) -> dict[str, tuple[Point, ...]]:
        if not ids:
            return {}
        out: dict[str, list[Point]] = {}
        rows = cur.execute(_SELECT_POINTS, [list(ids)]).fetchall()
        for curve_id, point in zip(
            map(itemgetter(0), rows),
            starmap(Point, map(itemgetter(slice(1, None)), rows)),
            strict=True,
        ):
            out.setdefault(curve_id, []).append(point)
        return {k: tuple(v) for k, v in out.items()}

    @staticmethod
    def _curve_from_row(row: Sequence[Any], points: tuple[Point, ...]) -> Curve:
        _id, model, card, precision, resolution, mig, source, created, environment = row[:9]
        flag, renamed_from = row[9:11]
        return Curve(
            model=model,
            card=card,
            precision=precision,
            resolution=resolution,
            points=points,
            mig_profile=mig,
            source=source,
            created_at=created.replace(tzinfo=UTC) if created else None,
            environment=json.loads(environment or "{}"),
            flag=flag,
            renamed_from=renamed_from,
        )

    def rename_curve(
        self, curve_id: str, *, model: str | None = None, card: str | None = None
    ) -> Curve:
        """Store the curve's points under another model or card name, as a new curve (new
        id, ``renamed_from`` the old one); the old curve stays for the saved plans that
        use it, as an edit leaves it. Returns the stored new curve."""
        with self.batch():
            renamed = self.curve(curve_id).renamed(model=model, card=card)
            return self.add_curves([renamed])[0]

    def plans_using(self, curve_id: str) -> list[str]:
        """Ids of saved plans whose parameters name this curve."""
        with self.read() as cur:
            rows = cur.execute(
                "SELECT id FROM plans WHERE json_extract_string(params, '$.curve') = ? ORDER BY id",
                [curve_id],
            ).fetchall()
        return [r[0] for r in rows]

    def delete_curve(self, curve_id: str, *, force: bool = False) -> Curve:
        """Delete a curve and its points. A curve that saved plans use needs ``force``."""
        with self.batch():
            curve = self.curve(curve_id)
            users = self.plans_using(curve.id)
            if users and not force:
                raise BadInput(
                    f"curve {curve.id} is used by {len(users)} saved plan(s) "
                    f"({', '.join(users[:5])}); confirm to delete it anyway"
                )
            with self.write() as cur:
                cur.execute("DELETE FROM points WHERE curve_id = ?", [curve.id])
                cur.execute("DELETE FROM curves WHERE id = ?", [curve.id])
        return curve

    # -- plans --------------------------------------------------------------------------

    def save_plan(
        self, params: Mapping[str, Any], *, name: str | None = None, headline: str | None = None
    ) -> str:
        """Store plan parameters under a short id derived from them (saving twice is one
        plan), with an optional ``name`` and the ``headline`` the plan had; saving again
        with a name or headline sets them."""
        text = _plan_text(params)
        plan_id = plan_key(params)
        label = clean_text(name, "plan name", required=False)
        said = clean_text(headline[:MAX_TEXT] if headline else None, "headline", required=False)
        with self.write() as cur:
            cur.execute(
                "INSERT INTO plans (id, params, created_at, name, headline) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
                "name = coalesce(excluded.name, plans.name), "
                "headline = coalesce(excluded.headline, plans.headline)",
                [plan_id, text, timestamp(), label, said],
            )
        return plan_id

    def plans(self) -> list[SavedPlan]:
        """Every saved plan, newest first."""
        with self.read() as cur:
            rows = cur.execute(
                "SELECT id, name, created_at, headline, params FROM plans "
                "ORDER BY created_at DESC, id"
            ).fetchall()
        return [
            SavedPlan(
                id=plan_id,
                name=name,
                created_at=created.replace(tzinfo=UTC),
                headline=headline,
                params=json.loads(params),
            )
            for plan_id, name, created, headline, params in rows
        ]

    def plan(self, plan_id: str) -> dict[str, Any]:
        """The parameters saved under ``plan_id``, or NotFound."""
        with self.read() as cur:
            row = cur.execute("SELECT params FROM plans WHERE id = ?", [plan_id]).fetchone()
        if row is None:
            raise NotFound(f"no saved plan with id {plan_id!r}")
        loaded: dict[str, Any] = json.loads(row[0])
        return loaded

    # -- demand profiles ----------------------------------------------------------------

    def save_profile(self, profile: DemandProfile, *, replace: bool = False) -> DemandProfile:
        """Store a demand profile under its name. A name already stored with other values
        needs ``replace`` (saved plans name their profile, so replacing it changes what
        they show); a built-in shape's name cannot be taken."""
        if profile.name in SHAPES:
            raise BadInput(f"{profile.name!r} is the name of a built-in shape; choose another name")
        row = [
            profile.name,
            profile.step_minutes,
            list(profile.sessions),
            profile.source,
            profile.start,
            profile.description,
            timestamp(),
        ]
        with self.write() as cur:
            found = cur.execute(
                "SELECT step_minutes, sessions FROM demand_profiles WHERE name = ?",
                [profile.name],
            ).fetchone()
            if found is not None:
                if (found[0], tuple(found[1])) == (profile.step_minutes, profile.sessions):
                    return self.profile(profile.name)
                if not replace:
                    raise BadInput(
                        f"a profile called {profile.name!r} is stored with other values; "
                        "choose another name, or replace it (saved plans that name it will "
                        "show the new values)"
                    )
                cur.execute("DELETE FROM demand_profiles WHERE name = ?", [profile.name])
            cur.execute("INSERT INTO demand_profiles VALUES (?, ?, ?, ?, ?, ?, ?)", row)
        return self.profile(profile.name)

    def profile(self, name: str) -> DemandProfile:
        """The stored demand profile called ``name``, or NotFound."""
        try:
            key = clean_profile_name(name)
        except BadInput:
            raise NotFound(f"no stored demand profile called {str(name)[:40]!r}") from None

        def read() -> DemandProfile:
            with self.read() as cur:
                row = cur.execute(
                    "SELECT name, step_minutes, sessions, source, start_time, description "
                    "FROM demand_profiles WHERE name = ?",
                    [key],
                ).fetchone()
            if row is None:
                raise NotFound(
                    f"no stored demand profile called {key!r}; `planner profiles list` shows them"
                )
            return _profile_from_row(row)

        return self.remembered(("profile", key), read)

    def profiles(self) -> list[DemandProfile]:
        """Every stored demand profile, by name."""
        with self.read() as cur:
            rows = cur.execute(
                "SELECT name, step_minutes, sessions, source, start_time, description "
                "FROM demand_profiles ORDER BY name"
            ).fetchall()
        return [_profile_from_row(row) for row in rows]

    def plans_using_profile(self, name: str) -> list[str]:
        """Ids of saved plans whose parameters name this demand profile."""
        with self.read() as cur:
            rows = cur.execute(
                "SELECT id FROM plans WHERE json_extract_string(params, '$.profile') = ? "
                "ORDER BY id",
                [name],
            ).fetchall()
        return [r[0] for r in rows]

    def delete_profile(self, name: str, *, force: bool = False) -> DemandProfile:
        """Delete a stored demand profile; one that saved plans name needs ``force``."""
        with self.batch():
            profile = self.profile(name)
            users = self.plans_using_profile(profile.name)
            if users and not force:
                raise BadInput(
                    f"profile {profile.name} is named by {len(users)} saved plan(s) "
                    f"({', '.join(users[:5])}); confirm to delete it anyway"
                )
            with self.write() as cur:
                cur.execute("DELETE FROM demand_profiles WHERE name = ?", [profile.name])
        return profile


def _profile_from_row(row: Sequence[Any]) -> DemandProfile:
    name, step, sessions, source, start, description = row
    return DemandProfile(
        name=name,
        sessions=tuple(sessions),
        step_minutes=step,
        source=source,
        start=start,
        description=description,
    )
