"""The commit a run tests is the one the commenter saw, and `/bot reuse-pipeline` turns a head green only
for the code a build tested (the same git tree), unless the commenter may `/bot skip`."""

from __future__ import annotations

from datetime import datetime

import pytest

from ci_tool.bot.event import read_event
from tests.helpers.bot_handle import PR, REPOSITORY, Bot, MakeEvent
from tests.helpers.dispatch_cases import DEFAULT_STAGES, FULL, OLD_SHA, SHA, statuses
from tests.helpers.fake_github import FakeCommit, FakeGitHub
from tests.helpers.fake_jenkins import FakeJenkins, Script


@pytest.mark.parametrize(
    "command", ["/bot run --disable-fail-fast", '/bot skip --comment "docs only"', "/bot reuse-pipeline"]
)
def test_a_head_committed_after_the_comment_is_refused_with_why_and_what_to_do(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub, command: str
) -> None:
    github.commits[SHA] = FakeCommit("e" * 40, committed_at="2026-06-01T12:05:00Z")  # the comment: 12:00
    result = bot(event(command))
    assert (result.code, result.err) == (0, "")
    assert result.out.splitlines()[-1] == (
        f"refused: head {SHA[:12]} committed at 2026-06-01 12:05:00 UTC, after the comment at 2026-06-01 12:00:00 UTC"
    )
    assert github.bodies() == [
        f"@maintainer-amy, the head of this pull request, `{SHA[:12]}`, was committed at 2026-06-01 12:05:00 UTC, "
        f"after your `{command}` at 2026-06-01 12:00:00 UTC: nothing was done, so that it never applies to a "
        "commit you did not see.\n\n"
        f"Comment `{command}` again to apply it to `{SHA[:12]}`.\n"
    ]
    assert (jenkins.requests, github.statuses) == ([], [])


def test_a_comment_after_the_head_commit_runs_that_exact_head(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    github.commits[SHA] = FakeCommit("e" * 40, committed_at="2026-06-01T11:59:59Z")
    assert bot(event("/bot run")).code == 0
    (build,) = jenkins.triggered()
    assert build.parameters["HEAD_SHA"] == SHA


@pytest.mark.parametrize(
    ("action", "approved"),
    [("created", "2026-06-01T12:00:00+00:00"), ("edited", "2026-06-01T13:30:00+00:00")],
    ids=["a new comment: its creation", "an edit: the edit"],
)
def test_a_comment_approves_when_it_was_written_or_last_edited(action: str, approved: str) -> None:
    payload = {
        "action": action,
        "issue": {"number": PR, "pull_request": {}},
        "comment": {"id": 1, "body": "/bot run", "user": {"login": "amy"}, "created_at": "2026-06-01T12:00:00Z",
                    "updated_at": "2026-06-01T13:30:00Z"},
        "repository": {"full_name": REPOSITORY},
        "sender": {"login": "amy"},
    }  # fmt: skip
    assert read_event(payload).approved_at == datetime.fromisoformat(approved).timestamp()


def passing_build_of_the_old_head(jenkins: FakeJenkins, github: FakeGitHub) -> str:
    passed = jenkins.add_build(
        "L0_MergeRequest",
        {"REQUEST": '{"command": "run", "flags": {}}', "PR_NUMBER": "123", "HEAD_SHA": OLD_SHA},
        Script(selection={"stages": DEFAULT_STAGES}),
        building=False,
        result="SUCCESS",
    )
    github.statuses.append({"sha": OLD_SHA, "context": FULL, "state": "success",
                            "description": "4 passed, 0 failed, 0 skipped", "target_url": passed.url})  # fmt: skip
    return passed.url


RUN_LEVEL = {"login": "outside-contributor", "association": "CONTRIBUTOR"}  # listed under `run`
KILL_SKIP = {"login": "Release-Captain", "association": "NONE"}  # listed under `kill_skip`
CARRIED = (SHA[:7], FULL, "success", "reused build 1: 4 passed, 0 failed, 0 skipped")


@pytest.mark.parametrize(
    ("who", "same_tree", "carried"),
    [(RUN_LEVEL, True, True), (RUN_LEVEL, False, False), (KILL_SKIP, False, True)],
    ids=["run level, same code", "run level, other code", "kill_skip, other code"],
)
def test_reuse_pipeline_needs_the_same_code_or_the_skip_permission(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub, who: dict[str, str], same_tree: bool,
    carried: bool,
) -> None:  # fmt: skip
    url = passing_build_of_the_old_head(jenkins, github)
    github.commits[SHA] = FakeCommit("c" * 40)
    github.commits[OLD_SHA] = FakeCommit("c" * 40 if same_tree else "d" * 40)
    result = bot(event("/bot reuse-pipeline", **who))
    assert (result.code, result.err) == (0, "")
    if carried:
        assert statuses(github)[-1] == CARRIED
        assert github.bodies()[0].endswith(f"\n\nCarried `Jenkins Full Build` from build [#1]({url}).\n")
    else:
        assert statuses(github) == [(OLD_SHA[:7], FULL, "success", "4 passed, 0 failed, 0 skipped")]
        assert github.bodies()[0].endswith(
            f"\n\nBuild [#1]({url}) tested `{OLD_SHA[:12]}`, whose code (git tree) differs from the head "
            f"`{SHA[:12]}`'s: reusing it for other code needs the `kill_skip` permission, as `/bot skip` does. "
            "Comment `/bot run` to test this commit.\n"
        )


def test_a_head_back_dated_before_the_comment_but_pushed_after_it_is_refused(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    """The committer date says 11:00, before the comment at 12:00; GitHub created the head's first check suite,
    on the push, at 12:05: the head arrived after the comment."""
    github.commits[SHA] = FakeCommit("e" * 40, committed_at="2026-06-01T11:00:00Z",
                                     suites_created_at=["2026-06-01T12:07:00Z", "2026-06-01T12:05:00Z"])  # fmt: skip
    result = bot(event("/bot run"))
    assert result.out.splitlines()[-1] == (
        f"refused: head {SHA[:12]} pushed at 2026-06-01 12:05:00 UTC (when GitHub created its first check suite), "
        "after the comment at 2026-06-01 12:00:00 UTC"
    )
    assert github.bodies()[0].startswith(
        f"@maintainer-amy, the head of this pull request, `{SHA[:12]}`, was pushed at 2026-06-01 12:05:00 UTC (when "
        "GitHub created its first check suite), after your `/bot run` at 2026-06-01 12:00:00 UTC: nothing was done"
    )
    assert jenkins.requests == []


def test_a_head_pushed_before_the_comment_runs(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    github.commits[SHA] = FakeCommit("e" * 40, committed_at="2026-06-01T11:00:00Z",
                                     suites_created_at=["2026-06-01T11:58:00Z"])  # fmt: skip
    assert bot(event("/bot run")).code == 0
    assert len(jenkins.triggered()) == 1
