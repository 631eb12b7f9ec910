#!/usr/bin/env bash
# Certified population rows on one GPU machine (issue 31, item 5), each `python -m reproduce certified` run a
# separate process under its own time limit; results go to OUT (one JSON file per run; the pages are made from them
# by `python -m reproduce render`), logs and exit codes beside them.
#
# The rows still missing a certified run at their papers' sizes:
#   on the GPU:                   ReLU at Fig. 2's N = P = 500 (SNAPER, 8 chains per start family);
#   on the CPU cores (4 each, JAX_PLATFORMS=cpu): ReLU at N = P = 200 with a 2000-step warm-up (row Q1), the L = 2
#                                 and L = 3 sigmoidal nets at N = P = 100 (rows D2-D4).
# Seen on one H200 machine (16 cores): two certified rows at N = P = 100 on 6 cores each finished in 168 s and 205 s
# (about 55 steps/s), while three rows at N = 100-200 time-sharing the GPU did not finish 3 warm-ups of 900-1000
# steps + 2 samplings of 600 in 515 s: at these sizes a step waits on latency, not arithmetic, so the cores run
# them.  ReLU at N = P = 500 needs more steps than one 10-minute call affords (a certified run is about 3 warm-ups +
# 2 samplings at ~10-20 steps/s): its result is only what finishes.
#
# Usage: reproduce/certified_gpu.sh OUT [SECONDS]     (SECONDS: limit of every process, default 500)
#        SIZE=ci reproduce/certified_gpu.sh OUT        (the mechanics, on a CPU, in about a minute)
#        JOBS=relu500 reproduce/certified_gpu.sh OUT   (only ReLU at N = P = 500 on the GPU)
set -u
out=${1:?usage: certified_gpu.sh OUT [SECONDS]}
limit=${2:-500}
size=${SIZE:-paper}
jobs=${JOBS:-rows}
root=$(cd "$(dirname "$0")/.." && pwd)   # the repository root: `python -m reproduce` needs it on the path
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$out"
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
ncpu=$(nproc)

job() {  # job NAME CORES PLATFORM ARGS...   (CORES: a taskset list, or "-" for no pinning)
    local name=$1 cores=$2 platform=$3
    shift 3
    local pin=()
    [ "$cores" != - ] && [ "$ncpu" -ge 16 ] && pin=(taskset -c "$cores")
    local start=$SECONDS
    JAX_PLATFORMS=$platform timeout "$limit" "${pin[@]}" "$py" -m reproduce certified --size "$size" --out "$out" \
        --name "$name" --overwrite "$@" >"$out/$name.log" 2>&1
    echo "$name: exit $? after $((SECONDS - start)) s" >>"$out/exits.txt"
}

if [ "$size" = ci ]; then n100=8; n500=8; w=(40 40 40); s=10; gpu=cpu; else
    n100=100; n500=500; w=(1000 2000 1000); s=300; gpu=cuda; fi

job relu500_snaper 0-3 "$gpu" --rows relu --sampler snaper --chains 8 --width "$n500" --warmup "${w[0]}" \
    --samples "$s" --thin 4 &
if [ "$jobs" != relu500 ]; then
    job relu200_long 4-7 cpu --rows relu --width "$((2 * n100))" --warmup "${w[1]}" --samples "$s" --thin 2 &
    job sig2_n100 8-11 cpu --rows sig2 --width "$n100" --warmup "${w[2]}" --samples "$s" --thin 2 &
    job sig3_n100 12-15 cpu --rows sig3 --width "$n100" --warmup "${w[2]}" --samples "$s" --thin 2 &
fi
(sleep 90; nvidia-smi >"$out/nvidia-smi.txt" 2>&1) &
wait
cat "$out/exits.txt"
