"""The generated GitHub workflow: actionlint and zizmor --offline find nothing, untrusted input never reaches
a shell line, and the plan step (run for real, with Python) turns requests into the right matrices."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from ci_tool.build.spec import build_command, install_command
from ci_tool.dispatch.run_name import BOT_DISPATCH_INPUTS, RUN_NAME_EXPRESSION
from ci_tool.generate.context import CHECKOUT_ACTION, DOWNLOAD_ARTIFACT_ACTION, UPLOAD_ARTIFACT_ACTION
from ci_tool.layout import ACTIONS_RESULTS_ARTIFACT_PREFIX, ACTIONS_SELECTION_ARTIFACT, SELECTION_ARTIFACT
from ci_tool.stages.record import read_record
from tests.helpers.generate import REPOSITORY_BUILD, WAIVED_ON_MAIN, PullRequestOrigin, git

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
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
    plan_actions = [s["uses"] for s in workflow["jobs"]["plan"]["steps"] if "uses" in s]
    upload = UPLOAD_ARTIFACT_ACTION.split(" #")[0]
    assert plan_actions == [CHECKOUT_ACTION.split(" #")[0], upload, upload]  # the selection, the durations
    head = {"ref": "${{ inputs.head_sha }}", "persist-credentials": False, "fetch-depth": 0}  # never the default branch
    assert workflow["jobs"]["plan"]["steps"][0]["with"] == head
    lost_jobs = {job_id: job for job_id, job in workflow["jobs"].items() if "_lost_" in job_id}
    stage_jobs = {job_id: job for job_id, job in workflow["jobs"].items()
                  if job_id not in ("plan", "blocked", "build", *lost_jobs)}  # fmt: skip
    assert {job_id: ([s["uses"] for s in job["steps"] if "uses" in s], job["steps"][0]["with"])
            for job_id, job in lost_jobs.items()} == dict.fromkeys(
        ("single_gpu_lost_2", "multi_gpu_lost_2"),
        ([action.split(" #")[0] for action in (CHECKOUT_ACTION, DOWNLOAD_ARTIFACT_ACTION)],
         {"ref": "${{ inputs.head_sha }}", "persist-credentials": False}),
    )  # fmt: skip
    found = {
        job_id: (
            [step["uses"] for step in job["steps"] if "uses" in step],
            job["steps"][0]["with"],
            job["timeout-minutes"],
            job["strategy"]["fail-fast"],
        )
        for job_id, job in stage_jobs.items()
    }
    actions = (CHECKOUT_ACTION, *[DOWNLOAD_ARTIFACT_ACTION] * 3, UPLOAD_ARTIFACT_ACTION)
    expected = (
        [action.split(" #")[0] for action in actions],  # the build, the durations and the selection, the results
        head,  # the pull request's head commit, with the merge base
        "${{ matrix.timeout_minutes }}",
        "${{ needs.plan.outputs.fail_fast == 'true' }}",
    )
    assert stage_jobs and found == dict.fromkeys(stage_jobs, expected)


def test_the_build_job_builds_once_per_architecture_and_every_stage_job_installs_from_its_artifact(
    generated: dict,
) -> None:
    workflow = load(generated["small"].files[WORKFLOW])
    build = workflow["jobs"]["build"]
    assert (build["needs"], build["if"], build["runs-on"], build["strategy"]["matrix"]["include"]) == (
        ["plan"], "${{ needs.plan.outputs.builds != '[]' }}", "${{ matrix.runs_on }}",
        "${{ fromJSON(needs.plan.outputs.builds) }}",
    )  # fmt: skip
    checkout, make, keep = build["steps"]
    assert (checkout["uses"], checkout["with"]) == (
        CHECKOUT_ACTION.split(" #")[0], {"ref": "${{ inputs.head_sha }}", "persist-credentials": False}
    )
    assert make["run"] == build_command(REPOSITORY_BUILD, "ci-build")
    assert (keep["uses"], keep["with"]) == (
        UPLOAD_ARTIFACT_ACTION.split(" #")[0],
        {"name": "ci-build-${{ matrix.arch }}", "path": "ci-build/", "if-no-files-found": "error",
         "compression-level": 0},
    )
    stage_jobs = {job_id: job for job_id, job in workflow["jobs"].items()
                  if job_id not in ("plan", "blocked", "build") and "_lost_" not in job_id}  # fmt: skip
    found = {job_id: _build_steps(job) for job_id, job in stage_jobs.items()}
    fetch = {"name": "ci-build-${{ matrix.arch }}", "path": "ci-build"}
    assert stage_jobs and found == dict.fromkeys(stage_jobs, (True, True, fetch, install_command(REPOSITORY_BUILD)))


def _build_steps(job: dict) -> tuple[object, ...]:  # type: ignore[type-arg]
    """Whether the job needs the build and fetches it right before its set-up; what it fetches; its set-up."""
    names = [step["name"] for step in job["steps"]]
    fetch, setup = names.index("Fetch the build"), names.index("Set up ci-tool")
    return "build" in job["needs"], fetch + 1 == setup, job["steps"][fetch]["with"], job["steps"][setup]["run"]


def test_the_plan_builds_each_architecture_the_selected_stages_run_on(  # type: ignore[no-untyped-def]
    generated: dict, make_workspace, plan_job
) -> None:
    inputs = {"request": request(stage_list=["CPU-Generic-1", "GH200-PyTorch-1"])}
    plan = plan_job(generated["small"].files[WORKFLOW], make_workspace("plan-arches"), **inputs)
    assert plan.code == 0, plan.log
    assert json.loads(plan.outputs["builds"]) == [
        {"arch": "x86_64", "runs_on": "ubuntu-latest"}, {"arch": "aarch64", "runs_on": "ubuntu-24.04-arm"}
    ]
    blocked = plan_job(generated["small"].files[WORKFLOW], make_workspace("plan-none"),
                       request=request(stage_list=["GB200-4_GPUs-PyTorch-1"]))  # fmt: skip
    assert blocked.code == 0, blocked.log
    assert (blocked.outputs["blocked"] != "[]", blocked.outputs["builds"]) == (True, "[]")  # no stage runs: no build


def test_the_run_name_is_the_one_the_bot_reads_and_the_bot_inputs_are_declared(generated: dict) -> None:
    workflow = load(generated["small"].files[WORKFLOW])
    assert workflow["run-name"] == "${{ " + RUN_NAME_EXPRESSION + " }}"
    declared = set(workflow["on"]["workflow_dispatch"]["inputs"])
    assert declared == {"request", "labels", "base_ref", "head_sha", *BOT_DISPATCH_INPUTS}
    assert set(workflow["on"]["workflow_call"]["inputs"]) == {"request", "labels", "base_ref", "head_sha"}


def test_the_plan_job_keeps_the_selection_and_the_request_for_the_bot(generated: dict) -> None:
    workflow = load(generated["small"].files[WORKFLOW])
    steps = workflow["jobs"]["plan"]["steps"]
    (keep,) = [step for step in steps if step.get("with", {}).get("name") == ACTIONS_SELECTION_ARTIFACT]
    assert keep["with"]["path"].split() == [SELECTION_ARTIFACT, "request.json"]
    stage_uploads = {job_id: s["with"]["name"] for job_id, job in workflow["jobs"].items()
                     for s in job["steps"] if s.get("name") == "Upload JUnit and results"}  # fmt: skip
    assert stage_uploads == dict.fromkeys(
        ("cpu_1", "single_gpu_1", "multi_gpu_1", "single_gpu_attempt_2", "multi_gpu_attempt_2"),
        ACTIONS_RESULTS_ARTIFACT_PREFIX + "${{ matrix.stage }}",
    )  # every stage job's, retries' too: the `lost` jobs and the bot's report read them


def test_no_expression_is_interpolated_into_a_script(generated: dict) -> None:
    workflow = load(generated["small"].files[WORKFLOW])
    scripts = [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]
    assert scripts
    assert [script for script in scripts if "${{" in script] == []


FULL = "ci: full pre-merge approved"
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
    "multi_gpu_1": ["DGX_H100-4_GPUs-PyTorch-DeepSeek-1", "GB200-4_GPUs-PyTorch-1", "GB200-8_GPUs-2_Nodes-PyTorch-1"],
}
NAMED = {
    "fail_fast": "true",
    "cpu_1": [],
    "single_gpu_1": ["A10-PyTorch-OnDemand-1"],
    "multi_gpu_1": ["GB200-4_GPUs-PyTorch-1"],
}


def request(**flags: object) -> str:
    return json.dumps({"command": "run", "flags": flags})


@pytest.mark.parametrize(
    ("inputs", "outputs", "stage_run_args"),
    [
        ({}, PRE_MERGE, ""),
        # a post-merge run's stages record which test ran which code (change-based selection's touched rule)
        ({"request": request(post_merge=True), "labels": '["ci: post-merge approved"]'}, POST_MERGE,
         "--record-touches"),
        ({"request": request(stage_list=["GB200-4_GPUs-PyTorch-1", "A10-PyTorch-OnDemand-1"]), "labels": f'["{FULL}"]'},
         NAMED, ""),
        ({"request": request(stage_list=["A10-PyTorch-OnDemand-1", "GB200-4*"]), "labels": f'["{FULL}"]'}, NAMED, ""),
        ({"request": request(disable_fail_fast=True)}, {**PRE_MERGE, "fail_fast": "false"}, ""),
    ],
    ids=["pre-merge-default", "post-merge-labelled", "named", "glob", "disable-fail-fast"],
)  # fmt: skip
def test_plan_selects_stages_into_job_matrices_in_catalog_order(
    generated: dict,
    make_workspace,
    plan_job,
    inputs: dict[str, str],
    outputs: dict[str, object],
    stage_run_args: str,  # type: ignore[no-untyped-def]
) -> None:
    plan = plan_job(generated["small"].files[WORKFLOW], make_workspace("plan"), **inputs)
    assert plan.code == 0, plan.log
    got = {key: plan.outputs[key] if key == "fail_fast" else plan.stages(key) for key in outputs}
    assert got == outputs
    assert (plan.outputs["blocked"], plan.outputs["stage_run_args"]) == ("[]", stage_run_args)


def test_plan_matrix_entries_carry_the_runner_and_timeout(generated: dict, make_workspace, plan_job) -> None:  # type: ignore[no-untyped-def]
    inputs = {"request": request(stage_list=["H100_PCIe-PyTorch-Perf-1", "CPU-Generic-1"])}
    plan = plan_job(generated["small"].files[WORKFLOW], make_workspace("plan"), **inputs)
    assert plan.matrix("single_gpu_1") == [
        {
            "stage": "H100_PCIe-PyTorch-Perf-1",
            "runs_on": ["self-hosted", "h100-pcie-perf"],
            "timeout_minutes": 90,
            "executor": "local",
            "arch": "x86_64",
        }
    ]
    assert plan.matrix("cpu_1") == [
        {"stage": "CPU-Generic-1", "runs_on": "ubuntu-latest", "timeout_minutes": 30, "executor": "local",
         "arch": "x86_64"}
    ]  # fmt: skip
    # one build, on the hosted runner of the stages' architecture
    assert json.loads(plan.outputs["builds"]) == [{"arch": "x86_64", "runs_on": "ubuntu-latest"}]


def test_plan_blocks_the_stages_whose_label_is_missing_and_names_them(
    generated: dict, make_workspace, plan_job
) -> None:  # type: ignore[no-untyped-def]
    inputs = {"request": request(stage_list=["GB200-4_GPUs-PyTorch-1", "A10-PyTorch-2"])}
    plan = plan_job(generated["small"].files[WORKFLOW], make_workspace("plan"), **inputs)
    assert (plan.stages("single_gpu_1"), plan.stages("multi_gpu_1")) == (["A10-PyTorch-2"], [])
    assert json.loads(plan.outputs["blocked"]) == [{"stage": "GB200-4_GPUs-PyTorch-1", "label": FULL}]
    assert plan.outputs["blocked_message"] == f"{FULL!r} is missing: blocked GB200-4_GPUs-PyTorch-1"


def test_the_blocked_job_fails_naming_the_stages(generated: dict) -> None:
    job = load(generated["small"].files[WORKFLOW])["jobs"]["blocked"]
    assert (job["needs"], job["if"]) == (["plan"], "${{ needs.plan.outputs.blocked != '[]' }}")
    (step,) = job["steps"]
    result = subprocess.run(
        ["bash", "-e", "-c", step["run"]], env={**os.environ, "BLOCKED": "'x' is missing: blocked A"},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (result.returncode, result.stdout) == (1, "::error::'x' is missing: blocked A\n")


def test_plan_passes_the_stage_run_options_to_every_stage(generated: dict, make_workspace, plan_job) -> None:  # type: ignore[no-untyped-def]
    inputs = {"request": request(detailed_log=True)}
    plan = plan_job(generated["small"].files[WORKFLOW], make_workspace("plan"), **inputs)
    assert plan.outputs["stage_run_args"] == "--detailed-log"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"stage_list": ["A10-Pytorch-1"]}, "--stage-list: expected a stage of the catalog, found 'A10-Pytorch-1' "
                                            "Hint: did you mean 'A10-PyTorch-1'"),
        ({"debug": True, "stage_list": ["A10-PyTorch-1"]}, "--debug: expected an option the github engine honours"),
    ],
    ids=["unknown stage", "flag GitHub cannot honour"],
)  # fmt: skip
def test_plan_rejects_what_ci_tool_rejects(
    generated: dict, make_workspace, plan_job, flags: dict, message: str
) -> None:  # type: ignore[no-untyped-def]
    plan = plan_job(generated["small"].files[WORKFLOW], make_workspace("plan"), request=request(**flags))
    assert (plan.code, plan.outputs) == (1, {})
    assert message in plan.log


def test_plan_splits_a_group_over_jobs_of_at_most_256(generated: dict, make_workspace, plan_job) -> None:  # type: ignore[no-untyped-def]
    workspace = make_workspace("plan-split")
    shutil.copy(HERE / "catalogs" / "split" / "stages.yml", workspace / "jenkins" / "stages.yml")
    plan = plan_job(generated["split"].files[WORKFLOW], workspace)
    assert plan.code == 0, plan.log
    assert [len(plan.matrix("single_gpu_1")), len(plan.matrix("single_gpu_2"))] == [256, 4]
    assert plan.stages("single_gpu_2") == [f"A10-PyTorch-{k}" for k in range(257, 261)]


@pytest.mark.parametrize("stage_run_args", ["", "--detailed-log"], ids=["no options", "detailed log"])
def test_the_stage_step_runs_the_real_runner_into_the_uploaded_path(
    generated: dict,
    make_workspace,
    stage_run_args: str,  # type: ignore[no-untyped-def]
) -> None:
    """The job's own shell line, with its matrix values filled in, runs ci-tool here; the upload step's path
    then holds the stage's JUnit."""
    job = load(generated["small"].files[WORKFLOW])["jobs"]["cpu_1"]
    (run_step,) = [step for step in job["steps"] if step.get("name") == "Run the stage"]
    (upload,) = [step for step in job["steps"] if "upload-artifact" in step.get("uses", "")]
    stage = "CPU-Generic-1"
    assert run_step["env"] == {
        "STAGE": "${{ matrix.stage }}",
        "EXECUTOR": "${{ matrix.executor }}",
        "STAGE_RUN_ARGS": "${{ needs.plan.outputs.stage_run_args }}",
        "BASE_REF": "${{ inputs.base_ref }}",
        "CI_TOOL_HISTORY": "${{ secrets.CI_TOOL_HISTORY }}",  # the shared history, where the secret is set
    }
    workspace = make_workspace("github-stage")
    result = subprocess.run(
        ["bash", "-e", "-c", run_step["run"]],
        cwd=workspace,
        env={**os.environ, "STAGE": stage, "EXECUTOR": "local", "STAGE_RUN_ARGS": stage_run_args, "BASE_REF": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    uploaded = workspace / upload["with"]["path"].replace("${{ matrix.stage }}", stage)
    assert (uploaded / "junit.xml").is_file()
    (process,) = json.loads((uploaded / "result.json").read_text())["processes"]
    assert ("-s" in process["command"]) is bool(stage_run_args)  # --detailed-log reached pytest


def test_a_stage_whose_history_fails_passes_and_the_step_after_it_imports_its_records(
    generated: dict,
    make_workspace,  # type: ignore[no-untyped-def]
) -> None:
    """The stage's own shell line on a history that is not one: the stage passes and keeps its records; the
    next step (which never fails the job) says where they wait while the history fails, and imports them
    once it answers."""
    job = load(generated["small"].files[WORKFLOW])["jobs"]["cpu_1"]
    names = [step.get("name") for step in job["steps"]]
    (run_step,) = [step for step in job["steps"] if step.get("name") == "Run the stage"]
    (import_step,) = [step for step in job["steps"] if step.get("name") == "Import what the history could not take"]
    assert names.index("Import what the history could not take") == names.index("Run the stage") + 1
    assert (import_step["if"], import_step["continue-on-error"]) == ("${{ !cancelled() }}", True)
    assert import_step["env"] == {"STAGE": "${{ matrix.stage }}", "CI_TOOL_HISTORY": "${{ secrets.CI_TOOL_HISTORY }}"}
    workspace = make_workspace("github-outage")
    (workspace / "notes.txt").write_text("not a history\n" * 20)
    stage = "CPU-Generic-1"

    def step(script: str, history: str) -> subprocess.CompletedProcess[str]:
        environ = {"STAGE": stage, "EXECUTOR": "local", "STAGE_RUN_ARGS": "", "BASE_REF": ""}
        environ["CI_TOOL_HISTORY"] = history
        return subprocess.run(["bash", "-e", "-c", script], cwd=workspace, env={**os.environ, **environ},
                              capture_output=True, text=True, timeout=120)  # fmt: skip

    ran = step(run_step["run"], "notes.txt")
    kept = f"results/{stage}/unrecorded.json"
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"records wait in {kept} " in ran.stderr and (workspace / kept).is_file()
    still = step(import_step["run"], "notes.txt")
    assert (still.returncode, f"records still wait in {kept} " in still.stderr) == (1, True), still.stderr
    answered = step(import_step["run"], "new.sqlite")
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout.startswith("recorded run ") and (workspace / "new.sqlite").is_file()


def _git(workspace: Path, *args: str) -> None:
    identity = ["-c", "user.name=ci", "-c", "user.email=ci@example.com", "-c", "init.defaultBranch=main"]
    subprocess.run(["git", *identity, *args], cwd=workspace, check=True, capture_output=True, timeout=60)


def test_the_plan_job_reads_a_pull_requests_change_from_its_base(generated: dict, make_workspace, plan_job) -> None:  # type: ignore[no-untyped-def]
    """A pull request that only removes an A10 waive runs the A10 stages alone, narrowed to the unwaived test
    (one `-cbts` shard): the plan job passes the fetched target branch as --base, so the waives rule compares
    the file with its merge-base text."""
    workspace = make_workspace("plan-unwaive")
    waives = workspace / "test-db" / "waives.txt"
    waives.write_text("full:A10/tests/b.py SKIP (https://bugs.example/1)\n")
    _git(workspace, "init", "-q")
    _git(workspace, "add", "-A")
    _git(workspace, "commit", "-q", "-m", "base")
    _git(workspace, "checkout", "-q", "-b", "pull-request")
    waives.write_text("")
    _git(workspace, "commit", "-q", "-am", "unwaive tests/b.py on A10")
    _git(workspace, "remote", "add", "origin", str(workspace))
    plan = plan_job(generated["small"].files[WORKFLOW], workspace, request=request(), base_ref="main")
    assert plan.code == 0, plan.log
    assert (plan.stages("cpu_1"), plan.stages("single_gpu_1"), plan.stages("multi_gpu_1")) == (
        [], ["A10-PyTorch-1-cbts"], []
    )


def test_a_pull_requests_stage_runs_with_the_target_branchs_waives_merged_in(
    generated: dict, pull_request: PullRequestOrigin
) -> None:
    """The stage step of a pull request's run (base_ref given), in a checkout of its head: main waived a test
    after the pull request branched off, and the stage skips it."""
    job = load(generated["small"].files[WORKFLOW])["jobs"]["cpu_1"]
    (run_step,) = [step for step in job["steps"] if step.get("name") == "Run the stage"]
    workspace = pull_request.clone("github-pr-stage")
    git(workspace, "fetch", "-q", "origin", pull_request.head)
    git(workspace, "checkout", "-q", "--detach", pull_request.head)
    result = subprocess.run(
        ["bash", "-e", "-c", run_step["run"]],
        cwd=workspace,
        env={**os.environ, "STAGE": "CPU-Generic-1", "EXECUTOR": "local", "STAGE_RUN_ARGS": "", "BASE_REF": "main"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(
        "merged waives: 1 line(s) added from FETCH_HEAD, 0 left out that this change removes\n"
    )
    assert "(1 passed, 0 failed, 1 skipped)" in result.stdout
    assert WAIVED_ON_MAIN in "".join(p.read_text() for p in (workspace / "results").glob("*/waives-merged-*"))


def test_the_plan_job_writes_the_run_record_the_bot_reads(generated: dict, make_workspace, plan_job) -> None:  # type: ignore[no-untyped-def]
    workspace = make_workspace("plan")
    plan = plan_job(generated["small"].files[WORKFLOW], workspace, request=request(stage_list=["CPU-Generic-1"]))
    assert plan.code == 0, plan.log
    record = read_record(json.loads((workspace / SELECTION_ARTIFACT).read_text()), source=SELECTION_ARTIFACT)
    assert (record.stages, record.custom_run) == (("CPU-Generic-1",), True)
    assert json.loads((workspace / "request.json").read_text()) == json.loads(request(stage_list=["CPU-Generic-1"]))
