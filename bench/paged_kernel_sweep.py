"""The paged-decode kernel's launch parameters on a GPU: which tile, warps, stages and split target move its
layers' KV fastest, at the two bandwidth cases' own layer shapes (the fused step's call: new token passed
and stored, splits merged by the combine kernel).

Per shape: the default launch (kvengine.triton_attention.default_launch), then each knob's other values with
the rest at default (a coordinate search, not the full cross product: a few compiles a knob), then the best
value of each knob together, then the folded step's launch (the last split merging bf16 partials: the
engine's default path) with and without the new token in registers. Each config is timed as one CUDA graph
of calls over enough copies of the layer's pools to exceed L2 twice (as in a decode step, where 60 layers'
KV streams through it), median of `--repeats` replays; the table reads the KV bytes a call must move
(block-granular, as decode_step_bytes counts them) per second.
Run where a GPU is:

    PYTHONPATH=$PWD:$PWD/src python3 bench/paged_kernel_sweep.py [--shape deepseek-window] [--json out.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from ci_tool.perf.devices import peak_memory_bytes_per_s
from kvengine.attention import gather_indices, new_token_blocks
from kvengine.lifecycle import build_layout
from kvengine.spec import LayerSpec
from kvengine.triton_attention import NewToken, PagedLaunch, default_launch, triton_paged_decode

L2_BYTES = 50 * 2**20  # an H100's or H200's 50 MiB


@dataclass(frozen=True)
class Shape:
    layer: LayerSpec
    tokens_per_block: int
    rows: int
    seq_len: int  # every row's, new token included (the bench cases' final step: 992 + 2 + 32)


SHAPES = {
    "gemma-window": Shape(LayerSpec(8, 128, "bfloat16", 1024, num_q_heads=16), 32, 128, 1026),
    "gemma-full": Shape(LayerSpec(8, 128, "bfloat16", None, num_q_heads=16), 32, 128, 1026),
    "deepseek-window": Shape(LayerSpec(1, 512, "bfloat16", 128, key_only=True, num_q_heads=16), 128, 64, 1026),
    "deepseek-full": Shape(LayerSpec(1, 128, "bfloat16", None, key_only=True, num_q_heads=16), 128, 64, 1026),
}


def knob_values(shape: Shape) -> dict[str, list[object]]:
    wide = shape.layer.head_dim > 128  # a [16, 512] accumulator: tiles past 32 tokens do not fit registers
    tiles: list[object] = [t for t in (16, 32, 64) if t <= max(16, shape.tokens_per_block) and not (wide and t > 32)]
    values: dict[str, list[object]] = {"block_t": tiles, "num_warps": [2, 4, 8], "num_stages": [1, 2, 3],
                                       "programs_per_sm": [0, 1, 2, 4], "max_registers": [None, 128, 168]}  # fmt: skip
    if not shape.layer.key_only:
        values["v_with_k"] = [False, True]
    values["last_split_merges"] = [True, False]
    values["prefetch"] = [False, True]  # matters where rows split: the combine kernel against none
    values["head_parts"] = head_parts(shape)
    values["narrow_partials"] = [False, True]
    values["token_in_registers"] = [False, True]
    return values


def head_parts(shape: Shape) -> list[object]:
    """1 and each power of two up to 8 that divides the layer's GQA group."""
    return [parts for parts in (1, 2, 4, 8) if shape.layer.group % parts == 0]


class Call:
    """Inputs of one layer's kernel call, `copies` times over (distinct pools: the timed loop streams from HBM)."""

    def __init__(self, shape: Shape, copies: int) -> None:
        layer, tpb, rows = shape.layer, shape.tokens_per_block, shape.rows
        blocks = -(-shape.seq_len // tpb)
        layout = build_layout([layer], [layer.window_tokens], tokens_per_block=tpb)
        cycle = layout.life_cycles[0]
        self.seq_lens = torch.full((rows,), shape.seq_len, dtype=torch.int64, device="cuda")
        table = torch.randperm(rows * blocks, device="cuda").view(rows, blocks)  # blocks scattered over the pool
        slots, self.logical, usable = gather_indices(table, self.seq_lens, cycle, tpb)
        self.slots = torch.where(usable, slots, -1)
        # the new token's slot and column, as the engine's step finds them
        self.new_blocks = new_token_blocks((self.slots, self.logical, usable), self.seq_lens - 1, tpb)
        pool_shape = (rows * blocks, tpb, layer.num_kv_heads, layer.head_dim)
        self.pools = []
        for _ in range(copies):
            k_pool = torch.randn(pool_shape, device="cuda", dtype=torch.bfloat16)
            self.pools.append((k_pool, k_pool if layer.key_only else torch.randn_like(k_pool)))
        width = (layer.q_heads + 2 * layer.num_kv_heads) * layer.head_dim
        self.qkv = torch.randn(rows, width, device="cuda", dtype=torch.bfloat16)
        self.shape = shape

    def __call__(self, launch: PagedLaunch, k_pool: torch.Tensor, v_pool: torch.Tensor) -> torch.Tensor:
        layer = self.shape.layer
        q_width, kv_width = layer.q_heads * layer.head_dim, layer.num_kv_heads * layer.head_dim
        heads = (-1, layer.num_kv_heads, layer.head_dim)
        k = self.qkv[:, q_width : q_width + kv_width].view(heads)
        v = None if layer.key_only else self.qkv[:, q_width + kv_width :].view(heads)
        return triton_paged_decode(
            self.qkv[:, :q_width].view(-1, layer.q_heads, layer.head_dim), k_pool, v_pool, self.slots, self.logical,
            self.seq_lens, window_tokens=layer.window_tokens, sink_tokens=layer.sink_tokens,
            new_token=NewToken(k, v, *self.new_blocks), launch=launch,
        )  # fmt: skip


def kv_bytes(shape: Shape) -> int:
    """Block-granular KV a call reads (kvengine.benchmark.decode_step_bytes's rule), one layer."""
    tpb, window = shape.tokens_per_block, shape.layer.window_tokens
    first = 0 if window is None else max(0, shape.seq_len - window) // tpb
    return shape.rows * (-(-shape.seq_len // tpb) - first) * tpb * shape.layer.bytes_per_token()


def time_us(call: Call, launch: PagedLaunch, repeats: int) -> float:
    """Median µs a call, from replays of one graph holding a call on each pool copy."""
    return graph_us([functools.partial(call, launch, k_pool, v_pool) for k_pool, v_pool in call.pools], repeats)


def graph_us(calls: Sequence[Callable[[], object]], repeats: int = 20) -> float:
    """Median µs a call, from replays of one CUDA graph holding every call once (each run once before the
    capture: Triton compiles and cuBLAS picks its kernel outside it)."""
    for call in calls:
        call()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for call in calls:
            call()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / len(calls))
    return statistics.median(times)


def sweep(name: str, shape: Shape, repeats: int, peak: float) -> list[dict[str, object]]:
    copies = max(1, -(-2 * L2_BYTES // kv_bytes(shape)))
    call = Call(shape, copies)
    default = default_launch(shape.layer.head_dim, shape.tokens_per_block)
    rows, best = [], {}
    tried: dict[PagedLaunch, float] = {}

    def run(launch: PagedLaunch, label: str) -> float:
        if launch not in tried:
            tried[launch] = time_us(call, launch, repeats)
            rows.append(report(name, label, launch, tried[launch], kv_bytes(shape), peak))
        return tried[launch]

    run(default, "default")
    for knob, values in knob_values(shape).items():
        timed = {value: run(dataclasses.replace(default, **{knob: value}), f"{knob}={value}") for value in values}
        best[knob] = min(timed, key=timed.__getitem__)
    run(dataclasses.replace(default, **best), "best of each: " + ", ".join(f"{k}={v}" for k, v in best.items()))
    folded = dataclasses.replace(default, last_split_merges=True, narrow_partials=True)  # the engine's default step
    run(folded, "the folded step's: last_split_merges, narrow_partials")
    run(dataclasses.replace(folded, token_in_registers=True), "the folded step's, token_in_registers")
    return rows


def report(name: str, label: str, launch: PagedLaunch, us: float, moved_bytes: int, peak: float) -> dict[str, object]:
    """The table's line, printed, and the JSON's row."""
    per_s = moved_bytes / (us / 1e6)
    print(f"| {name} | {label} | {us:.1f} | {per_s / 1e9:.0f} | {per_s / peak:.1%} |", flush=True)
    return {"shape": name, "config": label, "launch": dataclasses.asdict(launch), "us": round(us, 2),
            "gb_per_s": round(per_s / 1e9, 1), "fraction": round(per_s / peak, 4)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", action="append", choices=SHAPES, help="repeatable; default: all")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    device = torch.cuda.get_device_name().removeprefix("NVIDIA ").strip()
    peak = peak_memory_bytes_per_s(device) or float("nan")
    print(f"device {device}, peak {peak / 1e12:.2f} TB/s; torch {torch.__version__}")
    print("| shape | config | µs a call | KV GB/s | fraction of peak |")
    print("|---|---|---|---|---|")
    rows = [row for name in args.shape or SHAPES for row in sweep(name, SHAPES[name], args.repeats, peak)]
    if args.json:
        Path(args.json).write_text(json.dumps({"device": device, "rows": rows}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
