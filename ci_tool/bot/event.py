"""A GitHub `issue_comment` webhook payload -> what the bot does: ignore, help, refuse or dispatch.

    read_event(payload)  validates the fields the bot reads into a frozen CommentEvent (BotError otherwise)
    decide(event, allowlist) -> Decision, in this order:
      ignore    not created/edited; not on a pull request; written by a bot; not starting with `/bot`;
                edited by someone other than its author; an edit that left the command line unchanged;
                a closed pull request
      help      `/bot help` and any unknown sub-command, and any comment that does not parse (the reply
                shows the error with its caret), for anyone
      refuse    the author lacks the sub-command's permission
      dispatch  everything else (a `/bot run` is then resolved against the catalog: pr_bot/settle.py
                turns it into help for names the catalog lacks, or a refusal for missing approval labels)

An edit is decided like a new comment when its first line changed, so fixing a typo in place works,
while editing the prose under a command does not start a second run.  Pure: no files, no network.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from ci_tool.bot.authorize import Allowlist, Authorization, authorize
from ci_tool.bot.flags import SubCommand
from ci_tool.bot.grammar import command_line, is_bot_comment, parse_comment
from ci_tool.bot.parsed_comment import BotRequest, BotSyntaxError
from ci_tool.dispatch.model import IssueState
from ci_tool.errors import BotError, ColumnError, DispatchError, Where
from ci_tool.stages.approvals import MissingApproval

E = TypeVar("E", bound=enum.Enum)


class CommentAction(enum.StrEnum):
    """What happened to the comment (GitHub's `action` of an issue_comment event)."""

    CREATED = "created"
    EDITED = "edited"
    DELETED = "deleted"


ANSWERED = (CommentAction.CREATED, CommentAction.EDITED)  # a deleted comment asks for nothing


class Action(enum.Enum):
    IGNORE = "ignore"
    HELP = "help"
    REFUSE = "refuse"
    DISPATCH = "dispatch"


@dataclass(frozen=True)
class CommentEvent:
    """The fields of an `issue_comment` payload the bot reads."""

    action: CommentAction
    body: str
    login: str  # the comment's author
    association: str  # the author's association with the repository: OWNER, MEMBER, ...
    author_is_bot: bool
    sender: str  # who triggered the event (the editor, for an edit)
    repository: str  # owner/name
    number: int  # the issue or pull request number
    is_pull_request: bool
    state: IssueState
    labels: tuple[str, ...]
    comment_id: int
    previous_body: str | None = None  # for edits: the body before the edit, when GitHub sends it
    approved_at: float | None = None  # when the comment said what it says (its creation, or its edit): epoch s


@dataclass(frozen=True)
class Decision:
    """What to do about one comment, and why (`reason` is one line for the workflow log)."""

    action: Action
    reason: str
    event: CommentEvent
    request: BotRequest | None = None
    error: ColumnError | None = None  # a syntax error, or a catalog name the comment got wrong
    authorization: Authorization | None = None
    missing: tuple[MissingApproval, ...] = ()
    unread: DispatchError | None = None  # why GitHub could not give the pull request's change (bot/run_plan.py)


def read_event(payload: object, *, file: str = "<event>") -> CommentEvent:
    """Validate an `issue_comment` payload (parsed JSON) into a CommentEvent."""
    reader = _Reader(payload, file)
    labels = reader.get("issue.labels", list, default=[])
    changes = reader.get("changes.body.from", str, default=None)
    action = reader.choice("action", CommentAction)
    stamp = "comment.updated_at" if action is CommentAction.EDITED else "comment.created_at"
    return CommentEvent(
        action=action,
        body=reader.get("comment.body", str, default="") or "",
        login=reader.get("comment.user.login", str),
        association=reader.get("comment.author_association", str, default="NONE"),
        author_is_bot=reader.get("comment.user.type", str, default="User") == "Bot",
        sender=reader.get("sender.login", str),
        repository=reader.get("repository.full_name", str),
        number=reader.get("issue.number", int),
        is_pull_request=reader.get("issue.pull_request", dict, default=None) is not None,
        state=reader.choice("issue.state", IssueState, default=IssueState.OPEN),
        labels=tuple(reader.get(f"issue.labels[{i}].name", str) for i in range(len(labels))),
        comment_id=reader.get("comment.id", int, default=0),
        previous_body=changes,
        approved_at=reader.time(stamp),
    )


class _Reader:
    """Reads dotted paths (`issue.labels[0].name`) out of a JSON value, checking each type."""

    def __init__(self, payload: object, file: str) -> None:
        self.payload = payload
        self.file = file

    _MISSING = object()

    def time(self, path: str) -> float | None:
        """An ISO 8601 time (GitHub's `2026-06-01T12:00:00Z`) as seconds since the epoch; None when absent."""
        text = self.get(path, str, default=None)
        if text is None:
            return None
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise BotError(
                f"expected an ISO 8601 time at {path!r}, found {text!r}", where=Where(self.file, yaml_path=path)
            ) from None
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()

    def choice(self, path: str, kind: type[E], *, default: E | None = None) -> E:
        """One of an enum's values (the enum's values are the JSON's strings); required without a default."""
        text = self.get(path, str) if default is None else self.get(path, str, default=default.value)
        try:
            return kind(text)
        except ValueError:
            values = [repr(item.value) for item in kind]
            expected = " or ".join(values) if len(values) == 2 else f"one of {', '.join(values)}"
            raise BotError(
                f"expected {expected} at {path!r}, found {text!r}", where=Where(self.file, yaml_path=path)
            ) from None

    def get(self, path: str, kind: type, default: object = _MISSING) -> Any:
        value: object = self.payload
        for part in path.replace("[", ".[").split("."):
            if part.startswith("["):
                index = int(part[1:-1])
                value = value[index] if isinstance(value, list) and index < len(value) else None
            else:
                value = value.get(part) if isinstance(value, Mapping) else None
            if value is None:
                break
        if value is None:
            if default is self._MISSING:
                raise BotError(
                    f"expected an issue_comment event with {path!r}, found none", where=Where(self.file, yaml_path=path)
                )
            return default
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise BotError(
                f"expected {kind.__name__} at {path!r}, found {type(value).__name__}",
                where=Where(self.file, yaml_path=path),
            )
        return value


def _ignored(event: CommentEvent) -> str | None:
    """Why a comment needs no answer, or None when it does."""
    if event.action not in ANSWERED:
        return f"action {event.action.value!r} is not a new or edited comment"
    if not event.is_pull_request:
        return "comment on an issue, not on a pull request"
    if event.author_is_bot:
        return f"comment by the bot account {event.login!r}"
    if not is_bot_comment(event.body):
        return "comment does not start with /bot"
    if event.action is CommentAction.EDITED:
        if event.sender.lower() != event.login.lower():
            return f"comment by {event.login!r} edited by {event.sender!r}"
        if event.previous_body is not None and command_line(event.previous_body) == command_line(event.body):
            return "edit left the command line unchanged"
    if event.state is not IssueState.OPEN:
        return f"pull request #{event.number} is {event.state}"
    return None


def decide(event: CommentEvent, allowlist: Allowlist) -> Decision:
    """Decide what to do about one comment (see the module docstring for the order)."""
    why = _ignored(event)
    if why is not None:
        return Decision(Action.IGNORE, why, event)
    try:
        request = parse_comment(event.body)
    except BotSyntaxError as error:
        return Decision(Action.HELP, f"syntax error at column {error.col}", event, error=error)
    if request.command is None:  # _ignored saw /bot first; a comment the grammar reads otherwise is ignored too
        return Decision(Action.IGNORE, "comment does not start with /bot", event)
    if request.command is SubCommand.HELP:
        return Decision(
            Action.HELP,
            "help asked for" if request.unknown_command is None else f"unknown sub-command {request.unknown_command!r}",
            event,
            request,
        )
    authorization = authorize(allowlist, command=request.command, login=event.login, association=event.association)
    if not authorization.allowed:
        return Decision(
            Action.REFUSE,
            f"{event.login!r} lacks the {str(authorization.permission)!r} permission ({authorization.via})",
            event,
            request,
            authorization=authorization,
        )
    return Decision(
        Action.DISPATCH,
        f"/bot {request.command} by {event.login!r} ({authorization.via})",
        event,
        request,
        authorization=authorization,
    )


def dispatch_payload(decision: Decision) -> dict[str, object]:
    """What a dispatcher receives for a DISPATCH decision: the parsed request and where it came from."""
    if decision.request is None:
        raise ValueError("only a dispatch decision has a request to dispatch")
    event = decision.event
    return {
        **decision.request.to_json(),
        "repository": event.repository,
        "pull_request": event.number,
        "comment_id": event.comment_id,
        "requested_by": event.login,
        "custom_run": decision.request.is_custom_run,
    }
