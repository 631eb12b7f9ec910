#!/usr/bin/env bash
# Fig. 2's sigmoidal net certified with sampler="units" on one accelerator: N = P = 500, T = 0.01, y− = ½, three start
# families (prior, annealed, mean field) of 64 chains, each `bnnzoo.sample(..., certify=True)` call in its own
# process (benchmarks/bench_certify.py, net `sigmoidal`), within a 480 s limit per call.
#   SIZE=paper bash benchmarks/units_gpu.sh    (default; on a GPU)
#   SIZE=ci    bash benchmarks/units_gpu.sh    (N = P = 20, 2 chains per family on a CPU, about a minute; tested)
# OUT sets the output stem (default benchmarks/results/units_gpu_$SIZE; it must not exist); PYTHON the interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
size=${SIZE:-paper}
case "$size" in
  paper) args=(--size 500 --chains 64 --units-steps 100,200 --timeout 480) ;;
  ci)    args=(--size 20 --chains 2 --units-steps 5,10 --timeout 300) ;;
  *)     echo "units_gpu.sh: SIZE must be paper or ci, got $size" >&2; exit 2 ;;
esac
exec "${PYTHON:-python}" benchmarks/bench_certify.py --nets sigmoidal --samplers units "${args[@]}" \
  --out "${OUT:-benchmarks/results/units_gpu_$size}" "$@"
