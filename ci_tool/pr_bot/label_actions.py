"""`ci-tool bot labels`: one event -> the label guard's decision (pr_bot/labels.py) -> carried out on GitHub.

    pull_request_review   decided from the event itself
    workflow_run          the approval signal: its PR number (`--pull`, from the signal's artifact) is all it
                          takes from the fork's run; the PR's state, labels and reviews are read through the API
    pull_request_target   decided from the event itself (`labeled`)

A removal comments only when it removed the label (a rerun finds it gone and stays quiet). An allowlist that
cannot be read fails closed (pr_bot/labels.py) and the command then ends with that error (exit 1), after
removing the label, so the broken allowlist shows in the workflow's run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ci_tool.bot.authorize import parse_allowlist
from ci_tool.errors import BotError, DispatchError
from ci_tool.json_file import read_json
from ci_tool.layout import GITHUB_TOKEN_ENV
from ci_tool.pr_bot.label_event import LabelApplied, LabelEvent, ReviewSubmitted, SignalCompleted, read_label_event
from ci_tool.pr_bot.labels import (
    Approvers,
    LabelAction,
    LabelDecision,
    decide_approval,
    decide_labeled,
    from_review,
    refused_unread,
)
from ci_tool.text_file import read_text

if TYPE_CHECKING:  # PyGithub: only when GitHub is asked
    from ci_tool.dispatch.github import GitHubClient

SIGNAL_EVENT = "pull_request_review"  # what runs approval-signal.yml
SIGNAL_CONCLUSION = "success"  # a signal run that failed (or was skipped: no approval) uploaded no number
_PULL_NUMBER = re.compile(r"[1-9][0-9]{0,9}")


def read_approvers(path: str, *, bot_login: str) -> tuple[Approvers, BotError | None]:
    """The allowlist's approvers, or nobody with the error that kept it from being read (fail closed)."""
    try:
        allowlist = parse_allowlist(read_text(path, name="the allowlist", error=BotError), file=path)
    except BotError as error:
        return Approvers(frozenset(), path, bot_login, unreadable=str(error)), error
    return Approvers(allowlist.approve, path, bot_login), None


def parse_pull_number(text: str | None, event: LabelEvent) -> int | None:
    """`--pull`: the number the approval signal uploaded (untrusted: digits only), for a workflow_run event only."""
    if not isinstance(event, SignalCompleted):
        if text is not None:
            raise BotError(
                "expected --pull only with a workflow_run event, found it with another event",
                hint="leave --pull out: the event names its pull request",
            )
        return None
    if text is None:
        raise BotError(
            "expected --pull N with a workflow_run event (the number the approval signal uploaded), found none"
        )
    if not _PULL_NUMBER.fullmatch(text.strip()):
        raise BotError(
            f"expected a pull request number in --pull, found {text[:40]!r}",
            hint="the approval signal's artifact holds the number alone",
        )
    return int(text.strip())


@dataclass(frozen=True)
class GitHubReach:
    """How the guard reaches GitHub: a client made on first use (a decision needing no reads makes none)."""

    api_url: str
    dry_run: bool

    def client(self) -> GitHubClient:
        token = os.environ.get(GITHUB_TOKEN_ENV)
        if not token:
            raise DispatchError(
                f"expected a GitHub token in {GITHUB_TOKEN_ENV} to read and change the pull request's labels, "
                "found none",
                hint="in Actions pass `GITHUB_TOKEN: ${{ github.token }}`",
            )
        from ci_tool.dispatch.github import GitHubClient

        return GitHubClient(self.api_url, token=token)


def decide(event: LabelEvent, approvers: Approvers, pull: int | None, reach: GitHubReach) -> LabelDecision:
    """The decision about one event; a workflow_run reads the pull request's reviews first."""
    if isinstance(event, ReviewSubmitted):
        pulled = from_review(event)
        return pulled if isinstance(pulled, LabelDecision) else decide_approval(pulled, approvers)
    if isinstance(event, LabelApplied):
        return decide_labeled(event, approvers)
    if event.triggered_by != SIGNAL_EVENT:
        return LabelDecision(
            LabelAction.NOTHING,
            f"the run of {event.workflow!r} was triggered by {event.triggered_by!r}, not by {SIGNAL_EVENT!r}",
        )
    if event.conclusion != SIGNAL_CONCLUSION:
        return LabelDecision(
            LabelAction.NOTHING,
            f"the approval signal {event.workflow!r} ended "
            f"{event.conclusion or 'without a conclusion'!r}, not {SIGNAL_CONCLUSION!r}",
        )
    if pull is None:  # parse_pull_number requires it for a workflow_run
        raise BotError("expected --pull N with a workflow_run event, found none")
    unreadable = refused_unread(pull, approvers)  # decided without reading GitHub: nothing will be added
    if unreadable is not None:
        return unreadable
    from ci_tool.dispatch.labels import pull_reviews

    return decide_approval(pull_reviews(reach.client(), event.repository, pull), approvers)


def carry_out(decision: LabelDecision, repository: str, reach: GitHubReach, *, echo: Callable[[str], None]) -> None:
    """Add or remove the label (with its comment); a dry run only says what it would do."""
    if decision.action is LabelAction.NOTHING or decision.number is None or decision.label is None:
        return
    if reach.dry_run:
        echo(f"would {decision.action.value} {decision.label!r} on #{decision.number}")
        if decision.comment is not None:
            echo(f"would comment: {decision.comment}")
        return
    from ci_tool.dispatch.labels import add_label, remove_label

    client = reach.client()
    if decision.action is LabelAction.ADD:
        add_label(client, repository, decision.number, decision.label)
        echo(f"added {decision.label!r} to #{decision.number}")
        return
    if not remove_label(client, repository, decision.number, decision.label):
        echo(f"#{decision.number} no longer has {decision.label!r}: nothing removed, no comment")
        return
    echo(f"removed {decision.label!r} from #{decision.number}")
    if decision.comment is not None:
        client.comment(repository, decision.number, decision.comment)


@dataclass(frozen=True)
class LabelInputs:
    """What `bot labels` reads: the event, `--pull` (a workflow_run's), the allowlist, and the bot's login."""

    event_path: Path
    pull_text: str | None
    allowlist_path: Path
    bot_login: str


def guard_labels(inputs: LabelInputs, reach: GitHubReach, *, echo: Callable[[str], None]) -> None:
    """`bot labels`: decide about one event and carry the decision out; an allowlist that could not be read is
    raised after (fail closed: the decision was made with nobody an approver)."""
    event_file = str(inputs.event_path)
    event = read_label_event(read_json(inputs.event_path, name="the event", error=BotError), file=event_file)
    pull = parse_pull_number(inputs.pull_text, event)
    approvers, unreadable = read_approvers(str(inputs.allowlist_path), bot_login=inputs.bot_login)
    decision = decide(event, approvers, pull, reach)
    echo(f"decision: {decision.action.value}: {decision.reason}")
    carry_out(decision, event.repository, reach, echo=echo)
    if unreadable is not None:
        raise unreadable
