"""The approval-label guard's decision table (pr_bot/labels.py), its events (pr_bot/label_event.py) and `--pull`."""

from __future__ import annotations

import pytest

from ci_tool.dispatch.reviews import PullReviews, Review, ReviewState
from ci_tool.errors import BotError
from ci_tool.pr_bot.label_actions import parse_pull_number
from ci_tool.pr_bot.label_event import LabelApplied, ReviewSubmitted, SignalCompleted, read_label_event
from ci_tool.pr_bot.labels import Approvers, LabelAction, LabelDecision, decide_approval, decide_labeled, from_review

FULL, POST = "ci: full pre-merge approved", "ci: post-merge approved"
SOURCE = ".github/ci-bot-allowlist.yml"
APPROVERS = Approvers(frozenset({"approver-ann", "approver-bob"}), SOURCE)
UNREADABLE = Approvers(frozenset(), SOURCE, unreadable=f"{SOURCE}:1:1: unknown key 'aprove'")
A, C, R, D = ReviewState.APPROVED, ReviewState.COMMENTED, ReviewState.CHANGES_REQUESTED, ReviewState.DISMISSED


def pull(*reviews: tuple[str, ReviewState], labels: tuple[str, ...] = (), open: bool = True) -> PullReviews:
    return PullReviews(7, open, labels, tuple(Review(login, state) for login, state in reviews))


@pytest.mark.parametrize(
    ("reviews", "labels", "action", "reason"),
    [
        ([("Approver-Ann", A)], (), LabelAction.ADD, f"adding {FULL!r} to #7: approved by 'Approver-Ann'"),
        (
            [("approver-ann", A), ("approver-bob", A)],
            (),
            LabelAction.ADD,
            f"adding {FULL!r} to #7: approved by 'approver-ann', 'approver-bob'",
        ),
        (
            [("approver-ann", A), ("approver-ann", C)],
            (),
            LabelAction.ADD,
            f"adding {FULL!r} to #7: approved by 'approver-ann'",
        ),
        (
            [("drive-by", A)],
            (),
            LabelAction.NOTHING,
            f"not adding {FULL!r} to #7: approved by 'drive-by', none of them listed under 'approve' in {SOURCE}",
        ),
        (
            [("approver-ann", A), ("approver-ann", R)],
            (),
            LabelAction.NOTHING,
            f"not adding {FULL!r} to #7: no reviewer's latest review approves",
        ),
        (
            [("approver-ann", A), ("approver-ann", D)],
            (),
            LabelAction.NOTHING,
            f"not adding {FULL!r} to #7: no reviewer's latest review approves",
        ),
        (
            [("approver-ann", R), ("approver-ann", A)],
            (),
            LabelAction.ADD,
            f"adding {FULL!r} to #7: approved by 'approver-ann'",
        ),
        (
            [("approver-ann", C)],
            (),
            LabelAction.NOTHING,
            f"not adding {FULL!r} to #7: no reviewer's latest review approves",
        ),
        ([("approver-ann", A)], (FULL,), LabelAction.NOTHING, f"pull request #7 already has {FULL!r}"),
    ],
    ids=[
        "approver",
        "two approvers",
        "comment keeps approval",
        "non-approver",
        "changes requested after",
        "dismissed",
        "approved after changes",
        "comment only",
        "label already there",
    ],
)
def test_an_approvers_latest_review_decides(
    reviews: list[tuple[str, ReviewState]], labels: tuple[str, ...], action: LabelAction, reason: str
) -> None:
    decision = decide_approval(pull(*reviews, labels=labels), APPROVERS)
    assert (decision.action, decision.reason) == (action, reason)
    assert decision.label == (FULL if action is LabelAction.ADD else None)


def test_a_closed_pull_request_gets_no_label() -> None:
    decision = decide_approval(pull(("approver-ann", A), open=False), APPROVERS)
    assert (decision.action, decision.reason) == (LabelAction.NOTHING, "pull request #7 is closed")


def test_an_unreadable_allowlist_adds_nothing() -> None:
    decision = decide_approval(pull(("approver-ann", A)), UNREADABLE)
    assert decision == LabelDecision(
        LabelAction.NOTHING,
        f"not adding {FULL!r} to #7: who may approve could not be read ({SOURCE}:1:1: unknown key 'aprove')",
        7,
    )


def test_only_a_submitted_review_counts() -> None:
    event = ReviewSubmitted("o/r", 7, "edited", Review("approver-ann", A), (), True)
    assert from_review(event) == LabelDecision(LabelAction.NOTHING, "review action 'edited' is not a submitted review")
    assert from_review(ReviewSubmitted("o/r", 7, "submitted", Review("approver-ann", A), (POST,), True)) == pull(
        ("approver-ann", A), labels=(POST,)
    )


WHO_FULL = (
    f"Only the approvers listed under `approve` in `{SOURCE}` (@approver-ann, @approver-bob) may apply it. "
    f"`{FULL}` is applied automatically when one of them approves the pull request."
)


@pytest.mark.parametrize(
    ("event", "approvers", "decision"),
    [
        (
            LabelApplied("o/r", 7, "labeled", FULL, "drive-by"),
            APPROVERS,
            LabelDecision(
                LabelAction.REMOVE,
                f"removing {FULL!r} from #7: 'drive-by' is not listed under 'approve' in {SOURCE}",
                7,
                FULL,
                f"Removed the label `{FULL}` that @drive-by applied. {WHO_FULL}",
            ),
        ),
        (
            LabelApplied("o/r", 7, "labeled", POST, "drive-by"),
            APPROVERS,
            LabelDecision(
                LabelAction.REMOVE,
                f"removing {POST!r} from #7: 'drive-by' is not listed under 'approve' in {SOURCE}",
                7,
                POST,
                f"Removed the label `{POST}` that @drive-by applied. Only the approvers listed under `approve` "
                f"in `{SOURCE}` (@approver-ann, @approver-bob) may apply it.",
            ),
        ),
        (
            LabelApplied("o/r", 7, "labeled", POST, "Approver-Bob"),
            APPROVERS,
            LabelDecision(
                LabelAction.NOTHING, f"{POST!r} was applied by 'Approver-Bob', listed under 'approve' in {SOURCE}", 7
            ),
        ),
        (
            LabelApplied("o/r", 7, "labeled", FULL, "github-actions[bot]"),
            UNREADABLE,
            LabelDecision(LabelAction.NOTHING, f"{FULL!r} was applied by the bot itself ('github-actions[bot]')", 7),
        ),
        (
            LabelApplied("o/r", 7, "labeled", FULL, "approver-ann"),
            UNREADABLE,
            LabelDecision(
                LabelAction.REMOVE,
                f"removing {FULL!r} from #7: who may apply it could not be read ({SOURCE}:1:1: unknown key 'aprove')",
                7,
                FULL,
                f"Removed the label `{FULL}` that @approver-ann applied: who may apply it could not be read "
                f"({SOURCE}:1:1: unknown key 'aprove'). Only the approvers listed under `approve` in `{SOURCE}` "
                f"may apply it. Approval labels are removed until `{SOURCE}` can be read. "
                f"`{FULL}` is applied automatically when one of them approves the pull request.",
            ),
        ),
        (
            LabelApplied("o/r", 7, "labeled", FULL, None),
            APPROVERS,
            LabelDecision(
                LabelAction.REMOVE,
                f"removing {FULL!r} from #7: who applied it could not be read from the event",
                7,
                FULL,
                f"Removed the label `{FULL}`: who applied it could not be read from the event. {WHO_FULL}",
            ),
        ),
        (
            LabelApplied("o/r", 7, "labeled", "bug", "drive-by"),
            APPROVERS,
            LabelDecision(LabelAction.NOTHING, "'bug' is not an approval label", 7),
        ),
        (
            LabelApplied("o/r", 7, "unlabeled", FULL, "drive-by"),
            APPROVERS,
            LabelDecision(LabelAction.NOTHING, "action 'unlabeled' applies no label", 7),
        ),
        (
            LabelApplied("o/r", 7, "opened", None, "drive-by"),
            APPROVERS,
            LabelDecision(LabelAction.NOTHING, "action 'opened' applies no label", 7),
        ),
    ],
    ids=[
        "non-approver full",
        "non-approver post-merge",
        "approver",
        "bot, allowlist unreadable",
        "allowlist unreadable",
        "sender unreadable",
        "other label",
        "unlabeled",
        "not a label event",
    ],
)
def test_who_applied_an_approval_label_decides(
    event: LabelApplied, approvers: Approvers, decision: LabelDecision
) -> None:
    assert decide_labeled(event, approvers) == decision


def test_nobody_listed_says_so_in_the_comment() -> None:
    decision = decide_labeled(LabelApplied("o/r", 7, "labeled", POST, "x"), Approvers(frozenset(), SOURCE))
    assert decision.comment == (
        f"Removed the label `{POST}` that @x applied. "
        f"Only the approvers listed under `approve` in `{SOURCE}` may apply it."
    )


REVIEW = {
    "action": "submitted",
    "review": {"state": "approved", "user": {"login": "approver-ann"}},
    "pull_request": {"number": 7, "state": "open", "labels": [{"name": "bug"}]},
    "repository": {"full_name": "o/r"},
}
RUN = {
    "action": "completed",
    "workflow_run": {"name": "approval-signal", "event": "pull_request_review", "conclusion": "success"},
    "repository": {"full_name": "o/r"},
}
LABELED = {
    "action": "labeled",
    "label": {"name": FULL},
    "pull_request": {"number": 7},
    "sender": {"login": "x"},
    "repository": {"full_name": "o/r"},
}


@pytest.mark.parametrize(
    ("payload", "event"),
    [
        (REVIEW, ReviewSubmitted("o/r", 7, "submitted", Review("approver-ann", A), ("bug",), True)),
        (RUN, SignalCompleted("o/r", "approval-signal", "pull_request_review", "success")),
        (LABELED, LabelApplied("o/r", 7, "labeled", FULL, "x")),
        ({**LABELED, "sender": {"login": 5}}, LabelApplied("o/r", 7, "labeled", FULL, None)),
        ({**LABELED, "sender": None}, LabelApplied("o/r", 7, "labeled", FULL, None)),
    ],
    ids=["review", "workflow_run", "labeled", "sender not text", "no sender"],
)
def test_events_read(payload: dict[str, object], event: object) -> None:
    assert read_label_event(payload, file="e.json") == event


EVENTS = "a pull_request_review, workflow_run or pull_request_target event"


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ([], f"e.json: expected {EVENTS} (a JSON object), found list"),
        (
            {"repository": {"full_name": "o/r"}, "issue": {}},
            f"e.json: expected {EVENTS} (with 'review', 'workflow_run' or 'pull_request'), found the keys 'issue', "
            "'repository' Hint: pass $GITHUB_EVENT_PATH of the approval-labels or approval-signal workflow",
        ),
        (
            {**REVIEW, "review": {"state": "approved"}},
            f"e.json (review.user.login): expected {EVENTS} with 'review.user.login', found none",
        ),
        (
            {**REVIEW, "review": {"state": "sure", "user": {"login": "a"}}},
            "e.json (review.state): expected one of 'approved', 'changes_requested', 'commented', 'dismissed', "
            "'pending' at 'review.state', found 'sure'",
        ),
        (
            {**LABELED, "pull_request": {"number": "7"}},
            "e.json (pull_request.number): expected int at 'pull_request.number', found str",
        ),
        (
            {**REVIEW, "pull_request": {"number": 7, "state": "open", "labels": [{"name": 3}]}},
            "e.json (pull_request.labels[0].name): expected str at 'pull_request.labels[0].name', found int",
        ),
    ],
    ids=["not an object", "other event", "no reviewer", "unknown state", "number as text", "label not text"],
)
def test_event_errors_are_pinned(payload: object, message: str) -> None:
    with pytest.raises(BotError) as caught:
        read_label_event(payload, file="e.json")
    assert str(caught.value) == message


SIGNAL = SignalCompleted("o/r", "approval-signal", "pull_request_review", "success")


@pytest.mark.parametrize(("text", "number"), [("42", 42), ("42\n", 42), (" 7 ", 7)])
def test_the_signals_number_reads(text: str, number: int) -> None:
    assert parse_pull_number(text, SIGNAL) == number


@pytest.mark.parametrize(
    ("text", "event", "message"),
    [
        (
            None,
            SIGNAL,
            "expected --pull N with a workflow_run event (the number the approval signal uploaded), found none",
        ),
        (
            "42; rm -rf /",
            SIGNAL,
            "expected a pull request number in --pull, found '42; rm -rf /' Hint: the approval "
            "signal's artifact holds the number alone",
        ),
        (
            "0",
            SIGNAL,
            "expected a pull request number in --pull, found '0' Hint: the approval signal's artifact holds "
            "the number alone",
        ),
        (
            "7",
            LabelApplied("o/r", 7, "labeled", FULL, "x"),
            "expected --pull only with a workflow_run event, found "
            "it with another event Hint: leave --pull out: the event names its pull request",
        ),
    ],
    ids=["missing", "not digits", "zero", "not a workflow_run"],
)
def test_pull_number_errors_are_pinned(text: str | None, event: object, message: str) -> None:
    with pytest.raises(BotError) as caught:
        parse_pull_number(text, event)  # type: ignore[arg-type]
    assert str(caught.value) == message
