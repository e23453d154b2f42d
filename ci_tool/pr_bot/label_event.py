"""The three GitHub events the approval-label guard answers (pr_bot/labels.py), read from their payloads:

    pull_request_review  a review was submitted (its reviewer, state, and the PR's labels)
    workflow_run         the approval signal workflow completed (the PR number comes from its artifact, the
                         reviews from the API: the payload of a fork's signal is not trusted)
    pull_request_target  a label was applied (its name, the PR, and who applied it)

Which one a payload is follows from its keys (`review`, `workflow_run`, `pull_request`), the same for the
`pull_request` and `pull_request_target` events. A field the guard needs that is missing or of another type
is a BotError naming its path; only the sender of a label may be unreadable, and the guard then removes it.
Pure: no files, no network.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ci_tool.dispatch.reviews import Review, ReviewState
from ci_tool.errors import BotError, Where

EVENTS = "a pull_request_review, workflow_run or pull_request_target event"


@dataclass(frozen=True)
class ReviewSubmitted:
    """A `pull_request_review` event."""

    repository: str
    number: int
    action: str  # submitted, edited, dismissed
    review: Review
    labels: tuple[str, ...]
    open: bool


@dataclass(frozen=True)
class SignalCompleted:
    """A `workflow_run` event: the read-only signal workflow ran on a review (its artifact names the PR)."""

    repository: str
    workflow: str
    triggered_by: str  # the event that ran the signal workflow
    conclusion: str | None  # success, failure, ... (None: not completed)


@dataclass(frozen=True)
class LabelApplied:
    """A `pull_request_target` (or `pull_request`) event about the PR's labels."""

    repository: str
    number: int
    action: str  # labeled, unlabeled, opened, ...
    label: str | None  # None: the event names no label (not a label event)
    sender: str | None  # who applied it; None when the payload does not say (the guard fails closed)


LabelEvent = ReviewSubmitted | SignalCompleted | LabelApplied


def read_label_event(payload: object, *, file: str = "<event>") -> LabelEvent:
    """The event a payload (parsed JSON) is, with the fields the guard reads; BotError on anything else."""
    get = _Fields(payload, file)
    if not isinstance(payload, Mapping):
        raise BotError(f"expected {EVENTS} (a JSON object), found {type(payload).__name__}", where=Where(file))
    repository = get("repository.full_name", str)
    if "review" in payload:
        state = get("review.state", str).upper()
        return ReviewSubmitted(
            repository=repository,
            number=get("pull_request.number", int),
            action=get("action", str),
            review=Review(get("review.user.login", str), _state(state, file)),
            labels=get.labels("pull_request.labels"),
            open=get("pull_request.state", str) == "open",
        )
    if "workflow_run" in payload:
        return SignalCompleted(
            repository=repository,
            workflow=get("workflow_run.name", str),
            triggered_by=get("workflow_run.event", str),
            conclusion=get("workflow_run.conclusion", str, required=False),
        )
    if "pull_request" in payload:
        return LabelApplied(
            repository=repository,
            number=get("pull_request.number", int),
            action=get("action", str),
            label=get("label.name", str, required=False),
            sender=get.text_or_none("sender.login"),
        )
    found = ", ".join(repr(key) for key in sorted(map(str, payload))) or "none"
    raise BotError(
        f"expected {EVENTS} (with 'review', 'workflow_run' or 'pull_request'), found the keys {found}",
        where=Where(file),
        hint="pass $GITHUB_EVENT_PATH of the approval-labels or approval-signal workflow",
    )


def _state(text: str, file: str) -> ReviewState:
    try:
        return ReviewState(text)
    except ValueError:
        states = ", ".join(repr(state.value.lower()) for state in ReviewState)
        raise BotError(
            f"expected one of {states} at 'review.state', found {text.lower()!r}",
            where=Where(file, yaml_path="review.state"),
        ) from None


class _Fields:
    """Reads dotted paths (`review.user.login`) out of a payload, checking each type."""

    def __init__(self, payload: object, file: str) -> None:
        self.payload = payload
        self.file = file

    def __call__(self, path: str, kind: type, *, required: bool = True) -> Any:
        value: object = self.payload
        for part in path.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is None:
            if required:
                raise BotError(f"expected {EVENTS} with {path!r}, found none", where=Where(self.file, yaml_path=path))
            return None
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise BotError(
                f"expected {kind.__name__} at {path!r}, found {type(value).__name__}",
                where=Where(self.file, yaml_path=path),
            )
        return value

    def text_or_none(self, path: str) -> str | None:
        """The text at `path`, or None when it is missing, empty or not text (the caller fails closed)."""
        value: object = self.payload
        for part in path.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        return value if isinstance(value, str) and value else None

    def labels(self, path: str) -> tuple[str, ...]:
        found = self(path, list, required=False) or []
        return tuple(self._name(item, f"{path}[{index}].name") for index, item in enumerate(found))

    def _name(self, item: object, path: str) -> str:
        name = item.get("name") if isinstance(item, Mapping) else None
        if not isinstance(name, str):
            raise BotError(
                f"expected str at {path!r}, found {type(name).__name__}", where=Where(self.file, yaml_path=path)
            )
        return name
