"""A decode step's projections as one Triton kernel: few rows against a weight streamed once from HBM.

At a decode step's 64-128 rows a projection is a weight read, not arithmetic: the whole [out, in] weight
streams through once and each row's product is a dot over it. cuBLAS covers a wide-in, narrow-out weight
(the DeepSeek-like output projection, [8192 -> 2048]) with a split-K kernel and a second reduce kernel, and
reached about half the H100's bandwidth on it (docs/PERF.md). Here:

    grid (output tile, split of the inputs): a program multiplies the rows by its [BLOCK_N, K / splits] slice
    of the weight (tl.dot, float32 sums). One split stores the result; several store float32 partials and
    the split that arrives last (an atomic counter per output tile, acquire-release) adds them in split
    order, so the sum is the same on every run, and zeroes its counter for the next call or graph replay.

`accumulate_into` adds the product to a tensor in place (the residual's addmm_). `TRITON_INTERPRET=1` runs
it on CPU tensors (the CPU tests check it against torch.mm).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from kvengine import triton_attention

MAX_ROWS = 128  # beyond a decode step's rows the GEMM is arithmetic again: cuBLAS's


@triton.jit
def _skinny_kernel(  # type: ignore[no-untyped-def]
    X, W, OUT, PARTIAL, ARRIVED, rows, n_out, n_in, stride_x, stride_w, stride_o,
    ACCUMULATE: tl.constexpr, SPLITS: tl.constexpr, PER_SPLIT: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    tile = tl.program_id(0)
    split = tl.program_id(1)
    m = tl.arange(0, BLOCK_M)
    n = tile * BLOCK_N + tl.arange(0, BLOCK_N)
    m_ok, n_ok = m < rows, n < n_out
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for first in range(split * PER_SPLIT, split * PER_SPLIT + PER_SPLIT, BLOCK_K):
        k = first + tl.arange(0, BLOCK_K)
        k_ok = k < n_in
        x = tl.load(X + m[:, None] * stride_x + k[None, :], mask=m_ok[:, None] & k_ok[None, :], other=0.0)
        w = tl.load(W + n[:, None] * stride_w + k[None, :], mask=n_ok[:, None] & k_ok[None, :], other=0.0)
        acc = tl.dot(x, tl.trans(w), acc, input_precision=PRECISION)
    out_at = m[:, None] * stride_o + n[None, :]
    mask = m_ok[:, None] & n_ok[None, :]
    if SPLITS > 1:
        tl.store(PARTIAL + (split * BLOCK_M + m[:, None]) * n_out + n[None, :], acc, mask=mask)
        tl.debug_barrier()  # every thread's partial stored before the release below
        arrived = tl.atomic_add(ARRIVED + tile, 1, sem="acq_rel", scope="gpu")
        if arrived == SPLITS - 1:  # the last split: every other partial is visible to its acquire
            acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
            for s in range(0, SPLITS):  # split order: the same sum whichever split arrives last
                acc += tl.load(PARTIAL + (s * BLOCK_M + m[:, None]) * n_out + n[None, :], mask=mask, other=0.0,
                               cache_modifier=".cg")  # fmt: skip
            if ACCUMULATE:
                acc += tl.load(OUT + out_at, mask=mask, other=0.0).to(tl.float32)
            tl.store(OUT + out_at, acc.to(OUT.dtype.element_ty), mask=mask)
            tl.atomic_xchg(ARRIVED + tile, 0)  # zero again for the next call (a graph replays the same counters)
    else:
        if ACCUMULATE:
            acc += tl.load(OUT + out_at, mask=mask, other=0.0).to(tl.float32)
        tl.store(OUT + out_at, acc.to(OUT.dtype.element_ty), mask=mask)


@dataclass(frozen=True)
class GemmLaunch:
    """How one call's grid and programs are shaped (bench/decode_layout_bench.py times it on a GPU)."""

    block_n: int = 64
    block_k: int = 128
    num_warps: int = 4
    num_stages: int = 4
    programs_per_sm: int = 1  # split the inputs until output tiles x splits reach this many per SM


def skinny_matmul(
    x: torch.Tensor, weight_t: torch.Tensor, *, accumulate_into: torch.Tensor | None = None,
    launch: GemmLaunch | None = None,
) -> torch.Tensor:  # fmt: skip
    """x [rows, in] @ weight_t.T, weight_t [out, in] contiguous (torch.nn.Linear's layout), in x's dtype;
    added into `accumulate_into` [rows, out] in place and that returned, when given. Rows up to MAX_ROWS."""
    rows, n_in = x.shape
    n_out = weight_t.shape[0]
    if rows > MAX_ROWS or weight_t.stride(1) != 1 or x.stride(1) != 1:
        raise ValueError(f"skinny_matmul takes up to {MAX_ROWS} rows and unit-stride inputs, found {rows} rows")
    launch = launch or GemmLaunch()
    out = accumulate_into if accumulate_into is not None else torch.empty((rows, n_out), dtype=x.dtype,
                                                                          device=x.device)  # fmt: skip
    tiles = triton.cdiv(n_out, launch.block_n)
    wanted = max(1, triton.cdiv(launch.programs_per_sm * triton_attention.multiprocessors(x.device), tiles))
    per_split = triton.cdiv(triton.cdiv(n_in, min(wanted, triton.cdiv(n_in, launch.block_k))), launch.block_k)
    per_split *= launch.block_k
    splits = triton.cdiv(n_in, per_split)
    block_m = max(16, triton.next_power_of_2(rows))
    partial = torch.empty((splits, block_m, n_out), dtype=torch.float32, device=x.device) if splits > 1 else out
    arrived = triton_attention.arrival_counters(x.device, tiles) if splits > 1 else out  # unread with one split
    _skinny_kernel[(tiles, splits)](
        x, weight_t, out, partial, arrived, rows, n_out, n_in, x.stride(0), weight_t.stride(0), out.stride(0),
        ACCUMULATE=accumulate_into is not None, SPLITS=splits, PER_SPLIT=per_split,
        PRECISION="ieee" if x.dtype == torch.float32 else "tf32", BLOCK_M=block_m, BLOCK_N=launch.block_n,
        BLOCK_K=launch.block_k, num_warps=launch.num_warps, num_stages=launch.num_stages,
    )  # fmt: skip
    return out
