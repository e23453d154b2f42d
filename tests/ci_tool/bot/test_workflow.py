"""The bot workflow: actionlint and zizmor --offline find nothing; untrusted text never reaches a shell line."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers.workflow_steps import tool

ROOT = Path(__file__).resolve().parents[3]
WORKFLOW = ROOT / ".github" / "workflows" / "bot.yml"




def test_actionlint_finds_nothing() -> None:
    result = subprocess.run(
        [tool("actionlint"), "-no-color", str(WORKFLOW)], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert (result.returncode, result.stdout) == (0, "")


def test_zizmor_offline_finds_nothing() -> None:
    result = subprocess.run(
        [tool("zizmor"), "--offline", "--no-progress", str(WORKFLOW)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings to report" in result.stdout


def load() -> dict[str, object]:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    workflow["on"] = workflow.pop(True)  # YAML 1.1 reads the key `on` as true
    return workflow  # type: ignore[no-any-return]


def test_runs_on_pr_comments_starting_with_bot_with_a_minimal_token() -> None:
    workflow = load()
    assert workflow["on"] == {"issue_comment": {"types": ["created", "edited"]}}
    assert workflow["permissions"] == {}
    handle, follow = workflow["jobs"].values()  # type: ignore[attr-defined]
    assert handle["if"] == "github.event.issue.pull_request && startsWith(github.event.comment.body, '/bot')"
    follows = "needs.handle.outputs.build != '' || needs.handle.outputs.run != ''"  # a Jenkins build or an Actions run
    assert (follow["needs"], follow["if"]) == ("handle", follows)
    minimal = {"contents": "read", "pull-requests": "write", "statuses": "write"}
    # the GitHub Actions engine dispatches and cancels l0-test.yml's runs; the follower reads them and their artifacts
    assert [handle["permissions"], follow["permissions"]] == [{**minimal, "actions": "write"},
                                                              {**minimal, "actions": "read"}]  # fmt: skip


@pytest.mark.parametrize(("job_id", "option"), [("handle", '--github-output "$GITHUB_OUTPUT"'), ("follow", "--wait")])
def test_dispatches_with_the_jenkins_url_from_a_variable_and_credentials_from_secrets(job_id: str, option: str) -> None:
    job = load()["jobs"][job_id]  # type: ignore[index]
    (step,) = [step for step in job["steps"] if "bot handle" in step.get("run", "")]
    assert "--dry-run" not in step["run"] and option in step["run"]
    assert step["env"] == {
        "GITHUB_TOKEN": "${{ github.token }}",
        "CI_TOOL_BOT_ENGINES": "${{ vars.CI_TOOL_BOT_ENGINES }}",  # jenkins (unset), github, or both
        "CI_TOOL_JENKINS_URL": "${{ vars.CI_TOOL_JENKINS_URL }}",
        "JENKINS_USER": "${{ secrets.JENKINS_USER }}",
        "JENKINS_API_TOKEN": "${{ secrets.JENKINS_API_TOKEN }}",
        # the follow job posts the CI report, which links the HTML report where the variable says
        **({"CI_TOOL_REPORT_URL": "${{ vars.CI_TOOL_REPORT_URL }}"} if job_id == "follow" else {}),
        "CI_TOOL_HISTORY": "${{ secrets.CI_TOOL_HISTORY }}",  # the shared history: reuse and the dispatch ledger
    }


def test_no_expression_is_interpolated_into_a_shell_line() -> None:
    jobs = load()["jobs"].values()  # type: ignore[attr-defined]
    runs = [step["run"] for job in jobs for step in job["steps"] if "run" in step]
    assert runs and all("${{" not in run for run in runs)
    assert any('--event "$GITHUB_EVENT_PATH"' in run for run in runs)


@pytest.mark.parametrize("job_id", ["handle", "follow"])
def test_checks_out_the_default_branch_without_persisted_credentials(job_id: str) -> None:
    job = load()["jobs"][job_id]  # type: ignore[index]
    (checkout,) = [step for step in job["steps"] if str(step.get("uses", "")).startswith("actions/checkout@")]
    # no `ref:`: never the pull request's code; the answer job's whole history holds the merge base and the
    # commits touch records were made at
    full = {"fetch-depth": 0} if job_id == "handle" else {}
    assert checkout["with"] == {"persist-credentials": False, **full}


def test_the_answer_job_fetches_the_pull_requests_head_as_objects_only() -> None:
    """The head's commits reach the clone for judging touch records; no step checks them out or runs them."""
    steps = load()["jobs"]["handle"]["steps"]  # type: ignore[index]
    runs = [str(step.get("run", "")) for step in steps]
    (fetch,) = [run for run in runs if "git fetch" in run]
    assert '"+refs/pull/$PR_NUMBER/head:refs/remotes/pull/head"' in fetch
    assert not any("git checkout" in run or "git switch" in run or "refs/remotes/pull" in run
                   for run in runs if run != fetch)  # fmt: skip
