"""The approval-label events the approval workflow tests feed the bot: a label added, a signal comment, and the
status context they end in."""

from __future__ import annotations

from tests.helpers.bot_handle import PR, REPOSITORY

FULL, POST = "ci: full pre-merge approved", "ci: post-merge approved"


def signal_event(conclusion: str = "success") -> dict[str, object]:
    return {
        "action": "completed",
        "workflow_run": {"id": 99, "name": "approval-signal", "event": "pull_request_review", "conclusion": conclusion},
        "repository": {"full_name": REPOSITORY},
    }


def labeled_event(label: str, sender: str) -> dict[str, object]:
    return {
        "action": "labeled",
        "label": {"name": label},
        "pull_request": {"number": PR, "state": "open"},
        "sender": {"login": sender},
        "repository": {"full_name": REPOSITORY},
    }
