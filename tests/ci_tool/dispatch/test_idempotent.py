"""One comment, one build, one reply, whatever the timing: a trigger answer Jenkins gives late is found
before any retry, and handlers running at once (on separate machines or one) agree on one build."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.helpers.bot_handle import Bot, MakeEvent
from tests.helpers.bot_processes import HANDLERS, handle_in_a_process
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.fake_jenkins import FakeJenkins


def test_a_trigger_jenkins_answers_after_the_client_gave_up_is_found_not_triggered_again(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    jenkins.fail("POST", "buildWithParameters", status=504, after=True)  # the proxy gave up; Jenkins goes on
    jenkins.shown_after_looks = 3  # and shows the item only a few looks later
    result = bot(event("/bot run"), "--lost-answer-seconds", "600")
    assert result.code == 0, result.err
    assert (jenkins.count("POST", "buildWithParameters"), len(jenkins.triggered()), len(github.bodies())) == (1, 1, 1)
    assert f"triggered: build 1 {jenkins.url}job/L0_MergeRequest/1/" in result.out.splitlines()




@pytest.mark.parametrize("one_history", [False, True], ids=["separate histories", "one history"])
def test_handlers_running_at_once_start_one_build_and_post_one_reply(
    event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub, env: pytest.MonkeyPatch, tmp_path: Path,
    one_history: bool,
) -> None:  # fmt: skip
    github.claim_barrier = threading.Barrier(HANDLERS)  # all three ask for the comment at the same moment
    jenkins.fail("POST", "buildWithParameters", after=True, slow_seconds=2.0)  # a slow trigger answer
    jenkins.polls_to_start = 1  # quiet period 0: the item names its build at the first look
    comment = event("/bot run")
    handlers = [
        handle_in_a_process(comment, tmp_path / ("history.sqlite" if one_history else f"history-{k}.sqlite"))
        for k in range(HANDLERS)
    ]
    outputs = [handler.communicate(timeout=300) for handler in handlers]
    results = [(handler.returncode, out, err) for handler, (out, err) in zip(handlers, outputs, strict=True)]
    assert [code for code, _, _ in results] == [0] * HANDLERS, results
    assert (jenkins.count("POST", "buildWithParameters"), len(jenkins.triggered()), len(github.bodies())) == (1, 1, 1)
    build = jenkins.triggered()[0]
    winners = [out for _, out, _ in results if f"triggered: build 1 {build.url}" in out.splitlines()]
    followers = [out for _, out, _ in results if out.splitlines()[-1] == f"already triggered: build 1 {build.url}"]
    assert (len(winners), len(followers)) == (1, HANDLERS - 1), results
    assert [err for _, _, err in results] == [""] * HANDLERS


def test_a_comment_handled_again_while_its_item_becomes_a_build_follows_the_item_of_the_ledger(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    jenkins.polls_to_start = 99
    comment = event("/bot run")
    assert bot(comment, "--queue-timeout-seconds", "0").code == 1  # the ledger: queue item 40
    item = jenkins.queue[40]
    item.build = jenkins.add_build("L0_MergeRequest", item.parameters)  # it left the queue ...
    jenkins.unlisted.add(item.build.number)  # ... and Jenkins does not list its build yet
    again = bot(comment)
    assert (again.code, again.err) == (0, "")
    assert again.out.splitlines()[1:] == [
        "already triggered by comment 987654321: following queue item 40",
        f"already triggered: build 1 {item.build.url}",
    ]
    assert (jenkins.count("POST", "buildWithParameters"), len(github.bodies())) == (1, 1)
