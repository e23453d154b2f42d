"""`ci-tool bot handle` against loopback Jenkins and GitHub: one comment starts at most one build, followed
from the queue to its end; older runs are killed; replies and statuses land on the pull request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tool.bot.help import render_help
from tests.helpers.bot_handle import PR, Bot, MakeEvent
from tests.helpers.dispatch_cases import CUSTOM, DEFAULT_STAGES, FULL, OLD_SHA, PASSING, SHA, case, statuses
from tests.helpers.fake_github import FakeGitHub, FakePull
from tests.helpers.fake_jenkins import FakeJenkins, Script


def record(stages: list[str], *, custom_run: bool = False) -> dict[str, object]:
    """The run record L0_MergeRequest archives (selection.json): what it selected, on which commits."""
    return {"stages": stages, "blocked": [], "custom_run": custom_run, "head": SHA, "base": "b" * 40}


RECORD = record(DEFAULT_STAGES)




def test_a_run_triggers_one_build_with_the_parameters_posts_the_plan_and_the_link_and_sets_pending(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    github.pulls[("example/ci-tool", PR)].labels = ["documentation"]
    result = bot(event("/bot run --disable-fail-fast"))
    (build,) = jenkins.triggered()
    assert (result.code, result.err) == (0, "")
    assert result.out == (
        "decision: dispatch: /bot run by 'maintainer-amy' (author association MEMBER)\n"
        f"triggered: build 1 {build.url}\n"
        f"status 'Jenkins Full Build' on {SHA[:12]}: pending: build 1 started\n"
    )
    assert build.parameters == {
        "REQUEST": '{"command": "run", "flags": {"disable_fail_fast": true}}',
        "LABELS": '["documentation"]',
        "PR_NUMBER": "123",
        "HEAD_SHA": SHA,
        "COMMENT_ID": "987654321",
        "BASE_REF": "main",
        "PRIORITY": "3",
    }
    (reply,) = github.bodies()
    assert reply.startswith("@maintainer-amy, running `/bot run`.\n")
    assert reply.endswith(
        f"\n\ntriggered: build [L0_MergeRequest #1]({build.url})\n\nThe plan above is a preview from the pull "
        f"request as the GitHub API shows it: the build selects again on the commit `{SHA[:12]}`, and its final CI "
        "report lists what ran.\n"
    )
    assert "| `A10-PyTorch-2` |" in reply
    assert statuses(github) == [(SHA[:7], FULL, "pending", "build 1 started")]
    assert github.statuses[0]["target_url"] == build.url
    assert jenkins.count("POST", "buildWithParameters") == 1


@pytest.mark.parametrize("same_history", [True, False], ids=["same machine (ledger)", "fresh machine (Jenkins)"])
def test_handling_the_same_comment_again_triggers_and_posts_nothing(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub, env: pytest.MonkeyPatch, tmp_path: Path,
    same_history: bool,
) -> None:  # fmt: skip
    comment = event("/bot run")
    bot(comment)
    if not same_history:
        env.setenv("CI_TOOL_HISTORY", str(tmp_path / "other.sqlite"))
    again = bot(comment)
    assert again.code == 0
    assert again.out.splitlines()[1:] == [
        "already triggered by comment 987654321: not triggering again",
        f"already triggered: build 1 {jenkins.url}job/L0_MergeRequest/1/",
    ]
    assert (len(jenkins.triggered()), len(github.comments), len(github.statuses)) == (1, 1, 1)
    assert jenkins.count("POST", "buildWithParameters") == 1


def test_a_queued_item_of_the_comment_is_followed_not_triggered_again(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub, env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    jenkins.polls_to_start = 3
    comment = event("/bot run")
    first = bot(comment, "--queue-timeout-seconds", "0")
    assert (first.code, first.err) == (
        1,
        "error: queue item 40 of L0_MergeRequest: expected a build within 0 s, found it still waiting (Waiting for "
        "next available executor) Hint: handling the comment again follows the same item; it never triggers a "
        "second build\n",
    )
    assert github.bodies()[0].endswith(f"queued: [in Jenkins]({jenkins.url}queue/item/40/), waiting for an executor; "
                                       "the bot follows it when the comment is handled again.\n")
    assert statuses(github) == [(SHA[:7], FULL, "pending", "queued in Jenkins")]
    env.setenv("CI_TOOL_HISTORY", str(tmp_path / "other.sqlite"))  # a fresh machine: found in Jenkins' queue
    again = bot(comment)
    assert again.code == 0, again.err
    assert again.out.splitlines()[1:] == [
        "already triggered by comment 987654321: not triggering again",
        f"already triggered: build 1 {jenkins.url}job/L0_MergeRequest/1/",
    ]
    assert (jenkins.count("POST", "buildWithParameters"), len(jenkins.triggered())) == (1, 1)


@pytest.mark.parametrize(
    "how",
    [{"drop": True, "after": True}, {"status": 502, "after": True}, {"status": 504, "after": True}],
    ids=["connection dropped after Jenkins queued it", "502 after Jenkins queued it", "504 after Jenkins queued it"],
)
def test_a_lost_trigger_answer_still_yields_one_build(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub, how: dict[str, object]
) -> None:
    jenkins.fail("POST", "buildWithParameters", **how)
    result = bot(event("/bot run"))
    assert result.code == 0, result.err
    assert result.out.splitlines()[1].startswith("warning: trigger L0_MergeRequest: expected Jenkins to answer, found ")
    assert result.out.splitlines()[1].endswith("; looking for the build in Jenkins before triggering again")
    assert (jenkins.count("POST", "buildWithParameters"), len(jenkins.triggered())) == (1, 1)
    assert f"triggered: build 1 {jenkins.url}job/L0_MergeRequest/1/" in result.out.splitlines()


def test_a_trigger_refused_before_jenkins_acted_is_tried_again(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins
) -> None:
    jenkins.fail("POST", "buildWithParameters", status=503, times=2)
    result = bot(event("/bot run"))
    assert result.code == 0, result.err
    assert (jenkins.count("POST", "buildWithParameters"), len(jenkins.triggered())) == (3, 1)


def test_a_trigger_that_never_answers_is_one_error_and_no_build(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins
) -> None:
    jenkins.fail("POST", "buildWithParameters", status=502, times=99)
    result = bot(event("/bot run"))
    assert (result.code, jenkins.triggered()) == (1, [])
    assert result.err == (
        "error: trigger L0_MergeRequest: expected an answer naming the queue item, found none in 4 attempts and no "
        "build in Jenkins Hint: Jenkins or a proxy in front of it is failing; comment again once it answers\n"
    )


def test_the_build_number_is_the_queue_items_never_a_guess(bot: Bot, event: MakeEvent, jenkins: FakeJenkins) -> None:
    jenkins.add_build("L0_MergeRequest", {"PR_NUMBER": "7"}, building=False, result="SUCCESS")
    # someone else's build starts between our trigger and our item leaving the queue: it takes number 2
    jenkins.before_start = lambda: jenkins.add_build("L0_MergeRequest", {"PR_NUMBER": "8"}, building=False)
    result = bot(event("/bot run"))
    assert f"triggered: build 3 {jenkins.url}job/L0_MergeRequest/3/" in result.out.splitlines()
    assert jenkins.triggered()[2].parameters["COMMENT_ID"] == "987654321"


def test_a_cancelled_queue_item_is_an_outcome(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    jenkins.cancel_in_queue = True
    comment = event("/bot run")
    result = bot(comment, "--wait")
    assert (result.code, result.err, jenkins.triggered()) == (0, "", [])
    assert "cancelled: queue item 40 was cancelled before it started a build" in result.out.splitlines()
    assert github.bodies()[0].endswith(
        f"The [queued build]({jenkins.url}queue/item/40/) was cancelled in Jenkins before it started: nothing ran.\n"
    )
    assert statuses(github) == [(SHA[:7], FULL, "error", "cancelled in the Jenkins queue before it started")]
    again = bot(comment)
    assert "already handled: queue item 40 was cancelled before it started a build" in again.out.splitlines()
    assert jenkins.count("POST", "buildWithParameters") == 1


def test_a_run_stops_the_older_runs_of_its_pull_request_first(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    jenkins.polls_to_start = 99
    bot(event("/bot run", comment_id=1), "--queue-timeout-seconds", "0")  # item 40 waits in the queue
    jenkins.polls_to_start = 1
    old_request = '{"command": "run", "flags": {"stage_list": ["A10-PyTorch-1"]}}'
    running = jenkins.add_build("L0_MergeRequest", {"PR_NUMBER": "123", "HEAD_SHA": OLD_SHA, "REQUEST": old_request})
    other = jenkins.add_build("L0_MergeRequest", {"PR_NUMBER": "124", "HEAD_SHA": OLD_SHA})
    result = bot(event("/bot run --disable-fail-fast", comment_id=2))
    assert result.code == 0, result.err
    assert (running.result, other.building) == ("ABORTED", True)
    assert jenkins.queue[40].cancelled
    new = jenkins.triggered()[-1]
    order = [(r.method, r.path) for r in jenkins.requests if r.method == "POST"]
    assert order[-3:] == [("POST", "/queue/cancelItem"), ("POST", f"/job/L0_MergeRequest/{running.number}/stop"),
                          ("POST", "/job/L0_MergeRequest/buildWithParameters")]  # fmt: skip
    killed = f"killed by a newer pipeline run (build {new.number})"
    assert (OLD_SHA[:7], CUSTOM, "error", killed) in statuses(github)
    assert (SHA[:7], FULL, "error", killed) in statuses(github)  # the queued item's (its REQUEST: a full run)
    assert statuses(github)[-1] == (SHA[:7], FULL, "pending", f"build {new.number} started")
    reply = github.bodies()[-1]
    newer = f"killed by a newer pipeline run ([build {new.number}]({new.url}))"
    assert f"- stopped build [#{running.number}]({running.url}): {newer}" in reply
    assert f"- cancelled queued item [40]({jenkins.url}queue/item/40/): killed by a newer pipeline run" in reply


def test_kill_stops_the_pull_requests_builds_and_starts_nothing(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    running = jenkins.add_build("L0_MergeRequest", {"PR_NUMBER": "123", "HEAD_SHA": OLD_SHA,
                                                    "REQUEST": '{"command": "run", "flags": {}}'})  # fmt: skip
    result = bot(event("/bot kill"))
    assert (result.code, result.err) == (0, "")
    assert result.out.splitlines()[-1] == "killed: 1 build(s) stopped, 0 queued item(s) cancelled"
    assert running.result == "ABORTED"
    assert jenkins.count("POST", "buildWithParameters") == 0
    assert statuses(github) == [(OLD_SHA[:7], FULL, "error", "killed by /bot kill")]
    assert github.bodies() == [
        "@maintainer-amy, running `/bot kill`.\n\n"
        f"- stopped build [#1]({running.url}): killed by /bot kill\n"
    ]


def test_kill_with_nothing_running_says_so(bot: Bot, event: MakeEvent, github: FakeGitHub) -> None:
    assert bot(event("/bot kill")).code == 0
    assert github.bodies() == ["@maintainer-amy, running `/bot kill`.\n\nNothing was running for this pull request.\n"]


def test_skip_sets_the_full_build_context_green_with_the_comment(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    result = bot(event('/bot skip --comment "waive only"'))
    assert (result.code, result.err) == (0, "")
    assert statuses(github) == [(SHA[:7], FULL, "success", "skipped: waive only")]
    assert github.bodies()[0].endswith(f"\n\nSet `Jenkins Full Build` to success on {SHA[:12]}.\n")
    assert jenkins.requests == []


def test_a_custom_run_posts_on_its_own_context_and_reports_partly_tested(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    jenkins.script = Script(downstream=(("SUCCESS", (case("A10-PyTorch-1", "test_b", "PASSED"),)),),
                            selection=record(["A10-PyTorch-1"], custom_run=True))
    result = bot(event('/bot run --stage-list "A10-PyTorch-1"'), "--wait")
    assert result.code == 0, result.err
    assert {context for _, context, _, _ in statuses(github)} == {CUSTOM}
    assert statuses(github)[-1] == (SHA[:7], CUSTOM, "success", "1 passed, 0 failed, 0 skipped")
    report = github.bodies()[-1]
    assert (
        "**Partly Tested**: a custom run (`--stage-list`) selects part of the stages; it does not turn the merge "
        "gate green."
    ) in report


def test_changed_paths_and_labels_come_from_the_pull_request(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    pull = github.pulls[("example/ci-tool", PR)]
    pull.files = [f"docs/page{k}.md" for k in range(40)] + ["src/distributed/comm.py"]  # two pages of files
    unlabelled = bot(event("/bot run", comment_id=1))  # the path adds the multi-GPU stage: blocked, the rest runs
    assert unlabelled.out.splitlines()[0] == (
        "decision: dispatch: /bot run by 'maintainer-amy' (author association MEMBER)"
    )
    (blocked,) = jenkins.triggered()
    assert blocked.parameters["LABELS"] == "[]"
    row = ("| `DGX_H100-4_GPUs-PyTorch-1` | `dgx-h100-x4` | 1/1 | 4 | 12.5 min | **blocked** until `ci: full pre-merge "
           "approved`; step 2: `src/distributed/comm.py changed (multi-GPU path 'src/distributed/')` |")  # fmt: skip
    assert row in github.bodies()[0]
    assert "Needs the label `ci: full pre-merge approved`, for `multi-GPU stages DGX_H100-4_GPUs-PyTorch-1`." in (
        github.bodies()[0]
    )
    pull.labels = ["ci: full pre-merge approved"]
    assert bot(event("/bot run", comment_id=2)).code == 0
    build = jenkins.triggered()[-1]
    assert build.parameters["LABELS"] == '["ci: full pre-merge approved"]'
    assert "| `DGX_H100-4_GPUs-PyTorch-1` |" in github.bodies()[1] and "**blocked**" not in github.bodies()[1]


@pytest.mark.parametrize(
    ("result", "state", "description"),
    [
        ("SUCCESS", "success", "3 passed, 0 failed, 1 skipped"),
        ("FAILURE", "failure", "3 passed, 0 failed, 1 skipped"),
        ("UNSTABLE", "failure", "unstable: 3 passed, 0 failed, 1 skipped"),
    ],
)
def test_with_wait_the_final_report_and_status_match_the_build(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub, result: str, state: str, description: str
) -> None:
    jenkins.script = Script(result=result, downstream=(("SUCCESS", PASSING),), selection=RECORD)
    handled = bot(event("/bot run"), "--wait")
    assert handled.code == 0, handled.err
    assert statuses(github)[-1] == (SHA[:7], FULL, state, description)
    report = github.bodies()[-1]
    assert report.startswith(f"## CI report: [L0_MergeRequest #1]({jenkins.url}job/L0_MergeRequest/1/) **{result}**\n")
    assert f"ended: build 1: {result}" in handled.out.splitlines()


def test_end_to_end_comment_to_plan_build_report_and_status(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    failing = (*PASSING[:3], case("DGX_H100-PyTorch-1", "test_d", "FAILED", "pool leaked 3 blocks"))
    jenkins.script = Script(result="FAILURE", downstream=(("FAILURE", failing),), selection=RECORD)
    handled = bot(event("/bot run"), "--wait")
    assert handled.code == 0, handled.err
    build, test_build = jenkins.triggered()[0], jenkins.triggered("L0_Test")[0]
    assert handled.out == (
        "decision: dispatch: /bot run by 'maintainer-amy' (author association MEMBER)\n"
        f"triggered: build 1 {build.url}\n"
        f"status 'Jenkins Full Build' on {SHA[:12]}: pending: build 1 started\n"
        "Started by remote host\nRunning ci-tool stage select\nFinished\n"
        "ended: build 1: FAILURE\n"
        f"status 'Jenkins Full Build' on {SHA[:12]}: failure: 2 passed, 1 failed, 1 skipped\n"
    )
    plan, report = github.bodies()
    assert "triggered: build [L0_MergeRequest #1]" in plan
    assert report == (
        f"## CI report: [L0_MergeRequest #1]({build.url}) **FAILURE**\n\n"
        "@maintainer-amy, `/bot run` ended: 2 passed, 1 failed, 1 skipped.\n\n"
        f"Logs: [L0_MergeRequest #1]({build.url}console) · [L0_Test #1]({test_build.url}console)\n\n"
        "| Stage | Result | Duration | Passed | Failed | Skipped |\n"
        "|---|---|---|---:|---:|---:|\n"
        "| `CPU-Generic-1` | **passed** | 2.0 s | 1 | 0 | 0 |\n"
        "| `A10-PyTorch-1` | **passed** | 2.0 s | 1 | 0 | 0 |\n"
        "| `A10-PyTorch-2` | **passed** | 2.0 s | 0 | 0 | 1 |\n"
        "| `DGX_H100-PyTorch-1` | **failed** | 2.0 s | 0 | 1 | 0 |\n\n"
        "### Failures: 1 test, 1 signature\n\n"
        "#### `AssertionError: pool leaked <n> blocks` (1 test)\n\n"
        "- `tests.kv.test_pool.TestPool::test_d` in `DGX_H100-PyTorch-1`\n\n"
        "```text\nE   AssertionError: pool leaked 3 blocks\n```\n"
    )
    assert [s["target_url"] for s in github.statuses] == [build.url, build.url]


def test_a_build_killed_by_a_newer_run_reports_it_and_leaves_the_status_to_the_newer(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    first = event("/bot run", comment_id=1)
    bot(first)
    bot(event("/bot run --disable-fail-fast", comment_id=2))
    followed = bot(first, "--wait")  # the first comment's follower sees its build aborted
    assert followed.code == 0, followed.err
    old, new = jenkins.triggered()
    assert (old.result, new.building) == ("ABORTED", True)
    assert f"Killed by a newer pipeline run: [build 2]({new.url})." in github.bodies()[-1]
    assert statuses(github)[-1] == (SHA[:7], FULL, "pending", "build 2 started")
    assert followed.out.splitlines()[-1] == (
        f"status 'Jenkins Full Build' on {SHA[:12]} left as it is: build 2 started (not this build's)"
    )


def test_a_build_that_disappears_while_followed_is_one_error_and_an_error_status_and_comment(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    jenkins.fail("GET", r"/job/L0_MergeRequest/1/api/json", status=404, times=99)
    result = bot(event("/bot run"), "--wait")
    assert (result.code, result.err) == (
        1,
        "error: build 1 of L0_MergeRequest: expected to follow it to its end, found it gone (HTTP 404) "
        "Hint: someone deleted it in Jenkins; comment `/bot run` again for a new build\n",
    )
    assert statuses(github)[-1] == (SHA[:7], FULL, "error", "build 1: could not be followed to its end")
    assert github.bodies()[-1].startswith(
        f"## CI report: [L0_MergeRequest #1]({jenkins.url}job/L0_MergeRequest/1/) **NOT FOLLOWED**\n\n"
        "@maintainer-amy, the bot could not follow the build to its end: build 1 of L0_MergeRequest: expected to "
        "follow it to its end, found it gone (HTTP 404)"
    )


def test_following_again_after_the_build_could_not_be_followed_sets_its_final_status(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    jenkins.script = Script(downstream=(("SUCCESS", PASSING),), selection=RECORD)
    jenkins.fail("GET", r"/job/L0_MergeRequest/1/api/json", status=404)  # once: Jenkins answers again later
    comment = event("/bot run")
    assert bot(comment, "--wait").code == 1
    assert statuses(github)[-1] == (SHA[:7], FULL, "error", "build 1: could not be followed to its end")
    again = bot(comment, "--wait")
    assert again.code == 0, again.err
    assert statuses(github)[-1] == (SHA[:7], FULL, "success", "3 passed, 0 failed, 1 skipped")


@pytest.mark.parametrize(
    ("path", "status", "unread"),
    [
        (r"/job/L0_Test/api/json", 404, "the L0_Test builds (read the builds of L0_Test: expected Jenkins to have "
                                        "it, found HTTP 404)"),
        (r"/job/L0_Test/1/testReport", 500, "the test report of L0_Test #1 (read the test report of build 1 of "
                                            "L0_Test: expected Jenkins to answer at {url}, found HTTP 500 Internal "
                                            "Server Error (4 attempts) Hint: check CI_TOOL_JENKINS_URL (or "
                                            "--jenkins-url) and that Jenkins is up, then comment again)"),
        (r"/job/L0_MergeRequest/1/logText", 404, "the console log of build 1 (read the console of build 1 of "
                                                 "L0_MergeRequest: expected Jenkins to have it, found HTTP 404)"),
    ],
    ids=["downstream job", "test report", "console log"],
)  # fmt: skip
def test_with_wait_a_part_of_the_build_jenkins_cannot_serve_still_ends_in_a_final_status_and_report(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub, path: str, status: int, unread: str
) -> None:
    unread = unread.format(url=jenkins.url)
    jenkins.script = Script(result="FAILURE", downstream=(("FAILURE", PASSING),), selection=RECORD)
    jenkins.fail("GET", path, status=status, times=99)
    handled = bot(event("/bot run"), "--wait")
    assert handled.code == 0, handled.err
    assert f"warning: could not read {unread}\n" in handled.err
    state, description = statuses(github)[-1][2:]
    assert (state, description.endswith("; some results unreadable")) == ("failure", True)
    assert f"**Could not be read**, so the counts may be partial: {unread}.\n" in github.bodies()[-1]


def test_a_build_that_archived_no_run_record_is_reported_from_the_preview_and_says_so(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    jenkins.script = Script(downstream=(("SUCCESS", PASSING),))  # an L0_MergeRequest older than the run record
    handled = bot(event("/bot run"), "--wait")
    assert handled.code == 0, handled.err
    assert handled.err == "warning: could not read the run record (build 1 archived no selection.json)\n"
    report = github.bodies()[-1]
    assert "The build archived no readable run record: the stages below are the bot's preview.\n" in report
    assert "| `DGX_H100-PyTorch-1` | **passed** |" in report
    assert statuses(github)[-1] == (SHA[:7], FULL, "success", "3 passed, 0 failed, 1 skipped; some results unreadable")


def test_the_final_report_reads_the_run_record_and_names_where_the_run_differs_from_the_preview(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    ran = ["CPU-Generic-1", "A10-PyTorch-1", "A10-PyTorch-2", "DGX_H100-4_GPUs-PyTorch-1"]  # not DGX_H100-PyTorch-1
    cases = (*PASSING[:3], case("DGX_H100-4_GPUs-PyTorch-1", "test_e", "FAILED", "boom"))
    jenkins.script = Script(result="FAILURE", downstream=(("FAILURE", cases),), selection=record(ran))
    handled = bot(event("/bot run"), "--wait")
    assert handled.code == 0, handled.err
    report = github.bodies()[-1]
    assert (
        "**The run differs from the preview**: the run also started `DGX_H100-4_GPUs-PyTorch-1`; it did not start "
        "`DGX_H100-PyTorch-1`.\n"
    ) in report
    assert "| `DGX_H100-4_GPUs-PyTorch-1` | **failed** | 2.0 s | 0 | 1 | 0 |" in report  # its cases are kept
    assert "DGX_H100-PyTorch-1 |" not in report
    assert statuses(github)[-1] == (SHA[:7], FULL, "failure", "2 passed, 1 failed, 1 skipped")


def test_high_priority_dispatches_one_build_at_the_high_queue_priority_and_says_so(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    result = bot(event("/bot run --high-priority"))
    assert result.code == 0, result.err
    (build,) = jenkins.triggered()
    assert build.parameters["PRIORITY"] == "1"
    assert (
        "Note: `--high-priority: the build and its L0_Test builds queue with PRIORITY 1 instead of 3 (the "
        "Priority Sorter plugin orders Jenkins' queue by it)`."
    ) in github.bodies()[0]


def test_a_reply_github_refuses_is_reported_and_the_dispatch_still_happens_once(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    github.fail("POST", r"/issues/\d+/comments", status=502)
    comment = event("/bot run")
    result = bot(comment)
    assert result.code == 1
    assert result.err == (
        "warning: comment on #123 of example/ci-tool: expected GitHub to answer, found HTTP 502\n"
    )
    assert (len(jenkins.triggered()), github.count("POST", r"/issues/\d+/comments")) == (1, 2)  # the edit: a new post
    assert f"triggered: build [L0_MergeRequest #1]({jenkins.triggered()[0].url})\n" in github.bodies()[0]
    assert statuses(github) == [(SHA[:7], FULL, "pending", "build 1 started")]
    assert bot(comment).code == 0
    assert jenkins.count("POST", "buildWithParameters") == 1


def test_a_status_github_refuses_names_the_token_variable(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    github.fail("POST", "/statuses/", status=403, body=json.dumps({"message": "Resource not accessible"}))
    result = bot(event("/bot run"))
    assert (result.code, len(jenkins.triggered())) == (1, 1)
    assert result.err == (
        f"warning: set the status 'Jenkins Full Build' of {SHA[:12]} in example/ci-tool: expected GitHub to accept "
        "GITHUB_TOKEN, found HTTP 403 (Resource not accessible) Hint: give GITHUB_TOKEN the pull-requests: write and "
        "statuses: write permissions on the repository\n"
    )


def test_reuse_pipeline_carries_a_passing_builds_statuses_when_it_ran_the_same_selection(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    passed = jenkins.add_build(
        "L0_MergeRequest",
        {"REQUEST": '{"command": "run", "flags": {}}', "PR_NUMBER": "123", "HEAD_SHA": OLD_SHA},
        Script(selection={"stages": DEFAULT_STAGES}),
        building=False,
        result="SUCCESS",
    )
    github.statuses.append({"sha": OLD_SHA, "context": FULL, "state": "success",
                            "description": "4 passed, 0 failed, 0 skipped", "target_url": passed.url})  # fmt: skip
    result = bot(event("/bot reuse-pipeline"))
    assert (result.code, result.err) == (0, "")
    assert statuses(github)[-1] == (SHA[:7], FULL, "success", "reused build 1: 4 passed, 0 failed, 0 skipped")
    assert github.statuses[-1]["target_url"] == passed.url
    assert github.bodies()[0].endswith(f"\n\nCarried `Jenkins Full Build` from build [#1]({passed.url}).\n")


@pytest.mark.parametrize(
    ("selection", "why"),
    [({"stages": ["A10-PyTorch-1", "A10-PyTorch-9"]},
      "ran another selection than its request selects now (ran A10-PyTorch-9, which the request no longer selects; "
      "did not run CPU-Generic-1, A10-PyTorch-2, DGX_H100-PyTorch-1, which it selects now)"),
     (None, "archived no readable selection"),
     ({"stages": "A10-PyTorch-1"}, "archived no readable selection")],
    ids=["another selection", "no selection archived", "a selection of another shape"],
)  # fmt: skip
def test_reuse_pipeline_refuses_a_build_of_another_selection(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub, selection: dict | None, why: str
) -> None:
    jenkins.add_build("L0_MergeRequest", {"REQUEST": '{"command": "run", "flags": {}}', "PR_NUMBER": "123",
                                          "HEAD_SHA": OLD_SHA}, Script(selection=selection), building=False,
                      result="SUCCESS")  # fmt: skip
    assert bot(event("/bot reuse-pipeline")).code == 0
    assert github.statuses == []
    assert github.bodies()[0].endswith(f"{why}: comment `/bot run` to test this commit.\n")


def test_reuse_pipeline_without_a_passing_build_says_so(bot: Bot, event: MakeEvent, github: FakeGitHub) -> None:
    assert bot(event("/bot reuse-pipeline")).code == 0
    assert github.bodies()[0].endswith("No passing build of this pull request to reuse: comment `/bot run`.\n")


def test_help_and_refusals_are_replied_without_jenkins(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub, env: pytest.MonkeyPatch
) -> None:
    env.delenv("CI_TOOL_JENKINS_URL")
    assert bot(event("/bot help")).code == 0
    assert bot(event("/bot run", login="stranger", association="NONE")).code == 0
    help_reply, refusal = github.bodies()
    assert help_reply == render_help()
    assert refusal.startswith("@stranger, thank you for the `/bot run`.")
    assert (jenkins.requests, github.statuses) == ([], [])


def test_the_head_commit_comes_from_the_api(bot: Bot, event: MakeEvent, github: FakeGitHub) -> None:
    github.add_pull("example/ci-tool", FakePull(PR, head_sha="f" * 40))  # pushed since the event was sent
    assert bot(event('/bot skip --comment "docs only"')).code == 0
    assert statuses(github) == [("fffffff", FULL, "success", "skipped: docs only")]


def test_a_pull_request_closed_since_the_event_is_left_alone(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub
) -> None:
    github.pulls[("example/ci-tool", PR)].state = "closed"
    result = bot(event("/bot run"))
    assert (result.code, result.out) == (0, "decision: ignore: pull request #123 is closed\n")
    assert (jenkins.requests, github.comments) == ([], {})


def test_github_output_names_the_build_for_the_follow_job(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, tmp_path: Path
) -> None:
    outputs = tmp_path / "github_output"
    assert bot(event("/bot run"), "--github-output", str(outputs)).code == 0
    build = jenkins.triggered()[0]
    assert outputs.read_text() == f"build=1\nbuild_url={build.url}\n"
    assert bot(event("/bot help"), "--github-output", str(outputs)).code == 0  # no build: nothing more
    assert outputs.read_text() == f"build=1\nbuild_url={build.url}\n"


@pytest.mark.parametrize(
    ("how", "template", "link"),
    [
        ("option", "{build_url}artifact/report.html", "{build_url}artifact/report.html"),
        ("variable", "https://reports.example.com/{job}/{number}/", "https://reports.example.com/L0_MergeRequest/1/"),
    ],
)
def test_the_final_report_links_the_html_report_where_one_is_published(
    bot: Bot,
    event: MakeEvent,
    jenkins: FakeJenkins,
    github: FakeGitHub,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
    template: str,
    link: str,
) -> None:
    jenkins.script = Script(result="SUCCESS", downstream=(("SUCCESS", PASSING),))
    if how == "variable":
        monkeypatch.setenv("CI_TOOL_REPORT_URL", template)
    handled = bot(event("/bot run"), "--wait", *(["--report-url", template] if how == "option" else []))
    assert handled.code == 0, handled.err
    build = jenkins.triggered()[0]
    report = github.bodies()[-1]
    assert f"\n\nHTML report: [L0_MergeRequest #1]({link.format(build_url=build.url)})\n\n" in report


@pytest.mark.parametrize(
    ("template", "found"),
    [
        ("https://reports.example.com/{pr}/{number}.html", "found {pr} in"),
        ("https://reports.example.com/latest.html", "expected {number} or {build_url} in the report URL"),
        ("https://reports.example.com/{number", "expected a URL template"),
        ("reports/{number}.html", "expected an http(s) URL"),
        ("https://bot:s3cret-Tk@reports.example.com/{number}", "found one with a user and password before `@`"),
        ("{build_url}artifact/report.html?access_token=s3cret-Tk", "with a query parameter named `token`"),
    ],
)
def test_a_report_url_that_cannot_name_a_builds_page_is_a_usage_error(
    bot: Bot, event: MakeEvent, jenkins: FakeJenkins, github: FakeGitHub, template: str, found: str
) -> None:
    handled = bot(event("/bot run"), "--wait", "--report-url", template)
    assert handled.code == 2
    assert "--report-url (or CI_TOOL_REPORT_URL): expected" in handled.err and found in handled.err
    assert (jenkins.triggered(), github.bodies()) == ([], [])
    assert "s3cret-Tk" not in handled.out + handled.err  # the report is posted where everyone reads it
