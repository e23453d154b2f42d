"""/bot run: the comment claimed, the reply, the older runs stopped, the trigger (idempotent:
dispatch/trigger.py), and the reply and pending status saying where the build is (or why none started)."""

from __future__ import annotations

import json

from ci_tool.bot.event import Decision
from ci_tool.bot.plan import RunPlan
from ci_tool.bot.reply import (
    cancelled_in_queue,
    could_not_start,
    queued,
    triggered,
    with_lines,
)
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
    context = context_for(request)
    marker = reply_marker(event.comment_id)
    reply = reply.rstrip("\n") + f"\n{marker}\n"
    reply_id: int | None = None
    claim: Claim | None = None
    try:
        found = resume_or_claim(services.jenkins, services.history, dispatch, services.pace, echo=services.echo,
                                wall=services.wall, claim=lambda: services.replies.claim(event.comment_id))  # fmt: skip
        if isinstance(found, Claimed):
            claim = found.claim
            reply_id = services.replies.reply_once(marker, reply)
            started = _trigger(services, dispatch, pr, reply, reply_id, context)
        else:
            started = found
    except QueueWait:
        raise
    except DispatchError as error:
        _not_started(services, dispatch, error, reply=reply, reply_id=reply_id, claim=claim, context=context)
        raise
    return started


def _not_started(
    services: Services,
    dispatch: Dispatch,
    error: DispatchError,
    *,
    reply: str,
    reply_id: int | None,
    claim: Claim | None,
    context: str,
) -> None:
    """The reply says why no build started, the status is an error, and the claim is given back; unless an
    earlier handling of the comment started a build (the ledger or Jenkins knows it): that one is left alone."""
    known = find_dispatch(services.history, dispatch.key)
    if (known is not None and (known.queue_id or known.build_number)) or _in_jenkins(services, dispatch):
        return
    marker = reply_marker(dispatch.key.comment_id)
    if reply_id is None:
        services.replies.reply_once(marker, could_not_start(reply, error))
    else:
        services.replies.edit(reply_id, could_not_start(reply, error))
    services.replies.status(dispatch.head_sha, not_started(context, str(error)))
    services.replies.release(dispatch.key.comment_id, claim)  # nothing started: handling it again may trigger


def reply_marker(comment_id: int) -> str:
    """An invisible line in the reply to a comment, by which handling the comment again finds that reply."""
    return f"<!-- ci-tool: the reply to comment {comment_id} -->"


def _in_jenkins(services: Services, dispatch: Dispatch) -> bool:
    """Whether Jenkins shows the dispatch's item or build (False when Jenkins cannot be asked either)."""
    try:
        return find_in_jenkins(services.jenkins, dispatch) is not None
    except DispatchError:
        return False


def _trigger(
    services: Services, dispatch: Dispatch, pr: PullRequest, reply: str, reply_id: int | None, context: str
) -> Started:
    """Stop the older runs, trigger, and edit the reply and the status to say where the build is."""
    older = stop_pull_request(services.jenkins, services.job, pr.number)
    try:
        started = trigger(services.jenkins, services.history, dispatch, services.pace, echo=services.echo,
                          wall=services.wall)  # fmt: skip
    except QueueWait as waiting:  # say where it waits, then the error
        services.replies.edit(reply_id, queued(reply, waiting.queue_url))
        services.replies.status(pr.head_sha, Status(context, StatusState.PENDING, "queued in Jenkins",
                                                    waiting.queue_url))  # fmt: skip
        raise
    lines = mark_stopped(services, older, started.build)
    if started.build is not None:
        build = started.build
        services.echo(f"triggered: build {build.number} {build.url}")
        text = triggered(reply, build.number, build.url, services.job, head_sha=pr.head_sha)
        services.replies.edit(reply_id, with_lines(text, lines, none=""))
        services.replies.status(pr.head_sha, pending(context, build))
    else:
        queue_url = services.jenkins.url + f"queue/item/{started.queue_id}/"
        services.echo(f"cancelled: queue item {started.queue_id} was cancelled before it started a build")
        services.replies.edit(reply_id, cancelled_in_queue(reply, queue_url))
        services.replies.status(pr.head_sha, cancelled_status(context, queue_url))
    return started
