#!/usr/bin/env bash
# Install everything the test suite needs into .venv and run all of it:
# Debian's Chromium (for the real-browser journey), PyTorch's CPU build, the project with
# its `dev`, `measure` and `cluster` extras at the pinned versions, then ruff, mypy, the
# import contracts of pyproject.toml (lint-imports) and pytest. Beside the suite, what a
# user installs is installed afresh in an environment of its own and, after the suite,
# checked to run the dashboard and a Ray study (scripts/check_user_install.sh).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k store`.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends \
    chromium chromium-headless-shell fonts-liberation >/dev/null
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
# torch first, exactly the pinned release, so the permissive `measure` extra adds nothing.
.venv/bin/pip install -q --disable-pip-version-check torch==2.13.0
.venv/bin/pip install -q --disable-pip-version-check -c constraints/test.txt -e '.[dev,measure,cluster]'
# A real Triton for the server load tests, the exact set with --no-deps (see the file).
.venv/bin/pip install -q --disable-pip-version-check --no-deps -r constraints/triton.txt

# The user's install, resolved afresh: it runs while the checks and the suite below do
# (mostly waiting on the disk and the network), so CI pays for it little more than once.
user_venv=$(mktemp -d)
user_log="$user_venv.log"
bash scripts/check_user_install.sh install "$user_venv/venv" >"$user_log" 2>&1 &
user_install=$!
trap 'kill "$user_install" 2>/dev/null || true; rm -rf "$user_venv" "$user_log"' EXIT

.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/lint-imports --no-cache
.venv/bin/python -m pytest "$@"

if ! wait "$user_install"; then
  cat "$user_log" >&2
  echo "the user's install (pip install -e '.[measure,cluster,server]') failed" >&2
  exit 1
fi
bash scripts/check_user_install.sh check "$user_venv/venv"
