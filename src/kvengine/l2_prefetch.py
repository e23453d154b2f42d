"""Weights (and KV blocks) pulled into the GPU's L2 ahead of the kernel that reads them, while other kernels run.

A decode step at 64 rows is a chain of small kernels, each using a part of the memory bandwidth: on an H100 the
DeepSeek-like step's GEMMs stream their weights at 35-64 % of peak and its paged kernel its KV at about a third.
The chain holds no independent work to overlap, only reads whose addresses are known before they are due: the
weights, and the next layer's KV blocks (its slot list is the step's). A kernel on a side stream issues one
`prefetch.global.L2` per 128-byte line of what a later kernel reads and exits; the lines arrive while the kernels
before it run, and it finds them in L2.

A prefetch is a hint: it changes no value, and a line evicted before its GEMM is read from memory again.

Measured on an H100, every plan made both bandwidth cases' steps slower (DeepSeek-like b64 by 6-29 %, Gemma-like
b128 by 1-28 %; docs/PERF.md, "Weights prefetched into L2"): the prefetched lines compete with the kernels they
were to feed. The default plan is `off`; the plans stay for other GPUs and shapes to be measured on.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from kvengine.errors import ConfigError, did_you_mean

LINE_BYTES = 128  # an L2 line: one prefetch instruction each
LINES_A_PROGRAM = 1024  # 128 KiB a program: 8 prefetches a thread at 4 warps


@triton.jit
def _prefetch_lines(at, EVICT_LAST: tl.constexpr):  # type: ignore[no-untyped-def]
    """One L2 prefetch per address in `at` (an inline instruction: no mask, no result waited for)."""
    if EVICT_LAST:  # kept over lines of normal priority (the KV streaming through) until read
        tl.inline_asm_elementwise("prefetch.global.L2::evict_last [$1];\n\tmov.u32 $0, 0;", "=r,l", [at],
                                  dtype=tl.int32, is_pure=False, pack=1)  # fmt: skip
    else:
        tl.inline_asm_elementwise("prefetch.global.L2 [$1];\n\tmov.u32 $0, 0;", "=r,l", [at], dtype=tl.int32,
                                  is_pure=False, pack=1)  # fmt: skip


@triton.jit
def _prefetch_kernel(PTR, n_lines, LINE: tl.constexpr, LINES: tl.constexpr, EVICT_LAST: tl.constexpr):
    """Each program prefetches LINES lines of LINE elements from PTR; past n_lines it repeats the last line (a
    line prefetched twice costs nothing more)."""
    lines = tl.minimum(tl.program_id(0) * LINES + tl.arange(0, LINES), n_lines - 1)
    _prefetch_lines(PTR + lines.to(tl.int64) * LINE, EVICT_LAST)


@triton.jit
def _prefetch_blocks_kernel(POOL, SLOTS, stride_slot, stride_row, block_lines, LINE: tl.constexpr,
                            LINES: tl.constexpr, EVICT_LAST: tl.constexpr):  # fmt: skip
    """Program (row, column): the pool block that row's slot list names there (none for -1), its block_lines
    lines of LINE elements (LINES: a power of two at least that, the rest repeating its last line); a block's
    bytes are one dense span of the buffer-major pool."""
    slot = tl.load(SLOTS + tl.program_id(0) * stride_row + tl.program_id(1))
    if slot >= 0:
        lines = tl.minimum(tl.arange(0, LINES), block_lines - 1).to(tl.int64)
        _prefetch_lines(POOL + slot * stride_slot + lines * LINE, EVICT_LAST)


def byte_span(tensor: torch.Tensor) -> tuple[torch.Tensor, int]:
    """(a 1-D view of `tensor`'s memory, its byte count): `tensor` must be dense, or a transpose of a dense
    one (a weight in the Linear layout)."""
    base = tensor if tensor.is_contiguous() else tensor.T
    if not base.is_contiguous():
        raise ValueError(f"an L2 prefetch needs a dense tensor or a transposed one, found strides {tensor.stride()}")
    flat = base.view(-1)
    return flat, flat.numel() * flat.element_size()


def prefetch(tensor: torch.Tensor, *, evict_last: bool = False) -> None:
    """Issue L2 prefetches for every line of `tensor`'s bytes, on the current stream; returns when issued."""
    flat, nbytes = byte_span(tensor)
    per_line = LINE_BYTES // flat.element_size()
    n_lines = -(-nbytes // LINE_BYTES)
    grid = (triton.cdiv(n_lines, LINES_A_PROGRAM),)
    _prefetch_kernel[grid](flat, n_lines, LINE=per_line, LINES=LINES_A_PROGRAM, EVICT_LAST=evict_last, num_warps=4)


def prefetch_blocks(pool: torch.Tensor, slots: torch.Tensor, *, evict_last: bool = False) -> None:
    """Issue L2 prefetches for the pool blocks `slots` [rows, columns] names (-1: none), on the current stream:
    `pool` [num_slots, ...] holds a block's bytes densely at each index of its first dimension."""
    block = pool[0]
    if not block.is_contiguous():
        raise ValueError(f"an L2 prefetch of pool blocks needs each block dense, found strides {pool.stride()}")
    per_line = LINE_BYTES // pool.element_size()
    block_lines = -(-block.numel() // per_line)
    rows, columns = slots.shape
    _prefetch_blocks_kernel[(rows, columns)](pool, slots, pool.stride(0), slots.stride(0), block_lines,
                                             LINE=per_line, LINES=triton.next_power_of_2(block_lines),
                                             EVICT_LAST=evict_last, num_warps=4)  # fmt: skip


@dataclass(frozen=True)
class PrefetchPlan:
    """Which weights the fused step pulls into L2, and when (kvengine.model's layer loop):

    `output_ahead`: a layer's output projection, from the start of its layer (during its QKV GEMM and its
    attention); `next_qkv`: the next layer's QKV weights, once this layer's QKV GEMM is done (during its attention
    and output GEMM); `next_kv`: the next layer's KV blocks, once this layer's attention is done (during its output
    GEMM and the next QKV GEMM). `evict_last`: the prefetched lines outrank the lines of normal priority."""

    output_ahead: bool = True
    next_qkv: bool = True
    next_kv: bool = False
    evict_last: bool = False

    @property
    def any(self) -> bool:
        return self.output_ahead or self.next_qkv or self.next_kv


PREFETCH_ENV_VAR = "KVENGINE_L2_PREFETCH"
PLANS = {  # $KVENGINE_L2_PREFETCH's values
    "off": PrefetchPlan(output_ahead=False, next_qkv=False),
    "output": PrefetchPlan(output_ahead=True, next_qkv=False),
    "next-qkv": PrefetchPlan(output_ahead=False, next_qkv=True),
    "both": PrefetchPlan(),
    "both-evict-last": PrefetchPlan(evict_last=True),
    "next-kv": PrefetchPlan(output_ahead=False, next_qkv=False, next_kv=True),
    "all": PrefetchPlan(next_kv=True),
}
DEFAULT_PLAN = "off"  # every other plan was slower on an H100 (module docstring)


def plan_from_env(environ: Mapping[str, str] = os.environ) -> PrefetchPlan:
    """The plan $KVENGINE_L2_PREFETCH names (unset or empty: the default); a value naming none is an error."""
    text = environ.get(PREFETCH_ENV_VAR, "").strip()
    if text and text not in PLANS:
        raise ConfigError(f"{PREFETCH_ENV_VAR} must be one of {', '.join(PLANS)} (or unset), found {text!r}.",
                          hint=did_you_mean(text, tuple(PLANS)))  # fmt: skip
    return PLANS[text or DEFAULT_PLAN]


class SideStream:
    """Prefetches issued on a stream of their own, forked from the current stream where they are asked for, so
    the kernels they overlap never wait for them; `joined()` merges the fork back (a CUDA graph capture needs
    every stream it forked joined before it ends)."""

    def __init__(self, device: torch.device, plan: PrefetchPlan) -> None:
        self.stream = torch.cuda.Stream(device)
        self.plan = plan
        self.forked = False

    def prefetch(self, tensor: torch.Tensor) -> None:
        with self._forked():
            prefetch(tensor, evict_last=self.plan.evict_last)

    def prefetch_blocks(self, pool: torch.Tensor, slots: torch.Tensor) -> None:
        with self._forked():
            prefetch_blocks(pool, slots, evict_last=self.plan.evict_last)

    @contextlib.contextmanager
    def _forked(self) -> Iterator[None]:
        self.stream.wait_stream(torch.cuda.current_stream(self.stream.device))
        with torch.cuda.stream(self.stream):
            yield
        self.forked = True

    @contextlib.contextmanager
    def joined(self) -> Iterator[None]:
        try:
            yield
        finally:
            if self.forked:
                torch.cuda.current_stream(self.stream.device).wait_stream(self.stream)
                self.forked = False
