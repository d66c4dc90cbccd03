#!/usr/bin/env bash
# Measure the built-in reference model on this machine's CUDA GPU the way the study
# measured its ball detector (512x288, FP16 and FP32, batches 1 to 16; warm-up 10, then
# 3 rounds x 30 calls per batch), and put everything a reviewer needs into one folder:
#
#   reference-512x288.csv    the curves in the planner's upload CSV format
#   reference-512x288.json   the same curves with all their environment metadata
#                            (`planner curves import` reads either)
#   measure.log              the per-point progress lines and any warnings
#   bench-measure.json       `planner bench --only measure`: the harness's timing against
#                            torch.utils.benchmark on the same work
#   nvidia-smi.txt           `nvidia-smi -q`, when nvidia-smi is present
#
# Usage: bash scripts/measure_reference.sh OUTDIR [MEASURE OPTION...]
# Options after OUTDIR go to `planner measure` and override the ones above, e.g. a quick
# dry run on the CPU: ... OUTDIR --device cpu --resolution 64x36 --batches 1,2 --rounds 1
# Runs from a checkout without installing the planner: it needs Python with PyTorch (a
# CUDA build) and NumPy; nothing is stored in a database. PYTHON picks the interpreter
# (default python3). A few minutes on a current datacenter GPU.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: bash scripts/measure_reference.sh OUTDIR [MEASURE OPTION...]" >&2
  exit 2
fi
mkdir -p "$1"
out="$(cd "$1" && pwd)"
shift
python="${PYTHON:-python3}"
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

"$python" -m planner measure --device cuda --resolution 512x288 --precision fp16,fp32 \
  --batches 1,2,3,4,6,8,12,16 --warmup 10 --rounds 3 --repetitions 30 \
  --out "$out/reference-512x288.csv" --json "$@" \
  >"$out/reference-512x288.json" 2> >(tee "$out/measure.log" >&2)

"$python" -m planner bench --only measure --json >"$out/bench-measure.json"

if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi -q >"$out/nvidia-smi.txt" 2>&1 || true
fi
echo "wrote $out" >&2
