"""`ci-tool bot handle` on a project whose engine is GitHub Actions only (CI_TOOL_BOT_ENGINES=github, no
Jenkins): a /bot run dispatches the generated l0-test.yml, once per comment, and is followed to one final CI
report and status read from the run's artifacts; kill cancels; skip and reuse-pipeline act on its contexts."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from ci_tool.dispatch.run_name import parse_run_name, request_digest
from ci_tool.outcomes import TestOutcome
from tests.helpers.actions_cases import CUSTOM, FULL, RUN_REQUEST
from tests.helpers.bot_handle import PR, REPOSITORY, Bot, MakeEvent
from tests.helpers.bot_processes import HANDLERS, handle_in_a_process
from tests.helpers.dispatch_cases import DEFAULT_STAGES, SHA, statuses
from tests.helpers.fake_actions import Script, ScriptedBackend, junit_zip, selection_zip
from tests.helpers.fake_github import FakeCommit, FakeGitHub
from tests.helpers.fake_jenkins import FakeJenkins

FIRST_RUN = 7_000_000_001


def artifacts(stages: list[str], *, failing: str = "", request: dict[str, object] | None = None) -> dict[str, bytes]:
    found = {"ci-tool-selection": selection_zip(stages, request or RUN_REQUEST, head=SHA)}
    for stage in stages:
        outcome = TestOutcome.FAILED if stage == failing else TestOutcome.PASSED
        found[f"results-{stage}"] = junit_zip(stage, [(f"tests/kv/test_pool.py::TestPool::test_{stage[:3].lower()}",
                                                       outcome)])  # fmt: skip
    return found


def test_a_run_dispatches_the_workflow_on_the_default_branch_for_the_head_with_the_previewed_inputs(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins
) -> None:
    github.pulls[(REPOSITORY, PR)].labels = ["documentation"]
    result = bot(event("/bot run --disable-fail-fast"))
    assert (result.code, result.err) == (0, "")
    (run,) = github.actions.dispatched()
    url = f"{github.url}{REPOSITORY}/actions/runs/{run.id}"
    request_json = '{"command": "run", "flags": {"disable_fail_fast": true}}'
    assert (run.ref, run.workflow) == ("main", "l0-test.yml")  # the default branch's (trusted) workflow file
    assert run.inputs == {
        "request": request_json,
        "labels": '["documentation"]',
        "base_ref": "main",
        "head_sha": SHA,
        "pr_number": "123",
        "comment_id": "987654321",
        "request_digest": request_digest(request_json),
    }
    assert result.out == (
        "decision: dispatch: /bot run by 'maintainer-amy' (author association MEMBER)\n"
        f"dispatched: run {run.id} {url}\n"
        f"status 'L0 Test Full Run' on {SHA[:12]}: pending: run {run.id} started\n"
    )
    (reply,) = github.bodies()
    assert reply.startswith("@maintainer-amy, running `/bot run`.\n")
    assert f"\n\ndispatched: [L0 Test run {run.id}]({url}) on GitHub Actions\n\n" in reply
    assert "| `A10-PyTorch-2` |" in reply  # the preview the run's inputs carry
    assert statuses(github) == [(SHA[:7], FULL, "pending", f"run {run.id} started")]
    assert github.statuses[0]["target_url"] == url
    assert actions_only.requests == []  # Jenkins is never asked


def test_a_github_actions_only_run_with_wait_ends_with_one_final_report_and_status(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins
) -> None:
    github.actions.backend = ScriptedBackend(Script(artifacts=artifacts(DEFAULT_STAGES)))
    result = bot(event("/bot run"), "--wait")
    assert (result.code, result.err) == (0, "")
    (run,) = github.actions.dispatched()
    assert result.out.splitlines()[-2:] == [
        f"ended: run {run.id}: SUCCESS",
        f"status 'L0 Test Full Run' on {SHA[:12]}: success: 4 passed, 0 failed, 0 skipped",
    ]
    _, report = github.bodies()
    assert report.startswith(f"## CI report: [L0 Test #{run.id}]({github.url}{REPOSITORY}/actions/runs/{run.id}) "
                             "**SUCCESS**\n\n@maintainer-amy, `/bot run` ended: 4 passed, 0 failed, 0 skipped.\n")
    assert "| `A10-PyTorch-1` |" in report and "archived no readable run record" not in report
    assert statuses(github) == [(SHA[:7], FULL, "pending", f"run {run.id} started"),
                                (SHA[:7], FULL, "success", "4 passed, 0 failed, 0 skipped")]  # fmt: skip
    assert [r.headers.get("authorization") for r in github.actions.blob_requests] == [None] * 5  # no token leaves


def test_a_failing_stage_fails_the_status_and_the_report_names_the_test(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins
) -> None:
    script = Script(conclusion="failure", artifacts=artifacts(DEFAULT_STAGES, failing="A10-PyTorch-2"))
    github.actions.backend = ScriptedBackend(script)
    result = bot(event("/bot run"), "--wait")
    assert result.code == 0, result.err
    assert statuses(github)[-1] == (SHA[:7], FULL, "failure", "3 passed, 1 failed, 0 skipped")
    assert "test_a10" in github.bodies()[-1] and "AssertionError: boom" in github.bodies()[-1]


def test_a_run_that_left_no_test_results_is_never_green(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins
) -> None:
    github.actions.backend = ScriptedBackend(Script(artifacts={}))
    result = bot(event("/bot run"), "--wait")
    (run,) = github.actions.dispatched()
    assert result.code == 0
    assert result.err == f"warning: could not read the run record (run {run.id} archived no selection)\n"
    assert statuses(github)[-1] == (SHA[:7], FULL, "error", f"no test results found for build {run.id}: nothing was "
                                                            "tested")  # fmt: skip


@pytest.mark.parametrize("same_history", [True, False], ids=["same machine (ledger)", "fresh machine (run name)"])
def test_the_same_comment_handled_twice_starts_one_run(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins, env: pytest.MonkeyPatch,
    tmp_path: Path, same_history: bool,
) -> None:  # fmt: skip
    comment = event("/bot run")
    assert bot(comment).code == 0
    if not same_history:
        env.setenv("CI_TOOL_HISTORY", str(tmp_path / "other.sqlite"))
    again = bot(comment)
    (run,) = github.actions.dispatched()
    assert (again.code, again.err) == (0, "")
    assert again.out.splitlines()[1:] == [
        "already dispatched by comment 987654321: not dispatching again",
        f"already dispatched: run {run.id} {github.url}{REPOSITORY}/actions/runs/{run.id}",
    ]
    assert (github.count("POST", "/dispatches"), len(github.comments), len(github.statuses)) == (1, 1, 1)


def test_a_newer_run_cancels_the_older_run_of_its_pull_request(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins
) -> None:
    github.actions.backend = ScriptedBackend(Script(looks_running=99))
    assert bot(event("/bot run", comment_id=1)).code == 0
    assert bot(event('/bot run --stage-list "A10-PyTorch-1"', comment_id=2)).code == 0
    first, second = github.actions.dispatched()
    assert (first.status, first.conclusion) == ("completed", "cancelled")  # the older run of the PR
    assert parse_run_name(second.name) is not None and second.name != first.name
    assert statuses(github)[-2:] == [(SHA[:7], FULL, "error", f"killed by a newer pipeline run (run {second.id})"),
                                     (SHA[:7], CUSTOM, "pending", f"run {second.id} started")]  # fmt: skip


@pytest.mark.parametrize(
    "how", [{"status": 502, "after": True}, {"drop": True, "after": True}],
    ids=["502 after GitHub queued it", "connection dropped after GitHub queued it"],
)  # fmt: skip
def test_a_lost_dispatch_answer_still_yields_one_run(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins, how: dict[str, object]
) -> None:
    github.fail("POST", "/dispatches", **how)
    result = bot(event("/bot run"))
    assert result.code == 0, result.err
    assert result.out.splitlines()[1].startswith("warning: dispatch l0-test.yml on example/ci-tool: expected GitHub "
                                                 "to answer, found ")  # fmt: skip
    assert (github.count("POST", "/dispatches"), len(github.actions.dispatched())) == (1, 1)


def test_a_run_github_lists_late_is_waited_for_not_dispatched_again(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins
) -> None:
    github.actions.backend = ScriptedBackend(listed_after_looks=3)
    result = bot(event("/bot run"))
    assert result.code == 0, result.err
    assert (github.count("POST", "/dispatches"), len(github.actions.dispatched())) == (1, 1)


def test_a_dispatch_github_refuses_says_why_and_gives_the_claim_back(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins
) -> None:
    github.fail("POST", "/dispatches", status=422, body='{"message": "Workflow does not have \'workflow_dispatch\' '
                                                        'trigger"}')  # fmt: skip
    result = bot(event("/bot run"))
    assert result.code == 1
    message = ("dispatch l0-test.yml on example/ci-tool: expected GitHub to answer, found HTTP 422 (Workflow does "
               "not have 'workflow_dispatch' trigger)")  # fmt: skip
    assert result.err == f"error: {message}\n"
    assert github.bodies()[0].endswith(f"**Could not start the run**: `{message}`\n\nNothing is running for this "
                                       "comment: comment `/bot run` again once GitHub Actions answers.\n")  # fmt: skip
    assert statuses(github) == [(SHA[:7], FULL, "error", f"could not start the run: {message}"[:139])]
    assert github.reactions == {}  # handling the comment again may dispatch
    assert github.actions.dispatched() == []


def test_kill_cancels_the_pull_requests_running_run(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins
) -> None:
    github.actions.backend = ScriptedBackend(Script(looks_running=99))
    assert bot(event("/bot run", comment_id=1)).code == 0
    (run,) = github.actions.dispatched()
    other = github.actions.add_run(REPOSITORY, {**run.inputs, "pr_number": "124", "comment_id": "2"})
    result = bot(event("/bot kill", comment_id=3))
    assert (result.code, result.err) == (0, "")
    assert result.out.splitlines()[-1] == "killed: 1 run(s) cancelled"
    assert (run.status, run.conclusion, other.status) == ("completed", "cancelled", "in_progress")
    url = f"{github.url}{REPOSITORY}/actions/runs/{run.id}"
    assert statuses(github)[-1] == (SHA[:7], FULL, "error", "killed by /bot kill")
    assert github.bodies()[-1] == (
        f"@maintainer-amy, running `/bot kill`.\n\n- cancelled [L0 Test run {run.id}]({url}): killed by /bot kill\n"
    )
    assert github.count("POST", "/dispatches") == 1


def test_kill_of_a_run_followed_with_wait_reports_it_killed(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins
) -> None:
    backend = ScriptedBackend(Script(looks_running=3))
    github.actions.backend = backend
    comment = event("/bot run", comment_id=1)
    assert bot(comment).code == 0
    (run,) = github.actions.dispatched()
    assert bot(event("/bot kill", comment_id=2)).code == 0
    followed = bot(comment, "--wait")  # bot.yml's follow job, after the kill
    assert followed.code == 0, followed.err
    assert f"ended: run {run.id}: ABORTED" in followed.out.splitlines()
    assert github.bodies()[-1].startswith(f"## CI report: [L0 Test #{run.id}]")
    assert statuses(github)[-1] == (SHA[:7], FULL, "error", "killed by /bot kill")  # left as the kill set it


def test_skip_sets_the_actions_full_run_green(bot: Bot, event: MakeEvent, github: FakeGitHub,
                                               actions_only: FakeJenkins) -> None:  # fmt: skip
    result = bot(event('/bot skip --comment "docs only"'))
    assert (result.code, result.err) == (0, "")
    assert statuses(github) == [(SHA[:7], FULL, "success", "skipped: docs only")]
    assert github.bodies()[0].endswith(f"\n\nSet `L0 Test Full Run` to success on {SHA[:12]}.\n")
    assert (actions_only.requests, github.actions.dispatched()) == ([], [])


def test_reuse_pipeline_carries_the_passing_runs_status_to_a_head_with_the_same_code(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins
) -> None:
    github.actions.backend = ScriptedBackend(Script(artifacts=artifacts(DEFAULT_STAGES)))
    assert bot(event("/bot run", comment_id=1), "--wait").code == 0
    (run,) = github.actions.dispatched()
    new_head = "f" * 40
    github.pulls[(REPOSITORY, PR)].head_sha = new_head
    github.commits[new_head] = FakeCommit(SHA[::-1])  # a rebase: the same tree as the tested commit
    result = bot(event("/bot reuse-pipeline", comment_id=2))
    assert (result.code, result.err) == (0, "")
    url = f"{github.url}{REPOSITORY}/actions/runs/{run.id}"
    assert statuses(github)[-1] == (new_head[:7], FULL, "success", f"reused build {run.id}: 4 passed, 0 failed, "
                                                                   "0 skipped")  # fmt: skip
    assert github.bodies()[-1].endswith(f"Carried `L0 Test Full Run` from [L0 Test run {run.id}]({url}).\n")


def test_reuse_pipeline_refuses_a_run_whose_selection_differs_from_the_requests_now(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins
) -> None:
    github.actions.backend = ScriptedBackend(Script(artifacts=artifacts(["A10-PyTorch-1"])))
    assert bot(event("/bot run", comment_id=1), "--wait").code == 0
    (run,) = github.actions.dispatched()
    result = bot(event("/bot reuse-pipeline", comment_id=2))
    assert result.code == 0, result.err
    assert "which it selects now" in github.bodies()[-1]
    assert github.bodies()[-1].endswith(": comment `/bot run` to test this commit.\n")
    assert [s for s in statuses(github) if "reused" in s[3]] == []
    assert f"reuse: run {run.id} ran another selection" in result.out


def test_reuse_pipeline_with_no_passing_run_says_so(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins
) -> None:
    assert bot(event("/bot reuse-pipeline")).code == 0
    assert github.bodies()[-1].endswith("No passing run of this pull request to reuse: comment `/bot run`.\n")


@pytest.mark.parametrize(("value", "message"), [
    ("jenkin", "--engines (or CI_TOOL_BOT_ENGINES): expected jenkins, github or both (jenkins,github), found "
               "'jenkin' Hint: did you mean 'jenkins'?\n"),
    ("github,gitlab", "--engines (or CI_TOOL_BOT_ENGINES): expected jenkins, github or both (jenkins,github), found "
                      "'gitlab' Hint: did you mean 'github'?\n"),
], ids=["typo", "unknown"])  # fmt: skip
def test_an_engine_the_bot_does_not_know_is_a_usage_error(
    bot: Bot, event: MakeEvent, env: pytest.MonkeyPatch, value: str, message: str
) -> None:
    env.setenv("CI_TOOL_BOT_ENGINES", value)
    result = bot(event("/bot run"))
    assert result.code == 2
    assert result.err.startswith("Usage: ci-tool bot handle [OPTIONS]\n")
    assert result.err.endswith(message)


def test_both_engines_run_one_build_and_one_run_under_one_claim(
    bot: Bot, event: MakeEvent, github: FakeGitHub, jenkins: FakeJenkins, env: pytest.MonkeyPatch
) -> None:
    env.setenv("CI_TOOL_BOT_ENGINES", "jenkins,github")
    result = bot(event("/bot run"))
    assert (result.code, result.err) == (0, "")
    (build,), (run,) = jenkins.triggered(), github.actions.dispatched()
    assert {context for _, context, _, _ in statuses(github)} == {"Jenkins Full Build", FULL}
    assert len(github.bodies()) == 2  # one reply per engine, each linking its run
    assert github.count("POST", "/reactions") == 1
    again = bot(event("/bot run"))
    assert again.code == 0 and (len(jenkins.triggered()), len(github.actions.dispatched())) == (1, 1)
    assert json.loads(run.inputs["request"]) == json.loads(build.parameters["REQUEST"])


def test_a_token_without_actions_write_is_told_which_permission_to_give(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins
) -> None:
    github.fail("POST", "/dispatches", status=403, body='{"message": "Resource not accessible by integration"}')
    result = bot(event("/bot run"))
    assert result.code == 1
    assert result.err == (
        "error: dispatch l0-test.yml on example/ci-tool: expected GitHub to accept GITHUB_TOKEN, found HTTP 403 "
        "(Resource not accessible by integration) Hint: give GITHUB_TOKEN the actions: write permission (bot.yml's "
        "answer job; actions: read for its follow job), and check that .github/workflows/l0-test.yml is on the "
        "default branch\n"
    )
    assert github.actions.dispatched() == []


def test_slow_answers_while_following_still_end_with_one_report(
    bot: Bot, event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins
) -> None:
    github.actions.backend = ScriptedBackend(Script(artifacts=artifacts(DEFAULT_STAGES)))
    github.fail("GET", r"/actions/runs/\d+$", after=True, slow_seconds=0.3, times=3)  # a slow GitHub, answering
    github.fail("GET", r"/actions/runs/\d+$", status=503, times=2)  # then failing, then well again
    result = bot(event("/bot run"), "--wait")
    assert (result.code, result.err) == (0, "")
    assert len(github.bodies()) == 2 and github.bodies()[-1].startswith("## CI report: ")
    assert statuses(github)[-1] == (SHA[:7], FULL, "success", "4 passed, 0 failed, 0 skipped")


def test_handlers_of_one_comment_running_at_once_start_one_run(
    event: MakeEvent, github: FakeGitHub, actions_only: FakeJenkins, tmp_path: Path
) -> None:
    github.claim_barrier = threading.Barrier(HANDLERS)  # all of them ask for the comment at the same moment
    comment = event("/bot run")
    handlers = [handle_in_a_process(comment, tmp_path / f"history-{k}.sqlite") for k in range(HANDLERS)]
    outputs = [handler.communicate(timeout=300) for handler in handlers]
    results = [(handler.returncode, out, err) for handler, (out, err) in zip(handlers, outputs, strict=True)]
    assert [code for code, _, _ in results] == [0] * HANDLERS, results
    (run,) = github.actions.dispatched()
    assert (github.count("POST", "/dispatches"), len(github.bodies())) == (1, 1)
    winners = [out for _, out, _ in results if any(line.startswith(f"dispatched: run {run.id} ")
                                                     for line in out.splitlines())]  # fmt: skip
    followers = [out for _, out, _ in results if out.splitlines()[-1].startswith(f"already dispatched: run {run.id} ")]
    assert (len(winners), len(followers)) == (1, HANDLERS - 1), results
