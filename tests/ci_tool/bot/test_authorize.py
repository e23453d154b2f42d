"""Who may drive CI: author associations, the allowlist file, and its pinned errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tool.bot.authorize import Allowlist, authorize, parse_allowlist, permission_of
from ci_tool.bot.flags import Permission, SubCommand
from ci_tool.errors import BotError
from ci_tool.layout import ALLOWLIST_PATH

ROOT = Path(__file__).resolve().parents[3]
KEYS = "run, kill_skip, approve"  # as an unknown key's message lists them
ALLOWLIST = Allowlist(run=frozenset({"outside-contributor"}), kill_skip=frozenset({"release-captain"}))


@pytest.mark.parametrize(
    ("text", "allowlist"),
    [
        ("", Allowlist()),
        ("run: []\nkill_skip:\n", Allowlist()),
        ("run: [Outside-Contributor]\nkill_skip:\n  - release-captain\n", ALLOWLIST),
        ("# only kill/skip people\nkill_skip: [a1]\n", Allowlist(kill_skip=frozenset({"a1"}))),
        ("run: [a]\napprove: [CI-Approver]\n", Allowlist(run=frozenset({"a"}), approve=frozenset({"ci-approver"}))),
    ],
    ids=["empty", "empty lists", "both", "one key", "approvers"],
)
def test_allowlist_parses(text: str, allowlist: Allowlist) -> None:
    assert parse_allowlist(text) == allowlist


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "runn: [a]",
            f"{ALLOWLIST_PATH}:1:1 (runn): expected one of {KEYS}, found key 'runn' Hint: did you mean 'run'?",
        ),
        (
            "run: [a]\nrun: [b]",
            f"{ALLOWLIST_PATH}:2:1 (run): expected each key once, found 'run' again Hint: merge the two lists",
        ),
        (
            "- a",
            f"{ALLOWLIST_PATH}:1:1: expected a mapping of 'run', 'kill_skip' and 'approve' to logins, found a list",
        ),
        (
            "aprove: [a]",
            f"{ALLOWLIST_PATH}:1:1 (aprove): expected one of {KEYS}, found key 'aprove' Hint: did you mean 'approve'?",
        ),
        (
            "reviewers: [a]",
            f"{ALLOWLIST_PATH}:1:1 (reviewers): expected one of {KEYS}, found key 'reviewers' "
            f"Hint: allowed keys are {KEYS}",
        ),
        ("approve: [a, A]", f"{ALLOWLIST_PATH}:1:14 (approve[1]): login 'A' listed twice under 'approve'"),
        (
            "run: alice",
            f"{ALLOWLIST_PATH}:1:6 (run): expected a list of GitHub logins, found 'alice' "
            "Hint: write run: [login-one, login-two]",
        ),
        (
            "run: ['@alice']",
            f"{ALLOWLIST_PATH}:1:7 (run[0]): expected a GitHub login, found '@alice' "
            "Hint: write 'alice' without the '@'",
        ),
        ("run: [1234]", f"{ALLOWLIST_PATH}:1:7 (run[0]): expected a GitHub login, found '1234' Hint: quote it: '1234'"),
        ("run: [{a: b}]", f"{ALLOWLIST_PATH}:1:7 (run[0]): expected a GitHub login, found a mapping"),
        ("run: [~]", f"{ALLOWLIST_PATH}:1:7 (run[0]): expected a GitHub login, found nothing (null)"),
        ("run: [bad--name]", f"{ALLOWLIST_PATH}:1:7 (run[0]): expected a GitHub login, found 'bad--name'"),
        ("run: [Amy, amy]", f"{ALLOWLIST_PATH}:1:12 (run[1]): login 'amy' listed twice under 'run'"),
        (
            "run: [a",
            f"{ALLOWLIST_PATH}:1:8: expected valid YAML, found a syntax error: "
            "expected ',' or ']', but got '<stream end>'",
        ),
    ],
    ids=[
        "unknown key",
        "key twice",
        "not a mapping",
        "approve misspelt",
        "no close key",
        "approver twice",
        "not a list",
        "at sign",
        "number",
        "mapping item",
        "null item",
        "double dash",
        "twice",
        "bad yaml",
    ],
)
def test_allowlist_errors_are_pinned(text: str, message: str) -> None:
    with pytest.raises(BotError) as caught:
        parse_allowlist(text)
    assert str(caught.value) == message


def test_every_problem_of_an_allowlist_is_one_located_line() -> None:
    """A maintainer fixes the whole file in one pass: each problem on its own line, in file order."""
    with pytest.raises(BotError) as caught:
        parse_allowlist("runn: [a]\nrun: ['@b', 1234]\napprove: bob\n")
    assert str(caught.value).splitlines() == [
        f"{ALLOWLIST_PATH}: 4 problems, each on a line below",
        f"  {ALLOWLIST_PATH}:1:1 (runn): expected one of {KEYS}, found key 'runn' Hint: did you mean 'run'?",
        f"  {ALLOWLIST_PATH}:2:7 (run[0]): expected a GitHub login, found '@b' Hint: write 'b' without the '@'",
        f"  {ALLOWLIST_PATH}:2:13 (run[1]): expected a GitHub login, found '1234' Hint: quote it: '1234'",
        f"  {ALLOWLIST_PATH}:3:10 (approve): expected a list of GitHub logins, found 'bob' "
        "Hint: write approve: [login-one, login-two]",
    ]


def test_the_committed_allowlist_parses() -> None:
    path = ROOT / ALLOWLIST_PATH
    parse_allowlist(path.read_text(encoding="utf-8"), file=str(path))


@pytest.mark.parametrize(
    ("command", "permission"),
    [
        (SubCommand.RUN, Permission.RUN),
        (SubCommand.REUSE_PIPELINE, Permission.RUN),
        (SubCommand.KILL, Permission.KILL_SKIP),
        (SubCommand.SKIP, Permission.KILL_SKIP),
        (SubCommand.HELP, None),
    ],
)
def test_each_command_needs_its_permission(command: SubCommand, permission: Permission | None) -> None:
    assert permission_of(command) is permission


@pytest.mark.parametrize(
    ("command", "login", "association", "allowed", "via"),
    [
        (SubCommand.RUN, "amy", "OWNER", True, "author association OWNER"),
        (SubCommand.RUN, "amy", "member", True, "author association MEMBER"),
        (SubCommand.RUN, "carl", "COLLABORATOR", True, "author association COLLABORATOR"),
        (SubCommand.RUN, "Outside-Contributor", "CONTRIBUTOR", True, f"listed under 'run' in {ALLOWLIST_PATH}"),
        (SubCommand.RUN, "release-captain", "NONE", True, f"listed under 'kill_skip' in {ALLOWLIST_PATH}"),
        (
            SubCommand.RUN,
            "drive-by",
            "FIRST_TIME_CONTRIBUTOR",
            False,
            "author association FIRST_TIME_CONTRIBUTOR and not listed",
        ),
        (SubCommand.REUSE_PIPELINE, "drive-by", "NONE", False, "author association NONE and not listed"),
        (SubCommand.KILL, "amy", "MEMBER", True, "author association MEMBER"),
        (SubCommand.SKIP, "carl", "COLLABORATOR", False, "author association COLLABORATOR and not listed"),
        (SubCommand.SKIP, "outside-contributor", "CONTRIBUTOR", False, "author association CONTRIBUTOR and not listed"),
        (SubCommand.KILL, "release-captain", "CONTRIBUTOR", True, f"listed under 'kill_skip' in {ALLOWLIST_PATH}"),
        (SubCommand.HELP, "drive-by", "NONE", True, "needs no permission"),
    ],
)
def test_authorize(command: SubCommand, login: str, association: str, allowed: bool, via: str) -> None:
    result = authorize(ALLOWLIST, command=command, login=login, association=association)
    assert (result.allowed, result.via) == (allowed, via)
