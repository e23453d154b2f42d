"""Context builders: every decision about the generated files, checked on tiny stage lists."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ci_tool.errors import GenerateError
from ci_tool.generate.context import (
    GITHUB_MATRIX_LIMIT,
    JENKINS_ROWS_PER_METHOD,
    GenerateInput,
    github_context,
    github_jobs,
    github_matrices,
    github_runs_on,
    jenkins_label,
    jenkins_merge_request_context,
    jenkins_test_context,
    stage_row,
)
from ci_tool.stages.executors import Executor
from ci_tool.stages.names import StageName, parse_stage_name
from tests.helpers.generate import REPOSITORY_BUILD


@dataclass(frozen=True)
class FakeStage:
    """Only the catalog stage fields the context builders read."""

    name: StageName
    platform: str
    context: str
    splits: int
    timeout_minutes: int
    arch: str
    executor: Executor = Executor.LOCAL


def source(*stages: FakeStage) -> GenerateInput:
    return GenerateInput(stages, REPOSITORY_BUILD)


def spec(
    name: str,
    platform: str = "a10",
    *,
    shards: int = 1,
    timeout: int = 60,
    arch: str = "x86_64",
    executor: Executor = Executor.LOCAL,
) -> FakeStage:
    return FakeStage(parse_stage_name(name), platform, "l0_x", shards, timeout, arch, executor)


def test_stage_row_carries_the_catalog_and_grammar_facts() -> None:
    row = stage_row(spec("DGX_H100-4_GPUs-PyTorch-Perf-2", "dgx-h100-x4", shards=3, timeout=90))
    assert row == {
        "name": "DGX_H100-4_GPUs-PyTorch-Perf-2",
        "platform": "dgx-h100-x4",
        "context": "l0_x",
        "shard": 2,
        "shard_count": 3,
        "gpu_count": 4,
        "node_count": 1,
        "mode": "perf",
        "timeout_minutes": 90,
        "arch": "x86_64",
        "phase": "Multi-GPU",
        "cpu": False,
        "executor": "local",
    }


def test_a_non_test_stage_is_shard_one_of_one() -> None:
    row = stage_row(spec("CPU-Build_Docs", "cpu"))
    assert (row["shard"], row["shard_count"], row["gpu_count"], row["phase"]) == (1, 1, 0, "Single-GPU")


def test_a_shard_beyond_the_shard_count_is_an_error() -> None:
    with pytest.raises(GenerateError, match=r"expected shard 3 of 'A10-PyTorch-3' within 1\.\.2"):
        stage_row(spec("A10-PyTorch-3", shards=2))


@pytest.mark.parametrize(
    ("name", "platform", "label", "runs_on"),
    [
        ("A10-PyTorch-1", "a10", "a10", ["self-hosted", "a10"]),
        ("H100_PCIe-PyTorch-Perf-1", "h100", "h100-perf", ["self-hosted", "h100-perf"]),
        # perf-sanity is not perf mode, but it times too: it runs alone, on a perf agent
        ("B200-PyTorch-PerfSanity-1", "b200", "b200-perf", ["self-hosted", "b200-perf"]),
        ("CPU-Generic-1", "cpu", "cpu", "ubuntu-latest"),
    ],
    ids=["gpu", "perf", "perf-sanity", "cpu"],
)
def test_runner_labels(name: str, platform: str, label: str, runs_on: object) -> None:
    assert (jenkins_label(spec(name, platform)), github_runs_on(spec(name, platform))) == (label, runs_on)


def test_a_slurm_familys_stages_run_on_an_agent_that_submits_to_the_cluster() -> None:
    stage = spec("GB200-8_GPUs-2_Nodes-PyTorch-1", "auto:gb200-flex", executor=Executor.SLURM)
    assert (jenkins_label(stage), github_runs_on(stage), stage_row(stage)["executor"]) == (
        "slurm",
        ["self-hosted", "slurm"],
        "slurm",
    )


def test_duplicate_stages_are_an_error() -> None:
    with pytest.raises(GenerateError, match=r"expected each stage once in the catalog, found 'A10-PyTorch-1' twice"):
        jenkins_test_context(source(spec("A10-PyTorch-1"), spec("A10-PyTorch-1")))


def test_an_empty_catalog_is_an_error() -> None:
    with pytest.raises(GenerateError, match=r"expected at least one stage in jenkins/stages.yml, found none"):
        github_context(source())


def test_the_jenkins_table_is_split_into_methods() -> None:
    specs = [
        spec(f"A10-PyTorch-{k}", shards=JENKINS_ROWS_PER_METHOD + 1) for k in range(1, JENKINS_ROWS_PER_METHOD + 2)
    ]
    parts = jenkins_test_context(source(*specs))["table_parts"]
    assert isinstance(parts, list)
    assert [len(part) for part in parts] == [JENKINS_ROWS_PER_METHOD, 1]


def test_merge_request_lists_the_architectures_in_catalog_order() -> None:
    specs = [spec("GH200-PyTorch-1", arch="aarch64"), spec("A10-PyTorch-1"), spec("GB200-PyTorch-1", arch="aarch64")]
    assert jenkins_merge_request_context(source(*specs))["arches"] == ["aarch64", "x86_64"]


@pytest.mark.parametrize(
    ("single_gpu", "jobs"),
    [
        (1, ["cpu_1", "single_gpu_1", "multi_gpu_1"]),
        (GITHUB_MATRIX_LIMIT, ["cpu_1", "single_gpu_1", "multi_gpu_1"]),
        (GITHUB_MATRIX_LIMIT + 1, ["cpu_1", "single_gpu_1", "single_gpu_2", "multi_gpu_1"]),
    ],
    ids=["one", "at-limit", "over-limit"],
)
def test_github_matrices_are_split_at_the_limit(single_gpu: int, jobs: list[str]) -> None:
    specs = [spec("CPU-Generic-1", "cpu"), spec("DGX_H100-4_GPUs-PyTorch-1")]
    specs += [spec(f"A10-PyTorch-{k}", shards=single_gpu) for k in range(1, single_gpu + 1)]
    assert [job.id for job in github_jobs(specs)] == jobs


def test_github_matrices_hold_the_chosen_stages_of_each_job_in_catalog_order() -> None:
    specs = [spec("CPU-Generic-1", "cpu", timeout=30), spec("A10-PyTorch-1"), spec("H100-PyTorch-Perf-1", "h100")]
    specs += [spec("DGX_H100-4_GPUs-PyTorch-1", "dgx-h100-x4", timeout=90)]
    chosen = {"DGX_H100-4_GPUs-PyTorch-1", "H100-PyTorch-Perf-1", "CPU-Generic-1"}
    matrices = github_matrices(specs, [stage for stage in specs if stage.name.name in chosen])
    assert matrices == {
        "cpu_1": [
            {
                "stage": "CPU-Generic-1",
                "runs_on": "ubuntu-latest",
                "timeout_minutes": 30,
                "executor": "local",
                "arch": "x86_64",
            }
        ],
        "single_gpu_1": [
            {
                "stage": "H100-PyTorch-Perf-1",
                "runs_on": ["self-hosted", "h100-perf"],
                "timeout_minutes": 60,
                "executor": "local",
                "arch": "x86_64",
            }
        ],
        "multi_gpu_1": [
            {
                "stage": "DGX_H100-4_GPUs-PyTorch-1",
                "runs_on": ["self-hosted", "dgx-h100-x4"],
                "timeout_minutes": 90,
                "executor": "local",
                "arch": "x86_64",
            }
        ],
    }


def test_github_matrices_page_the_chosen_stages_of_a_group_over_its_jobs() -> None:
    specs = [spec(f"A10-PyTorch-{k}", shards=GITHUB_MATRIX_LIMIT + 10) for k in range(1, GITHUB_MATRIX_LIMIT + 11)]
    chosen = specs[5:]  # 5 fewer than the catalog: the second page holds 5
    matrices = github_matrices(specs, chosen)
    assert [len(matrices["single_gpu_1"]), len(matrices["single_gpu_2"])] == [GITHUB_MATRIX_LIMIT, 5]
    assert matrices["single_gpu_1"][0]["stage"] == "A10-PyTorch-6"


def test_github_matrices_run_a_narrowed_stage_in_its_familys_job_on_its_familys_runner() -> None:
    """A `-cbts` stage is no catalog stage: its row comes from the selection's stage, in the job of its group."""
    specs = [spec("A10-PyTorch-1", shards=2, timeout=45), spec("A10-PyTorch-2", shards=2, timeout=45)]
    narrowed = spec("A10-PyTorch-1-cbts", shards=1, timeout=45)
    assert github_matrices(specs, [narrowed]) == {
        "single_gpu_1": [
            {
                "stage": "A10-PyTorch-1-cbts",
                "runs_on": ["self-hosted", "a10"],
                "timeout_minutes": 45,
                "executor": "local",
                "arch": "x86_64",
            }
        ]
    }


def test_the_jenkins_tables_hold_a_row_for_every_narrowed_stage_after_the_catalogs() -> None:
    """L0_MergeRequest's phases and L0_Test's table know each `-cbts` stage a selection can hand on."""
    stages = (spec("A10-PyTorch-1", shards=2), spec("A10-PyTorch-2", shards=2))
    narrowed = (spec("A10-PyTorch-1-cbts", shards=2), spec("A10-PyTorch-2-cbts", shards=2))
    test = jenkins_test_context(GenerateInput(stages, REPOSITORY_BUILD, narrowed))
    phases = jenkins_merge_request_context(GenerateInput(stages, REPOSITORY_BUILD, narrowed))
    names = ["A10-PyTorch-1", "A10-PyTorch-2", "A10-PyTorch-1-cbts", "A10-PyTorch-2-cbts"]
    assert [row["name"] for part in test["table_parts"] for row in part] == names  # type: ignore[attr-defined]
    assert [row["name"] for part in phases["phase_parts"] for row in part] == names  # type: ignore[attr-defined]


def test_a_group_without_stages_gets_no_job() -> None:
    assert [job.id for job in github_jobs([spec("A10-PyTorch-1")])] == ["single_gpu_1"]


def test_multi_gpu_jobs_need_every_first_phase_job_and_gate_on_fail_fast() -> None:
    context = github_context(
        source(spec("CPU-Generic-1", "cpu"), spec("A10-PyTorch-1"), spec("DGX_H100-4_GPUs-PyTorch-1"))
    )
    jobs = {job["id"]: job for job in context["jobs"]}  # type: ignore[attr-defined]
    assert jobs["single_gpu_1"]["needs"] == ["plan", "build"]
    assert jobs["single_gpu_1"]["if"] == "needs.plan.outputs.single_gpu_1 != '[]'"
    assert jobs["multi_gpu_1"]["needs"] == [
        "plan",
        "build",
        "cpu_1",
        "single_gpu_1",
        "single_gpu_lost_2",
        "single_gpu_attempt_2",
    ]
    # a first-phase stage whose runner was lost holds the multi-GPU phase back only until its retry passed
    assert jobs["multi_gpu_1"]["if"] == (
        "!cancelled() && needs.plan.result == 'success' && needs.build.result == 'success'"
        " && needs.plan.outputs.multi_gpu_1 != '[]'"
        " && (needs.plan.outputs.fail_fast == 'false'"
        " || (needs.single_gpu_lost_2.result == 'skipped' || needs.single_gpu_lost_2.outputs.failed == 'false')"
        " && needs.single_gpu_attempt_2.result != 'failure' && needs.single_gpu_attempt_2.result != 'cancelled')"
    )


def test_each_phase_retries_its_lost_stages_as_the_next_attempt() -> None:
    context = github_context(source(spec("A10-PyTorch-1"), spec("DGX_H100-4_GPUs-PyTorch-1")))
    lost = {job["id"]: job for job in context["lost_jobs"]}  # type: ignore[attr-defined]
    assert lost["single_gpu_lost_2"]["needs"] == ["plan", "single_gpu_1"]
    assert lost["single_gpu_lost_2"]["matrices"] == "format('[{0}]', needs.plan.outputs.single_gpu_1)"
    assert lost["multi_gpu_lost_2"]["if"] == (
        "!cancelled() && needs.plan.result == 'success' && (needs.plan.outputs.multi_gpu_1 != '[]')"
    )
    retry = {job["id"]: job for job in context["stage_jobs"]}["multi_gpu_attempt_2"]  # type: ignore[attr-defined]
    assert (retry["needs"], retry["matrix"]) == (
        ["plan", "build", "multi_gpu_lost_2"],
        "fromJSON(needs.multi_gpu_lost_2.result == 'success' && needs.multi_gpu_lost_2.outputs.matrix || '[]')",
    )
