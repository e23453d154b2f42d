"""Registers, spills and shared memory of the paged-decode kernel for an H200 (sm_90), compiled here: no GPU.

Triton compiles the kernel for a target it is told, and its bundled ptxas and cuobjdump read the cubin. Per
bandwidth-case layer shape (bench/paged_kernel_sweep.py's) and call (the folded step's: the norm's factor applied
and the last split merging; the fused step's, new token passed and stored; or the per-op step's), at the
default launch: registers a thread, local memory (spills), shared memory, cp.async copies in the loop (what
Triton pipelines), and how many programs an SM holds (its 64K registers and 228 KB of shared memory). Spilled
bytes are cuobjdump's stack frame plus local memory. The compile specializes on 16-byte alignment as the JIT
does for the engine's calls (`aligned`): without it no tile load is pipelined, and the registers differ.

    PYTHONPATH=$PWD:$PWD/src python3 bench/paged_kernel_registers.py [--warps 8] [--stages 2] [--max-registers 128]
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import subprocess
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from bench.paged_kernel_sweep import SHAPES, Shape
from kvengine.triton_attention import _paged_decode_kernel, default_launch, kernel_constexprs, split_count

H200 = GPUTarget("cuda", 90, 32)
TOOLS = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
REGISTERS_AN_SM = 65536
SHARED_AN_SM = 228 * 1024  # an H100's or H200's shared memory an SM
HIDDEN = 2048  # the bandwidth cases' hidden size: the folded norm's row width


def signature(
    shape: Shape, *, call: str, overrides: dict[str, int], prefetch: bool = False, in_registers: bool = False
) -> tuple[dict, dict, dict]:  # type: ignore[type-arg]
    """(argument types, constexprs, compile options) of the call the engine makes for `shape` on an H200."""
    layer, tpb = shape.layer, shape.tokens_per_block
    folded = call == "folded"
    launch = dataclasses.replace(default_launch(layer.head_dim, tpb), prefetch=prefetch, last_split_merges=folded,
                                 narrow_partials=folded, token_in_registers=in_registers)  # fmt: skip
    blocks = -(-shape.seq_len // tpb)
    columns = blocks if layer.window_tokens is None else min(blocks, (layer.window_tokens - 1) // tpb + 2)
    n_tiles = columns * -(-tpb // launch.block_t)
    splits, per_split = split_count(shape.rows * layer.num_kv_heads, n_tiles, multiprocessors=132, launch=launch)
    constexprs = kernel_constexprs(
        launch, group=layer.q_heads // layer.num_kv_heads, head_dim=layer.head_dim, tokens_per_block=tpb,
        splits=splits, per_split=per_split, last_merges=splits > 1 and launch.last_split_merges,
        has_window=layer.window_tokens is not None, key_only=layer.key_only, store_new=call != "per-op",
        norm_width=HIDDEN if folded else None, float32=False, pdl=launch.pdl,
    )  # fmt: skip
    types = {}
    for name in _paged_decode_kernel.arg_names:
        if name in constexprs:
            types[name] = "constexpr"
        elif name in ("SLOTS", "LOGICAL", "SEQ_LENS", "NEW_SLOTS", "NEW_COLUMNS"):
            types[name] = "*i64"
        elif name in ("M_OUT", "L_OUT"):
            types[name] = "*fp32" if splits > 1 else "*bf16"
        elif name == "OUT":  # the partials where rows split
            types[name] = "*fp32" if splits > 1 and not launch.narrow_partials else "*bf16"
        elif name == "ARRIVED":
            types[name] = "*i32"
        else:
            types[name] = "*bf16" if name.isupper() else "fp32" if name in ("scale", "eps") else "i32"
    options = {"num_warps": launch.num_warps, "num_stages": launch.num_stages}
    if launch.max_registers is not None:
        options["maxnreg"] = launch.max_registers
    options.update(overrides)
    return types, constexprs, options


ALIGNED_STRIDES = ("stride_k", "stride_v", "stride_q", "stride_n", "stride_x", "stride_o")  # multiples of 16


def aligned(types: dict[str, str]) -> dict[tuple[int, ...], list[list[object]]]:
    """The divisibility by 16 that Triton's JIT finds in the engine's calls and specializes on: every pointer
    (torch's allocations), and the pools', query's, rows' and output's strides (head dims, hidden sizes and
    their products). Without it no tile load is 16-byte aligned, and none is pipelined (cp.async)."""
    names = _paged_decode_kernel.arg_names
    return {(index,): [["tt.divisibility", 16]] for index, name in enumerate(names)
            if types[name].startswith("*") or name.startswith(ALIGNED_STRIDES)}  # fmt: skip


def resources(
    shape: Shape, *, call: str, overrides: dict[str, int], prefetch: bool = False, in_registers: bool = False
) -> dict[str, int]:
    types, constexprs, options = signature(shape, call=call, overrides=overrides, prefetch=prefetch,
                                           in_registers=in_registers)  # fmt: skip
    source = ASTSource(_paged_decode_kernel, types, constexprs=constexprs, attrs=aligned(types))
    compiled = triton.compile(source, target=H200, options=options)
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        Path(cubin.name).write_bytes(compiled.asm["cubin"])
        usage = subprocess.run([TOOLS / "cuobjdump", "-res-usage", cubin.name], capture_output=True, text=True,
                               check=True).stdout  # fmt: skip
    registers = int(re.search(r"REG:(\d+)", usage).group(1))  # type: ignore[union-attr]
    spilled = sum(int(n) for n in re.findall(r"(?:STACK|LOCAL):(\d+)", usage))  # spills go to the stack frame
    copies = compiled.asm["ttgir"].count("async_copy_global_to_local")
    return {"registers": registers, "local_bytes": spilled, "shared_bytes": compiled.metadata.shared,
            "async_copies": copies, "programs_an_sm": min(REGISTERS_AN_SM // (registers * 32 * options["num_warps"]),
                                                          SHARED_AN_SM // max(1, compiled.metadata.shared))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warps", type=int, help="instead of the default launch's")
    parser.add_argument("--stages", type=int, help="instead of the default launch's")
    parser.add_argument("--max-registers", type=int, help="ptxas's cap (Triton's maxnreg)")
    parser.add_argument("--prefetch", action="store_true", help="the launch's prefetch on (two tiles in flight)")
    parser.add_argument("--token-in-registers", action="store_true", help="the launch's token_in_registers on")
    args = parser.parse_args()
    chosen = {"num_warps": args.warps, "num_stages": args.stages, "maxnreg": args.max_registers}
    overrides = {name: value for name, value in chosen.items() if value is not None}
    print(f"triton {triton.__version__}, target sm_90")
    print("| shape | call | registers | spilled bytes | shared bytes | cp.async in loop | programs an SM |")
    print("|---|---|---|---|---|---|---|")
    for name, shape in SHAPES.items():
        for call in ("folded", "fused", "per-op"):
            found = resources(shape, call=call, overrides=overrides, prefetch=args.prefetch,
                              in_registers=args.token_in_registers)  # fmt: skip
            cells = [name, call, *(str(value) for value in found.values())]
            print("| " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
