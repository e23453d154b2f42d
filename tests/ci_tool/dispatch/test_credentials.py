"""`user:token@` in the Jenkins URL: the trigger works with them as credentials, and the token appears in no
reply, status, ledger row, output or error."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ci_tool.dispatch.urls import shown, split_userinfo
from tests.helpers.bot_handle import Bot, MakeEvent
from tests.helpers.dispatch_cases import PASSING
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.fake_jenkins import FakeJenkins, Script


def with_userinfo(jenkins: FakeJenkins) -> str:
    return jenkins.url.replace("http://", f"http://{jenkins.user}:{jenkins.token}@")


def everything_shown(result_out: str, result_err: str, github: FakeGitHub, history: Path) -> str:
    with sqlite3.connect(history) as db:
        ledger = repr(db.execute("SELECT * FROM dispatches").fetchall())
    return "\n".join([result_out, result_err, *github.bodies(), *map(repr, github.statuses), ledger])


@pytest.mark.parametrize("from_environment", [False, True], ids=["credentials only in the URL", "also in the env"])
def test_a_token_in_the_jenkins_url_is_used_and_never_shown(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub, env: pytest.MonkeyPatch, tmp_path: Path,
    from_environment: bool,
) -> None:  # fmt: skip
    env.setenv("CI_TOOL_JENKINS_URL", with_userinfo(jenkins))
    if not from_environment:
        env.delenv("JENKINS_USER")
        env.delenv("JENKINS_API_TOKEN")
    jenkins.script = Script(downstream=(("SUCCESS", PASSING),))
    result = bot(event("/bot run"), "--wait")
    assert result.code == 0, result.err
    assert len(jenkins.triggered()) == 1
    assert github.statuses[-1]["target_url"] == jenkins.triggered()[0].url
    assert jenkins.token not in everything_shown(result.out, result.err, github, tmp_path / "history.sqlite")


def test_a_token_in_the_jenkins_url_is_not_in_an_error(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub, env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env.setenv("CI_TOOL_JENKINS_URL", with_userinfo(jenkins))
    jenkins.fail("GET", "/queue/api/json", status=503, times=99)
    result = bot(event("/bot run"))
    assert result.code == 1
    assert f"expected Jenkins to answer at {jenkins.url}, found HTTP 503" in result.err
    assert jenkins.token not in everything_shown(result.out, result.err, github, tmp_path / "history.sqlite")


@pytest.mark.parametrize(
    ("url", "without", "user", "password"),
    [
        ("https://bot:t0k%40n@jenkins.example.com/ci/", "https://jenkins.example.com/ci/", "bot", "t0k@n"),
        ("https://bot@jenkins.example.com:8443/", "https://jenkins.example.com:8443/", "bot", None),
        ("https://jenkins.example.com/", "https://jenkins.example.com/", None, None),
        ("http://a:b@c@host/", "http://host/", "a", "b@c"),
    ],
    ids=["user and token", "user only", "none", "an @ in the token"],
)
def test_userinfo_is_split_off_the_url(url: str, without: str, user: str | None, password: str | None) -> None:
    split = split_userinfo(url)
    assert (split.url, split.user, split.password, shown(url)) == (without, user, password, without)
