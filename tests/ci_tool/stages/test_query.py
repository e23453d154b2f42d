"""The test-db query a stage renders with: stage-name facts over sysinfo, fixed facts on CPU stages."""

from __future__ import annotations

import pytest

from ci_tool.errors import StageError
from ci_tool.stages.names import parse_stage_name
from ci_tool.stages.query import QueryValue, render_query, stage_query

QUERIES = {
    "A10-PyTorch-1": {
        "stage": "pre_merge", "backend": "pytorch", "orchestrator": "mpi", "auto_trigger": "others",
        "system_gpu_count": 1, "gpu": "A10",
    },
    "DGX_H100-4_GPUs-PyTorch-DeepSeek-1": {
        "stage": "pre_merge", "backend": "pytorch", "orchestrator": "mpi", "auto_trigger": "deepseek",
        "system_gpu_count": 4, "gpu": "DGX_H100",
    },
    "DGX_H100-4_GPUs-PyTorch-GptOss-1": {
        "stage": "pre_merge", "backend": "pytorch", "orchestrator": "mpi", "auto_trigger": "gpt_oss",
        "system_gpu_count": 4, "gpu": "DGX_H100",
    },
    "DGX_B200-4_GPUs-PyTorch-Ray-1": {
        "stage": "pre_merge", "backend": "pytorch", "orchestrator": "ray", "auto_trigger": "others",
        "system_gpu_count": 4, "gpu": "DGX_B200",
    },
    "DGX_B200-8_GPUs-PyTorch-PerfSanity-Post-Merge-3": {
        "stage": "post_merge", "backend": "pytorch", "orchestrator": "mpi", "auto_trigger": "others",
        "system_gpu_count": 8, "gpu": "DGX_B200",
    },
    "A10-TensorRT-[Post-Merge]-1": {
        "stage": "post_merge", "backend": "tensorrt", "orchestrator": "mpi", "auto_trigger": "others",
        "system_gpu_count": 1, "gpu": "A10",
    },
    "DGX_B200-4_GPUs-Verl-Post-Merge-1": {
        "stage": "post_merge", "backend": "verl", "orchestrator": "mpi", "auto_trigger": "others",
        "system_gpu_count": 4, "gpu": "DGX_B200",
    },
    "CPU-Generic-x86-1": {
        "stage": "pre_merge", "backend": "generic", "orchestrator": "mpi", "auto_trigger": "others",
        "system_gpu_count": 0, "cpu": "x86_64", "linux_distribution_name": "ubuntu",
    },
    "A10-PackageSanityCheck-PY310-UB2204": {
        "stage": "pre_merge", "orchestrator": "mpi", "auto_trigger": "others", "system_gpu_count": 1, "gpu": "A10",
    },
}  # fmt: skip


@pytest.mark.parametrize(("name", "expected"), QUERIES.items(), ids=list(QUERIES))
def test_stage_query(name: str, expected: dict[str, object]) -> None:
    query = stage_query(parse_stage_name(name))
    assert (list(query), query) == (list(expected), expected)


def test_a_pool_that_reports_another_gpu_name_overrides_the_token() -> None:
    assert stage_query(parse_stage_name("B200_PCIe-PyTorch-1"), gpu="B100")["gpu"] == "B100"


def test_cpu_stages_take_the_build_architecture() -> None:
    assert stage_query(parse_stage_name("CPU-Generic-aarch64-1"), arch="aarch64")["cpu"] == "aarch64"


SYSINFO: dict[str, QueryValue] = {
    "gpu": "H100 80GB HBM3",
    "system_gpu_count": 8,
    "gpu_memory": 81559,
    "cpu": "x86_64",
    "stage": "x",
}


def test_stage_keys_win_over_sysinfo_and_the_rest_is_kept() -> None:
    query = render_query(parse_stage_name("DGX_H100-4_GPUs-PyTorch-1"), SYSINFO)
    assert query == {
        "gpu": "H100 80GB HBM3",  # the machine's probe, as on the reference's Kubernetes pods
        "system_gpu_count": 4,
        "gpu_memory": 81559,
        "cpu": "x86_64",
        "stage": "pre_merge",
        "backend": "pytorch",
        "orchestrator": "mpi",
        "auto_trigger": "others",
    }


@pytest.mark.parametrize("probed", [None, ""], ids=["null", "empty"])
def test_without_a_probed_gpu_the_name_token_stands_in(probed: str | None) -> None:
    query = render_query(parse_stage_name("DGX_H100-4_GPUs-PyTorch-1"), {**SYSINFO, "gpu": probed})
    assert query["gpu"] == "DGX_H100"


@pytest.mark.parametrize(
    ("name", "backend"), [("A30-AutoDeploy-1", None), ("A30-PyTorch-1", "pytorch"), ("CPU-Generic-1", "generic")]
)
def test_the_backend_key_follows_the_reference(name: str, backend: str | None) -> None:
    """AutoDeploy stages send no backend, as the reference's 2026 pipeline (its blocks carry none)."""
    assert stage_query(parse_stage_name(name)).get("backend") == backend


def test_cpu_stages_ignore_sysinfo() -> None:
    stage = parse_stage_name("CPU-Generic-x86-1")
    assert render_query(stage, SYSINFO) == stage_query(stage)


def test_without_sysinfo_only_stage_keys_are_sent() -> None:
    stage = parse_stage_name("GB200-8_GPUs-2_Nodes-PyTorch-1")
    assert render_query(stage, None) == stage_query(stage)


def test_an_unknown_architecture_is_an_error() -> None:
    with pytest.raises(StageError) as caught:
        stage_query(parse_stage_name("CPU-Generic-x86-1"), arch="x86")
    assert str(caught.value) == (
        "expected an architecture (x86_64, aarch64) for stage 'CPU-Generic-x86-1', found 'x86' "
        "Hint: the catalog's x86 families build on x86_64, SBSA families on aarch64"
    )
