"""A dispatch decision carried out on GitHub and the engines the project chose (CI_TOOL_BOT_ENGINES: Jenkins,
GitHub Actions or both; `ci-tool bot handle` without --dry-run): one flow for every engine, each opened by
its module (on_jenkins.py, on_actions.py), as below for Jenkins (a workflow run where it says build).

    /bot run             refused when the head was committed after the comment; the comment claimed (the
                         bot's reaction: one handling wins, the others follow its build); plan reply; stop
                         the PR's older runs; trigger (idempotent, dispatch/trigger.py); the reply edited to
                         "triggered: build N", or to why Jenkins could not start it (error status); pending
                         status; with --wait, the build followed to its end, the CI report posted and the
                         final status set (never success without a test report)
    /bot kill            stop the PR's runs; their statuses "killed by /bot kill"; a reply listing them
    /bot skip            the full build's context green on the head, the comment as description
    /bot reuse-pipeline  stop the PR's runs; the newest passing build's statuses carried to the head when
                         the selection it archived is the one its request selects now, and its commit holds
                         the head's code (the same git tree) unless the commenter may `/bot skip`

A reply or status GitHub refuses is reported (a warning line, exit 1 at the end) and never undoes, loses or
repeats the dispatch: handling the comment again finds the build instead of triggering one.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from ci_tool.atomic import append_text
from ci_tool.bot.engines import skip_contexts
from ci_tool.bot.event import Action, Decision
from ci_tool.bot.flags import SubCommand
from ci_tool.bot.parsed_comment import BotRequest
from ci_tool.bot.reply import code, could_not_reach, pushed_after_comment, with_lines
from ci_tool.bot.status import FULL_BUILD_CONTEXT, context_for, not_started, skipped
from ci_tool.dispatch.actions import ActionsClient
from ci_tool.dispatch.github import utc_text
from ci_tool.dispatch.model import PullRequest
from ci_tool.errors import DispatchError
from ci_tool.pr_bot.follow import follow
from ci_tool.pr_bot.on_actions import ActionsReach, on_actions
from ci_tool.pr_bot.on_jenkins import on_jenkins
from ci_tool.pr_bot.preview import Preview
from ci_tool.pr_bot.pull_runs import OnEngine, kill, reuse
from ci_tool.pr_bot.read import Clients
from ci_tool.pr_bot.services import JenkinsReach, Replies
from ci_tool.pr_bot.settings import BotSettings, Terminal
from ci_tool.stages.engines import Engine


@dataclass(frozen=True)
class Targets:
    """Where a dispatch acts besides GitHub: Jenkins, GitHub Actions, or both (the settings' engines), and the
    contexts `/bot skip` turns green (each engine's full run)."""

    jenkins: JenkinsReach | None
    actions: ActionsReach | None
    skip_contexts: tuple[str, ...]


def answer(preview: Preview, reply: str, settings: BotSettings, clients: Clients, *, github_output: Path | None,
           terminal: Terminal) -> int:  # fmt: skip
    """Carry the previewed decision out through the clients the decision reached, as the settings say."""
    github = clients.github
    assert github is not None  # handle.py answers only with GitHub reached
    event = preview.decision.event
    replies = Replies(github, event.repository, event.number, echo=terminal.echo, err=terminal.err)
    jenkins = None
    if clients.jenkins is not None:
        jenkins = JenkinsReach(clients.jenkins, settings.jenkins_job, settings.history, settings.pace(),
                               settings.report_url, settings.wait)  # fmt: skip
    actions = None
    if Engine.GITHUB in settings.engines:
        actions = ActionsReach(ActionsClient(github), settings.history, settings.pace(), settings.report_url,
                               settings.wait)  # fmt: skip
    targets = Targets(jenkins, actions, skip_contexts(settings.engines))
    return carry_out(preview, reply, replies, targets, github_output=github_output)


def carry_out(preview: Preview, reply: str, replies: Replies, targets: Targets, *, github_output: Path | None) -> int:
    """Post the reply, or act on Jenkins, GitHub Actions and GitHub for a dispatch; 1 when GitHub refused a
    post. With both engines, each acts in turn (an error of the first is raised after the second)."""
    decision, pr, request = preview.decision, preview.pr, preview.decision.request
    reach, actions = targets.jenkins, targets.actions
    if decision.action is not Action.DISPATCH or request is None:
        replies.comment(reply)
        if decision.unread is not None:  # GitHub could not give the change: said on the PR, an error here
            _not_read(replies, decision.unread, pr, request)
            return 1
    elif pr is not None and _pushed_after(replies, decision, pr):
        pass  # the command was written for an older head: the reply says so
    elif request.command is SubCommand.SKIP and pr is not None:
        skip(replies, pr, str(request.flags.get("comment", "")), reply, contexts=targets.skip_contexts)
    else:
        failed: DispatchError | None = None
        if reach is not None:
            try:
                _dispatch(on_jenkins(reach, replies), "Jenkins", preview, reply, replies, github_output=github_output)
            except DispatchError as error:
                if actions is None:
                    raise
                failed = error
        if actions is not None:
            _dispatch(on_actions(actions, replies), "GitHub", preview, reply, replies, github_output=github_output)
        if failed is not None:
            raise failed
    return 1 if replies.failures else 0


def _dispatch(engine: AbstractContextManager[OnEngine], service: str, preview: Preview, reply: str, replies: Replies,
              *, github_output: Path | None) -> None:  # fmt: skip
    """/bot run, kill or reuse-pipeline on one engine (`service`: who did not answer, when a kill or reuse could
    not finish: the commenter hears it, their reply is posted last, so none yet)."""
    decision, pr, request = preview.decision, preview.pr, preview.decision.request
    assert request is not None  # a dispatch's
    try:
        with engine as opened:
            if request.command is SubCommand.RUN and preview.plan is not None and pr is not None:
                started = opened.run(decision, preview.plan, pr, reply)
                if opened.wait and started.build is not None:
                    follow(opened.runs, started.build, preview.plan, login=decision.event.login, command=request.line)
                if github_output is not None and started.build is not None:
                    outputs = f"{opened.output}={started.build.number}\n{opened.output}_url={started.build.url}\n"
                    append_text(github_output, outputs, what="the GitHub outputs")
            elif request.command is SubCommand.KILL:
                kill(opened.runs, replies, decision.event.number, reply)
            elif request.command is SubCommand.REUSE_PIPELINE and pr is not None:
                reuse(opened.runs, replies, pr, reply, preview.head, may_skip=preview.may_skip)
    except DispatchError as error:
        if request.command in (SubCommand.KILL, SubCommand.REUSE_PIPELINE):
            replies.comment(could_not_reach(reply, f"/bot {request.command}", error, service=service))
        raise


def _not_read(replies: Replies, error: DispatchError, pr: PullRequest | None, request: BotRequest | None) -> None:
    """The error status of a /bot run refused because GitHub could not give the change, and the error line."""
    replies.err(f"error: {error}")
    if pr is not None and request is not None and request.command is SubCommand.RUN:
        replies.status(pr.head_sha, not_started(context_for(request.selection_request()), str(error)))


def _pushed_after(replies: Replies, decision: Decision, pr: PullRequest) -> bool:
    """Refuse (replying why) when the head was committed after the comment: a run, skip or reuse-pipeline
    applies to the head the commenter saw, never to one pushed since.

    GitHub's REST API tells no push time for an ordinary push. Two signs, either enough to refuse: the head's
    committer date (the committer's machine writes it) after the comment proves the head is newer; a date
    before it proves nothing (a back-dated commit pushed later), so the earliest check suite of the head,
    which GitHub creates when a push brings the commit, is asked too: created after the comment, the head
    arrived after it. A head with no check suite has only its date to go by; the build is pinned to the head
    read here (HEAD_SHA) either way, never to what a branch holds when Jenkins gets to it.
    """
    approved_at = decision.event.approved_at
    if approved_at is None:
        return False
    head = replies.github.commit(pr.repository, pr.head_sha)
    if head.committed_at > approved_at:
        when = f"committed at {utc_text(head.committed_at)}"
    else:  # a date before the comment proves nothing: when GitHub received the commit does
        received = replies.github.received_at(pr.repository, pr.head_sha)
        if received is None or received <= approved_at:
            return False
        when = f"pushed at {utc_text(received)} (when GitHub created its first check suite)"
    command = decision.request.line if decision.request else ""
    commented = utc_text(approved_at)
    replies.echo(f"refused: head {pr.head_sha[:12]} {when}, after the comment at {commented}")
    replies.comment(pushed_after_comment(decision.event.login, command, pr.head_sha, when, commented))
    return True


def skip(replies: Replies, pr: PullRequest, comment: str, reply: str, *,
         contexts: tuple[str, ...] = (FULL_BUILD_CONTEXT,)) -> None:  # fmt: skip
    lines = []
    for context in contexts:
        status = skipped(comment, context)
        replies.status(pr.head_sha, status)
        lines.append(f"Set {code(status.context)} to success on {pr.head_sha[:12]}.")
    replies.comment(with_lines(reply, lines, none=""))
