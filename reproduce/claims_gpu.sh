#!/usr/bin/env bash
# The claims that need one GPU (issue 51, item 3), each job a separate process under its own time limit (default
# 480 s); every job writes its JSON to OUT (`python -m reproduce render` makes the pages from them), its log and
# exit status beside it (OUT/NAME.log, OUT/exits.txt).  One call runs every job at once on one H200 machine
# (16 cores): the N = 500 nets and Rubin's sweeps share the GPU, the L = 3 net at N = 200 runs on 6 CPU cores (at
# N = 100-200 a step waits on latency, not arithmetic: certified_gpu.sh's header).
#
# Jobs (rows of reproduce/claims.toml):
#   relu500_seeded  Fig. 2 ReLU, N = P = 500 (rows Q1, P1): `certified.py --rows relu --seed-family outliers`,
#                   the prior family against one started at one outlier unit per class, 8 SNAPER chains each,
#                   1000 warm-up + 200 draws (thinning 2) per family; GPU.
#   sig2_n500       Fig. 5, L = 2 sigmoidal, N = P = 500 (rows P3, D2, D3): `certified.py --rows sig2`, prior
#                   and annealed families, 8 SNAPER chains each, 1000 + 200 (thinning 2); GPU.
#   sig3_n200       Fig. 3 sigmoidal, L = 3, N = P = 200 (rows P2, D4): `certified.py --rows sig3`, prior and
#                   annealed families, 8 chains each, 1000 + 200 (thinning 2); 6 CPU cores.
#   rubin_d24, rubin_d32   Rubin's P* ∝ d (rows C1-C3) in the proportional limit N1 = N2 = 4 d at d = 24 and 32:
#                   `curse_of_detail.py --size cpu --part three_layer --width-per-d 4 --d D`, 3 seeds, P/d = 4, 8,
#                   12 (extended to 24), 4 chains × (150 + 100), every finished run cached in OUT/curse_cache (a
#                   second call resumes); GPU.  d = 6 … 16 at 4 d ran on the CPU before (row C1's setting).
#
# Expected time per job on one H200: an estimate, none of these jobs has run on a GPU.  From certified_gpu.sh's
# header (~10-20 SNAPER steps/s at N = 500 on the GPU, as it estimates; 55 steps/s seen for N = 100 on 6 cores),
# scaled by the steps and, for sig3, by the step cost (N = 200, three layers: ~4× N = 100's): relu500_seeded
# 2 × 1400 steps, 150-300 s; sig2_n500 ~3800 steps (with 2 annealing stages of 500), 200-400 s; sig3_n200 ~3800
# steps at ~15/s, ~250 s; rubin_d24 / rubin_d32 9-12 runs of 250 steps each, a guess of 60-300 s (the 4 d sweep
# at d = 6-16 took 20 min on one CPU core).  Every job's result is only what finishes within its limit: a
# certified job killed by its limit writes no result file; the next step is then to run the families as separate
# resumable runs (bnnzoo.sample(..., store=...)) and combine them with bnnzoo.workflows.certify.concat_families and
# certify_run.
#
# Merge: the certified jobs are one result file each (index them in claims.toml as they are).  Rubin's law over
# every d: with the returned cache, on any machine (cached runs are read, missing ones sampled),
#   python -m reproduce curse_of_detail --size cpu --part three_layer --width-per-d 4 --d 6,8,12,16,24,32 \
#       --n-seeds 3 --cache OUT/curse_cache --name curse_of_detail_4d --out reproduce/results
#
# Usage: reproduce/claims_gpu.sh OUT [SECONDS]     (SECONDS: limit of every process, default 480)
#        SIZE=ci reproduce/claims_gpu.sh OUT        (the same jobs at CI size on a CPU: 111 s on an idle 2-core CPU)
set -u
out=${1:?usage: claims_gpu.sh OUT [SECONDS]}
limit=${2:-480}
size=${SIZE:-paper}
root=$(cd "$(dirname "$0")/.." && pwd)   # the repository root: `python -m reproduce` needs it on the path
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out/exits.txt"
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
ncpu=$(nproc)

job() {  # job NAME CORES PLATFORM EXPERIMENT ARGS...   (CORES: a taskset list, or "-" for no pinning)
    local name=$1 cores=$2 platform=$3 experiment=$4
    shift 4
    local pin=()
    [ "$cores" != - ] && [ "$ncpu" -ge 16 ] && pin=(taskset -c "$cores")
    local start=$SECONDS
    JAX_PLATFORMS=$platform timeout "$limit" "${pin[@]}" "$py" -m reproduce "$experiment" --out "$out" \
        --name "$name" --overwrite "$@" >"$out/$name.log" 2>&1
    echo "$name: exit $? after $((SECONDS - start)) s" >>"$out/exits.txt"
}

if [ "$size" = ci ]; then  # the mechanics: tiny nets, short chains, every job on the CPU
    csize=ci; n500=8; n200=8; w=40; s=10; chains=2; gpu=cpu; curse=ci; d1=4; d2=6; seeds=1
else
    csize=paper; n500=500; n200=200; w=1000; s=200; chains=8; gpu=cuda; curse=cpu; d1=24; d2=32; seeds=3
fi
cert=(--size "$csize" --chains "$chains" --warmup "$w" --samples "$s" --thin 2)

job relu500_seeded - "$gpu" certified "${cert[@]}" --rows relu --seed-family outliers --sampler snaper \
    --width "$n500" &
job sig2_n500 - "$gpu" certified "${cert[@]}" --rows sig2 --sampler snaper --width "$n500" &
job sig3_n200 0-5 cpu certified "${cert[@]}" --rows sig3 --width "$n200" &
for d in "$d1" "$d2"; do
    job "rubin_d$d" - "$gpu" curse_of_detail --size "$curse" --part three_layer --width-per-d 4 --d "$d" \
        --n-seeds "$seeds" --cache "$out/curse_cache" &
done
[ "$size" != ci ] && (sleep 90; nvidia-smi >"$out/nvidia-smi.txt" 2>&1) &
wait
cat "$out/exits.txt"
