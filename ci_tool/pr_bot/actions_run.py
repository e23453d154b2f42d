"""/bot run on GitHub Actions (start.py's flow): the pull request's older runs cancelled, the generated
workflow dispatched on the default branch (its trusted file) for the head commit, with the request, labels and
base the reply previewed (idempotent: dispatch/actions_trigger.py), and the reply and pending status linking
the run (or saying why none started). --wait follows it (follow.py; its artifacts: on_actions.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from ci_tool.bot.event import Decision
from ci_tool.bot.reply import code, with_lines
from ci_tool.bot.run_plan import RunPlan
from ci_tool.bot.status import actions_context_for
from ci_tool.dispatch.actions_trigger import (
    ActionsDispatch,
    cancel_pull_request,
    dispatch_run,
    resume_or_claim,
)
from ci_tool.dispatch.github import Claim
from ci_tool.dispatch.model import PullRequest, Status, StatusState
from ci_tool.dispatch.run_name import request_digest
from ci_tool.dispatch.trigger import Claimed, QueueWait, Started
from ci_tool.errors import DispatchError
from ci_tool.history.ledger import DispatchKey, find_dispatch
from ci_tool.pr_bot.actions_services import ActionsServices, mark_cancelled, run_link
from ci_tool.pr_bot.start import NotStarted, start_once


def actions_reply_marker(comment_id: int) -> str:
    """The hidden line by which handling a comment again finds its GitHub Actions reply (apart from its Jenkins
    reply, run.py's, where a project runs both engines)."""
    return f"<!-- ci-tool: the GitHub Actions reply to comment {comment_id} -->"


def actions_dispatch(services: ActionsServices, decision: Decision, plan: RunPlan, pr: PullRequest) -> ActionsDispatch:
    """The dispatch of a /bot run: the inputs of l0-test.yml (the generated workflow's workflow_dispatch)."""
    request_json = json.dumps(plan.selection.request.to_json())
    comment_id = decision.event.comment_id
    inputs = {
        "request": request_json,
        "labels": json.dumps(list(pr.labels)),
        "base_ref": pr.base_ref,
        "head_sha": pr.head_sha,
        "pr_number": str(pr.number),
        "comment_id": str(comment_id),
        "request_digest": request_digest(request_json),
    }
    key = DispatchKey(f"{services.client.api_url}/repos/{pr.repository}", services.client.workflow, comment_id,
                      request_json)  # fmt: skip
    return ActionsDispatch(key, pr.repository, pr.number, pr.head_sha, services.ref, inputs)


def run(services: ActionsServices, decision: Decision, plan: RunPlan, pr: PullRequest, reply: str) -> Started:
    """/bot run: see the module docstring."""
    dispatch = actions_dispatch(services, decision, plan, pr)
    comment_id = decision.event.comment_id
    return start_once(Dispatching(services, dispatch, actions_context_for(plan.selection.request)), services.replies,
                      comment_id=comment_id, head_sha=pr.head_sha, marker=actions_reply_marker(comment_id),
                      reply=reply)  # fmt: skip


@dataclass(frozen=True)
class Dispatching:
    """A /bot run's workflow run on GitHub Actions (start.py's Starting): the ledger tells whether it started."""

    services: ActionsServices
    dispatch: ActionsDispatch
    context: str

    def resume_or_claim(self, claim: Callable[[], Claim | None]) -> Started | Claimed:
        services = self.services
        found = resume_or_claim(services.client, services.history, self.dispatch, services.pace, echo=services.echo,
                                wall=services.wall, claim=claim)  # fmt: skip
        return found if isinstance(found, Started) else Claimed(found)

    def start(self, reply: str, reply_id: int | None) -> Started:
        """Cancel the older runs, dispatch, and edit the reply and the status to say where the run is."""
        services, replies, dispatch, context = self.services, self.services.replies, self.dispatch, self.context
        client = services.client
        older = cancel_pull_request(client, dispatch.repository, dispatch.ref, dispatch.pull_request)
        try:
            started = dispatch_run(client, services.history, dispatch, services.pace, echo=services.echo,
                                   wall=services.wall)  # fmt: skip
        except QueueWait as waiting:
            note = (f"dispatched: [{client.workflow}]({waiting.queue_url}) on GitHub Actions, which has not listed "
                    "the run yet; the bot follows it when the comment is handled again.")  # fmt: skip
            replies.edit(reply_id, reply.rstrip("\n") + f"\n\n{note}\n")
            replies.status(dispatch.head_sha, Status(context, StatusState.PENDING, "dispatched to GitHub Actions",
                                                     waiting.queue_url))  # fmt: skip
            raise
        run = started.build
        assert run is not None  # a dispatch found its run, or raised
        lines = mark_cancelled(services, older, run)
        services.echo(f"dispatched: run {run.number} {run.url}")
        preview = (
            "The plan above is a preview from the pull request as the GitHub API shows it: the run selects again on "
            f"the commit {code(dispatch.head_sha[:12])}, and its final CI report lists what ran."
        )
        text = reply.rstrip("\n") + f"\n\ndispatched: {run_link(run)} on GitHub Actions\n\n{preview}\n"
        replies.edit(reply_id, with_lines(text, lines, none=""))
        replies.status(dispatch.head_sha, Status(context, StatusState.PENDING, f"run {run.number} started", run.url))
        return started

    def started_earlier(self) -> bool:
        """The ledger holds its run."""
        known = find_dispatch(self.services.history, self.dispatch.key)
        return known is not None and known.build_number is not None

    def not_started(self, reply: str, error: DispatchError) -> NotStarted:
        note = (
            f"**Could not start the run**: {code(str(error))}\n\n"
            "Nothing is running for this comment: comment `/bot run` again once GitHub Actions answers."
        )
        description = f"could not start the run: {error}"
        return NotStarted(reply.rstrip("\n") + f"\n\n{note}\n", Status(self.context, StatusState.ERROR,
                                                                        description[:139]))  # fmt: skip
