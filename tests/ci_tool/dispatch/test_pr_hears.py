"""What the pull request hears when the build cannot be started: the one reply says why (edited, never a
second one), the status is an error, and handling the comment again can still trigger."""

from __future__ import annotations

import pytest

from tests.helpers.bot_handle import PR, REPOSITORY, Bot, MakeEvent
from tests.helpers.dispatch_cases import FULL, SHA, closed_port_url, statuses
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.fake_jenkins import FakeJenkins

PLAN_START = "@maintainer-amy, running `/bot run`.\n"
AGAIN = "Nothing is running for this comment: comment `/bot run` again once Jenkins answers.\n"


@pytest.mark.parametrize(
    ("breaks", "error"),
    [
        ("down", "read the queue: expected Jenkins to answer at {url}, found connection refused (4 attempts) Hint: "
                 "check CI_TOOL_JENKINS_URL (or --jenkins-url) and that Jenkins is up, then comment again"),
        ("401", "read the queue: expected Jenkins to accept the credentials in JENKINS_USER and JENKINS_API_TOKEN, "
                "found HTTP 401 Unauthorized Hint: JENKINS_API_TOKEN is not a current API token of JENKINS_USER: "
                "create a new one in Jenkins"),
        ("500", "read the queue: expected Jenkins to answer at {url}, found HTTP 500 Internal Server Error "
                "(4 attempts) Hint: check CI_TOOL_JENKINS_URL (or --jenkins-url) and that Jenkins is up, then comment "
                "again"),
    ],
    ids=["down", "401", "500"],
)  # fmt: skip
def test_jenkins_that_cannot_start_the_build_is_said_on_the_pull_request(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub, env: pytest.MonkeyPatch, breaks: str,
    error: str,
) -> None:  # fmt: skip
    url = jenkins.url
    if breaks == "down":
        url = closed_port_url()
        env.setenv("CI_TOOL_JENKINS_URL", url)
    elif breaks == "401":
        env.setenv("JENKINS_API_TOKEN", "expired")
    else:
        jenkins.fail("GET", "/queue/api/json", status=500, times=99)
    message = error.format(url=url)
    result = bot(event("/bot run"))
    assert (result.code, result.err) == (1, f"error: {message}\n")
    (reply,) = github.bodies()
    assert reply.startswith(PLAN_START)
    assert reply.endswith(f"\n\n**Could not start the build**: `{message}`\n\n{AGAIN}")
    assert statuses(github) == [(SHA[:7], FULL, "error", f"could not start the build: {message}"[:139] + "…")]
    assert github.reactions == {}  # nothing started: handling the comment again may trigger


def test_a_trigger_that_fails_edits_the_running_reply_instead_of_adding_one(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    jenkins.fail("POST", "buildWithParameters", status=502, times=99)
    comment = event("/bot run")
    assert bot(comment).code == 1
    (reply,) = github.bodies()
    assert reply.startswith(PLAN_START)
    assert "**Could not start the build**: `trigger L0_MergeRequest: expected an answer naming the queue item" in reply
    assert github.count("PATCH", "/issues/comments/") == 1
    jenkins.faults.clear()
    again = bot(comment)  # Jenkins is back: the same comment triggers now
    assert again.code == 0, again.err
    assert len(jenkins.triggered()) == 1


def test_handling_a_failed_comment_again_edits_its_one_reply(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    jenkins.fail("POST", "buildWithParameters", status=502, times=4)
    comment = event("/bot run")
    assert bot(comment).code == 1
    assert bot(comment).code == 0  # Jenkins is back
    (reply,) = github.bodies()
    assert reply.startswith(PLAN_START)
    assert f"\n\ntriggered: build [L0_MergeRequest #1]({jenkins.triggered()[0].url})\n" in reply
    assert "Could not start" not in reply
    assert "<!-- ci-tool: the reply to comment 987654321 -->\n" in reply


def test_handling_a_failed_comment_again_finds_its_reply_on_the_third_page_of_comments(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    others = [github.add_comment(REPOSITORY, PR, f"a review remark {k}") for k in range(70)]
    jenkins.fail("POST", "buildWithParameters", status=502, times=4)
    comment = event("/bot run")
    assert bot(comment).code == 1  # the reply is the 71st comment: GitHub lists it on page 3 of 30 a page
    assert bot(comment).code == 0  # Jenkins is back: the reply found again is edited, not posted twice
    *kept, reply = github.bodies()
    assert kept == [str(other["body"]) for other in others]
    assert reply.startswith(PLAN_START)
    assert f"\n\ntriggered: build [L0_MergeRequest #1]({jenkins.triggered()[0].url})\n" in reply
    pages = [r.query.get("page", "1") for r in github.requests if r.method == "GET" and r.path.endswith("/comments")]
    assert pages[-3:] == ["1", "2", "3"]


def test_jenkins_down_when_a_started_comment_is_handled_again_leaves_its_reply_and_status(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    comment = event("/bot run")
    assert bot(comment).code == 0
    before = (github.bodies(), statuses(github))
    jenkins.fail("GET", "/", status=503, times=999)  # every read
    again = bot(comment)
    assert again.code == 1
    assert again.err.startswith("error: read build 1 of L0_MergeRequest: expected Jenkins to answer at ")
    assert (github.bodies(), statuses(github)) == before


@pytest.mark.parametrize("command", ["/bot kill", "/bot reuse-pipeline"])
def test_a_kill_or_reuse_jenkins_does_not_let_finish_is_said_on_the_pull_request(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub, command: str
) -> None:
    jenkins.fail("GET", "/queue/api/json", status=503, times=99)
    result = bot(event(command))
    message = (
        f"read the queue: expected Jenkins to answer at {jenkins.url}, found HTTP 503 Service Unavailable (4 attempts) "
        "Hint: check CI_TOOL_JENKINS_URL (or --jenkins-url) and that Jenkins is up, then comment again"
    )
    assert (result.code, result.err) == (1, f"error: {message}\n")
    (reply,) = github.bodies()
    assert reply == (
        f"@maintainer-amy, running `{command}`.\n\n**Could not finish `{command}`**: `{message}`\n\n"
        f"Comment `{command}` again once Jenkins answers.\n"
    )
