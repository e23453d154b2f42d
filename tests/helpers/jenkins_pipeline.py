"""The generated Jenkins pipelines run through the Groovy stub: the L0_Test and L0_MergeRequest scenarios, their
steps and selections, and the commits a pull request's run sees (test_jenkins.py, test_shared_history.py)."""

from __future__ import annotations

import json

from tests.helpers.generate import PullRequestOrigin

TEST_JOB = "jenkins/L0_Test.groovy"


MERGE_REQUEST = "jenkins/L0_MergeRequest.groovy"


def l0_test(
    stages: list[str],
    *,
    fail_fast: bool = True,
    run_args: list[str] | None = None,
    more: dict[str, str] | None = None,  # more parameters: HEAD_SHA, BASE_SHA, DEBUG_HOLD_MINUTES
    **extra: object,
) -> dict[str, object]:
    params = {"STAGES": json.dumps(stages), "FAIL_FAST": fail_fast, "STAGE_RUN_ARGS": json.dumps(run_args or [])}
    return {"script": TEST_JOB, "params": params | (more or {}), **extra}


def selection(
    stages: list[str],
    *,
    blocked: list[tuple[str, str]] = (),  # type: ignore[assignment]
    fail_fast: bool = True,
    stage_run_args: list[str] | None = None,
) -> dict[str, object]:
    """The parts of `ci-tool stage select --json` the merge-request pipeline reads."""
    return {
        "stages": stages,
        "blocked": [{"stage": stage, "label": label} for stage, label in blocked],
        "fail_fast": fail_fast,
        "stage_run_args": stage_run_args or [],
    }


def merge_request(selected: dict[str, object], **extra: object) -> dict[str, object]:
    """A merge-request run whose `ci-tool stage select` answers `selected` (not run for real)."""
    params = {"REQUEST": '{"command": "run", "flags": {}}', "LABELS": "[]"}
    return {"script": MERGE_REQUEST, "params": params, "files": {"selection.json": selected}, **extra}


# Placeholders in a git scenario's parameters for the commits of the `pull_request` fixture's repository.
HEAD, OLD_HEAD, BASE = "<pr-head>", "<pr-old-head>", "<main-tip>"


def commits(pull_request: PullRequestOrigin, text: str) -> str:
    named = {HEAD: pull_request.head, OLD_HEAD: pull_request.old_head, BASE: pull_request.base}
    return named.get(text, text)


def steps(run: dict[str, object], *kinds: str) -> list[tuple[object, ...]]:
    """The recorded steps of the given kinds, each as (kind, its main argument)."""
    main = {
        "node": "label",
        "stage": "name",
        "sh": "script",
        "error": "message",
        "echo": "message",
        "unstable": "message",
        "parallel": "branches",
        "aborted": "branches",
        "junit": "testResults",
        "archiveArtifacts": "artifacts",
        "build": "stages",
        "timeout": "time",
        "lost": "",
        "retrying": "",
    }
    calls = run["calls"]
    assert isinstance(calls, list)
    return [
        (call["step"], call.get(main.get(call["step"], "")))
        for call in calls
        if call["step"] in kinds and not str(call.get("message", "")).startswith(NO_SHARED_HISTORY)
    ]


NO_SHARED_HISTORY = "No shared history ("  # each stage's note without the credential (test_shared_history.py)
