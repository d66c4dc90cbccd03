#!/usr/bin/env bash
# What a user installs works. In a fresh virtual environment of its own (none of the
# system's or the test environment's packages), PyTorch's CPU build and then the project
# with the extras the README names, `pip install -e '.[measure,cluster,server]'`, resolved
# afresh by pip; then the dashboard runs a page that draws charts and a table (Streamlit,
# pyarrow, NumPy, Numba and DuckDB together) and `planner study --engine ray` runs a study
# on a local Ray. An extra that pulls NumPy 1 beside the others, or a pin that conflicts,
# fails here, as it would for a user.
#
#   bash scripts/check_user_install.sh install VENV   # the fresh environment
#   bash scripts/check_user_install.sh check VENV     # the dashboard and a Ray study in it
#   bash scripts/check_user_install.sh                # both, in a temporary folder
#
# scripts/test.sh runs `install` beside the test suite and `check` after it.
set -euo pipefail
cd "$(dirname "$0")/.."

install() {
  rm -rf "$1"
  python3 -m venv "$1"
  "$1/bin/pip" install -q --disable-pip-version-check torch==2.13.0
  "$1/bin/pip" install -q --disable-pip-version-check -e '.[measure,cluster,server]'
  "$1/bin/pip" check
}

check() {
  local venv=$1 work
  work=$(mktemp -d)
  # A store, a home (Ray writes under ~/.ray) and no Ray token of the user's.
  PLANNER_DB="$work/planner.duckdb" HOME="$work" RAY_AUTH_MODE=disabled \
    "$venv/bin/python" - "$work" <<'PY'
import json, subprocess, sys
from pathlib import Path

from streamlit.testing.v1 import AppTest

work = Path(sys.argv[1])
at = AppTest.from_file("app.py", default_timeout=300)
at.query_params.update({"sessions": "6", "duration_s": "5"})
at.switch_page("dashboard/pages/simulate.py")
at.run()
assert not at.exception, at.exception
assert at.get("plotly_chart") and at.get_by_key("sim_summary"), "the Simulate page drew nothing"
print("dashboard: the Simulate page runs")

study = work / "study.json"
study.write_text(json.dumps({
    "name": "install check",
    "curves": {"filters": [{"model": "ball-detector", "card": "server-24gb"}]},
    "fixed": {"seeds": 2, "duration_s": 5, "price_per_hour": 2.0},
    "axes": {"budget_ms": [50], "policies": ["batch-all"]},
}))
planner = Path(sys.executable).with_name("planner")
done = subprocess.run([planner, "study", study, "--engine", "ray", "--workers", "2", "--json"],
                      capture_output=True, text=True)
assert done.returncode == 0, done.stderr[-3000:]
summary = json.loads(done.stdout)
assert summary["failed"] == 0 and summary["computed"] == 1, summary
print("planner study --engine ray: 1 cell computed on a local Ray")
PY
  rm -rf "$work"
}

case "${1:-}" in
  install) install "$2" ;;
  check) check "$2" ;;
  "")
    venv=$(mktemp -d)
    trap 'rm -rf "$venv"' EXIT
    install "$venv"
    check "$venv"
    ;;
  *) echo "usage: $0 [install VENV | check VENV]" >&2; exit 2 ;;
esac
