"""/bot run, one flow for every engine: the run a handling of the comment already started is followed, else the
comment is claimed (the bot's reaction: one handling wins), one reply posted (edited when the comment is handled
again) and the run started; when nothing started, the reply and an error status say why and the claim is given
back, so that handling the comment again may start it. What differs between triggering a Jenkins build and
dispatching a GitHub Actions run is the engine's Starting (run.py, actions_run.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ci_tool.dispatch.github import Claim
from ci_tool.dispatch.model import Status
from ci_tool.dispatch.trigger import Claimed, QueueWait, Started
from ci_tool.errors import DispatchError
from ci_tool.pr_bot.services import Replies


@dataclass(frozen=True)
class NotStarted:
    """What the pull request hears when nothing started: the reply and the status."""

    reply: str
    status: Status


class Starting(Protocol):
    """One dispatch of a /bot run on one engine."""

    def resume_or_claim(self, claim: Callable[[], Claim | None]) -> Started | Claimed:
        """The run an earlier handling started (the ledger or the engine knows it, or the claim's winner
        started it), or the claim this handling holds (`claim()` asks for it): start the run."""

    def start(self, reply: str, reply_id: int | None) -> Started:
        """Stop the pull request's older runs, start this one, and edit the reply and the status to say where
        it is (QueueWait: where it waits)."""

    def started_earlier(self) -> bool:
        """Whether an earlier handling of the comment started something, which a failure now leaves alone."""

    def not_started(self, reply: str, error: DispatchError) -> NotStarted:
        """The reply and status saying why nothing started."""


def start_once(starting: Starting, replies: Replies, *, comment_id: int, head_sha: str, marker: str,
               reply: str) -> Started:  # fmt: skip
    """/bot run (see the module docstring); `marker`: the hidden line by which handling the comment again
    finds this reply."""
    reply = reply.rstrip("\n") + f"\n{marker}\n"
    reply_id: int | None = None
    claim: Claim | None = None
    try:
        found = starting.resume_or_claim(lambda: replies.claim(comment_id))
        if isinstance(found, Started):
            return found
        claim = found.claim
        reply_id = replies.reply_once(marker, reply)
        return starting.start(reply, reply_id)
    except QueueWait:
        raise
    except DispatchError as error:
        if not starting.started_earlier():
            said = starting.not_started(reply, error)
            if reply_id is None:
                replies.reply_once(marker, said.reply)
            else:
                replies.edit(reply_id, said.reply)
            replies.status(head_sha, said.status)
            replies.release(comment_id, claim)  # nothing started: handling the comment again may start it
        raise
