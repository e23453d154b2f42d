"""The decode step's memory layouts side by side, on a GPU: where the pools and the weights put their bytes.

Two parts, in one process:

1. The GEMMs of the bandwidth cases' layers, each shape with its weight stored row-major ([in, out], x @ W
   reads it as it lies) and in torch.nn.Linear's layout ([out, in], the same product through a transposed
   view), plain and accumulating into the residual (addmm_), through cuBLAS and cuBLASLt. Each is timed as
   one CUDA graph over enough weight copies to exceed the L2 twice (a step's 60 layers stream their weights
   from HBM), median of 20.
2. The whole step (decode_bandwidth_bench.py's measure) for each case, the changes of "The step's memory
   layouts" (docs/PERF.md) taken one at a time:
       before     the step as it was: slot-major pools ([num_slots, num_buffers, ...]: a layer's blocks a slot
                  row apart), row-major weights, 16-token tiles at head_dim 512
       +pools     buffer-major pools (each layer's buffer contiguous)
       +weights   and the weights in the Linear layout
       current    and 32-token tiles at head_dim 512: the `triton` path (the default until the folded one)
       folded     the `triton-folded` path, the engine's default (the norm and the split merge in the paged
                  kernel, bf16 partials)
       per-op     the per-op step (triton-unfused) as it is: the peer
   and the engine with weights prefetched into L2 on a side stream ($KVENGINE_L2_PREFETCH: PLANS below):
       prefetch-o / prefetch-qkv / prefetch / prefetch-last   the output projection from its layer's start,
                  the next layer's QKV weights after this layer's QKV GEMM, both, both with evict_last lines;
       prefetch-kv / prefetch-all   the next layer's KV blocks after this layer's attention; all three;
       "+cublaslt" after a name: its GEMMs through cuBLASLt; "folded+..." the same on the folded path
   and the paged kernel with head parts (PagedLaunch.head_parts: a KV head's query heads over 4 programs, one
   program an SM of them, so a row's tokens split less or not at all: fewer fp32 partials to write and merge):
       heads      every layer whose GQA group holds 4 (DeepSeek-like: all; Gemma-like's group of 2: none)
       heads-d512 the head_dim 512 (DeepSeek-like window) layers only
   and "narrow" (after a name, or alone): split partials in bf16, not float32 (PagedLaunch.narrow_partials);
   "pdl" / "no-pdl": the paged kernel by programmatic dependent launch or not (PagedLaunch.pdl; off by default);
   "wide": float32 partials; "in-registers": the new token attended from registers after the tile loop
   (PagedLaunch.token_in_registers); "dN:field=value": a PagedLaunch field at head_dim N
   ("folded+d512:programs_per_sm=1", "folded+d512:last_split_merges=0", "d128:max_registers=none")

    PYTHONPATH=$PWD:$PWD/src python3 bench/decode_layout_bench.py [--case ID] [--variant NAME] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import itertools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import torch

import kvengine.memory as memory
import kvengine.model as model
import kvengine.triton_attention as triton_attention
from bench.decode_bandwidth_bench import decoded, perf_cases, use_path
from bench.paged_kernel_sweep import L2_BYTES, graph_us
from ci_tool.perf.devices import peak_memory_bytes_per_s
from kvengine import l2_prefetch

CASES = ("gpu-gemma_like-pool48g-b128_1k", "gpu-deepseek_v4_like-pool8g-b64_1k")
VARIANTS = ("before", "+pools", "+weights", "current", "folded", "per-op", "prefetch-o", "prefetch-qkv", "prefetch",
            "prefetch-last", "prefetch-kv", "prefetch-all", "folded+prefetch", "folded+prefetch-all", "cublaslt",
            "prefetch+cublaslt", "folded+prefetch+cublaslt", "heads", "heads-d512", "folded+heads",
            "folded+heads-d512", "narrow", "folded+narrow", "heads+narrow", "folded+cublaslt",
            "folded+narrow+cublaslt")
LIBRARIES = ("cublas", "cublaslt")  # torch.backends.cuda.preferred_blas_library
HEAD_PARTS = 4  # DeepSeek-like: 64 rows x 4 = 256 programs, about two an SM of an H100 without token splits
PLANS = {"prefetch-o": "output", "prefetch-qkv": "next-qkv", "prefetch": "both", "prefetch-last": "both-evict-last",
         "prefetch-kv": "next-kv", "prefetch-all": "all"}  # fmt: skip
PARTS = ("current", "folded", "per-op", *PLANS, "cublaslt", "heads", "heads-d512", "narrow", "wide", "in-registers",
         "pdl", "no-pdl")
GEMMS = {  # (rows, in, out): each bandwidth case's projections (hidden 2048)
    "gemma qkv": (128, 2048, 4096), "gemma o": (128, 2048, 2048),
    "deepseek window qkv": (64, 2048, 8704), "deepseek window o": (64, 8192, 2048),
    "deepseek full qkv": (64, 2048, 2176), "deepseek full o": (64, 2048, 2048),
}  # fmt: skip


def gemm_rows(peak: float) -> list[dict[str, object]]:
    rows = []
    for name, (m, k, n) in GEMMS.items():
        copies = max(2, -(-2 * L2_BYTES // (k * n * 2)))
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        residual = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        row_major = [torch.randn(k, n, device="cuda", dtype=torch.bfloat16) for _ in range(copies)]
        layouts = {"row-major": row_major, "linear": [model.linear_layout(w) for w in row_major]}
        for (layout, weights), op, library in itertools.product(layouts.items(), ("mm", "addmm_"), LIBRARIES):
            call = torch.mm if op == "mm" else residual.addmm_
            with blas(library):
                us = graph_us([functools.partial(call, x, w) for w in weights])
            fraction = k * n * 2 / (us / 1e6) / peak
            rows.append({"gemm": name, "shape": [m, k, n], "layout": layout, "op": op, "library": library,
                         "us": round(us, 2), "fraction": round(fraction, 4)})  # fmt: skip
            print(f"| {name} [{m}x{k}]x[{k}x{n}] | {layout} | {op} | {library} | {us:.2f} | {fraction:.1%} |",
                  flush=True)  # fmt: skip
        del row_major, layouts
        torch.cuda.empty_cache()
    return rows


@contextlib.contextmanager
def slot_major_pools() -> Iterator[None]:
    """KvPools as they were: [num_slots, num_buffers, ...], a layer's buffer one index of every slot row."""
    init, layer_kv = memory.KvPools.__init__, memory.KvPools.layer_kv

    def slot_major_init(self, layout, num_slots, *, device):  # type: ignore[no-untyped-def]
        init(self, layout, num_slots, device=device)  # zeros: the same storage, viewed slot-major (no copy)
        self.tensors = [[t.view(t.shape[1], t.shape[0], *t.shape[2:]) for t in group] for group in self.tensors]

    def slot_major_kv(self, layer_id):  # type: ignore[no-untyped-def]
        placement = self.layout.placements[layer_id]
        pool = self.tensors[placement.group_id][placement.pool_index]
        key = pool[:, placement.key_buffer]
        return key, key if placement.value_buffer is None else pool[:, placement.value_buffer]

    memory.KvPools.__init__, memory.KvPools.layer_kv = slot_major_init, slot_major_kv  # type: ignore[method-assign]
    try:
        yield
    finally:
        memory.KvPools.__init__, memory.KvPools.layer_kv = init, layer_kv  # type: ignore[method-assign]


@contextlib.contextmanager
def row_major_weights() -> Iterator[None]:
    linear_layout = model.linear_layout
    model.linear_layout = lambda weight: weight.contiguous()  # type: ignore[assignment]
    try:
        yield
    finally:
        model.linear_layout = linear_layout


def launch_override(
    head_dim: int | None, group_of: int = 1, **changes: Any
) -> contextlib.AbstractContextManager[object]:
    """Each paged-kernel call with `changes` (PagedLaunch fields) to its launch at `head_dim` (None: every
    layer's) where `group_of` divides the layer's GQA group, after the model chose it (model.py imports
    triton_paged_decode at each call)."""
    paged_decode = triton_attention.triton_paged_decode  # the one in force now: patches stack

    def changed(q: torch.Tensor, k_pool: torch.Tensor, *args: object,
                launch: triton_attention.PagedLaunch | None = None, **kwargs: object) -> torch.Tensor:  # fmt: skip
        group = q.shape[1] // k_pool.shape[2]
        if launch is not None and head_dim in (None, q.shape[-1]) and group % group_of == 0:  # the fused step's
            launch = dataclasses.replace(launch, **changes)
        return paged_decode(q, k_pool, *args, launch=launch, **kwargs)  # type: ignore[arg-type]

    return mock.patch.object(triton_attention, "triton_paged_decode", changed)


def tiles_of_16_at_d512() -> contextlib.AbstractContextManager[object]:
    """16-token tiles at head_dim 512, as the step had them before 32."""
    return launch_override(512, block_t=16)


OVERRIDE = re.compile(r"d(\d+):(\w+)=(\w+)")  # a variant part: "d512:programs_per_sm=1"


def override_part(part: str) -> contextlib.AbstractContextManager[object] | None:
    """The launch override a variant part names ("d128:block_t=32", "d512:last_split_merges=0"), else None."""
    found = OVERRIDE.fullmatch(part)
    if found is None:
        return None
    head_dim, knob, text = int(found[1]), found[2], found[3]
    kind = {field.name: field.type for field in dataclasses.fields(triton_attention.PagedLaunch)}.get(knob)
    if kind is None:
        raise SystemExit(f"variant part {part!r}: no PagedLaunch field {knob!r}")
    value: object = None if text == "none" else bool(int(text)) if kind == "bool" else int(text)
    return launch_override(head_dim, **{knob: value})


def valid_variant(name: str) -> str:
    if name in VARIANTS or all(part in PARTS or OVERRIDE.fullmatch(part) for part in name.split("+")):
        return name
    raise argparse.ArgumentTypeError(f"{name!r}: a name of {VARIANTS}, or parts of {PARTS} and dN:field=value")


@contextlib.contextmanager
def blas(library: str) -> Iterator[None]:
    torch.backends.cuda.preferred_blas_library(library)
    try:
        yield
    finally:
        torch.backends.cuda.preferred_blas_library("default")


def variant(name: str) -> contextlib.ExitStack[bool | None]:
    """The engine with the changes after `name` taken back (model.py imports default_launch at each call), or
    with the L2 prefetch plan, the BLAS library and the head parts its parts name ("folded+prefetch+cublaslt")."""
    stack = contextlib.ExitStack()
    parts = name.split("+") if name not in ("+pools", "+weights") else [name]
    use_path({"per-op": "triton-unfused", "folded": "triton-folded"}.get(parts[0], "triton"))
    reverted = {"before": 3, "+pools": 2, "+weights": 1}.get(name, 0)
    for change in (tiles_of_16_at_d512, row_major_weights, slot_major_pools)[:reverted]:
        stack.enter_context(change())
    plan = next((PLANS[part] for part in parts if part in PLANS), "off")  # read when the engine is built
    stack.enter_context(mock.patch.dict(os.environ, {l2_prefetch.PREFETCH_ENV_VAR: plan}))
    if "cublaslt" in parts:
        stack.enter_context(blas("cublaslt"))
    if "heads" in parts or "heads-d512" in parts:
        only = 512 if "heads-d512" in parts else None
        stack.enter_context(launch_override(only, HEAD_PARTS, head_parts=HEAD_PARTS, programs_per_sm=1))
    if "narrow" in parts:
        stack.enter_context(launch_override(None, narrow_partials=True))
    if "in-registers" in parts:
        stack.enter_context(launch_override(None, token_in_registers=True))
    if "wide" in parts:
        stack.enter_context(launch_override(None, narrow_partials=False))
    if "pdl" in parts or "no-pdl" in parts:
        stack.enter_context(launch_override(None, pdl="pdl" in parts))
    for part in parts:
        override = override_part(part)
        if override is not None:
            stack.enter_context(override)
    return stack


def step_rows(case_ids: list[str], variants: list[str], peak: float) -> list[dict[str, object]]:
    cases, rows = perf_cases(), []
    for case_id in case_ids:
        case = cases[case_id]
        for name in variants:
            with variant(name):
                found = decoded(case)
            assert found.device_step_ms is not None and found.achieved_bytes_per_s is not None
            fraction = found.achieved_bytes_per_s / peak
            rows.append({"case": case_id, "variant": name, "device_step_ms": round(found.device_step_ms, 3),
                         "fraction": round(fraction, 4)})  # fmt: skip
            print(f"| {case_id} | {name} | {found.device_step_ms:.3f} | {fraction:.1%} |", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", choices=CASES, help="repeatable; default: both")
    parser.add_argument("--variant", action="append", type=valid_variant,
                        help="repeatable; default: all of VARIANTS; or parts joined by +")  # fmt: skip
    parser.add_argument("--no-gemms", action="store_true", help="the whole steps only")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    device = torch.cuda.get_device_name().removeprefix("NVIDIA ").strip()
    peak = peak_memory_bytes_per_s(device) or float("nan")
    print(f"device {device}, peak {peak / 1e12:.2f} TB/s; torch {torch.__version__}")
    gemms = []
    if not args.no_gemms:
        print("| GEMM | weight layout | op | BLAS | µs a call | fraction of peak (weight bytes) |")
        print("|---|---|---|---|---|---|")
        gemms = gemm_rows(peak)
    print("| case | variant | device step ms | fraction of peak |\n|---|---|---|---|")
    steps = step_rows(args.case or list(CASES), args.variant or list(VARIANTS), peak)
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "gemms": gemms, "steps": steps}, indent=1),
                                   encoding="utf-8")  # fmt: skip


if __name__ == "__main__":
    main()
