"""A GitHub rate limit is waited out when it lifts soon (Retry-After, X-RateLimit-Reset), and is otherwise
one line saying when it lifts."""

from __future__ import annotations

import json

import pytest

from ci_tool.dispatch.faults import RetryPolicy
from ci_tool.dispatch.github import GitHubClient
from ci_tool.errors import DispatchError
from tests.helpers.fake_github import FakeGitHub

NOW = 1_780_000_000.0  # 2026-05-28 20:26:40 UTC
LIMITED = json.dumps({"message": "API rate limit exceeded for installation ID 1."})


def api(github: FakeGitHub, slept: list[float]) -> GitHubClient:
    client = GitHubClient(github.api_url, token=github.token, retry=RetryPolicy(4, 0.0, sleep=slept.append))
    client.wall = lambda: NOW
    return client


@pytest.mark.parametrize(
    ("status", "headers", "waited"),
    [
        (429, {"Retry-After": "7"}, 7.0),
        (403, {"Retry-After": "3"}, 3.0),
        (403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + 42)}, 42.0),
        (429, {}, 0.0),
    ],
    ids=["429 Retry-After", "403 secondary limit", "403 primary limit resets soon", "429 without a time"],
)
def test_a_rate_limit_that_lifts_soon_is_waited_out(
    github: FakeGitHub, status: int, headers: dict[str, str], waited: float
) -> None:
    github.fail(
        "GET", r"/pulls/123$", status=status, body=LIMITED, headers={**headers, "Content-Type": "application/json"}
    )
    slept: list[float] = []
    assert api(github, slept).pull_request("example/ci-tool", 123).number == 123
    assert slept == [waited]


def test_a_rate_limit_that_lifts_late_says_when(github: FakeGitHub) -> None:
    reset = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + 3600)}
    github.fail("GET", r"/pulls/123$", status=403, body=LIMITED, headers={**reset, "Content-Type": "application/json"})
    slept: list[float] = []
    with pytest.raises(DispatchError) as raised:
        api(github, slept).pull_request("example/ci-tool", 123)
    assert str(raised.value) == (
        "read pull request #123 of example/ci-tool: expected GitHub to answer, found HTTP 403 (API rate limit "
        "exceeded for installation ID 1.): rate limited until 2026-05-28 21:26:40 UTC Hint: comment again after "
        "2026-05-28 21:26:40 UTC"
    )
    assert slept == []


def test_a_new_comment_refused_by_a_rate_limit_is_posted_once_after_the_wait(github: FakeGitHub) -> None:
    github.fail("POST", r"/issues/123/comments", status=429, body=LIMITED, headers={"Retry-After": "1"})
    slept: list[float] = []
    api(github, slept).comment("example/ci-tool", 123, "hello")
    assert (github.bodies(), slept) == (["hello"], [1.0])
