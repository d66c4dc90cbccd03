"""The store's schema: every table of the planner's DuckDB file, and one list of migrations
that takes a file written by any earlier planner to this one.

Every table lives here, including those that other packages fill (calibrations, load
tests, studies), so a store is created whole and a schema version says what a file holds.
A new file gets ``TABLES`` and the current version; an older one runs each step of
``MIGRATIONS`` above its version, in order. Every step is idempotent (``IF NOT EXISTS``),
so a file that reached part of the way is finished safely.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb

from planner.curves.cards import builtin_catalogue

SCHEMA_VERSION = 6
"""Schema versions: 2 added MIG profiles' memory and instance counts; 3 curve flags,
renames and the names of saved plans; 4 demand profiles; 5 the tables of calibrations,
load tests and studies (created on first use before); 6 a calibration's fitted spread of
batch times."""

TABLES = [
    """CREATE TABLE IF NOT EXISTS schema_version (
        version INTEGER NOT NULL,
        applied_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS cards (
        name VARCHAR PRIMARY KEY,
        memory_gb DOUBLE,
        description VARCHAR NOT NULL DEFAULT '',
        mig BOOLEAN NOT NULL DEFAULT FALSE,
        mig_slices INTEGER,
        price_per_hour DOUBLE,
        builtin BOOLEAN NOT NULL DEFAULT FALSE
    )""",
    """CREATE TABLE IF NOT EXISTS mig_profiles (
        card VARCHAR NOT NULL,
        name VARCHAR NOT NULL,
        slices INTEGER NOT NULL,
        position INTEGER NOT NULL,
        memory_gb DOUBLE,
        max_instances INTEGER,
        PRIMARY KEY (card, name)
    )""",
    """CREATE TABLE IF NOT EXISTS curves (
        id VARCHAR PRIMARY KEY,
        model VARCHAR NOT NULL,
        card VARCHAR NOT NULL,
        precision VARCHAR,
        resolution VARCHAR,
        mig_profile VARCHAR,
        source VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        environment VARCHAR NOT NULL DEFAULT '{}',
        flag VARCHAR,
        renamed_from VARCHAR
    )""",
    """CREATE TABLE IF NOT EXISTS points (
        curve_id VARCHAR NOT NULL,
        batch INTEGER NOT NULL,
        latency_ms DOUBLE NOT NULL,
        p10_ms DOUBLE,
        p50_ms DOUBLE,
        p90_ms DOUBLE,
        p99_ms DOUBLE,
        std_ms DOUBLE,
        n INTEGER,
        memory_mb DOUBLE,
        PRIMARY KEY (curve_id, batch)
    )""",
    """CREATE TABLE IF NOT EXISTS plans (
        id VARCHAR PRIMARY KEY,
        params VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        name VARCHAR,
        headline VARCHAR
    )""",
]

# Schema 4: demand profiles by name (``planner.demand.profiles``). Created by the migration
# step as well as for a new file, so it does not matter which version a file comes from.
_DEMAND_PROFILES = """CREATE TABLE IF NOT EXISTS demand_profiles (
    name VARCHAR PRIMARY KEY,
    step_minutes DOUBLE NOT NULL,
    sessions DOUBLE[] NOT NULL,
    source VARCHAR NOT NULL,
    start_time VARCHAR,
    description VARCHAR NOT NULL DEFAULT '',
    created_at TIMESTAMP NOT NULL
)"""
TABLES.append(_DEMAND_PROFILES)


# Schema 5: what calibrations (``planner.store.calibrations``), load tests
# (``planner.validate.loadtest_store``) and studies (``planner.studies.store``) keep. Before
# schema 5 they were created the first time something was stored, so an older file may
# have some of them already.
ADD_ONS = [
    """CREATE TABLE IF NOT EXISTS calibrations (
        id VARCHAR PRIMARY KEY,
        curve_id VARCHAR NOT NULL,
        loadtest_id INTEGER,
        created_at TIMESTAMP,
        a_ms DOUBLE NOT NULL,
        c_ms DOUBLE NOT NULL,
        d_ms DOUBLE NOT NULL,
        batches INTEGER NOT NULL,
        frames INTEGER NOT NULL,
        sizes INTEGER[] NOT NULL,
        note VARCHAR NOT NULL,
        spread_sigma DOUBLE
    )""",
    """CREATE TABLE IF NOT EXISTS studies (
        name VARCHAR PRIMARY KEY,
        spec VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        updated_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS study_members (
        study VARCHAR NOT NULL,
        key VARCHAR NOT NULL,
        position INTEGER NOT NULL,
        curve_id VARCHAR NOT NULL,
        coordinates VARCHAR NOT NULL,
        params VARCHAR NOT NULL,
        PRIMARY KEY (study, key)
    )""",
    """CREATE TABLE IF NOT EXISTS study_cells (
        key VARCHAR PRIMARY KEY,
        status VARCHAR NOT NULL,
        error VARCHAR,
        attempts INTEGER NOT NULL,
        outputs VARCHAR,
        seats_per_card INTEGER,
        cost_per_seat_hour DOUBLE,
        latency_ms DOUBLE,
        elapsed_s DOUBLE,
        finished_at TIMESTAMP NOT NULL,
        planner_version VARCHAR NOT NULL,
        calibration VARCHAR NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS loadtests (
        id INTEGER PRIMARY KEY,
        created_at TIMESTAMP NOT NULL,
        source VARCHAR NOT NULL,
        curve_id VARCHAR NOT NULL,
        description VARCHAR NOT NULL DEFAULT '',
        options VARCHAR NOT NULL,
        environment VARCHAR NOT NULL,
        pre_ms DOUBLE NOT NULL,
        post_ms DOUBLE NOT NULL,
        interrupted BOOLEAN NOT NULL,
        caps VARCHAR NOT NULL,
        applied_calibration VARCHAR
    )""",
    """CREATE TABLE IF NOT EXISTS loadtest_runs (
        loadtest_id INTEGER NOT NULL,
        position INTEGER NOT NULL,
        sessions INTEGER NOT NULL,
        policy VARCHAR NOT NULL,
        seed BIGINT NOT NULL,
        scenario VARCHAR NOT NULL,
        measured VARCHAR NOT NULL,
        ranges VARCHAR NOT NULL,
        predicted VARCHAR NOT NULL,
        calibrated VARCHAR,
        PRIMARY KEY (loadtest_id, position)
    )""",
    """CREATE TABLE IF NOT EXISTS loadtest_frames (
        loadtest_id INTEGER NOT NULL,
        position INTEGER NOT NULL,
        session INTEGER NOT NULL,
        frame INTEGER NOT NULL,
        capture_ms DOUBLE,
        arrival_ms DOUBLE,
        arrived_ms DOUBLE,
        pre_start_ms DOUBLE,
        pre_end_ms DOUBLE,
        ready_ms DOUBLE,
        batch INTEGER NOT NULL,
        batch_size INTEGER NOT NULL,
        batch_start_ms DOUBLE,
        batch_end_ms DOUBLE,
        post_start_ms DOUBLE,
        post_end_ms DOUBLE,
        status VARCHAR NOT NULL
    )""",
]
TABLES.extend(ADD_ONS)


def add_demand_profiles(cur: duckdb.DuckDBPyConnection) -> None:
    """Schema 4: demand profiles stored by name (from schema 2 or 3 alike)."""
    cur.execute(_DEMAND_PROFILES)


def add_mig_profile_memory(cur: duckdb.DuckDBPyConnection) -> None:
    """Schema 2: each MIG profile's memory and most instances per card, filled in for
    the catalogue's cards."""
    cur.execute("ALTER TABLE mig_profiles ADD COLUMN IF NOT EXISTS memory_gb DOUBLE")
    cur.execute("ALTER TABLE mig_profiles ADD COLUMN IF NOT EXISTS max_instances INTEGER")
    for card in builtin_catalogue():
        for profile in card.mig_profiles:
            cur.execute(
                "UPDATE mig_profiles SET memory_gb = ?, max_instances = ? "
                "WHERE card = ? AND name = ?",
                [profile.memory_gb, profile.max_instances, card.name, profile.name],
            )


def add_flags_and_plan_names(cur: duckdb.DuckDBPyConnection) -> None:
    """Schema 3: a curve's flag (a failed drift check) and the curve it renames; a
    saved plan's name and the headline it had when it was saved."""
    cur.execute("ALTER TABLE curves ADD COLUMN IF NOT EXISTS flag VARCHAR")
    cur.execute("ALTER TABLE curves ADD COLUMN IF NOT EXISTS renamed_from VARCHAR")
    cur.execute("ALTER TABLE plans ADD COLUMN IF NOT EXISTS name VARCHAR")
    cur.execute("ALTER TABLE plans ADD COLUMN IF NOT EXISTS headline VARCHAR")
    # Curves measured before the flag existed carry their drift warning in the
    # environment: flag them as a new measurement would be.
    cur.execute(
        "UPDATE curves SET flag = 'drift check failed: ' || "
        "json_extract_string(environment, '$.drift_warning') "
        "WHERE flag IS NULL AND json_extract_string(environment, '$.drift_warning') <> ''"
    )


def add_calibrations_loadtests_and_studies(cur: duckdb.DuckDBPyConnection) -> None:
    """Schema 5: the tables that were created on first use before, made part of the
    schema (a file that has some of them keeps them as they are)."""
    for statement in ADD_ONS:
        cur.execute(statement)


def add_calibration_spread(cur: duckdb.DuckDBPyConnection) -> None:
    """Schema 6: the spread of batch times a calibration fitted (``spread_sigma``; NULL for
    calibrations fitted before, which plans keep running without it)."""
    cur.execute("ALTER TABLE calibrations ADD COLUMN IF NOT EXISTS spread_sigma DOUBLE")


MIGRATIONS: tuple[tuple[int, Callable[[duckdb.DuckDBPyConnection], None]], ...] = (
    (2, add_mig_profile_memory),
    (3, add_flags_and_plan_names),
    (4, add_demand_profiles),
    (5, add_calibrations_loadtests_and_studies),
    (6, add_calibration_spread),
)
"""Each schema version after the first and the step that reaches it from the one before."""
