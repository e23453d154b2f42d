"""issue_comment payloads -> decisions: one fixture per decision path, and the payload checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tool.bot.authorize import parse_allowlist
from ci_tool.bot.event import Action, decide, dispatch_payload, read_event
from ci_tool.errors import BotError

FIXTURES = Path(__file__).parent / "fixtures"
ALLOWLIST = parse_allowlist((FIXTURES / "allowlist.yml").read_text(encoding="utf-8"))


def load(stem: str) -> object:
    return json.loads((FIXTURES / f"event_{stem}.json").read_text(encoding="utf-8"))


DECISIONS = [
    ("run_member", Action.DISPATCH, "/bot run by 'maintainer-amy' (author association MEMBER)"),
    (
        "run_listed_contributor",
        Action.DISPATCH,
        "/bot run by 'outside-contributor' (listed under 'run' in .github/ci-bot-allowlist.yml)",
    ),
    (
        "kill_listed",
        Action.DISPATCH,
        "/bot kill by 'release-captain' (listed under 'kill_skip' in .github/ci-bot-allowlist.yml)",
    ),
    ("post_merge_labeled", Action.DISPATCH, "/bot run by 'maintainer-amy' (author association MEMBER)"),
    ("edited_fixed_typo", Action.DISPATCH, "/bot run by 'maintainer-amy' (author association MEMBER)"),
    # decided without the catalog; with it (pr_bot/settle.py) they become refuse, refuse, dispatch, help,
    # refuse and refuse (approval labels are checked on the selected stages)
    ("stage_list_multi_gpu_unlabeled", Action.DISPATCH, "/bot run by 'maintainer-amy' (author association MEMBER)"),
    ("stage_list_spelt_broad", Action.DISPATCH, "/bot run by 'maintainer-amy' (author association MEMBER)"),
    ("stage_list_glob", Action.DISPATCH, "/bot run by 'maintainer-amy' (author association MEMBER)"),
    ("gpu_type_typo", Action.DISPATCH, "/bot run by 'maintainer-amy' (author association MEMBER)"),
    ("post_merge_unlabeled", Action.DISPATCH, "/bot run by 'maintainer-amy' (author association MEMBER)"),
    ("multi_gpu_unlabeled", Action.DISPATCH, "/bot run by 'maintainer-amy' (author association MEMBER)"),
    ("help", Action.HELP, "help asked for"),
    ("unknown_subcommand", Action.HELP, "unknown sub-command 'rerun'"),
    ("syntax_error", Action.HELP, "syntax error at column 23"),
    ("invisible_character", Action.HELP, "syntax error at column 1"),
    (
        "run_outsider",
        Action.REFUSE,
        "'drive-by-user' lacks the 'run' permission (author association NONE and not listed)",
    ),
    (
        "skip_collaborator",
        Action.REFUSE,
        "'collab-carl' lacks the 'kill_skip' permission (author association COLLABORATOR and not listed)",
    ),
    ("issue_not_pr", Action.IGNORE, "comment on an issue, not on a pull request"),
    ("not_a_command", Action.IGNORE, "comment does not start with /bot"),
    ("deleted", Action.IGNORE, "action 'deleted' is not a new or edited comment"),
    ("bot_author", Action.IGNORE, "comment by the bot account 'ci-helper[bot]'"),
    ("edited_prose_only", Action.IGNORE, "edit left the command line unchanged"),
    ("edited_by_other", Action.IGNORE, "comment by 'maintainer-amy' edited by 'someone-else'"),
    ("closed_pr", Action.IGNORE, "pull request #123 is closed"),
]


def test_every_fixture_has_a_decision() -> None:
    stems = sorted(p.stem.removeprefix("event_") for p in FIXTURES.glob("event_*.json"))
    assert stems == sorted(stem for stem, _, _ in DECISIONS)


@pytest.mark.parametrize(("stem", "action", "reason"), DECISIONS, ids=[s for s, _, _ in DECISIONS])
def test_decision(stem: str, action: Action, reason: str) -> None:
    decision = decide(read_event(load(stem)), ALLOWLIST)
    assert (decision.action, decision.reason) == (action, reason)


def test_dispatch_payload_carries_the_request_and_its_origin() -> None:
    decision = decide(read_event(load("run_member")), ALLOWLIST)
    assert dispatch_payload(decision) == {
        "command": "run",
        "flags": {"disable_fail_fast": True, "stage_list": ["DGX_H100-PyTorch-1", "A30-*"]},
        "repository": "example/ci-tool",
        "pull_request": 123,
        "comment_id": 987654321,
        "requested_by": "maintainer-amy",
        "custom_run": True,
    }


def test_labels_and_edit_history_are_read() -> None:
    event = read_event(load("post_merge_labeled"))
    assert event.labels == ("ci: post-merge approved",)
    assert read_event(load("edited_fixed_typo")).previous_body == "/bot run -disable-fail-fast"


def _without(path: str) -> object:
    payload = load("run_member")
    *parents, last = path.split(".")
    node = payload
    for part in parents:
        node = node[part]  # type: ignore[index]
    del node[last]  # type: ignore[attr-defined]
    return payload


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (
            _without("comment"),
            "e.json (comment.user.login): expected an issue_comment event with 'comment.user.login', found none",
        ),
        (
            _without("repository"),
            "e.json (repository.full_name): expected an issue_comment event with 'repository.full_name', found none",
        ),
        (
            {**load("run_member"), "issue": {"number": "123"}},  # type: ignore[dict-item]
            "e.json (issue.number): expected int at 'issue.number', found str",
        ),
        (
            {**load("run_member"), "issue": {"number": True}},  # type: ignore[dict-item]
            "e.json (issue.number): expected int at 'issue.number', found bool",
        ),
        (
            {**load("run_member"), "issue": {"number": 7, "state": "merged"}},  # type: ignore[dict-item]
            "e.json (issue.state): expected 'open' or 'closed' at 'issue.state', found 'merged'",
        ),
        (
            {**load("run_member"), "action": "pinned"},
            "e.json (action): expected one of 'created', 'edited', 'deleted' at 'action', found 'pinned'",
        ),
        ([1, 2], "e.json (action): expected an issue_comment event with 'action', found none"),
    ],
    ids=[
        "no comment", "no repository", "number as text", "number as bool", "unknown state", "unknown action",
        "not an object",
    ],
)
def test_malformed_payloads_are_our_errors(payload: object, message: str) -> None:
    with pytest.raises(BotError) as caught:
        read_event(payload, file="e.json")
    assert str(caught.value) == message
