"""A stage whose runner is lost mid-stage runs again on a fresh runner, as `<stage>-attempt-2`, and ends unstable;
a stage with a test failure is not run again: the generated L0 Test workflow, run for real under act.

The checkout is this working tree with two probe tests on the CPU lists: the post-merge stage's probe kills its
own job's step mid-run on the first attempt (the step's shell, ci-tool and pytest, with SIGKILL, as a runner
that goes away leaves them: the job fails with no exit code of ci-tool's), and passes on a later attempt; the
pre-merge stage's probe fails. Fail-fast is off, so the one run shows both: the lost stage retried, the failed
one not. (With fail-fast on, a failure stops every retry: tests/ci_tool/run/test_lost.py.)
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.ci_tool.actions.act_runner import (
    ActRunner,
    JobResult,
    WorkflowRun,
    with_light_build,
    with_local_checkouts,
    working_tree_repo,
)

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
WORKFLOW = Path(".github/workflows/l0-test.yml")
FAILING, LOST = "CPU-Generic-1", "CPU-Generic-Post-Merge-1"
LOST_JOB = "lost stages (single-gpu phase, attempt 2)"
REQUEST = json.dumps({"command": "run", "flags": {"stage_list": [FAILING, LOST], "disable_fail_fast": True}})

PROBE = '''"""Probes of the retry of a stage whose runner is lost (tests/ci_tool/actions/test_l0_retry.py)."""

import os
import signal


def _ancestors(pid):
    while pid > 1:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        yield pid, open(f"/proc/{pid}/comm").read().strip()
        pid = int(fields[1])


def test_a_runner_lost_on_the_first_attempt():
    if os.environ["CI_TOOL_STAGE"].endswith("-attempt-2"):
        return
    # the job's step is the nearest bash above: it, ci-tool and this process die at once, as with a lost runner
    chain = list(_ancestors(os.getpid()))
    step = next(pid for pid, comm in chain if comm == "bash")
    for pid, _ in reversed(chain[: [pid for pid, _ in chain].index(step) + 1]):
        os.kill(pid, signal.SIGKILL)


def test_a_real_failure():
    assert False, "a test failure: never run again"
'''
LISTS = """version: 0.0.1
l0_cpu:
- condition:
    terms: {stage: pre_merge}
  tests: [tests/retry_probe/test_probe.py::test_a_real_failure]
- condition:
    terms: {stage: post_merge}
  tests: [tests/retry_probe/test_probe.py::test_a_runner_lost_on_the_first_attempt]
"""


@pytest.fixture(scope="module")
def run(act_runner: ActRunner, tmp_path_factory: pytest.TempPathFactory) -> WorkflowRun:
    repo = with_light_build(working_tree_repo(ROOT, tmp_path_factory.mktemp("retry-repo")))
    (repo / "tests" / "retry_probe").mkdir()
    (repo / "tests" / "retry_probe" / "test_probe.py").write_text(PROBE, encoding="utf-8")
    (repo / "test-db" / "l0_cpu.yml").write_text(LISTS, encoding="utf-8")
    catalog = repo / "jenkins" / "stages.yml"  # one CPU-Generic shard: the pre-merge probe is CPU-Generic-1's
    text = catalog.read_text(encoding="utf-8")
    one_shard = text.replace("- name: CPU-Generic\n  platform: cpu\n  context: l0_cpu\n  splits: 2\n",
                             "- name: CPU-Generic\n  platform: cpu\n  context: l0_cpu\n  splits: 1\n")  # fmt: skip
    assert one_shard != text
    catalog.write_text(one_shard, encoding="utf-8")
    git = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid"]
    for args in (["add", "-A"], ["commit", "-q", "-m", "the retry probes"]):
        subprocess.run([*git, *args], cwd=repo, check=True, capture_output=True, timeout=120)
    workflow = with_local_checkouts(repo / WORKFLOW, tmp_path_factory.mktemp("retry-workflow"))
    return act_runner.run(workflow, repo, inputs={"request": REQUEST, "labels": "[]"}, name="retry")


def test_the_lost_stage_runs_again_as_attempt_2_and_the_failed_one_does_not(run: WorkflowRun) -> None:
    ran = {name: result for name, result in run.results().items() if result is not JobResult.SKIPPED}
    assert ran == {
        "plan": JobResult.SUCCESS,
        "build x86_64": JobResult.SUCCESS,  # the one build every stage installs, the attempt too
        FAILING: JobResult.FAILURE,
        LOST: JobResult.FAILURE,  # its step was killed: no exit code of ci-tool's
        LOST_JOB: JobResult.SUCCESS,
        f"{LOST}-attempt-2": JobResult.SUCCESS,
    }, run.summary()
    assert run.exit_code != 0, run.summary()  # GitHub fails the run too: a job of it failed


def test_the_lost_job_says_which_stage_runs_again_and_why_the_other_does_not(run: WorkflowRun) -> None:
    log = run.job(LOST_JOB).text
    assert f"{FAILING}: ended with exit code 1, a failure: not run again" in log, log
    assert f"{LOST}: no result (its runner was lost): runs again on a fresh runner as {LOST}-attempt-2" in log, log


def test_the_second_attempt_passes_unstable(run: WorkflowRun) -> None:
    log = run.job(f"{LOST}-attempt-2").text
    assert (
        f"{LOST}-attempt-2: unstable in " in log
        and "(1 passed, 0 failed, 0 skipped): passed on attempt 2: the infrastructure lost attempt 1 (its agent "
        "or runner)"
        in log
    ), log
