"""Where a decode step's device time goes, by operation: the profile behind "the step, closer to the limit".

For each case it builds the engine on the GPU (the fused step by default), decodes the case's load, then
profiles the final batch's eager forward (torch.profiler, CUDA activity, PROFILED_STEPS steps) and prints two
tables a step: the kernels by their own device time (the norm, paged and combine kernels are Triton's by
name; GEMM kernels are cuBLAS's), and the GEMM ops by input shape (h @ wqkv, x.addmm_(attn, wo) and the
logits GEMM tell apart by shape). The graph replay's ms (what the perf cases time) is printed beside the
kernels' sum: the difference is the gaps between kernels. A kernel or GEMM whose share is far above its share
of the bytes is where a fused step's time hides outside the attention kernel.

    PYTHONPATH=$PWD:$PWD/src python3 bench/decode_step_profile.py [--case ID ...] [--path triton] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from bench.decode_bandwidth_bench import CASES, PATHS, perf_cases, use_path
from ci_tool.perf.config import WARMUP_STEPS
from ci_tool.perf.devices import peak_memory_bytes_per_s
from kvengine.benchmark import DecodeLoad, run_decode
from kvengine.loader import load_preset
from tests.perf.engine_case import build_engine

ROOT = Path(__file__).resolve().parents[1]
PROFILED_STEPS = 5
TOP_KERNELS = 12
GEMM_OPS = ("aten::mm", "aten::addmm_", "aten::addmm")


def kernels(prof: profile) -> dict[str, float]:
    """Device microseconds per kernel name (its own time), summed over the profiled steps."""
    found: dict[str, float] = collections.defaultdict(float)
    for event in prof.key_averages():
        if event.key.startswith("aten::") or event.key.startswith("cuda"):
            continue  # CPU-side entries: their kernels are counted under the kernels' own names
        found[event.key] += getattr(event, "self_device_time_total", 0.0)
    return {name: us for name, us in found.items() if us > 0}


def gemms(prof: profile) -> dict[tuple[str, str], float]:
    """Device microseconds per GEMM op and input shapes (its kernels' time), summed over the profiled steps."""
    found: dict[tuple[str, str], float] = collections.defaultdict(float)
    for event in prof.key_averages(group_by_input_shape=True):
        if event.key in GEMM_OPS:
            found[(event.key, str(event.input_shapes))] += getattr(event, "device_time_total", 0.0)
    return dict(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=CASES, help="repeatable; default: all")
    parser.add_argument("--path", default="triton", choices=PATHS)
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("decode_step_profile: expected a CUDA GPU, found none")
    cases = perf_cases()
    device = torch.cuda.get_device_name().removeprefix("NVIDIA ").strip()
    peak = peak_memory_bytes_per_s(device) or float("nan")
    print(f"device {device}, peak {peak / 1e12:.2f} TB/s; path {args.path}; torch {torch.__version__}")
    rows = []
    use_path(args.path)
    for case_id in args.case or CASES:
        case = cases[case_id]
        engine = build_engine(case)
        load = DecodeLoad(case.load.concurrency, case.load.input_len, case.load.output_len, WARMUP_STEPS)
        found = run_decode(engine, load_preset(case.model), load, hidden_size=case.hidden_size)
        batch = case.load.concurrency
        step = engine.static.rows(batch)
        engine.model.forward(engine.pools, step)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
            for _ in range(PROFILED_STEPS):
                engine.model.forward(engine.pools, step)
            torch.cuda.synchronize()
        per_kernel = {k: us / PROFILED_STEPS / 1000 for k, us in kernels(prof).items()}
        total = sum(per_kernel.values())
        fraction = found.achieved_bytes_per_s / peak
        print(f"\n{case_id}: graph step {found.device_step_ms:.3f} ms, eager {found.eager_step_ms or 0:.3f} ms, "
              f"kernels {total:.3f} ms (eager, profiled); {fraction:.1%} of peak as timed")  # fmt: skip
        print("| kernel | ms a step | share |")
        print("|---|---:|---:|")
        for name, ms in sorted(per_kernel.items(), key=lambda item: -item[1])[:TOP_KERNELS]:
            print(f"| `{name[:90]}` | {ms:.3f} | {ms / total:.1%} |")
        per_gemm = {k: us / PROFILED_STEPS / 1000 for k, us in gemms(prof).items()}
        print("| GEMM op | input shapes | ms a step | share |")
        print("|---|---|---:|---:|")
        for (op, shapes), ms in sorted(per_gemm.items(), key=lambda item: -item[1]):
            print(f"| {op} | {shapes} | {ms:.3f} | {ms / total:.1%} |")
        by_shape = {f"{op} {shapes}": ms for (op, shapes), ms in per_gemm.items()}
        rows.append({"case": case_id, "path": args.path, "graph_step_ms": found.device_step_ms,
                     "eager_step_ms": found.eager_step_ms, "kernels_ms": total, "fraction": fraction,
                     "kernels": per_kernel, "gemms": by_shape})  # fmt: skip
        del engine, found, prof
        gc.collect()
        torch.cuda.empty_cache()
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "rows": rows}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
