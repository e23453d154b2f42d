"""The generated GitHub workflow: actionlint and zizmor --offline find nothing, untrusted input never reaches
a shell line, and the plan step (run for real, with Python) turns requests into the right matrices."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ci_tool.generate.context import CHECKOUT_ACTION, UPLOAD_ARTIFACT_ACTION

ROOT = Path(__file__).resolve().parents[3]
WORKFLOW = ".github/workflows/l0-test.yml"


@pytest.fixture(scope="module")
def workflows(generated: dict) -> list[str]:
    """Every golden catalog's workflow, plus the repository's."""
    paths = [str(result.path(WORKFLOW)) for _, result in sorted(generated.items())]
    if (ROOT / WORKFLOW).exists():
        paths.append(str(ROOT / WORKFLOW))
    return paths


def test_actionlint_finds_nothing(actionlint: str, workflows: list[str]) -> None:
    result = subprocess.run([actionlint, "-no-color", *workflows], capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout) == (0, "")


def test_zizmor_offline_finds_nothing(zizmor: str, workflows: list[str]) -> None:
    result = subprocess.run(
        [zizmor, "--offline", "--no-progress", *workflows], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings to report" in result.stdout


def load(text: str) -> dict:  # type: ignore[type-arg]
    workflow: dict = yaml.safe_load(text)  # type: ignore[type-arg]
    workflow["on"] = workflow.pop(True)  # YAML 1.1 reads the key `on` as true
    return workflow


def test_every_job_has_read_only_contents_pinned_actions_and_no_persisted_credentials(generated: dict) -> None:
    workflow = load(generated["small"].files[WORKFLOW])
    assert workflow["permissions"] == {"contents": "read"}
    assert set(workflow["on"]) == {"workflow_dispatch", "workflow_call"}
    for job_id, job in workflow["jobs"].items():
        if job_id == "plan":
            continue
        uses = [step["uses"] for step in job["steps"] if "uses" in step]
        assert uses == [CHECKOUT_ACTION.split(" #")[0], UPLOAD_ARTIFACT_ACTION.split(" #")[0]]
        assert job["steps"][0]["with"] == {"persist-credentials": False}
        assert job["timeout-minutes"] == "${{ matrix.timeout_minutes }}"
        assert job["strategy"]["fail-fast"] == "${{ needs.plan.outputs.fail_fast == 'true' }}"


def test_no_expression_is_interpolated_into_a_script(generated: dict) -> None:
    workflow = load(generated["small"].files[WORKFLOW])
    scripts = [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]
    assert scripts
    assert [script for script in scripts if "${{" in script] == []


def plan(
    text: str, tmp_path: Path, *, stages: str = "", post_merge: bool = False, disable_fail_fast: bool = False
) -> tuple[int, dict[str, object], str]:
    """Run the plan step as GitHub would (`shell: python`); return its exit code, outputs and log."""
    (step,) = [step for step in load(text)["jobs"]["plan"]["steps"] if step.get("id") == "plan"]
    assert step["shell"] == "python"
    output = tmp_path / "github_output"
    output.write_text("")
    env = {
        **os.environ,
        "GITHUB_OUTPUT": str(output),
        "STAGES": stages,
        "POST_MERGE": str(post_merge).lower(),
        "DISABLE_FAIL_FAST": str(disable_fail_fast).lower(),
    }
    result = subprocess.run([sys.executable, "-c", step["run"]], capture_output=True, text=True, env=env, timeout=60)
    outputs: dict[str, object] = {}
    for line in output.read_text().splitlines():
        key, value = line.split("=", 1)
        outputs[key] = value if key == "fail_fast" else [row["stage"] for row in json.loads(value)]
    return result.returncode, outputs, result.stdout


PRE_MERGE = {
    "fail_fast": "true",
    "cpu_1": ["CPU-Generic-1"],
    "single_gpu_1": ["A10-PyTorch-1", "A10-PyTorch-2", "H100_PCIe-PyTorch-Perf-1", "GH200-PyTorch-1"],
    "multi_gpu_1": [],
}
POST_MERGE = {
    "fail_fast": "false",
    "cpu_1": ["CPU-Generic-1"],
    "single_gpu_1": [
        "A10-PyTorch-1",
        "A10-PyTorch-2",
        "H100_PCIe-PyTorch-Perf-1",
        "DGX_B200-PyTorch-PerfSanity-Post-Merge-1",
        "GH200-PyTorch-1",
    ],
    "multi_gpu_1": ["DGX_H100-4_GPUs-PyTorch-DeepSeek-1", "GB200-4_GPUs-PyTorch-1"],
}
NAMED = {
    "fail_fast": "true",
    "cpu_1": [],
    "single_gpu_1": ["A10-PyTorch-OnDemand-1"],
    "multi_gpu_1": ["GB200-4_GPUs-PyTorch-1"],
}


@pytest.mark.parametrize(
    ("request_", "outputs"),
    [
        ({}, PRE_MERGE),
        ({"post_merge": True}, POST_MERGE),
        ({"stages": "GB200-4_GPUs-PyTorch-1, A10-PyTorch-OnDemand-1"}, NAMED),
        ({"stages": '["GB200-4_GPUs-PyTorch-1", "A10-PyTorch-OnDemand-1"]'}, NAMED),
        ({"disable_fail_fast": True}, {**PRE_MERGE, "fail_fast": "false"}),
    ],
    ids=["pre-merge-default", "post-merge-default", "named-comma-list", "named-json-list", "disable-fail-fast"],
)
def test_plan_selects_stages_into_job_matrices_in_catalog_order(
    generated: dict, tmp_path: Path, request_: dict, outputs: dict[str, object]
) -> None:
    code, got, _ = plan(generated["small"].files[WORKFLOW], tmp_path, **request_)
    assert (code, got) == (0, outputs)


def test_plan_matrix_entries_carry_the_runner_and_timeout(generated: dict, tmp_path: Path) -> None:
    plan(generated["small"].files[WORKFLOW], tmp_path, stages="H100_PCIe-PyTorch-Perf-1,CPU-Generic-1")
    lines = dict(line.split("=", 1) for line in (tmp_path / "github_output").read_text().splitlines())
    assert json.loads(lines["single_gpu_1"]) == [
        {"stage": "H100_PCIe-PyTorch-Perf-1", "runs_on": ["self-hosted", "h100-pcie", "perf"], "timeout_minutes": 90}
    ]
    assert json.loads(lines["cpu_1"]) == [{"stage": "CPU-Generic-1", "runs_on": "ubuntu-latest", "timeout_minutes": 30}]


def test_plan_rejects_an_unknown_stage_with_the_closest_names(generated: dict, tmp_path: Path) -> None:
    code, outputs, log = plan(generated["small"].files[WORKFLOW], tmp_path, stages="A10-Pytorch-1")
    assert (code, outputs) == (1, {})
    assert log.splitlines()[-1].startswith("::error::stages: unknown stage 'A10-Pytorch-1'; did you mean A10-PyTorch-1")


def test_plan_splits_a_group_over_jobs_of_at_most_256(generated: dict, tmp_path: Path) -> None:
    code, outputs, _ = plan(generated["split"].files[WORKFLOW], tmp_path)
    assert code == 0
    assert [len(outputs["single_gpu_1"]), len(outputs["single_gpu_2"])] == [256, 4]  # type: ignore[arg-type]
    assert outputs["single_gpu_2"] == [f"A10-PyTorch-{k}" for k in range(257, 261)]


def test_the_stage_step_runs_the_real_runner_into_the_uploaded_path(generated: dict, make_workspace) -> None:  # type: ignore[no-untyped-def]
    """The job's own shell line, with its matrix values filled in, runs ci-tool here; the upload step's path
    then holds the stage's JUnit."""
    job = load(generated["small"].files[WORKFLOW])["jobs"]["cpu_1"]
    (run_step,) = [step for step in job["steps"] if step.get("name") == "Run the stage"]
    (upload,) = [step for step in job["steps"] if "upload-artifact" in step.get("uses", "")]
    stage = "CPU-Generic-1"
    assert run_step["env"] == {"STAGE": "${{ matrix.stage }}"}
    workspace = make_workspace("github-stage")
    result = subprocess.run(
        ["bash", "-e", "-c", run_step["run"]],
        cwd=workspace,
        env={**os.environ, "STAGE": stage},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    uploaded = workspace / upload["with"]["path"].replace("${{ matrix.stage }}", stage)
    assert (uploaded / "junit.xml").is_file()
