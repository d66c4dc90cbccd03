#!/usr/bin/env bash
# Mutation testing of the simulator and the recommendation with mutmut: it changes the code
# one small edit at a time (a `<` for a `<=`, a constant, a dropped argument) and runs the
# tests that reach the edited function; a mutant no test notices points at a missing test.
# What is mutated and which tests run is configured under [tool.mutmut] in pyproject.toml
# (the pure-Python modules only; docs/design.md, "Mutation testing", says why).
#
# Not part of CI or scripts/test.sh: every configured mutant takes hours on two cores. The
# run stops after a time limit and keeps what it checked in mutants/ (git-ignored); the next
# run goes on with the mutants not yet checked.
#
#   bash scripts/mutation.sh [MINUTES] [MUTANT-PATTERN...]
#
# MINUTES (default 35) bounds the wall time. Patterns pick mutants by name, e.g.
# 'planner.sim.arrivals.*' or 'planner.plan.outcomes.x_failures__mutmut_*' (a named
# mutant is checked again even if it was before); by default every configured one.
# MUTMUT_CHILDREN sets the number of mutants tested at once (default 1, for a shared
# machine); VENV the environment (default .venv; mutmut is installed there when missing).
# Afterwards it prints the score per module. `mutmut results` lists the survivors,
# `mutmut show NAME` shows one mutant's change.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${VENV:-.venv}
minutes=${1:-35}
shift || true
if [ ! -x "$venv/bin/mutmut" ]; then
  "$venv/bin/pip" install -q --disable-pip-version-check -c constraints/test.txt -e '.[mutation]'
fi

echo "mutmut $("$venv/bin/mutmut" --version | awk '{print $NF}') on $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M') UTC, at most $minutes min"
status=0
# SIGINT, to the whole process group (timeout's default), lets mutmut stop its workers and
# keep every result it has; whatever still runs a minute later is killed.
timeout --signal=INT --kill-after=60 "${minutes}m" \
  "$venv/bin/mutmut" run --max-children "${MUTMUT_CHILDREN:-1}" "$@" || status=$?
if [ "$status" -eq 124 ]; then
  echo "Stopped after $minutes min; the mutants not checked are counted below."
elif [ "$status" -ne 0 ]; then
  echo "mutmut failed (exit status $status)" >&2
  exit "$status"
fi
"$venv/bin/python" scripts/mutation_score.py
