#!/usr/bin/env bash
# Ground truth at the papers' size on one accelerator: benchmarks/planted_truth.py at N = P = 500 (T = 0.01), the
# sigmoidal net (y− = ½, one and two hidden layers) and the ReLU net (y− = −½) with SNAPER, NUTS and the units
# sampler (not on the two-layer net), 16 chains per family; each combination gets 50 s, the whole call 420 s
# (--deadline: nothing starts after it) and `timeout` stops it at 470 s; the result files are rewritten after every
# combination, so a stopped call keeps the finished rows.
#   SIZE=paper bash benchmarks/planted_truth_gpu.sh    (default; on one H100/H200, within 8 minutes)
#   SIZE=ci    bash benchmarks/planted_truth_gpu.sh    (N = P = 8, 4 chains, a few steps, on a CPU; tested)
# OUT sets the output stem (default benchmarks/results/planted_truth_gpu_$SIZE; it must not exist); PYTHON the
# interpreter.  Extra arguments go to planted_truth.py (e.g. --samplers snaper,units).
set -euo pipefail
cd "$(dirname "$0")/.."
size=${SIZE:-paper}
case "$size" in
  paper) args=(--sizes 500 --chains 16 --warmup snaper=100,nuts=20,units=10 --draws snaper=100,nuts=20,units=30
               --budget 50 --deadline 420)
         limit=470 ;;
  ci)    args=(--sizes 8 --chains 4 --warmup snaper=10,nuts=5,units=5 --draws snaper=20,nuts=10,units=20
               --budget 20 --deadline 240)
         limit=400 ;;
  *)     echo "planted_truth_gpu.sh: SIZE must be paper or ci, got $size" >&2; exit 2 ;;
esac
out=${OUT:-benchmarks/results/planted_truth_gpu_$size}
if [ -e "$out.json" ] || [ -e "$out.md" ]; then
  echo "planted_truth_gpu.sh: OUT $out.json or $out.md exists; remove it or set OUT" >&2; exit 2
fi
exec timeout --signal=INT --kill-after=20 "$limit" "${PYTHON:-python}" benchmarks/planted_truth.py \
  --nets sigmoidal,relu,sigmoidal_d2 --samplers snaper,nuts,units "${args[@]}" --out "$out" "$@"
