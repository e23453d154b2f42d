"""The approval workflows' shell steps run by bash as Actions runs them (RUNNER_TEMP, GITHUB_EVENT_PATH, the
default branch's allowlist), with `ci-tool` this environment's, against the loopback GitHub: the signal's step
writes the number the labels workflow's step reads, and each ci-tool line is the one the workflow holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.approval_events import FULL, labeled_event, signal_event
from tests.helpers.bot_handle import PR, REPOSITORY
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.workflow_steps import LABELS, SIGNAL, load

ALLOWLIST = "run: []\nkill_skip: []\napprove: [approver-ann]\n"


def step_run(path: Path, job_id: str, name_starts: str) -> tuple[str, dict[str, str]]:
    """The `run` script and the names of the `env` of the job's step whose name starts so."""
    (step,) = [s for s in load(path)["jobs"][job_id]["steps"] if s["name"].startswith(name_starts)]  # type: ignore[index]
    return step["run"], step.get("env", {})


@pytest.fixture
def runner(tmp_path: Path, github: FakeGitHub) -> dict[str, str]:
    """A job's environment: RUNNER_TEMP with venv/bin/ci-tool (this environment's), the fake's API and token."""
    temp = tmp_path / "runner-temp"
    (temp / "venv" / "bin").mkdir(parents=True)
    (temp / "venv" / "bin" / "ci-tool").symlink_to(Path(sys.executable).parent / "ci-tool")
    checkout = tmp_path / "checkout" / ".github"
    checkout.mkdir(parents=True)
    (checkout / "ci-bot-allowlist.yml").write_text(ALLOWLIST, encoding="utf-8")
    keep = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    return {
        **keep,
        "RUNNER_TEMP": str(temp),
        "GITHUB_API_URL": github.api_url,
        "NO_PROXY": "127.0.0.1",
        "GITHUB_TOKEN": github.token,
    }


def run_step(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    shell = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script]  # Actions' `shell: bash`
    return subprocess.run(shell, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def event_file(tmp_path: Path, payload: dict[str, object]) -> str:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return str(path)


def test_the_signal_step_and_the_apply_step_add_the_label(
    github: FakeGitHub, runner: dict[str, str], tmp_path: Path
) -> None:
    github.pulls[(REPOSITORY, PR)].reviews = [("approver-ann", "APPROVED")]
    write, write_env = step_run(SIGNAL, "signal", "Write the pull request's number")
    assert write_env == {"PR_NUMBER": "${{ github.event.pull_request.number }}"}
    signalled = run_step(write, {**runner, "PR_NUMBER": str(PR)}, tmp_path)
    assert signalled.returncode == 0, signalled.stderr
    apply, _ = step_run(LABELS, "apply", "Add the label")
    env = {**runner, "GITHUB_EVENT_PATH": event_file(tmp_path, signal_event())}
    applied = run_step(apply, env, tmp_path / "checkout")
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout == (
        f"decision: add: adding {FULL!r} to #{PR}: approved by 'approver-ann'\nadded {FULL!r} to #{PR}\n"
    )
    assert github.pulls[(REPOSITORY, PR)].labels == [FULL]


def test_a_forged_signal_adds_nothing(github: FakeGitHub, runner: dict[str, str], tmp_path: Path) -> None:
    """A fork's signal run may upload anything: the apply step reads digits or nothing."""
    github.pulls[(REPOSITORY, PR)].reviews = [("approver-ann", "APPROVED")]
    folder = Path(runner["RUNNER_TEMP"]) / "approval-signal"
    folder.mkdir()
    (folder / "pr-number").write_text(f"{PR} --allowlist /tmp/mine.yml\n", encoding="utf-8")
    apply, _ = step_run(LABELS, "apply", "Add the label")
    env = {**runner, "GITHUB_EVENT_PATH": event_file(tmp_path, signal_event())}
    applied = run_step(apply, env, tmp_path / "checkout")
    assert applied.returncode == 1
    assert applied.stderr == (
        f"error: expected a pull request number in --pull, found '{PR} --allowlist "
        "/tmp/mine.yml' Hint: the approval signal's artifact holds the number alone\n"
    )
    assert (github.pulls[(REPOSITORY, PR)].labels, github.requests) == ([], [])


def test_the_guard_step_removes_a_label_a_non_approver_applied(
    github: FakeGitHub, runner: dict[str, str], tmp_path: Path
) -> None:
    github.pulls[(REPOSITORY, PR)].labels = [FULL]
    guard, _ = step_run(LABELS, "guard", "Remove the label")
    env = {**runner, "GITHUB_EVENT_PATH": event_file(tmp_path, labeled_event(FULL, "drive-by"))}
    guarded = run_step(guard, env, tmp_path / "checkout")
    assert guarded.returncode == 0, guarded.stderr
    assert github.pulls[(REPOSITORY, PR)].labels == []
    (comment,) = github.bodies()
    assert comment.startswith(
        f"Removed the label `{FULL}` that @drive-by applied. Only the approvers listed under "
        "`approve` in `.github/ci-bot-allowlist.yml` (@approver-ann) may apply it."
    )
