#!/usr/bin/env bash
# Regenerate docs/accuracy.md: the reference worker against the planner's predictions on
# this machine's CPU (about 10 minutes; needs the `measure` extra, i.e. PyTorch).
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

# The reference model at 32x18 on one PyTorch thread takes about 11 ms at batch 1 and
# 35 ms at batch 8 here: batch times like a real GPU worker's, where scheduling, sleeps
# and Python overhead weigh as they do there. At 40 fps per session batch 5 takes about
# one frame interval, so the CPU goes from ample (1-4 sessions) to saturated (6-8).
# One thread for the model and one CPU worker thread for pre/post work, so that the two
# share the 2 cores in the open rather than fighting over them unseen.
"$planner" loadtest \
    --sessions 1-8 --policies batch-all,oldest-first,round-robin,triton \
    --resolution 32x18 --threads 1 --camera 320x180 --cpu-workers 1 \
    --fps 40 --duration-s 10 \
    --find-cap 12 --budget-ms 50 --min-fps 38 \
    --report "$out"

cat >> "$out" <<'NOTE'
## Why these settings

- **The input.** The reference model at 32x18 on one PyTorch thread takes about 11 ms at
  batch 1 and 35 ms at batch 8 on this CPU: batch times like a real GPU worker's (a few
  ms to a few tens of ms), where the scheduler's decisions, the arrival thread's sleeps
  and Python's overhead weigh as they do on a GPU. At the study's 512x288 one batch takes
  seconds here, and every figure would be about the model alone.
- **The frame rate.** At 40 fps per session, batch 5 takes about one frame interval, so
  the device goes from ample (1-4 sessions: every session gets its full rate) to
  saturated (6-8) inside the session range; only the saturated runs count in the errors.
- **Threads.** PyTorch runs the model on one thread and the CPU work (a 320x180 uint8
  frame resized and normalised before the model, the heatmap's arg-max after it) runs on
  one worker thread, so that on 2 cores the two do not fight unseen; the arrival thread
  and the device loop's Python share the same cores, which the simulator does not model
  and the calibration's `a` and `d` absorb.
- **Regenerate** with `bash scripts/accuracy_report.sh` (about 10 minutes). For a GPU,
  `python scripts/accuracy_gpu.py --out DIR` on the machine with the card writes a bundle
  and the `planner loadtest import` command that makes the same page from it.
NOTE
echo "wrote $out (load test stored in $PLANNER_DB)"
