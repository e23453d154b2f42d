"""The approval-label workflows: actionlint and zizmor --offline find nothing; minimal tokens; the default branch
only; the actions bot.yml pins; no expression interpolated into a shell line (their steps run for real against
the loopback GitHub in tests/ci_tool/dispatch/test_approval_workflow_steps.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ci_tool.pr_bot.labels import APPROVAL_LABELS
from tests.helpers.workflow_steps import BOT, LABELS, SIGNAL, load, tool


def steps(path: Path) -> list[dict[str, object]]:
    return [step for job in load(path)["jobs"].values() for step in job["steps"]]  # type: ignore[attr-defined]


@pytest.mark.parametrize("path", [SIGNAL, LABELS], ids=["signal", "labels"])
def test_actionlint_finds_nothing(path: Path) -> None:
    result = subprocess.run([tool("actionlint"), "-no-color", str(path)], capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout) == (0, "")


def test_zizmor_offline_finds_nothing() -> None:
    result = subprocess.run(
        [tool("zizmor"), "--offline", "--no-progress", str(SIGNAL), str(LABELS)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings to report" in result.stdout


def test_the_signal_runs_on_reviews_with_no_token_permission() -> None:
    workflow = load(SIGNAL)
    assert workflow["on"] == {"pull_request_review": {"types": ["submitted"]}}
    (job,) = workflow["jobs"].values()  # type: ignore[attr-defined]
    assert (workflow["permissions"], job["permissions"]) == ({}, {})
    assert job["if"] == "github.event.review.state == 'approved'"


def test_the_labels_workflow_follows_the_signal_and_labeled_events_with_minimal_tokens() -> None:
    workflow = load(LABELS)
    assert workflow["on"] == {
        "workflow_run": {"workflows": [load(SIGNAL)["name"]], "types": ["completed"]},
        "pull_request_target": {"types": ["labeled"]},
    }
    jobs = workflow["jobs"]
    assert workflow["permissions"] == {}
    assert jobs["apply"]["permissions"] == {"actions": "read", "contents": "read", "pull-requests": "write"}  # type: ignore[index]
    assert jobs["guard"]["permissions"] == {"contents": "read", "pull-requests": "write"}  # type: ignore[index]


def test_the_guard_answers_the_approval_labels() -> None:
    """The job's filter names the labels pr_bot/labels.py guards, no more and no fewer."""
    condition = load(LABELS)["jobs"]["guard"]["if"]  # type: ignore[index]
    assert [label for label in APPROVAL_LABELS if f"github.event.label.name == '{label}'" in condition] == list(
        APPROVAL_LABELS
    )
    assert condition.count("github.event.label.name ==") == len(APPROVAL_LABELS)


@pytest.mark.parametrize("path", [SIGNAL, LABELS], ids=["signal", "labels"])
def test_actions_are_pinned_as_in_the_bot_workflow(path: Path) -> None:
    pinned = {str(step["uses"]) for step in steps(BOT) if "uses" in step}
    pinned |= {
        "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02",
        "actions/download-artifact@d3f86a106a0bac45b974a628896c90dbdf5c8093",
    }
    used = {str(step["uses"]) for step in steps(path) if "uses" in step}
    assert used and used <= pinned


def test_checkouts_take_the_default_branch_without_persisted_credentials() -> None:
    checkouts = [step for step in steps(LABELS) if str(step.get("uses", "")).startswith("actions/checkout@")]
    assert len(checkouts) == 2
    default = {"ref": "${{ github.event.repository.default_branch }}", "persist-credentials": False}
    assert all(step["with"] == default for step in checkouts)


@pytest.mark.parametrize("path", [SIGNAL, LABELS], ids=["signal", "labels"])
def test_no_expression_is_interpolated_into_a_shell_line(path: Path) -> None:
    runs = [str(step["run"]) for step in steps(path) if "run" in step]
    assert runs and all("${{" not in run for run in runs)


def test_only_the_ci_tool_steps_get_the_token() -> None:
    with_token = [step for step in steps(LABELS) if "GITHUB_TOKEN" in dict(step.get("env") or {})]  # type: ignore[call-overload]
    assert [step["env"] for step in with_token] == [{"GITHUB_TOKEN": "${{ github.token }}"}] * 2
    assert all('bot labels --event "$GITHUB_EVENT_PATH"' in str(step["run"]) for step in with_token)


def test_the_labels_workflow_downloads_what_the_signal_uploads() -> None:
    """The artifact holds the file `pr-number` at its root: downloaded into the folder the apply step reads."""
    (upload,) = [step for step in steps(SIGNAL) if str(step.get("uses", "")).startswith("actions/upload-artifact@")]
    (download,) = [step for step in steps(LABELS) if str(step.get("uses", "")).startswith("actions/download-artifact@")]
    folder = "${{ runner.temp }}/approval-signal"
    assert (upload["with"]["name"], upload["with"]["path"]) == ("approval-signal", f"{folder}/pr-number")  # type: ignore[index]
    assert download["with"] == {
        "name": "approval-signal",
        "path": folder,
        "run-id": "${{ github.event.workflow_run.id }}",
        "github-token": "${{ github.token }}",
    }
