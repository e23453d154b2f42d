"""What `bot handle` decided about a comment and read for it: the value a dispatch carries out (free of the
HTTP clients, so the command builds it before it imports them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ci_tool.bot.event import Decision
from ci_tool.bot.plan import RunPlan
from ci_tool.dispatch.model import PullRequest
from ci_tool.stages.request import SelectionRequest


@dataclass(frozen=True)
class Answer:
    """What `bot handle` decided about a comment, with what it read and planned."""

    decision: Decision
    reply: str
    pr: PullRequest | None  # read for run, skip and reuse-pipeline
    plan: RunPlan | None  # for a /bot run
    plan_for: Callable[[SelectionRequest], RunPlan]  # plans another request the same way (reuse-pipeline)
    may_skip: bool = False  # the commenter holds kill_skip (reuse-pipeline of a build of other code)
