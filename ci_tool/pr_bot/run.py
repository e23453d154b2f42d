"""/bot run on Jenkins (start.py's flow): the older builds stopped, the trigger (idempotent:
dispatch/trigger.py), and the reply and pending status saying where the build is (or why none started)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from ci_tool.bot.event import Decision
from ci_tool.bot.reply import (
    cancelled_in_queue,
    could_not_start,
    queued,
    triggered,
    with_lines,
)
from ci_tool.bot.run_plan import RunPlan
from ci_tool.bot.status import cancelled as cancelled_status
from ci_tool.bot.status import context_for, not_started, pending
from ci_tool.dispatch.github import Claim
from ci_tool.dispatch.model import PullRequest, Status, StatusState
from ci_tool.dispatch.trigger import (
    Claimed,
    Dispatch,
    QueueWait,
    Started,
    find_in_jenkins,
    resume_or_claim,
    stop_pull_request,
    trigger,
)
from ci_tool.errors import DispatchError
from ci_tool.history.ledger import DispatchKey, find_dispatch
from ci_tool.pr_bot.services import Services, mark_stopped
from ci_tool.pr_bot.start import NotStarted, start_once


def run(services: Services, decision: Decision, plan: RunPlan, pr: PullRequest, reply: str) -> Started:
    """/bot run: see the module docstring."""
    request = plan.selection.request
    request_json = json.dumps(request.to_json())
    event = decision.event
    parameters = {
        "REQUEST": request_json,
        "LABELS": json.dumps(list(pr.labels)),
        "PR_NUMBER": str(pr.number),
        "HEAD_SHA": pr.head_sha,
        "COMMENT_ID": str(event.comment_id),
        "BASE_REF": pr.base_ref,
        "PRIORITY": str(plan.selection.queue_priority),
    }
    key = DispatchKey(services.jenkins.url, services.job, event.comment_id, request_json)
    dispatch = Dispatch(key, pr.repository, pr.number, pr.head_sha, parameters)
    return start_once(Triggering(services, dispatch, pr, context_for(request)), services.replies,
                      comment_id=event.comment_id, head_sha=pr.head_sha, marker=reply_marker(event.comment_id),
                      reply=reply)  # fmt: skip


@dataclass(frozen=True)
class Triggering:
    """A /bot run's build on Jenkins (start.py's Starting): the ledger and Jenkins tell whether it started."""

    services: Services
    dispatch: Dispatch
    pr: PullRequest
    context: str

    def resume_or_claim(self, claim: Callable[[], Claim | None]) -> Started | Claimed:
        services = self.services
        return resume_or_claim(services.jenkins, services.history, self.dispatch, services.pace,
                               echo=services.echo, wall=services.wall, claim=claim)  # fmt: skip

    def start(self, reply: str, reply_id: int | None) -> Started:
        """Stop the older builds, trigger, and edit the reply and the status to say where the build is."""
        services, replies, pr, context = self.services, self.services.replies, self.pr, self.context
        older = stop_pull_request(services.jenkins, services.job, pr.number)
        try:
            started = trigger(services.jenkins, services.history, self.dispatch, services.pace, echo=services.echo,
                              wall=services.wall)  # fmt: skip
        except QueueWait as waiting:  # say where it waits, then the error
            replies.edit(reply_id, queued(reply, waiting.queue_url))
            replies.status(pr.head_sha, Status(context, StatusState.PENDING, "queued in Jenkins", waiting.queue_url))
            raise
        lines = mark_stopped(services, older, started.build)
        if started.build is not None:
            build = started.build
            services.echo(f"triggered: build {build.number} {build.url}")
            text = triggered(reply, build.number, build.url, services.job, head_sha=pr.head_sha)
            replies.edit(reply_id, with_lines(text, lines, none=""))
            replies.status(pr.head_sha, pending(context, build))
        else:
            queue_url = services.jenkins.url + f"queue/item/{started.queue_id}/"
            services.echo(f"cancelled: queue item {started.queue_id} was cancelled before it started a build")
            replies.edit(reply_id, cancelled_in_queue(reply, queue_url))
            replies.status(pr.head_sha, cancelled_status(context, queue_url))
        return started

    def started_earlier(self) -> bool:
        """The ledger holds its queue item or build, or Jenkins shows one (False when Jenkins cannot be asked
        either)."""
        known = find_dispatch(self.services.history, self.dispatch.key)
        if known is not None and (known.queue_id or known.build_number):
            return True
        try:
            return find_in_jenkins(self.services.jenkins, self.dispatch) is not None
        except DispatchError:
            return False

    def not_started(self, reply: str, error: DispatchError) -> NotStarted:
        return NotStarted(could_not_start(reply, error), not_started(self.context, str(error)))


def reply_marker(comment_id: int) -> str:
    """An invisible line in the reply to a comment, by which handling the comment again finds that reply."""
    return f"<!-- ci-tool: the reply to comment {comment_id} -->"
