#!/usr/bin/env bash
# One device call that measures the fused step's options and then gates on the best of them, for GPUs that come
# rarely (docs/PERF.md, "Weights prefetched into L2"):
#   1. the GPU tests of the kernels and the engine paths (gpu marker): correctness first;
#   2. bench/decode_layout_bench.py --no-gemms over VARIANTS (the default folded path, with the token in
#      registers, with the combine kernel at d512; the `triton` path; the per-op peer) on the two bandwidth
#      cases, side by side in one process;
#   3. the best of them: the variant with the highest DeepSeek-like fraction of peak whose Gemma-like fraction is
#      no lower than the default step's less 0.3 points, written as the environment that selects it
#      (KVENGINE_ATTENTION, KVENGINE_L2_PREFETCH) to $KEEP/chosen.env and summary.txt;
#   4. with the time left, bench/perf_gate_runs.sh under that environment: new baselines, then gated runs.
#   OUT=results GPU=H100 bench/step_and_gate_device_run.sh [BUDGET_SECONDS] [QUIET_RUNS HOG_RUNS PLANTED_RUNS]
# SWEEP_SHAPES="deepseek-window deepseek-full" runs bench/paged_kernel_sweep.py on those shapes in place of step 4.
# $KEEP (default /tmp/step-and-gate) keeps chosen.env, the history and the baseline file for the next call on the
# same machine: the same command then goes on gating under the kept choice, up to QUIET_RUNS and HOG_RUNS in all.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD:$PWD/src PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT to a results folder}
GPU=${GPU:-H100} KEEP=${KEEP:-/tmp/step-and-gate}
BUDGET_SECONDS=${1:-560} QUIET_RUNS=${2:-10} HOG_RUNS=${3:-10} PLANTED_RUNS=${4:-1}
# the gate's baseline runs: 6 (their quiet ones proposed: perf_gate_runs.sh), 0 where the committed baselines
# were set on the step chosen
BASELINE_RUNS=${BASELINE_RUNS:-6}
# the prefetch plans, head parts, pdl: no faster on an H100 (PERF.md); in-registers and launch overrides: not
# selectable by environment (a winner becomes the default in code)
VARIANTS=${VARIANTS:-folded folded+in-registers current folded+d512:last_split_merges=0 per-op}
mkdir -p "$OUT" "$KEEP"
gate() {  # baseline runs, seconds[, history to go on from]: perf_gate_runs.sh under the chosen environment, its
    # state kept in $KEEP
    set -a; . "$KEEP/chosen.env"; set +a
    local first=1
    if [ -n "${3:-}" ]; then first=""; fi  # "": after the history's last run
    FIRST_RUN=$first SEED_HISTORY=${3:-} GPU=$GPU OUT=$OUT/gate COUNTS_ARE_TOTALS=1 \
        bench/perf_gate_runs.sh "$1" "$QUIET_RUNS" "$HOG_RUNS" "$PLANTED_RUNS" "$2" 0
    cp "$OUT/gate/history.sqlite" "$OUT/gate/$GPU.yaml" "$OUT/gate/tally.txt" "$KEEP/"
    rm -f "$OUT"/gate/*.tail  # the device call brings back 8 files at most
}
if [ -f "$KEEP/chosen.env" ]; then  # a call before this one on this machine measured and chose: gate on
    if [ -f "$KEEP/history.sqlite" ]; then
        cp "$KEEP/$GPU.yaml" "tests/scripts/perf-sanity/baselines/$GPU.yaml"
        gate 0 $((BUDGET_SECONDS - 60)) "$KEEP/history.sqlite"
    else
        gate "$BASELINE_RUNS" $((BUDGET_SECONDS - 60))
    fi
    exit 0
fi
. bench/device_steps.sh  # step, record_env, gpu_tests
record_env
gpu_tests 240

args=()
for name in $VARIANTS; do args+=(--variant "$name"); done
step variants 300 python3 bench/decode_layout_bench.py --no-gemms "${args[@]}" --json "$OUT/variants.json"

python3 - "$OUT/variants.json" > "$KEEP/chosen.env" <<'PY'
import json, sys
ENV = {  # a variant's parts -> the environment that selects it
    "folded": ("KVENGINE_ATTENTION", "triton-folded"), "prefetch-o": ("KVENGINE_L2_PREFETCH", "output"),
    "prefetch-qkv": ("KVENGINE_L2_PREFETCH", "next-qkv"), "prefetch": ("KVENGINE_L2_PREFETCH", "both"),
    "prefetch-last": ("KVENGINE_L2_PREFETCH", "both-evict-last"), "prefetch-kv": ("KVENGINE_L2_PREFETCH", "next-kv"),
    "prefetch-all": ("KVENGINE_L2_PREFETCH", "all"), "current": ("KVENGINE_ATTENTION", "triton"),
}
GOAL = 0.45  # the DeepSeek-like step's: below it, a faster variant is not worth new baselines
steps = json.load(open(sys.argv[1]))["steps"]
by = {(row["variant"], "deepseek" in row["case"]): row["fraction"] for row in steps}
floor = by[("folded", False)] - 0.003  # the engine's default step
def selectable(name):  # the engine can run it by environment alone (cuBLASLt, no-pdl, wide: not)
    return all(part in ENV for part in name.split("+"))
fits = [name for (name, deepseek) in by if deepseek and selectable(name) and by.get((name, False), 0) >= floor]
best = max(fits, key=lambda name: by[(name, True)])
measured = sorted((name for name, deepseek in by if deepseek), key=lambda name: -by[(name, True)])
print("# DeepSeek-like, every variant: " + ", ".join(f"{name} {by[(name, True)]:.1%}" for name in measured))
print(f"# best: {best}: DeepSeek-like {by[(best, True)]:.1%}, Gemma-like {by[(best, False)]:.1%}")
if by[(best, True)] >= GOAL:
    for part in best.split("+"):
        if part in ENV:
            print("{}={}".format(*ENV[part]))
else:
    print(f"# under {GOAL:.0%}: the gate goes on with the default step")
PY
tee -a "$OUT/summary.txt" < "$KEEP/chosen.env"

if [ -n "${SWEEP_SHAPES:-}" ]; then  # the kernel sweep instead of the gate: a winner changes the code first
    shapes=()
    for name in $SWEEP_SHAPES; do shapes+=(--shape "$name"); done
    step sweep $((BUDGET_SECONDS - SECONDS - 10)) python3 bench/paged_kernel_sweep.py "${shapes[@]}" --repeats 10 \
        --json "$OUT/sweep.json"
    rm -f "$KEEP/chosen.env"  # the next call measures again, on the code that follows from this one
    exit 0
fi
left=$((BUDGET_SECONDS - SECONDS - 60))  # a stage run started at the budget's end runs up to a minute past it
if [ "$left" -gt 90 ]; then
    gate "$BASELINE_RUNS" "$left"
else
    echo "gate skipped: ${left}s left of ${BUDGET_SECONDS}s" | tee -a "$OUT/summary.txt"
fi
