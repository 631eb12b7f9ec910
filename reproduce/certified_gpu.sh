#!/usr/bin/env bash
# Certified ReLU runs at Fig. 2's size on one GPU (issue 31, item 5): N = P = 500 and 200, the default sampler
# (SNAPER) against parallel tempering, each `reproduce/certified.py` run a separate process sharing the GPU under
# its own time limit.  Results go to OUT (JSON + markdown per run), logs beside them.
#
# Usage: reproduce/certified_gpu.sh OUT [SECONDS]     (SECONDS: limit of every process, default 500)
#        SIZE=ci reproduce/certified_gpu.sh OUT        (the mechanics, on a CPU, in seconds)
set -u
out=${1:?usage: certified_gpu.sh OUT [SECONDS]}
limit=${2:-500}
size=${SIZE:-paper}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
if [ "$size" = ci ]; then w500=10; w200=8; wu=40; else w500=500; w200=200; wu=2000; fi

job() {  # job NAME ARGS...
    local name=$1
    shift
    timeout "$limit" "$py" "$here/certified.py" --size "$size" --rows relu --out "$out" --name "$name" --overwrite \
        "$@" >"$out/$name.log" 2>&1
    echo "$name: exit $?" >>"$out/exits.txt"
}

job relu500_snaper --sampler snaper --width "$w500" --warmup "$((wu / 2))" &
job relu500_pt --sampler pt --replicas 48 --width "$w500" --warmup "$((wu / 2))" &
job relu200_snaper --sampler snaper --width "$w200" --warmup "$wu" &
job relu200_pt --sampler pt --replicas 48 --width "$w200" --warmup "$((wu / 2))" &
(sleep 60; nvidia-smi >"$out/nvidia-smi.txt" 2>&1) &
wait
cat "$out/exits.txt"
