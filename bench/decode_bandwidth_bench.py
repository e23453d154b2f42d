"""Memory bandwidth of the engine's decode step: bytes it must move / device step time, per attention path.

For each case (a perf-sanity config's server x client) and attention path it builds the engine on the GPU,
decodes the case's load, then times the final batch's device step alone (CUDA-graph replay, CUDA events,
median of 20) and counts the bytes that step must move (kvengine.benchmark.decode_step_bytes: weights, the KV
blocks its rows attend, the new K/V). Paths:

    triton          the fused step: norm kernel, one QKV GEMM, the paged kernel (reads live pool blocks in
                    place, stores the new K/V), one combine kernel, the output GEMM into the residual
    triton-folded   the fused step less the norm and combine kernels: the paged kernel applies the norm's factor
                    and its last split merges ($KVENGINE_ATTENTION=triton-folded)
    triton-unfused  the step before it: the same paged kernel amid torch ops ($KVENGINE_ATTENTION=triton-unfused)
    torch           gather the table's blocks, then torch's fused SDPA in the pool dtype ($KVENGINE_ATTENTION=torch)
    fp32-einsum  the engine's attention before this bench existed: gather, upcast to float32, two einsums

    PYTHONPATH=$PWD:$PWD/src python3 bench/decode_bandwidth_bench.py [--json out.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
from pathlib import Path

import torch

import kvengine.attention as attention
import kvengine.model as model
from ci_tool.perf.config import WARMUP_STEPS, PerfCase, load_config
from ci_tool.perf.devices import peak_memory_bytes_per_s
from kvengine.benchmark import DecodeLoad, DecodeMeasurement, run_decode
from kvengine.loader import load_preset
from tests.perf.engine_case import build_engine

ROOT = Path(__file__).resolve().parents[1]
CASES = ("gpu-gemma_like-pool48g-b128_1k", "gpu-gemma_like-pool4g-b80", "gpu-llama_like-pool12g-b64_1k",
         "gpu-deepseek_v4_like-pool8g-b64_1k")  # fmt: skip
PATHS = ("triton", "triton-folded", "triton-unfused", "torch", "fp32-einsum")


def fp32_einsum_attention(q, k_pool, v_pool, blocks, seq_lens, *, window_tokens, sink_tokens):  # type: ignore[no-untyped-def]
    """The attention as it was: gather every table column, upcast to float32, einsum, softmax, einsum."""
    k, v, valid = attention.gathered_kv(
        q, k_pool, v_pool, blocks, seq_lens, window_tokens=window_tokens, sink_tokens=sink_tokens
    )
    batch, _, kv_heads, head_dim = k.shape
    q_heads = q.shape[1]
    grouped = q.reshape(batch, kv_heads, q_heads // kv_heads, head_dim)
    scores = torch.einsum("bkgd,btkd->bkgt", grouped.float(), k.float()) * head_dim**-0.5
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf"))
    out = torch.einsum("bkgt,btkd->bkgd", torch.softmax(scores, dim=-1), v.float())
    return out.reshape(batch, q_heads, -1).to(q.dtype)


def use_path(path: str) -> None:
    attention._triton_kernel.cache_clear()
    os.environ["KVENGINE_ATTENTION"] = "torch" if path == "fp32-einsum" else path
    model.paged_decode_attention = fp32_einsum_attention if path == "fp32-einsum" else attention.paged_decode_attention  # type: ignore[assignment]


def perf_cases() -> dict[str, PerfCase]:
    """The perf-sanity cases of the three bandwidth configs, by case id (decode_step_profile.py reads them too)."""
    return {c.case_id: c for name in ("gemma_like", "llama_like", "deepseek_v4_like")
            for c in load_config(ROOT / f"tests/scripts/perf-sanity/{name}.yaml").cases}  # fmt: skip


def decoded(case: PerfCase) -> DecodeMeasurement:
    """The case's load decoded on an engine of its own (the path and patches in force now), its final batch's
    device step timed; the engine's memory given back before the next one is built."""
    load = DecodeLoad(case.load.concurrency, case.load.input_len, case.load.output_len, WARMUP_STEPS)
    found = run_decode(build_engine(case), load_preset(case.model), load, hidden_size=case.hidden_size)
    gc.collect()
    torch.cuda.empty_cache()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=CASES, help="repeatable; default: all")
    parser.add_argument("--path", action="append", choices=PATHS, help="repeatable; default: all")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    cases = perf_cases()
    device = torch.cuda.get_device_name().removeprefix("NVIDIA ").strip()
    peak = peak_memory_bytes_per_s(device) or float("nan")
    rows = []
    print(f"device {device}, peak {peak / 1e12:.2f} TB/s; torch {torch.__version__}")
    print("| case | attention | device step ms | GB moved | GB/s | fraction of peak | graph vs eager | tokens/s |")
    print("|---|---|---|---|---|---|---|---|")
    for case_id in args.case or CASES:
        case = cases[case_id]
        for path in args.path or PATHS:
            use_path(path)
            found = decoded(case)
            assert found.device_step_ms is not None and found.achieved_bytes_per_s is not None  # timed by default
            speedup = found.eager_step_ms / found.device_step_ms if found.eager_step_ms else None
            row = {"case": case_id, "attention": path, "device_step_ms": round(found.device_step_ms, 3),
                   "step_gb": round(found.step_bytes / 1e9, 3), "gb_per_s": round(found.achieved_bytes_per_s / 1e9, 1),
                   "fraction": round(found.achieved_bytes_per_s / peak, 4), "graph_speedup": speedup,
                   "tokens_per_s": round(found.tokens_per_s, 1), "coverage": found.coverage}  # fmt: skip
            rows.append(row)
            print(f"| {case_id} | {path} | {row['device_step_ms']} | {row['step_gb']} | {row['gb_per_s']} | "
                  f"{row['fraction']:.1%} | {speedup or 0:.2f}x | {row['tokens_per_s']} |", flush=True)  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "rows": rows}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
