"""The generated L0 Test workflow, run for real under act on this machine against a real PostgreSQL history
(the repository secret CI_TOOL_HISTORY): its plan job selects, its stage jobs run `ci-tool stage run`, the
`blocked` job names a stage that lacks its approval label, every stage records into the one history, and a
second run of the same request reuses what passed.

The stage list is the smallest that covers every kind of job: a fast CPU stage (it passes, then is
reused), a single-GPU stage (its job runs here, on a machine without that GPU: its stage waits for a
runner and is no pass, so the second run runs it again) and a multi-GPU stage, which a pull request
without `ci: full pre-merge approved` blocks. The jobs act ran are compared with what `ci-tool stage
select` (the bot's preview) names for the same request on the same history, run by run. Each run builds
once (the `build` job) and every stage job installs from that build's artifact alone.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ci_tool.history.locator import PostgresUrl
from ci_tool.history.queries import recent_runs, run_stages
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import StageState
from tests.ci_tool.actions.act_runner import ActRunner, JobResult, WorkflowRun, with_local_checkouts
from tests.ci_tool.history.postgres_server import PostgresServer
from tests.ci_tool.history.postgres_server import why_not as why_no_postgres

pytestmark = pytest.mark.slow

WORKFLOW = Path(".github/workflows/l0-test.yml")
CPU_STAGE = "CPU-Build_Docs"
GPU_STAGE = "A10-PyTorch-1"
MULTI_GPU_STAGE = "DGX_H100-4_GPUs-PyTorch-1"
REQUEST = json.dumps({"command": "run", "flags": {"stage_list": [CPU_STAGE, GPU_STAGE, MULTI_GPU_STAGE]}})
LABELS = "[]"  # no approval label: the multi-GPU stage is blocked
PLAN, BLOCKED, BUILD = "plan", "blocked stages", "build x86_64"  # the jobs that are no stage
LOST = "lost stages (single-gpu phase, attempt 2)"  # the job that finds stages whose runner was lost: none here


@dataclass(frozen=True)
class Preview:
    """What `ci-tool stage select` names for the request, on the history as it is before a run."""

    stages: list[str]
    blocked: list[str]


@dataclass(frozen=True)
class Scenario:
    history: str  # the PostgreSQL URL the workflow got as its secret
    previews: tuple[Preview, Preview]
    runs: tuple[WorkflowRun, WorkflowRun]


@pytest.fixture(scope="module")
def history_url() -> Generator[str]:
    """A new database on a real PostgreSQL server of this module's own."""
    reason = why_no_postgres()
    if reason is not None:
        pytest.skip(reason)
    server = PostgresServer()
    try:
        yield server.create_database("l0_under_act")
    finally:
        server.close()


def preview(repo: Path, history: str, scratch: Path) -> Preview:
    """`ci-tool stage select` for the request in `repo`, as the bot previews it (the request file lies
    outside the repository, whose code must stay the code that ran)."""
    request = scratch / "request.json"
    request.write_text(REQUEST, encoding="utf-8")
    command = [sys.executable, "-m", "ci_tool", "stage", "select", "--request", str(request), "--labels-json",
               LABELS, "--engine", "github", "--json"]  # fmt: skip
    result = subprocess.run(
        command, cwd=repo, env={**os.environ, "CI_TOOL_HISTORY": history}, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    selection = json.loads(result.stdout)
    return Preview(list(selection["stages"]), [entry["stage"] for entry in selection["blocked"]])


@pytest.fixture(scope="module")
def scenario(
    act_runner: ActRunner, working_tree: Path, history_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Scenario:
    """Preview, run, preview again, run again: the same request on the same history."""
    scratch = tmp_path_factory.mktemp("preview")
    inputs = {"request": REQUEST, "labels": LABELS}
    secrets = {"CI_TOOL_HISTORY": history_url}
    workflow = with_local_checkouts(working_tree / WORKFLOW, tmp_path_factory.mktemp("workflow"))
    runner = dataclasses.replace(act_runner, kept_builds=tmp_path_factory.mktemp("kept-builds"))  # none kept yet
    first_preview = preview(working_tree, history_url, scratch)
    first = runner.run(workflow, working_tree, inputs=inputs, secrets=secrets, name="first")
    second_preview = preview(working_tree, history_url, scratch)
    second = runner.run(workflow, working_tree, inputs=inputs, secrets=secrets, name="second")
    return Scenario(history_url, (first_preview, second_preview), (first, second))


def stage_jobs(run: WorkflowRun) -> list[str]:
    """The stage jobs that ran: the jobs that ran, less the plan and the blocked job."""
    return sorted(name for name in run.ran() if name not in (PLAN, BLOCKED, BUILD, LOST))


def test_the_first_run_plans_runs_the_stages_and_names_the_blocked_one(scenario: Scenario) -> None:
    run = scenario.runs[0]
    ran = {name: result for name, result in run.results().items() if result is not JobResult.SKIPPED}
    expected = {PLAN: JobResult.SUCCESS, BLOCKED: JobResult.FAILURE, BUILD: JobResult.SUCCESS,
                CPU_STAGE: JobResult.SUCCESS, GPU_STAGE: JobResult.SUCCESS, LOST: JobResult.SUCCESS}  # fmt: skip
    assert ran == expected, run.summary()
    assert run.exit_code != 0, run.summary()  # the blocked job fails the run, as it fails the check on GitHub
    # what the blocked job echoes as its error: act may drop the output of a step that exits at once, so the
    # plan job's output it echoes is read instead
    message = f"blocked_message='ci: full pre-merge approved' is missing: blocked {MULTI_GPU_STAGE}"
    assert message in run.job(PLAN).text, run.job(PLAN).text


@pytest.mark.parametrize("index", [0, 1], ids=["first-run", "second-run"])
def test_the_jobs_that_ran_are_the_stages_stage_select_names(scenario: Scenario, index: int) -> None:
    """The bot's preview is what runs: checked on the run, not on the workflow's text."""
    run, expected = scenario.runs[index], scenario.previews[index]
    assert (stage_jobs(run), expected.blocked) == (sorted(expected.stages), [MULTI_GPU_STAGE]), run.summary()


def test_a_gpu_stage_on_this_machine_waits_for_a_runner(scenario: Scenario) -> None:
    log = scenario.runs[0].job(GPU_STAGE).text
    assert f"{GPU_STAGE}: waiting for a runner: needs 1 A10 GPU" in log, log
    assert f"{GPU_STAGE}: passed" not in log


def recorded(history: str) -> dict[str, list[StageState]]:
    """Stage -> its states in the history's runs, oldest first."""
    found: dict[str, list[StageState]] = {}
    with HistoryStore(PostgresUrl(history), read_only=True) as store:
        for run in reversed(recent_runs(store, limit=100)):
            for stage in run_stages(store, run.run_id):
                found.setdefault(stage.name, []).append(stage.state)
    return found


def test_every_stage_records_into_the_one_history_and_the_second_run_reuses_what_passed(scenario: Scenario) -> None:
    assert recorded(scenario.history) == {
        CPU_STAGE: [StageState.PASSED],  # the second run reused it: no job, no second record
        GPU_STAGE: [StageState.WAITING, StageState.WAITING],  # no pass: both runs ran it
    }, "\n".join(run.summary() for run in scenario.runs)
    second = scenario.runs[1]
    ran = {name: result for name, result in second.results().items() if result is not JobResult.SKIPPED}
    expected = {PLAN: JobResult.SUCCESS, BLOCKED: JobResult.FAILURE, BUILD: JobResult.SUCCESS,
                GPU_STAGE: JobResult.SUCCESS, LOST: JobResult.SUCCESS}  # fmt: skip
    assert ran == expected, second.summary()


def test_the_run_builds_once_and_each_stage_installs_that_build(scenario: Scenario) -> None:
    """The build job builds; each stage job downloads its artifact and installs from it alone (`--no-index`,
    no pip configuration, no PIP_FIND_LINKS: the caller's wheel folder and index are out of reach), and
    `ci-tool build --check` finds it is the build of the stage's own checkout. The runner keeps the build:
    the second run, of the same inputs, copies it instead of building."""
    run = scenario.runs[0]
    assert "built ci-build (no earlier build in ci-build): commit " in run.job(BUILD).text, run.job(BUILD).text
    assert "restored ci-build from the build kept in " in scenario.runs[1].job(BUILD).text, scenario.runs[1].summary()
    lines = ("Success - Main Fetch the build", "Success - Main Set up ci-tool",
             "ci-build is this checkout's build: commit ")  # fmt: skip
    found = {stage: [line in run.job(stage).text for line in lines] for stage in (CPU_STAGE, GPU_STAGE)}
    assert found == {CPU_STAGE: [True] * 3, GPU_STAGE: [True] * 3}, run.summary()
