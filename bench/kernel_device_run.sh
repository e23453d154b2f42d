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
. bench/device_steps.sh  # step, record_env, gpu_tests
record_env
gpu_tests 200 --junitxml="$OUT/gpu-tests.xml"

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
