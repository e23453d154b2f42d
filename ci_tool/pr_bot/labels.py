"""Keeping the approval labels honest (TensorRT-LLM's full-premerge-approval.yml and post-merge-approval.yml):
one GitHub event, the approvers, the bot's own login -> add a label, remove one with a comment, or nothing.

    event                                   decision
    an approving review (pull_request_review,  add `ci: full pre-merge approved` when an approver's latest
      or the signal's workflow_run with the    review approves and the PR lacks the label (a later
      PR's reviews read through the API)       comment-only review leaves an approval standing)
    a label applied (pull_request_target)      an approval label applied by anyone but an approver or the bot
                                               itself is removed, with a comment naming who may apply it
    anything else                              nothing, with why

Approvers are the logins under `approve:` in the allowlist (bot/authorize.py); no author association makes
one. Fail closed: when the allowlist cannot be read nobody is an approver, so no label is added and an
approval label just applied (by anyone but the bot) is removed; a label whose sender is unreadable is
removed too. Pure: the command reads the files and GitHub and carries the decision out (pr_bot/label_actions.py).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from ci_tool.bot.authorize import APPROVE_KEY
from ci_tool.dispatch.reviews import DECISIVE_STATES, PullReviews, Review, ReviewState
from ci_tool.pr_bot.label_event import LabelApplied, ReviewSubmitted
from ci_tool.stages.approvals import FULL_PRE_MERGE_APPROVED, POST_MERGE_APPROVED

APPROVAL_LABELS = (FULL_PRE_MERGE_APPROVED, POST_MERGE_APPROVED)
AUTO_APPLIED = FULL_PRE_MERGE_APPROVED  # what an approver's approving review applies
DEFAULT_BOT_LOGIN = "github-actions[bot]"  # who GITHUB_TOKEN acts as


class LabelAction(enum.Enum):
    ADD = "add"
    REMOVE = "remove"
    NOTHING = "nothing"


@dataclass(frozen=True)
class Approvers:
    """Who may apply the approval labels: the allowlist's `approve` logins (lower case), from `source`.

    `unreadable` says why the allowlist could not be read; then nobody is an approver (fail closed)."""

    logins: frozenset[str]
    source: str  # the allowlist file, as comments name it
    bot_login: str = DEFAULT_BOT_LOGIN
    unreadable: str | None = None

    def may_apply(self, login: str) -> bool:
        return self.unreadable is None and login.lower() in self.logins

    def is_bot(self, login: str) -> bool:
        return login.lower() == self.bot_login.lower()


@dataclass(frozen=True)
class LabelDecision:
    """What to do about one event and why (`reason`: one line for the workflow log)."""

    action: LabelAction
    reason: str
    number: int | None = None  # the pull request (None: nothing to do on one)
    label: str | None = None
    comment: str | None = None  # with REMOVE: the comment posted on the pull request


def from_review(event: ReviewSubmitted) -> PullReviews | LabelDecision:
    """A submitted review as the pull request's reviews (the event's own review is the reviewer's latest)."""
    if event.action != "submitted":
        return LabelDecision(LabelAction.NOTHING, f"review action {event.action!r} is not a submitted review")
    return PullReviews(event.number, event.open, event.labels, (event.review,))


def decide_approval(pull: PullReviews, approvers: Approvers) -> LabelDecision:
    """Add AUTO_APPLIED when an approver's latest decisive review approves and the PR lacks it."""
    number = pull.number
    unreadable = refused_unread(number, approvers)
    if unreadable is not None:
        return unreadable
    if not pull.open:
        return LabelDecision(LabelAction.NOTHING, f"pull request #{number} is closed", number)
    if AUTO_APPLIED in pull.labels:
        return LabelDecision(LabelAction.NOTHING, f"pull request #{number} already has {AUTO_APPLIED!r}", number)
    latest = latest_reviews(pull.reviews)
    approving = sorted(login for login, state in latest.items() if state is ReviewState.APPROVED)
    by_approvers = [login for login in approving if approvers.may_apply(login)]
    if not by_approvers:
        found = ", ".join(f"{login!r}" for login in approving)
        why = f"approved by {found}, none of them listed under {APPROVE_KEY!r} in {approvers.source}"
        why = why if approving else "no reviewer's latest review approves"
        return LabelDecision(LabelAction.NOTHING, f"not adding {AUTO_APPLIED!r} to #{number}: {why}", number)
    names = ", ".join(repr(login) for login in by_approvers)
    return LabelDecision(
        LabelAction.ADD, f"adding {AUTO_APPLIED!r} to #{number}: approved by {names}", number, AUTO_APPLIED
    )


def refused_unread(number: int, approvers: Approvers) -> LabelDecision | None:
    """Nothing added (fail closed) when who may approve could not be read; None when it could."""
    if approvers.unreadable is None:
        return None
    why = f"who may approve could not be read ({approvers.unreadable})"
    return LabelDecision(LabelAction.NOTHING, f"not adding {AUTO_APPLIED!r} to #{number}: {why}", number)


def latest_reviews(reviews: Iterable[Review]) -> dict[str, ReviewState]:
    """Each reviewer's latest decisive review state (logins as GitHub spells them), oldest reviews first."""
    latest: dict[str, ReviewState] = {}
    for review in reviews:
        if review.state in DECISIVE_STATES:
            latest[review.login] = review.state
    return latest


def decide_labeled(event: LabelApplied, approvers: Approvers) -> LabelDecision:
    """Remove an approval label applied by anyone but an approver or the bot itself, with a comment."""
    number, label, sender = event.number, event.label, event.sender
    if event.action != "labeled" or label is None:
        return LabelDecision(LabelAction.NOTHING, f"action {event.action!r} applies no label", number)
    if label not in APPROVAL_LABELS:
        return LabelDecision(LabelAction.NOTHING, f"{label!r} is not an approval label", number)
    if sender is None:
        why = "who applied it could not be read from the event"
        return _remove(number, label, why, approvers, f"Removed the label `{label}`: {why}.")
    if approvers.is_bot(sender):
        return LabelDecision(LabelAction.NOTHING, f"{label!r} was applied by the bot itself ({sender!r})", number)
    if approvers.unreadable is not None:
        why = f"who may apply it could not be read ({approvers.unreadable})"
        return _remove(number, label, why, approvers, f"Removed the label `{label}` that @{sender} applied: {why}.")
    if approvers.may_apply(sender):
        why = f"{label!r} was applied by {sender!r}, listed under {APPROVE_KEY!r} in {approvers.source}"
        return LabelDecision(LabelAction.NOTHING, why, number)
    why = f"{sender!r} is not listed under {APPROVE_KEY!r} in {approvers.source}"
    return _remove(number, label, why, approvers, f"Removed the label `{label}` that @{sender} applied.")


def _remove(number: int, label: str, why: str, approvers: Approvers, opening: str) -> LabelDecision:
    reason = f"removing {label!r} from #{number}: {why}"
    return LabelDecision(LabelAction.REMOVE, reason, number, label, f"{opening} {who_may_apply(label, approvers)}")


def who_may_apply(label: str, approvers: Approvers) -> str:
    """The sentences of a removal comment that name who may apply `label`."""
    listed = ", ".join(f"@{login}" for login in sorted(approvers.logins)) if approvers.unreadable is None else ""
    who = f"the approvers listed under `{APPROVE_KEY}` in `{approvers.source}`" + (f" ({listed})" if listed else "")
    text = f"Only {who} may apply it."
    if approvers.unreadable is not None:
        text += f" Approval labels are removed until `{approvers.source}` can be read."
    if label == AUTO_APPLIED:
        text += f" `{AUTO_APPLIED}` is applied automatically when one of them approves the pull request."
    return text
