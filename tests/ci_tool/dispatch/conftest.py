"""Fixtures for the dispatch tests: loopback Jenkins and GitHub (fake_jenkins.py, fake_github.py), an environment
holding only what these tests give ci-tool, comment events, and `bot(...)`, which runs `ci-tool bot handle` through
the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_tool.cli import main
from tests.helpers.bot_handle import ALLOWLIST, CATALOG, COMMENTED, PR, REPOSITORY, VARIABLES, Bot, MakeEvent, Result
from tests.helpers.fake_github import FakeGitHub, FakePull
from tests.helpers.fake_jenkins import FakeJenkins


@pytest.fixture
def jenkins() -> Iterator[FakeJenkins]:
    fake = FakeJenkins()
    try:
        yield fake
    finally:
        fake.close()


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub()
    fake.add_pull(REPOSITORY, FakePull(PR))
    try:
        yield fake
    finally:
        fake.close()


@pytest.fixture
def env(
    monkeypatch: pytest.MonkeyPatch, jenkins: FakeJenkins, github: FakeGitHub, tmp_path: Path
) -> pytest.MonkeyPatch:
    """The bot's environment as the workflow sets it, pointing at the fakes."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("CI_TOOL_JENKINS_URL", jenkins.url)
    monkeypatch.setenv("JENKINS_USER", jenkins.user)
    monkeypatch.setenv("JENKINS_API_TOKEN", jenkins.token)
    monkeypatch.setenv("GITHUB_API_URL", github.api_url)
    monkeypatch.setenv("GITHUB_TOKEN", github.token)
    monkeypatch.setenv("CI_TOOL_HISTORY", str(tmp_path / "history.sqlite"))
    return monkeypatch


@pytest.fixture
def event(tmp_path: Path) -> MakeEvent:
    """`event(body, login=..., comment_id=...)`: an issue_comment payload file for PR #123."""
    made = iter(range(1, 1000))

    def make(
        body: str,
        *,
        login: str = "maintainer-amy",
        association: str = "MEMBER",
        comment_id: int = 987654321,
        created_at: str = COMMENTED,
    ) -> Path:
        payload = {
            "action": "created",
            "issue": {"number": PR, "state": "open", "labels": [], "pull_request": {"url": "x"}},
            "comment": {"id": comment_id, "body": body, "user": {"login": login, "type": "User"},
                        "author_association": association, "created_at": created_at, "updated_at": created_at},
            "repository": {"full_name": REPOSITORY},
            "sender": {"login": login, "type": "User"},
        }  # fmt: skip
        path = tmp_path / f"event-{next(made)}.json"
        path.write_text(json.dumps(payload), encoding="utf-8")
        return path

    return make


@pytest.fixture
def bot(capsys: pytest.CaptureFixture[str], env: pytest.MonkeyPatch) -> Bot:
    """`bot(event_path, *options)`: `ci-tool bot handle` against the fakes, polling and retrying at once."""

    def run(event_path: Path, *options: str) -> Result:
        argv = ["bot", "handle", "--event", str(event_path), "--allowlist", ALLOWLIST, *CATALOG,
                "--poll-seconds", "0", "--retry-seconds", "0", "--lost-answer-seconds", "0", *options]  # fmt: skip
        code = main(argv)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def actions_only(env: pytest.MonkeyPatch, jenkins: FakeJenkins) -> FakeJenkins:
    """The project's engine is GitHub Actions: no Jenkins URL, no Jenkins credentials (the fake is only watched)."""
    for name in ("CI_TOOL_JENKINS_URL", "JENKINS_USER", "JENKINS_API_TOKEN"):
        env.delenv(name)
    env.setenv("CI_TOOL_BOT_ENGINES", "github")
    return jenkins
