#!/usr/bin/env bash
# Certified population rows on one GPU machine (issue 31, item 5), each `reproduce/certified.py` run a separate
# process under its own time limit; results go to OUT (JSON + markdown per run), logs and exit codes beside them.
#
#   gpu jobs (sharing the GPU):   D5 (L = 3 ReLU) and the MNIST ReLU code at N = P = 100, ReLU at N = P = 200,
#                                 8 chains per start family;
#   cpu jobs (the machine's spare cores, 6 each, JAX_PLATFORMS=cpu): S1 at N = P = 100 with a longer run,
#                                 S5 (y− = 0.1) at N = P = 100.
# Seen on one H200 machine (16 cores): the two cpu jobs finished in 168 s and 205 s (about 55 steps/s), while the
# three gpu jobs, time-sharing the GPU, did not finish 3 warm-ups of 900-1000 steps + 2 samplings of 600 in 515 s.
# At N = 100-200 a step waits on latency, not arithmetic, so a few CPU cores per row do as well as a share of the
# GPU: JOBS=cpu runs all five rows on the cores (5 processes x 3 cores), the better use of a short lease.  ReLU at
# Fig. 2's N = P = 500 needs more steps than one 10-minute call affords: JOBS=relu500 runs it alone.
# Usage: reproduce/certified_gpu.sh OUT [SECONDS]     (SECONDS: limit of every process, default 500)
#        SIZE=ci reproduce/certified_gpu.sh OUT        (the mechanics, on a CPU, in about a minute)
#        JOBS=cpu reproduce/certified_gpu.sh OUT       (every row on the CPU cores, 3 each)
#        JOBS=relu500 reproduce/certified_gpu.sh OUT   (ReLU at N = P = 500, SNAPER, 8 chains per family)
set -u
out=${1:?usage: certified_gpu.sh OUT [SECONDS]}
limit=${2:-500}
size=${SIZE:-paper}
jobs=${JOBS:-rows}
here=$(cd "$(dirname "$0")" && pwd)
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
    JAX_PLATFORMS=$platform timeout "$limit" "${pin[@]}" "$py" "$here/certified.py" --size "$size" --out "$out" \
        --name "$name" --overwrite "$@" >"$out/$name.log" 2>&1
    echo "$name: exit $? after $((SECONDS - start)) s" >>"$out/exits.txt"
}

if [ "$size" = ci ]; then n100=8; n200=8; w=(40 40 40 40 40); s=10; t=1; cpu=cpu; else
    n100=100; n200=200; w=(900 1000 900 1000 600); s=300; t=2; cpu=cpu; fi
gpu=$([ "$size" = ci ] && echo cpu || echo cuda)

if [ "$jobs" = relu500 ]; then
    job relu500_snaper - "$gpu" --rows relu --sampler snaper --chains 8 --width "$([ "$size" = ci ] && echo 8 || echo 500)" \
        --warmup "${w[0]}" --samples "$s" --thin 4
elif [ "$jobs" = cpu ]; then
    job relu3_n100 0-2 cpu --rows relu3 --chains 8 --width "$n100" --warmup "${w[0]}" --samples "$s" --thin "$t" &
    job mnist_relu_n100 3-5 cpu --rows mnist_relu --chains 8 --width "$n100" --warmup "${w[1]}" --samples "$s" \
        --thin "$t" &
    job relu200 6-8 cpu --rows relu --chains 8 --width "$n200" --warmup "${w[2]}" --samples "$s" --thin "$t" &
    job sig1_n100_long 9-11 cpu --rows sig1 --width "$n100" --warmup "${w[3]}" --samples "$s" --thin 6 &
    job ym01_n100 12-15 cpu --rows ym01 --width "$n100" --warmup "${w[4]}" --samples "$s" --thin 4 &
else
    job relu3_n100 0-3 "$gpu" --rows relu3 --chains 8 --width "$n100" --warmup "${w[0]}" --samples "$s" --thin "$t" &
    job mnist_relu_n100 0-3 "$gpu" --rows mnist_relu --chains 8 --width "$n100" --warmup "${w[1]}" --samples "$s" \
        --thin "$t" &
    job relu200 0-3 "$gpu" --rows relu --chains 8 --width "$n200" --warmup "${w[2]}" --samples "$s" --thin "$t" &
    job sig1_n100_long 4-9 "$cpu" --rows sig1 --width "$n100" --warmup "${w[3]}" --samples "$s" \
        --thin 6 &
    job ym01_n100 10-15 "$cpu" --rows ym01 --width "$n100" --warmup "${w[4]}" --samples "$s" \
        --thin 4 &
fi
(sleep 90; nvidia-smi >"$out/nvidia-smi.txt" 2>&1) &
wait
cat "$out/exits.txt"
