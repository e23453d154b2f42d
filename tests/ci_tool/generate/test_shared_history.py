"""The generated pipelines with a shared history. Jenkins: the credential `ci-tool-history` (Secret text)
binds CI_TOOL_HISTORY for the selection, the durations export and every stage; the build exports CI's
durations once and every stage shards by that file; a second build of the same commit reuses the stage the
first passed (both run for real, git and ci-tool, in clones of one pull request); without the credential
everything runs as before, each step saying once that the history is the agent's own. GitHub: the repository
secret CI_TOOL_HISTORY does the same in the plan job (which exports the durations, as an artifact) and in
every stage job."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from ci_tool.generate.context import DURATIONS_ARTIFACT
from ci_tool.history import queries
from ci_tool.history.store import HistoryStore
from ci_tool.layout import CI_DURATIONS_PATH, SHARED_HISTORY_CREDENTIAL
from tests.helpers.generate import PullRequestOrigin, StubRunner
from tests.helpers.jenkins_pipeline import (
    HEAD,
    NO_SHARED_HISTORY,
    commits,
    l0_test,
    merge_request,
    selection,
    steps,
)

URL = "postgresql://ci:s3cret@db.example:5432/ci"
SHARED = "<shared-history>"  # a SQLite file both git scenarios share, as two agents share one database
CREDENTIALS = {SHARED_HISTORY_CREDENTIAL: URL}

SCENARIOS: dict[str, dict[str, object]] = {
    "test-shared": l0_test(["A10-PyTorch-1", "CPU-Generic-1"], credentials=CREDENTIALS),
    "test-own": l0_test(["A10-PyTorch-1", "CPU-Generic-1"]),
    "mr-shared": merge_request(selection(["A10-PyTorch-1"]), credentials=CREDENTIALS),
    "mr-own": merge_request(selection(["A10-PyTorch-1"])),
    # Two builds of the pull request's head, one after the other, on one shared history.
    **{
        f"test-git-shared-{build}": l0_test(
            ["CPU-Generic-1"],
            more={"HEAD_SHA": HEAD},
            execute=["git ", "durations export", "stage run"],
            git=True,
            credentials={SHARED_HISTORY_CREDENTIAL: SHARED},
        )
        for build in (1, 2)
    },
}


@pytest.fixture(scope="module")
def runs(  # type: ignore[no-untyped-def]
    generated: dict, run_stub: StubRunner, pull_request: PullRequestOrigin, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, object]]:
    shared = str(tmp_path_factory.mktemp("one-history") / "history.sqlite")
    scenarios = []
    for name, scenario in SCENARIOS.items():
        script = str(generated["small"].path(str(scenario["script"])))
        extra: dict[str, object] = {}
        if scenario.get("git"):
            params = {k: commits(pull_request, v) for k, v in dict(scenario["params"]).items()}  # type: ignore[call-overload]
            extra = {"workspace": str(pull_request.clone(name)), "params": params}
        credentials = {k: shared if v == SHARED else v for k, v in dict(scenario.get("credentials", {})).items()}  # type: ignore[call-overload]
        scenarios.append({**scenario, "script": script, "credentials": credentials, **extra})
    return dict(zip(SCENARIOS, run_stub(scenarios), strict=True))


def sh_calls(run: dict[str, object]) -> list[dict[str, object]]:
    calls = run["calls"]
    assert isinstance(calls, list)
    return [call for call in calls if call["step"] == "sh"]


def test_every_stage_records_into_the_shared_history_and_shards_by_the_builds_one_durations_file(
    runs: dict,
) -> None:
    run = runs["test-shared"]
    assert run["error"] is None
    durations = steps(run, "node", "stage", "stash")[:3]
    assert durations == [("node", "cpu"), ("stage", "Durations"), ("stash", None)]
    stash = next(call for call in run["calls"] if call["step"] == "stash")
    assert stash == {"step": "stash", "name": "durations", "includes": CI_DURATIONS_PATH}
    export = next(call for call in sh_calls(run) if "durations export" in str(call["script"]))
    assert export["credentials"] == ["CI_TOOL_HISTORY"]
    stage_runs = [call for call in sh_calls(run) if " stage run " in str(call["script"])]
    assert [call["credentials"] for call in stage_runs] == [["CI_TOOL_HISTORY"], ["CI_TOOL_HISTORY"]]
    # after each stage, what its history could not take is imported into the same history; it never fails it
    imports = [call for call in sh_calls(run) if " history import --if-kept " in str(call["script"])]
    assert [(call["credentials"], str(call["script"]).endswith(" || true")) for call in imports] == [
        (["CI_TOOL_HISTORY"], True),
        (["CI_TOOL_HISTORY"], True),
    ]
    assert all(str(call["script"]).endswith(f" --durations {CI_DURATIONS_PATH}") for call in stage_runs)
    assert [call["name"] for call in run["calls"] if call["step"] == "unstash"] == ["durations", "durations"]
    assert URL not in str(run["calls"])  # the secret reaches the shells' environment, never a script or a log


def test_without_the_credential_the_build_runs_as_before_and_says_so_once_a_step(runs: dict) -> None:
    run = runs["test-own"]
    assert run["error"] is None
    assert not [call for call in run["calls"] if call["step"] in ("stash", "unstash")]
    stage_runs = [call for call in sh_calls(run) if " stage run " in str(call["script"])]
    assert [("credentials" in call, "--durations" in str(call["script"])) for call in stage_runs] == [
        (False, False),
        (False, False),
    ]
    notes = [call["message"] for call in run["calls"] if call["step"] == "echo"]
    note = (
        f"{NO_SHARED_HISTORY}Could not find credentials entry with ID '{SHARED_HISTORY_CREDENTIAL}'): the history "
        "is this agent's own"
    )
    assert notes == [note] * 5  # the durations agent, then each stage's run and the import after it


@pytest.mark.parametrize(("scenario", "bound"), [("mr-shared", ["CI_TOOL_HISTORY"]), ("mr-own", None)])
def test_the_selection_reads_the_shared_history_when_there_is_one(runs: dict, scenario: str, bound: object) -> None:
    run = runs[scenario]
    assert run["error"] is None
    (select,) = [call for call in sh_calls(run) if " stage select " in str(call["script"])]
    assert select.get("credentials") == bound


def test_a_second_build_of_the_same_commit_reuses_the_stage_the_first_passed_on_another_agent(
    runs: dict, pull_request: PullRequestOrigin
) -> None:
    first, second = runs["test-git-shared-1"], runs["test-git-shared-2"]
    assert (first["error"], second["error"]) == (None, None)

    def executed(run: dict[str, object], part: str) -> dict[str, object]:
        calls = run["calls"]
        assert isinstance(calls, list)
        return next(call for call in calls if call["step"] == "executed" and part in call["script"])

    assert "2 passed, 0 failed, 0 skipped" in str(executed(first, " stage run ")["stdout"])
    reused = str(executed(second, " stage run ")["stdout"])
    assert f"reuse: CPU-Generic-1 passed on commit {pull_request.head[:12]} (clean) in run " in reused
    assert "it does not run again" in reused
    # The second build shards by what the first recorded: its export found CI's durations.
    exported = str(executed(second, "durations export")["stderr"])
    assert "test durations to .ci-tool/durations.json: " in exported and "0 updated, 0 added" not in exported


# GitHub Actions: the repository secret CI_TOOL_HISTORY does for the workflow what the credential does here.
WORKFLOW = ".github/workflows/l0-test.yml"


@pytest.mark.parametrize("secret", [True, False], ids=["secret", "no-secret"])
def test_the_plan_job_exports_cis_durations_for_every_stage_only_with_the_secret(  # type: ignore[no-untyped-def]
    generated: dict, make_workspace, plan_job, tmp_path: Path, secret: bool
) -> None:
    workspace = make_workspace("plan-durations")
    shared = tmp_path / "shared.sqlite"
    record = subprocess.run(  # one stage recorded into the shared history by an earlier job
        [str(workspace / ".venv" / "bin" / "ci-tool"), "stage", "run", "CPU-Generic-1"],
        cwd=workspace, env={**os.environ, "CI_TOOL_HISTORY": str(shared)}, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert record.returncode == 0, record.stdout + record.stderr
    secrets = {"CI_TOOL_HISTORY": str(shared)} if secret else {}
    plan = plan_job(generated["small"].files[WORKFLOW], workspace, secrets=secrets)
    assert plan.code == 0, plan.log
    exported = workspace / CI_DURATIONS_PATH
    assert exported.is_file() is secret
    if secret:
        durations = json.loads(exported.read_text())
        assert {"tests/a.py::test_a", "tests/b.py::test_b"} <= set(durations)  # what the earlier job recorded
        workflow = yaml.safe_load(generated["small"].files[WORKFLOW])
        assert workflow["jobs"]["plan"]["outputs"]["durations"] == "${{ steps.durations.outputs.exported }}"


def test_every_stage_job_shards_by_the_exported_durations_and_records_into_the_shared_history(  # type: ignore[no-untyped-def]
    generated: dict, make_workspace, tmp_path: Path
) -> None:
    job = yaml.safe_load(generated["small"].files[WORKFLOW])["jobs"]["cpu_1"]
    (fetch,) = [step for step in job["steps"] if step.get("with", {}).get("name") == DURATIONS_ARTIFACT]
    assert (fetch["if"], fetch["with"]["path"]) == ("${{ needs.plan.outputs.durations == 'true' }}", ".ci-tool")
    (run_step,) = [step for step in job["steps"] if step.get("name") == "Run the stage"]
    workspace = make_workspace("github-shared-stage")
    (workspace / CI_DURATIONS_PATH).parent.mkdir(parents=True, exist_ok=True)
    (workspace / CI_DURATIONS_PATH).write_text('{"tests/a.py::test_a": 1.0}\n')  # as the artifact step leaves it
    shared = tmp_path / "shared.sqlite"
    environment = {"STAGE": "CPU-Generic-1", "EXECUTOR": "local", "STAGE_RUN_ARGS": "", "BASE_REF": "",
                   "CI_TOOL_HISTORY": str(shared)}  # fmt: skip
    result = subprocess.run(["bash", "-e", "-x", "-c", run_step["run"]], cwd=workspace,
                            env={**os.environ, **environment}, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"--durations {CI_DURATIONS_PATH}" in result.stderr  # bash -x: the command as it ran
    with HistoryStore(shared, read_only=True) as store:
        assert [run.command for run in queries.recent_runs(store)] == ["ci-tool stage run CPU-Generic-1"]
