#!/usr/bin/env bash
# One H200 device call for the fused decode step (docs/PERF.md, "The decode step, fused"), under 8 minutes:
#   1. the GPU tests of the kernels and the engine paths (gpu marker): correctness first;
#   2. bench/decode_bandwidth_bench.py on the two bandwidth cases, fused (triton) and the step before it
#      (triton-unfused) side by side in one process: the issue's figures (>= 70 % and >= 25 % of peak);
#   3. bench/decode_step_profile.py on the same cases: where the step's device time goes, kernel by kernel;
#   4. bench/paged_kernel_sweep.py, the kernel's launch parameters at those cases' layer shapes, with the
#      time left (a coordinate search from the default launch; cut off, it keeps the rows it printed).
#   OUT=results bench/kernel_device_run.sh [BUDGET_SECONDS]
# Everything lands under $OUT: env.txt, gpu-tests.log/.xml, bandwidth.md/.json, profile.md/.json, sweep.md/.json,
# summary.txt.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD:$PWD/src PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT to a results folder}
BUDGET_SECONDS=${1:-450}
mkdir -p "$OUT"
step() {  # label, timeout seconds, command...: runs it, logs its exit code and wall time to summary.txt
    local label=$1 limit=$2 began=$SECONDS; shift 2
    timeout "$limit" "$@"
    echo "$label exit=$? wall=$((SECONDS - began))s" | tee -a "$OUT/summary.txt"
}

{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

step gpu-tests 200 python3 -m pytest tests/kvengine/test_fused_step.py tests/kvengine/test_attention.py \
    tests/kvengine/test_engine.py tests/kvengine/test_graphs.py tests/kvengine/test_step_cost.py -m gpu -rfE \
    --junitxml="$OUT/gpu-tests.xml" > "$OUT/gpu-tests.log" 2>&1
tail -3 "$OUT/gpu-tests.log"

step bandwidth 200 python3 bench/decode_bandwidth_bench.py --case gpu-gemma_like-pool48g-b128_1k \
    --case gpu-deepseek_v4_like-pool8g-b64_1k --path triton --path triton-folded --path triton-unfused \
    --json "$OUT/bandwidth.json" \
    2>&1 | tee "$OUT/bandwidth.md"

step profile 200 python3 bench/decode_step_profile.py --path triton-folded --case gpu-gemma_like-pool48g-b128_1k \
    --case gpu-deepseek_v4_like-pool8g-b64_1k --json "$OUT/profile.json" 2>&1 | tee "$OUT/profile.md"

left=$((BUDGET_SECONDS - SECONDS))
if [ "$left" -gt 30 ]; then
    step sweep "$left" python3 bench/paged_kernel_sweep.py --json "$OUT/sweep.json" 2>&1 | tee "$OUT/sweep.md"
else
    echo "sweep skipped: ${left}s left of ${BUDGET_SECONDS}s" | tee -a "$OUT/summary.txt"
fi
