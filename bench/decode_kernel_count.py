"""Kernels one decode step launches on a GPU, per decode path and layer kind: counted on CPU, no GPU needed.

A CUDA graph replays what its capture dispatched, so the step's kernel count is what the decoder's forward
dispatches: every aten op that computes (views and allocations launch nothing) and every Triton launch.
Triton launches are counted, not run (TRITON_INTERPRET=1 lets the Triton paths be chosen on CPU; their
outputs are never read here), and the split count follows an H200's 132 SMs, so rows x KV heads split as
they do there. Per layer kind: a decoder of two such layers minus one of one. An aten op is one kernel
(index_put_ and a GEMM may be two on some builds), so read the counts as +-1 a layer.

    PYTHONPATH=$PWD:$PWD/src python3 bench/decode_kernel_count.py [--preset deepseek-v4-like --batch 64]
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before anything imports Triton

import argparse
import dataclasses
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch.utils._python_dispatch import TorchDispatchMode

import kvengine.triton_attention as triton_attention
import kvengine.triton_norm as triton_norm
from kvengine.attention import ATTENTION_ENV_VAR, ATTENTION_PATHS, _triton_kernel
from kvengine.config import KvCacheConfig
from kvengine.engine import DecodeEngine, EngineOptions
from kvengine.loader import load_preset
from kvengine.spec import ModelSpec

H200_MULTIPROCESSORS = 132
ATEN = torch.ops.aten
LAUNCH_NOTHING = {
    ATEN.view, ATEN._unsafe_view, ATEN.slice, ATEN.select, ATEN.expand, ATEN.t, ATEN.transpose, ATEN.permute,
    ATEN.as_strided, ATEN.unsqueeze, ATEN.squeeze, ATEN.alias, ATEN.detach, ATEN.empty, ATEN.empty_like,
    ATEN.empty_strided, ATEN.new_empty, ATEN.lift_fresh, ATEN._reshape_alias, ATEN.split, ATEN.unbind,
    ATEN.scalar_tensor,  # where(mask, t, -1)'s wrapped scalar: a CPU scalar a CUDA kernel takes as an argument
}  # fmt: skip
KERNELS = {
    "paged": (triton_attention, "_paged_decode_kernel"),
    "combine": (triton_attention, "_combine_kernel"),
    "rms_norm": (triton_norm, "_rms_norm_kernel"),
}


class Count(TorchDispatchMode):
    """Kernel-launching aten ops and Triton launches, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.launches: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        if func.overloadpacket not in LAUNCH_NOTHING:
            self.launches[f"aten.{func.overloadpacket.__name__}"] += 1
        return func(*args, **(kwargs or {}))


@contextmanager
def counted_triton(count: Count) -> Iterator[None]:
    """Triton launches counted instead of run (and the kernel count's split heuristic at 132 SMs)."""
    saved = {name: getattr(module, attr).run for name, (module, attr) in KERNELS.items()}
    for name, (module, attr) in KERNELS.items():
        getattr(module, attr).run = lambda *a, _name=name, **k: count.launches.update([f"triton.{_name}"])
    saved_sms = triton_attention._multiprocessors
    triton_attention._multiprocessors = lambda device: H200_MULTIPROCESSORS  # type: ignore[assignment]
    try:
        yield
    finally:
        for name, (module, attr) in KERNELS.items():
            getattr(module, attr).run = saved[name]
        triton_attention._multiprocessors = saved_sms  # type: ignore[assignment]


def step_launches(spec: ModelSpec, path: str, batch: int) -> Counter[str]:
    """What one decode step of `batch` rows dispatches under `path` (graphs off: the forward itself), in the
    preset's own dtype (bf16: conversions a float32 run would skip or add are counted as on the GPU)."""
    os.environ[ATTENTION_ENV_VAR] = path
    _triton_kernel.cache_clear()
    tpb = spec.tokens_per_block
    # short rows (half a block; a 4-block table), max_seq_len past every window (one covering it is full attention)
    longest = max(layer.window_tokens or 0 for layer in spec.layers) + 2 * tpb
    limits = dataclasses.replace(spec.runtime, max_batch_size=batch, max_seq_len=max(4 * tpb, longest))
    spec = dataclasses.replace(spec, runtime=limits)
    # room for a block a row and one request of max_seq_len, twice over (the pool groups split the budget)
    slot_bytes = tpb * sum(layer.bytes_per_token() for layer in spec.layers)
    budget = 2 * slot_bytes * (batch + limits.max_seq_len // tpb + 4)
    options = EngineOptions(device="cpu", budget_bytes=budget, max_context_tokens=4 * tpb, use_cuda_graphs=False,
                            hidden_size=64, vocab_size=64)  # fmt: skip
    engine = DecodeEngine(spec, KvCacheConfig(tokens_per_block=spec.tokens_per_block), options)
    sequences = [engine.add_sequence(context_tokens=tpb // 2) for _ in range(batch)]
    count = Count()
    with counted_triton(count):
        assert all(sequences) and engine.step(sequences, torch.zeros(batch, dtype=torch.int64)) is not None  # type: ignore[arg-type]
        count.launches.clear()  # that step staged the rows; the forward alone is what a graph captures
        with count:
            engine.model.forward(engine.pools, engine.static.rows(batch))
    return count.launches


def per_layer(spec: ModelSpec, path: str, batch: int) -> dict[str, int]:
    """Kernels a layer of each kind adds to a step: two such layers minus one."""
    kinds = {}
    for layer in dict.fromkeys(spec.layers):
        one, two = (step_launches(dataclasses.replace(spec, layers=(layer,) * n), path, batch) for n in (1, 2))
        label = f"{'window ' + str(layer.window_tokens) if layer.window_tokens else 'full'}, d{layer.head_dim}"
        kinds[label] = sum(two.values()) - sum(one.values())
    return kinds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", action="append", help="repeatable; default: gemma-like and deepseek-v4-like")
    parser.add_argument("--batch", type=int, action="append", help="rows per preset, in order; default 128, 64")
    parser.add_argument("--detail", action="store_true", help="also list each path's launches by op")
    args = parser.parse_args()
    presets = args.preset or ["gemma-like", "deepseek-v4-like"]
    batches = args.batch or [128, 64][: len(presets)]
    print("| preset | rows | path | kernels a step | a layer, by kind |")
    print("|---|---|---|---|---|")
    for preset, batch in zip(presets, batches, strict=True):
        spec = load_preset(preset)
        for path in ATTENTION_PATHS:
            launches = step_launches(spec, path, batch)
            kinds = ", ".join(f"{kind}: {n}" for kind, n in per_layer(spec, path, batch).items())
            print(f"| {preset} | {batch} | {path} | {sum(launches.values())} | {kinds} |", flush=True)
            if args.detail:
                print("    " + ", ".join(f"{op} {n}" for op, n in sorted(launches.items())))


if __name__ == "__main__":
    main()
