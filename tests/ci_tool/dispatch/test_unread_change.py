"""A change GitHub cannot give (a file list cut short, a 404, a GitHub that keeps failing) never leaves the
pull request silent: a request that selects by the change is refused with a reply and an error status that
say what failed; any other request (`--disable-cbts`, `--stage-list`) goes on without the change, and the
reply says so."""

from __future__ import annotations

import pytest

from tests.helpers.bot_handle import PR, REPOSITORY, Bot, MakeEvent
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.fake_jenkins import FakeJenkins

SHA = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
CUT_SHORT = (
    f"read the change of pull request #{PR} of {REPOSITORY}: expected GitHub to list its 3001 changed files, found "
    "1 (GitHub lists at most 3000) Hint: comment `/bot run --disable-cbts` to run the full set"
)


def cut_short(github: FakeGitHub) -> None:
    pull = github.pulls[(REPOSITORY, PR)]
    pull.files, pull.changed_files = ["docs/guide.md"], 3001


def failing_files(github: FakeGitHub) -> None:
    github.fail("GET", r"/pulls/\d+/files", status=502, times=99)


def test_a_bare_run_whose_change_github_cannot_give_is_refused_with_a_reply_and_a_status(
    bot: Bot, event: MakeEvent, github: FakeGitHub, jenkins: FakeJenkins
) -> None:
    cut_short(github)
    result = bot(event("/bot run"))
    assert result.code == 1
    assert result.out.splitlines()[0] == "decision: refuse: could not read the pull request's change"
    assert result.err == f"error: {CUT_SHORT}\n"
    assert github.bodies() == [
        "@maintainer-amy, `/bot run` was not carried out: the bot could not read this pull request's change from "
        f"GitHub, and it selects stages by the change.\n\n```text\n{CUT_SHORT}\n```\n\nComment "
        "`/bot run --disable-cbts` to run the full set without the change (CI reads it from git), or `/bot run` again "
        "once GitHub gives it.\n"
    ]
    status = github.status_of(SHA, "Jenkins Full Build")
    assert status is not None and (status["state"], status["description"]) == (
        "error",
        f"could not start the build: read the change of pull request #{PR} of {REPOSITORY}: expected GitHub to list "
        "its 3001 changed files, found 1…",
    )
    assert jenkins.triggered() == []


def test_a_github_that_keeps_failing_is_said_on_the_pull_request(
    bot: Bot, event: MakeEvent, github: FakeGitHub, jenkins: FakeJenkins
) -> None:
    failing_files(github)
    result = bot(event("/bot run"))
    assert result.code == 1
    (reply,) = github.bodies()
    assert "found HTTP 502 (4 attempts)" in reply
    assert jenkins.triggered() == []


@pytest.mark.parametrize("fault", [cut_short, failing_files], ids=["cut short", "GitHub failing"])
def test_the_hint_works_disable_cbts_runs_the_full_set_without_the_change(
    fault: object, bot: Bot, event: MakeEvent, github: FakeGitHub, jenkins: FakeJenkins
) -> None:
    fault(github)  # type: ignore[operator]
    result = bot(event("/bot run --disable-cbts"))
    assert result.code == 0, result.err
    (build,) = jenkins.triggered()
    assert build.parameters["REQUEST"] == '{"command": "run", "flags": {"disable_cbts": true}}'
    (reply,) = github.bodies()
    assert f"The bot could not read this pull request's change from GitHub (`read the change of pull request #{PR}" in (
        reply
    )
    assert "the preview below is made without it, so it shows no stage that a changed path adds" in reply
    assert "**Preview** without the pull request's change (none was read):" in reply
    assert "triggered: build [L0_MergeRequest #1]" in reply


def test_a_stage_list_goes_on_without_the_change(
    bot: Bot, event: MakeEvent, github: FakeGitHub, jenkins: FakeJenkins
) -> None:
    cut_short(github)
    result = bot(event('/bot run --stage-list "A10-PyTorch-1"'))
    assert result.code == 0, result.err
    assert len(jenkins.triggered()) == 1
    assert "| `A10-PyTorch-1` |" in github.bodies()[0]


def test_kill_and_skip_never_read_the_change(bot: Bot, event: MakeEvent, github: FakeGitHub) -> None:
    failing_files(github)
    assert bot(event("/bot kill", comment_id=1)).code == 0
    assert bot(event('/bot skip --comment "docs only"', comment_id=2)).code == 0
    assert github.count("GET", r"/pulls/\d+/files") == 0
    assert len(github.bodies()) == 2


def test_a_field_of_the_wrong_type_is_said_on_the_pull_request(
    bot: Bot, event: MakeEvent, github: FakeGitHub, jenkins: FakeJenkins
) -> None:
    github.pulls[(REPOSITORY, PR)].files = [{"filename": 5, "status": "modified"}]  # type: ignore[list-item]
    result = bot(event("/bot run"))
    assert result.code == 1
    assert "unexpected" not in result.err
    (reply,) = github.bodies()
    assert (
        f"read the change of pull request #{PR} of {REPOSITORY}: expected a string at [0].filename in the answer of "
        f"{github.api_url}/repos/{REPOSITORY}/pulls/{PR}/files, found 5"
    ) in reply
    assert jenkins.triggered() == []


def test_a_path_git_never_writes_gets_no_narrowed_preview_but_a_reply_saying_why(
    bot: Bot, event: MakeEvent, github: FakeGitHub, jenkins: FakeJenkins
) -> None:
    github.pulls[(REPOSITORY, PR)].files = ["docs/../src/kvengine/pool.py"]  # read as written: a docs change
    result = bot(event("/bot run"))
    assert result.code == 1
    (reply,) = github.bodies()
    assert "was not carried out" in reply
    assert "found 'docs/../src/kvengine/pool.py'" in reply
    assert jenkins.triggered() == []


def test_reuse_pipeline_compares_selections_by_the_change_so_it_is_refused_without_it(
    bot: Bot, event: MakeEvent, github: FakeGitHub, jenkins: FakeJenkins
) -> None:
    cut_short(github)
    result = bot(event("/bot reuse-pipeline"))
    assert result.code == 1
    (reply,) = github.bodies()
    assert reply.startswith("@maintainer-amy, `/bot reuse-pipeline` was not carried out: the bot could not read")
    assert (jenkins.requests, github.statuses) == ([], [])
