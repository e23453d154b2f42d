"""What the bot writes after a dispatch: commit statuses and replies that GitHub always takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tool.bot import status
from ci_tool.bot.reply import COMMENT_LIMIT, shorten
from ci_tool.dispatch.model import Build, Status, StatusState
from ci_tool.outcomes import BuildResult, TestOutcome
from ci_tool.stages.selection_request import SelectionRequest
from tests.helpers.bot_handle import Bot, MakeEvent
from tests.helpers.fake_github import FakeGitHub

BUILD = Build("L0_MergeRequest", 7, "http://jenkins/job/L0_MergeRequest/7/", False, BuildResult.SUCCESS)
TOTALS = {TestOutcome.PASSED: 12, TestOutcome.FAILED: 1, TestOutcome.SKIPPED: 3}


@pytest.mark.parametrize(
    ("result", "state", "description"),
    [
        (BuildResult.SUCCESS, StatusState.SUCCESS, "12 passed, 1 failed, 3 skipped"),
        (BuildResult.FAILURE, StatusState.FAILURE, "12 passed, 1 failed, 3 skipped"),
        (BuildResult.UNSTABLE, StatusState.FAILURE, "unstable: 12 passed, 1 failed, 3 skipped"),
        (BuildResult.ABORTED, StatusState.ERROR, "aborted: 12 passed, 1 failed, 3 skipped"),
        (BuildResult.NOT_BUILT, StatusState.ERROR, "aborted: 12 passed, 1 failed, 3 skipped"),
    ],
)
def test_final_status_per_result(result: BuildResult, state: StatusState, description: str) -> None:
    build = Build(BUILD.job, BUILD.number, BUILD.url, False, result)
    assert status.final("ctx", build, TOTALS) == Status("ctx", state, description, BUILD.url)


@pytest.mark.parametrize(
    ("request_", "context"),
    [
        (SelectionRequest(), "Jenkins Full Build"),
        (SelectionRequest(post_merge=True, disable_fail_fast=True), "Jenkins Full Build"),
        (SelectionRequest(stage_list=("A10-PyTorch-1",)), "Custom Jenkins build"),
        (SelectionRequest(gpu_type=("A10",)), "Custom Jenkins build"),
        (SelectionRequest(skip_test=True), "Custom Jenkins build"),
    ],
    ids=["default", "post-merge", "stage list", "gpu type", "skip test"],
)
def test_a_custom_run_never_posts_on_the_full_build_context(request_: SelectionRequest, context: str) -> None:
    assert status.context_for(request_) == context


def test_skip_and_carried_descriptions_fit_githubs_limit() -> None:
    assert status.skipped("waive only") == Status("Jenkins Full Build", StatusState.SUCCESS, "skipped: waive only")
    long = status.skipped("x" * 500).description
    assert (len(long), long[-1]) == (140, "…")
    carried = status.carried(Status("Jenkins Full Build", StatusState.SUCCESS, "4 passed, 0 failed, 0 skipped"), BUILD)
    assert carried.description == "reused build 7: 4 passed, 0 failed, 0 skipped"


def test_a_reply_within_the_limit_is_kept_whole() -> None:
    assert shorten("short\n") == "short\n"


def test_a_long_reply_is_shortened_with_a_summary_and_its_fence_closed() -> None:
    body = "## CI report\n\n```text\n" + "".join(f"E   line {k} of a long failure\n" for k in range(5000)) + "```\n"
    short = shorten(body, more_at="http://jenkins/job/L0_MergeRequest/7/console")
    assert len(body) > COMMENT_LIMIT >= len(short)
    assert short.startswith("## CI report\n\n```text\nE   line 0 of a long failure\n")
    last = short.splitlines()
    assert last[-3] == "```"
    assert last[-1] == (
        f"**Shortened**: this reply had {len(body):,} characters, more than the 65,536 GitHub takes; "
        f"{len(body.splitlines()) - (len(last) - 3):,} of its {len(body.splitlines()):,} lines are left out. "
        "The whole report is in the build's logs: http://jenkins/job/L0_MergeRequest/7/console"
    )


def test_a_reply_naming_one_stage_thousands_of_times_is_cut_to_fit_keeping_its_plan_and_marker(
    bot: Bot, event: MakeEvent, github: FakeGitHub, tmp_path: Path
) -> None:
    names = ", ".join(["A10-PyTorch-1"] * 4500)
    reply_file = tmp_path / "reply.md"
    bot(event(f'/bot run --stage-list "{names}"'), "--reply-file", str(reply_file))
    bodies = [*github.bodies(), reply_file.read_text()]
    assert max(len(body) for body in bodies) <= COMMENT_LIMIT
    first = github.bodies()[0]
    assert "| `--stage-list` | `A10-PyTorch-1`, `A10-PyTorch-1`," in first
    assert "| `A10-PyTorch-1` | `a10` | 1/2 |" in first  # the plan, after the cut flag row
    assert "<!-- ci-tool: the reply to comment 987654321 -->" in first  # handling the comment again finds it
    assert "characters, more than the 65,536 GitHub takes; 1 line over 4,000 characters cut short." in first
