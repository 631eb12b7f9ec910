#!/usr/bin/env bash
# Paper-size runs on one GPU (issue: Fig. 2 at N = P = 500 and the ReLU √N sweep up to N = 1000).
#
# Runs the reproduction experiments (`python -m reproduce NAME`) at --size paper as separate processes sharing the
# one GPU (each chain batch is too small to fill it alone), every process under its own time limit so that a slow one
# cannot take the others' results with it; each experiment writes its JSON result after every finished entry.
# Results go to OUT/results, one log per process to OUT/logs.  Merge the finite-size parts afterwards with
#   python -m reproduce finite_size --combine OUT/results/finite_size_paper_*.json --name finite_size_paper
#
# Usage: reproduce/paper_gpu.sh OUT [SECONDS]     (SECONDS: limit of every process, default 520)
set -u
out=${1:?usage: paper_gpu.sh OUT [SECONDS]}
limit=${2:-520}
size=${SIZE:-paper}  # SIZE=ci checks the mechanics on a CPU
root=$(cd "$(dirname "$0")/.." && pwd)   # the repository root: `python -m reproduce` needs it on the path
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$out/results" "$out/logs"
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
py=${PYTHON:-python3}

job() {  # job NAME EXPERIMENT ARGS...
    local name=$1 experiment=$2
    shift 2
    timeout "$limit" "$py" -m reproduce "$experiment" --size "$size" --out "$out/results" --name "$name" --overwrite \
        "$@" >"$out/logs/$name.log" 2>&1
    echo "$name: exit $?" >>"$out/logs/exits.txt"
}

job fig2_toy_paper_sigmoidal fig2_toy --nets sigmoidal &
job fig2_toy_paper_relu fig2_toy --nets relu &
job fig2_toy_paper_linear fig2_toy --nets linear &
job finite_size_paper_relu_small finite_size --parts relu --widths 50,100,200 &
job finite_size_paper_relu400 finite_size --parts relu --widths 400 --relu-warmup 5000 &
job finite_size_paper_relu700 finite_size --parts relu --widths 700 --relu-warmup 5000 &
job finite_size_paper_relu1000 finite_size --parts relu --widths 1000 --relu-warmup 5000 &
job finite_size_paper_sigmoid finite_size --parts sigmoid --widths 500,1000 &
(sleep 90; nvidia-smi >"$out/logs/nvidia-smi.txt" 2>&1) &
wait
cat "$out/logs/exits.txt"
