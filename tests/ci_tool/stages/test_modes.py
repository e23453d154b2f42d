"""What each test mode implies: sharding, pytest options and the perf gate."""

from __future__ import annotations

import pytest

from ci_tool.stages.modes import PERF_PYTEST_ARGS, PerfGate, TestMode, mode_policy
from ci_tool.stages.names import parse_stage_name

PERF_ARGS = ("--perf", "--perf-log-formats", "csv", "--perf-log-formats", "yaml")

# (mode, post_merge, functional_only) -> (sharded, pytest_args, perf_gate)
POLICIES = {
    "functional": ((TestMode.FUNCTIONAL, False, False), (True, (), PerfGate.NONE)),
    "functional-post-merge": ((TestMode.FUNCTIONAL, True, False), (True, (), PerfGate.NONE)),
    "perf": ((TestMode.PERF, False, False), (False, PERF_ARGS, PerfGate.FAIL)),
    "perf-post-merge": ((TestMode.PERF, True, False), (False, PERF_ARGS, PerfGate.FAIL)),
    "perf-functional-only": ((TestMode.PERF, False, True), (False, PERF_ARGS, PerfGate.WARN)),
    "perf-sanity-pre-merge": ((TestMode.PERF_SANITY, False, False), (True, (), PerfGate.FAIL)),
    "perf-sanity-post-merge": ((TestMode.PERF_SANITY, True, False), (True, (), PerfGate.WARN)),
    "perf-sanity-functional-only": ((TestMode.PERF_SANITY, False, True), (True, (), PerfGate.WARN)),
}


@pytest.mark.parametrize(("given", "expected"), POLICIES.values(), ids=list(POLICIES))
def test_mode_policy(given: tuple[TestMode, bool, bool], expected: tuple[bool, tuple[str, ...], PerfGate]) -> None:
    mode, post_merge, functional_only = given
    policy = mode_policy(mode, post_merge=post_merge, functional_only=functional_only)
    assert (policy.mode, policy.sharded, policy.pytest_args, policy.perf_gate) == (mode, *expected)


def test_perf_options_are_the_references() -> None:
    assert PERF_PYTEST_ARGS == PERF_ARGS


@pytest.mark.parametrize(
    ("name", "sharded", "gate"),
    [
        ("H100_PCIe-PyTorch-Perf-1", False, PerfGate.FAIL),
        ("DGX_B200-PyTorch-PerfSanity-1", True, PerfGate.FAIL),
        ("DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-3", True, PerfGate.WARN),
        ("GB200-8_GPUs-2_Nodes-PyTorch-Disagg-PerfSanity-FUNCTIONAL-ONLY-Node2-GPU8-1", True, PerfGate.WARN),
        ("A10-PyTorch-1", True, PerfGate.NONE),
    ],
    ids=["perf", "perf-sanity", "perf-sanity-post-merge", "functional-only", "functional"],
)
def test_a_stage_names_policy(name: str, sharded: bool, gate: PerfGate) -> None:
    policy = parse_stage_name(name).policy
    assert (policy.sharded, policy.perf_gate) == (sharded, gate)


@pytest.mark.parametrize(
    ("name", "alone"),
    [
        ("H100_PCIe-PyTorch-Perf-1", True),
        ("DGX_H200-PyTorch-PerfSanity-1", True),
        ("GB200-8_GPUs-2_Nodes-PyTorch-Disagg-PerfSanity-FUNCTIONAL-ONLY-Node2-GPU8-1", True),
        ("A10-PyTorch-1", False),
        ("DGX_H100-4_GPUs-PyTorch-Post-Merge-1", False),
    ],
    ids=["perf", "perf-sanity", "perf-sanity-functional-only", "functional", "functional-post-merge"],
)
def test_stages_that_time_run_alone(name: str, alone: bool) -> None:
    assert parse_stage_name(name).policy.runs_alone is alone
