#!/usr/bin/env bash
# bnnzoo on one accelerator (benchmarks/gpu_check.py): the batched-gradient ceiling, the samplers at 64 chains and
# `bnnzoo sample` + `bnnzoo diagnose` at N = P = 500 and matmul precision on the observables, in at most 11.5
# minutes, into one result file (two device calls: `--parts ceiling,samplers,cli` and `--parts precision`, see
# gpu_check.py).
#   SIZE=paper bash benchmarks/gpu_check.sh [--parts ...]   (default; on a GPU)
#   SIZE=ci    bash benchmarks/gpu_check.sh    (N = P = 20 on a CPU, about a minute; tested)
# OUT sets the output prefix (default benchmarks/results/gpu_check_$SIZE); PYTHON the interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
size=${SIZE:-paper}
exec "${PYTHON:-python}" benchmarks/gpu_check.py --size "$size" ${OUT:+--out "$OUT"} "$@"
