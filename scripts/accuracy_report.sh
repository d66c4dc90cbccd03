#!/usr/bin/env bash
# Regenerate docs/accuracy.md: the reference worker against the planner's predictions on
# this machine's CPU (about 10 minutes; needs the `measure` extra, i.e. PyTorch), then a
# real Triton server against the same predictions (scripts/accuracy_triton.py).
#
#   bash scripts/accuracy_report.sh [OUT.md]
#
# The load test goes into a store of its own (ACCURACY_DB, default a fresh temporary
# file), so your store is not touched; `planner --db FILE loadtest show 1` reads it back.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/accuracy.md}
planner=${PLANNER:-.venv/bin/planner}
export PLANNER_DB=${ACCURACY_DB:-$(mktemp -d)/accuracy.duckdb}

# The reference model at 32x18 on one PyTorch thread takes about 10 ms at batch 1 and
# 32-35 ms at batch 8 here: batch times like a real GPU worker's, where scheduling, sleeps
# and Python overhead weigh as they do there. At 40 fps per session batch 5 takes about
# one frame interval, so batch-all goes from ample (1-5 sessions) to saturated (6-8).
# One thread for the model and one CPU worker thread for pre/post work, so that the two
# share the 2 cores in the open rather than fighting over them unseen.
"$planner" loadtest \
    --sessions 1-8 --policies batch-all,oldest-first,round-robin,triton \
    --resolution 32x18 --threads 1 --camera 320x180 --cpu-workers 1 \
    --fps 40 --duration-s 10 \
    --find-cap 12 --budget-ms 50 --min-fps 38 \
    --report "$out"

{ echo; cat scripts/accuracy_notes.md; } >> "$out"
# The summary on the first screen, and the section against published multi-stream results
# (its table from `planner bench --only published`, kept in scripts/accuracy_published.md).
{ head -n 2 "$out"; cat scripts/accuracy_summary.md; echo; tail -n +3 "$out"; echo
  cat scripts/accuracy_published.md; } > "$out.tmp" && mv "$out.tmp" "$out"
echo "wrote $out (load test stored in $PLANNER_DB)"

# Then the section "Against a real Triton server" (about 10 minutes more; needs PyTriton,
# which scripts/test.sh installs): the suite's Triton server under two batcher settings.
python=${PYTHON:-.venv/bin/python}
if "$python" -c "import pytriton" 2>/dev/null; then
    "$python" scripts/accuracy_triton.py "$out"
else
    echo "PyTriton is not installed: the section 'Against a real Triton server' is left out" \
        "(pip install --no-deps -r constraints/triton.txt, then python scripts/accuracy_triton.py)"
fi
