"""Faults of Jenkins and GitHub: bounded retries where a retry is safe, one located line otherwise, exit 1,
never a traceback, never a credential's value, never a second build."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ci_tool.dispatch.faults import RetryPolicy
from ci_tool.dispatch.github import GitHubClient
from ci_tool.dispatch.jenkins import JenkinsClient, TriggerLost
from ci_tool.errors import DispatchError
from tests.helpers.bot_handle import Bot, MakeEvent
from tests.helpers.dispatch_cases import closed_port_url
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.fake_jenkins import FakeJenkins

NO_WAIT = RetryPolicy(attempts=3, first_delay_seconds=0.0)




def client(jenkins: FakeJenkins, **options: object) -> JenkinsClient:
    settings: dict[str, object] = {"user": jenkins.user, "token": jenkins.token, "retry": NO_WAIT, **options}
    return JenkinsClient(jenkins.url, **settings)  # type: ignore[arg-type]


def test_connection_refused_is_retried_then_one_line(bot: Bot, event: MakeEvent, env: pytest.MonkeyPatch) -> None:
    url = closed_port_url()
    env.setenv("CI_TOOL_JENKINS_URL", url)
    result = bot(event("/bot run"))
    assert (result.code, result.err) == (
        1,
        f"error: read the queue: expected Jenkins to answer at {url}, found connection refused (4 attempts) "
        "Hint: check CI_TOOL_JENKINS_URL (or --jenkins-url) and that Jenkins is up, then comment again\n",
    )


@pytest.mark.parametrize(
    ("token", "hint"),
    [
        ("wrong-token", "JENKINS_API_TOKEN is not a current API token of JENKINS_USER: create a new one in Jenkins"),
        (None, "set JENKINS_USER and JENKINS_API_TOKEN (an API token of a Jenkins user who may build the job)"),
    ],
    ids=["bad token", "no credentials"],
)
def test_a_bad_token_names_the_variables_never_the_value(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, env: pytest.MonkeyPatch, token: str | None, hint: str
) -> None:
    if token is None:
        env.delenv("JENKINS_USER")
        env.delenv("JENKINS_API_TOKEN")
    else:
        env.setenv("JENKINS_API_TOKEN", token)
    result = bot(event("/bot run"))
    assert (result.code, result.err) == (
        1,
        "error: read the queue: expected Jenkins to accept the credentials in JENKINS_USER and JENKINS_API_TOKEN, "
        f"found HTTP 401 Unauthorized Hint: {hint}\n",
    )
    assert "wrong-token" not in result.out + result.err
    assert jenkins.triggered() == []


def test_forbidden_names_the_permissions(jenkins: FakeJenkins) -> None:
    jenkins.fail("GET", "/queue/api/json", status=403, body="<html>Access denied</html>")
    with pytest.raises(DispatchError) as raised:
        client(jenkins).queued("L0_MergeRequest")
    assert str(raised.value) == (
        "read the queue: expected Jenkins to accept the credentials in JENKINS_USER and JENKINS_API_TOKEN, found "
        "HTTP 403 Forbidden Hint: give the user in JENKINS_USER the Job/Build, Job/Cancel and Job/Read permissions"
    )


def test_an_expired_crumb_is_fetched_again_and_the_trigger_goes_through(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins
) -> None:
    jenkins.fail("POST", "buildWithParameters", status=403, body="No valid crumb was included in the request")
    result = bot(event("/bot run"))
    assert result.code == 0, result.err
    assert (jenkins.count("GET", "crumbIssuer"), len(jenkins.triggered())) == (2, 1)


def test_a_crumb_that_expires_between_requests(jenkins: FakeJenkins) -> None:
    jenkins_client = client(jenkins)
    jenkins_client.queued("L0_MergeRequest")
    jenkins_client.trigger("L0_MergeRequest", {"PR_NUMBER": "1"})
    jenkins.expire_crumb()
    assert jenkins_client.trigger("L0_MergeRequest", {"PR_NUMBER": "2"}) == 41
    assert jenkins.count("GET", "crumbIssuer") == 2


@pytest.mark.parametrize("status", [500, 502, 503, 429])
def test_a_read_is_retried_through_server_errors(jenkins: FakeJenkins, status: int) -> None:
    jenkins.fail("GET", "/queue/api/json", status=status, times=2)
    assert client(jenkins).queued("L0_MergeRequest") == []
    assert jenkins.count("GET", "/queue/api/json") == 3


def test_a_read_that_keeps_failing_is_one_line(jenkins: FakeJenkins) -> None:
    jenkins.fail("GET", "/queue/api/json", status=503, times=9)
    with pytest.raises(DispatchError) as raised:
        client(jenkins).queued("L0_MergeRequest")
    assert str(raised.value) == (
        f"read the queue: expected Jenkins to answer at {jenkins.url}, found HTTP 503 Service Unavailable "
        "(3 attempts) Hint: check CI_TOOL_JENKINS_URL (or --jenkins-url) and that Jenkins is up, then comment again"
    )


def test_a_bad_request_is_not_retried(jenkins: FakeJenkins) -> None:
    jenkins.fail("POST", "/stop", status=400, body="bad")
    with pytest.raises(DispatchError) as raised:
        client(jenkins).stop("L0_MergeRequest", 3)
    assert str(raised.value) == (
        "stop build 3 of L0_MergeRequest: expected Jenkins to accept the request, found HTTP 400 Bad Request"
    )
    assert jenkins.count("POST", "/stop") == 1


def test_a_read_timeout_is_retried(jenkins: FakeJenkins) -> None:
    jenkins.fail("GET", "/queue/api/json", hang=True)
    assert client(jenkins, timeout_seconds=1.0).queued("L0_MergeRequest") == []


def test_a_read_that_never_answers_is_one_line(jenkins: FakeJenkins) -> None:
    jenkins.fail("GET", "/queue/api/json", hang=True, times=2)
    slow = client(jenkins, timeout_seconds=1.0, retry=RetryPolicy(attempts=2, first_delay_seconds=0.0))
    with pytest.raises(DispatchError) as raised:
        slow.queued("L0_MergeRequest")
    assert str(raised.value).startswith(
        f"read the queue: expected Jenkins to answer at {jenkins.url}, found no answer within 1 s (2 attempts)"
    )


def test_a_trigger_timeout_is_a_lost_answer_never_a_blind_retry(jenkins: FakeJenkins) -> None:
    jenkins.fail("POST", "buildWithParameters", hang=True)
    with pytest.raises(TriggerLost) as raised:
        client(jenkins, timeout_seconds=1.0, trigger_timeout_seconds=1.0).trigger("L0_MergeRequest", {"PR_NUMBER": "1"})
    assert str(raised.value) == "trigger L0_MergeRequest: expected Jenkins to answer, found no answer within 1 s"
    assert jenkins.count("POST", "buildWithParameters") == 1


def test_a_forgotten_queue_item_is_none(jenkins: FakeJenkins) -> None:
    assert client(jenkins).queue_item(99) is None


def test_a_queue_item_behind_a_failing_proxy_is_retried_not_taken_as_forgotten(jenkins: FakeJenkins) -> None:
    queue_id = client(jenkins).trigger("L0_MergeRequest", {"PR_NUMBER": "1"})
    jenkins.fail("GET", "/queue/item/", status=502)  # python-jenkins says "does not exist" for this one
    item = client(jenkins).queue_item(queue_id)
    assert item is not None and item.build_number == 1


Failing = Callable[[FakeGitHub], None]


def test_github_bad_token_names_the_variable(bot: Bot, event: MakeEvent, env: pytest.MonkeyPatch) -> None:
    env.setenv("GITHUB_TOKEN", "ghp_wrong")
    result = bot(event("/bot run"))
    assert (result.code, result.err) == (
        1,
        "error: read pull request #123 of example/ci-tool: expected GitHub to accept GITHUB_TOKEN, found HTTP 401 "
        "(Bad credentials) Hint: GITHUB_TOKEN is not a valid token: pass a current one\n",
    )
    assert "ghp_wrong" not in result.err


def test_github_reads_are_retried_through_server_errors(github: FakeGitHub) -> None:
    github.fail("GET", r"/pulls/123$", status=502, times=2)
    api = GitHubClient(github.api_url, token=github.token, retry=NO_WAIT)
    assert api.pull_request("example/ci-tool", 123).head_sha.startswith("a1b2c3")


def test_github_refused_connection_is_one_line(bot: Bot, event: MakeEvent, env: pytest.MonkeyPatch) -> None:
    url = closed_port_url().rstrip("/")
    env.setenv("GITHUB_API_URL", url)
    result = bot(event("/bot run"))
    assert (result.code, result.err) == (
        1,
        f"error: read pull request #123 of example/ci-tool: expected GitHub to answer at {url}, found connection "
        "refused (4 attempts) Hint: check GITHUB_API_URL (or --github-api-url) and GitHub's status, then comment "
        "again\n",
    )


def test_a_new_comment_is_never_posted_twice(github: FakeGitHub) -> None:
    github.fail("POST", "/comments", drop=True, after=True)
    api = GitHubClient(github.api_url, token=github.token, retry=NO_WAIT)
    with pytest.raises(DispatchError) as raised:
        api.comment("example/ci-tool", 123, "hello")
    assert str(raised.value) == (
        "comment on #123 of example/ci-tool: expected GitHub to answer, found the connection dropped before an answer"
    )
    assert github.bodies() == ["hello"]


def test_a_server_error_on_the_trigger_is_retried_quickly_then_said(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    """A 500 says Jenkins did not take the trigger: one look for the build after each (never the long look for
    a lost answer, which kept the pull request 'running' for 4 x 120 s), then the error on the pull request."""
    jenkins.fail("POST", "buildWithParameters", status=500, times=99)
    result = bot(event("/bot run"), "--lost-answer-seconds", "3", "--poll-seconds", "1")
    assert result.code == 1
    looks = 1 + 1 + 4 + 1  # resume, the stop of older runs, one after each 500, the check before saying so
    assert (jenkins.count("POST", "buildWithParameters"), jenkins.count("GET", "/queue/api/json")) == (4, looks)
    assert "**Could not start the build**: `trigger L0_MergeRequest: expected an answer naming the queue item" in (
        github.bodies()[0]
    )


def test_a_trigger_jenkins_refuses_is_an_error_at_once(jenkins: FakeJenkins) -> None:
    jenkins.fail("POST", "buildWithParameters", status=400, body="bad parameter")
    with pytest.raises(DispatchError) as raised:
        client(jenkins).trigger("L0_MergeRequest", {"PR_NUMBER": "1"})
    assert not isinstance(raised.value, TriggerLost)
    assert str(raised.value) == (
        "trigger L0_MergeRequest: expected Jenkins to accept the request, found HTTP 400 Bad Request"
    )
    assert jenkins.count("POST", "buildWithParameters") == 1
