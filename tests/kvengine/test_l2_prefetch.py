"""The L2 prefetch's pieces on CPU: which bytes a weight spans, the plan the environment names, and the kernel
as an H100 or H200 would run it (compiled here for sm_90 by Triton's bundled tools; no GPU). Graphed steps with
prefetches against steps without are a GPU test (test_fused_step.py)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest
import torch

pytest.importorskip("triton")
import triton

from kvengine.errors import ConfigError
from kvengine.l2_prefetch import (  # after the skip: imports Triton
    LINES_A_PROGRAM,
    PLANS,
    PrefetchPlan,
    _prefetch_blocks_kernel,
    _prefetch_kernel,
    byte_span,
    plan_from_env,
)
from kvengine.model import linear_layout


def test_a_weight_in_the_linear_layout_spans_its_own_bytes_from_its_first_element() -> None:
    weight = linear_layout(torch.arange(12, dtype=torch.bfloat16).view(3, 4))  # [in, out], stored [out, in]
    flat, nbytes = byte_span(weight)
    assert (flat.data_ptr(), nbytes) == (weight.data_ptr(), 24)
    assert sorted(flat.tolist()) == list(range(12))


def test_a_strided_slice_is_refused_with_its_strides() -> None:
    with pytest.raises(ValueError, match=r"dense tensor or a transposed one, found strides \(8, 2\)"):
        byte_span(torch.zeros(4, 8)[:, ::2])


@pytest.mark.parametrize(("evict_last", "instruction"), [(False, "CCTL.E.PF2"), (True, "CCTL.E.PML2")])
def test_the_kernel_issues_one_l2_prefetch_a_line_for_sm_90(evict_last: bool, instruction: str) -> None:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    tools = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    if not (tools / "cuobjdump").exists():
        pytest.skip(f"this Triton bundles no cuobjdump under {tools}")
    types = {"PTR": "*bf16", "n_lines": "i32", "LINE": "constexpr", "LINES": "constexpr", "EVICT_LAST": "constexpr"}
    constexprs = {"LINE": 64, "LINES": LINES_A_PROGRAM, "EVICT_LAST": evict_last}
    compiled = triton.compile(ASTSource(_prefetch_kernel, types, constexprs=constexprs),
                              target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})  # fmt: skip
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        Path(cubin.name).write_bytes(compiled.asm["cubin"])
        sass = subprocess.run([tools / "cuobjdump", "-sass", cubin.name], capture_output=True, text=True,
                              check=True).stdout  # fmt: skip
    assert sass.count(instruction) == LINES_A_PROGRAM // (4 * 32)  # a program's lines over its 128 threads
    assert "LDG" not in sass  # prefetches only: nothing waits for the lines


def test_the_blocks_kernel_prefetches_a_named_block_and_skips_an_unnamed_one_for_sm_90() -> None:
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    tools = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    if not (tools / "cuobjdump").exists():
        pytest.skip(f"this Triton bundles no cuobjdump under {tools}")
    types = {"POOL": "*bf16", "SLOTS": "*i64", "stride_slot": "i64", "stride_row": "i32", "block_lines": "i32",
             "LINE": "constexpr", "LINES": "constexpr", "EVICT_LAST": "constexpr"}  # fmt: skip
    compiled = triton.compile(ASTSource(_prefetch_blocks_kernel, types,
                                        constexprs={"LINE": 64, "LINES": 256, "EVICT_LAST": False}),
                              target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})  # fmt: skip
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        Path(cubin.name).write_bytes(compiled.asm["cubin"])
        sass = subprocess.run([tools / "cuobjdump", "-sass", cubin.name], capture_output=True, text=True,
                              check=True).stdout  # fmt: skip
    assert sass.count("CCTL.E.PF2") == 256 // (4 * 32)
    assert sass.count("LDG") == 1  # the slot: the one load, whose -1 branches past the prefetches


@pytest.mark.parametrize(
    ("value", "plan"),
    [("", PLANS["off"]), (" both ", PrefetchPlan()), ("next-qkv", PrefetchPlan(output_ahead=False, next_qkv=True))],
)
def test_the_environment_names_the_plan(value: str, plan: PrefetchPlan) -> None:
    assert plan_from_env({"KVENGINE_L2_PREFETCH": value}) == plan


def test_a_plan_the_environment_misspells_is_an_error_naming_the_nearest() -> None:
    expected = r"must be one of off, output, next-qkv, both, both-evict-last, next-kv, all \(or unset\), found 'bothh'"
    with pytest.raises(ConfigError, match="KVENGINE_L2_PREFETCH " + expected) as raised:
        plan_from_env({"KVENGINE_L2_PREFETCH": "bothh"})
    assert "did you mean 'both'" in str(raised.value)
