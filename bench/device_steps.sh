# Sourced by the device-call scripts (kernel_device_run.sh, step_and_gate_device_run.sh), with OUT set:
#   step LABEL SECONDS COMMAND...   runs it under a timeout; its exit code and wall time go to $OUT/summary.txt
#   record_env                      the GPU, driver, torch and Triton to $OUT/env.txt (and the output)
#   gpu_tests SECONDS [ARGS...]     the engine's GPU tests (gpu marker) to $OUT/gpu-tests.log

step() {
    local label=$1 limit=$2 began=$SECONDS; shift 2
    timeout "$limit" "$@"
    echo "$label exit=$? wall=$((SECONDS - began))s" | tee -a "$OUT/summary.txt"
}

record_env() {
    { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
      python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
    } > "$OUT/env.txt" 2>&1
    cat "$OUT/env.txt"
}

gpu_tests() {
    local limit=$1; shift
    step gpu-tests "$limit" python3 -m pytest tests/kvengine/test_fused_step.py tests/kvengine/test_attention.py \
        tests/kvengine/test_engine.py tests/kvengine/test_graphs.py tests/kvengine/test_step_cost.py -m gpu -rfE \
        -p no:cacheprovider "$@" > "$OUT/gpu-tests.log" 2>&1
    tail -3 "$OUT/gpu-tests.log"
}
