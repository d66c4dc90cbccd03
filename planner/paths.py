"""Where the planner's files live: the store and the built-in measurements."""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def measurements_dir() -> Path:
    """The built-in measurements: ``measurements/`` in a source checkout, else the copy
    packed into the wheel."""
    for candidate in (_PACKAGE / "_measurements", _PACKAGE.parent / "measurements"):
        if (candidate / "cards.json").is_file():
            return candidate
    raise FileNotFoundError("the built-in measurements folder is missing from this install")


def default_store_path() -> Path:
    """``PLANNER_DB`` if set, else ``planner.duckdb`` in the per-user data directory."""
    configured = os.environ.get("PLANNER_DB", "").strip()
    if configured:
        if "://" in configured:  # Path would fold "s3://b/x" into "s3:/b/x"; say it as given
            from planner.errors import StoreError

            raise StoreError(
                f"PLANNER_DB={configured[:80]!r} is a URL; the store is a local file: point "
                "PLANNER_DB or --db at a file"
            )
        return Path(configured).expanduser()
    # Imported here so that commands which never open a store (``planner measure`` on a
    # GPU host with only PyTorch installed) do not need it.
    import platformdirs

    return Path(platformdirs.user_data_dir("gpu-seat-planner", appauthor=False)) / "planner.duckdb"
