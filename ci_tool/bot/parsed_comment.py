"""The values the `/bot` grammar produces: a parsed BotRequest, or a BotSyntaxError with a column and a caret."""

from __future__ import annotations

from dataclasses import dataclass, field

from ci_tool.bot.flags import SubCommand
from ci_tool.errors import BotError, ColumnError
from ci_tool.stages.selection_request import RequestSource, SelectionRequest

FlagValue = bool | str | tuple[str, ...]
NOT_A_COMMAND = "ignore"  # what `bot parse` prints for a comment that is not a /bot comment

class BotSyntaxError(ColumnError, BotError):
    """A `/bot` comment that does not parse: a message, a 1-based column and the line to echo."""


@dataclass(frozen=True)
class BotRequest:
    """A parsed comment. `command` is its sub-command (`/bot` alone or an unknown word: help), None when the
    comment is not a /bot comment (its JSON says "ignore").

    `values` holds (JSON key, value) in flag-table order: True for switches, a tuple of strings for
    lists, a string for text and for a `--reuse-test` pipeline id.  `columns` keeps, per key, the
    column of the flag and then of each list item, so later checks (catalog, approvals) can point
    at the comment too.
    """

    command: SubCommand | None
    values: tuple[tuple[str, FlagValue], ...] = ()
    line: str = ""
    columns: tuple[tuple[str, tuple[int, ...]], ...] = field(default=(), compare=False)
    unknown_command: str | None = None  # the word after /bot when it named no sub-command
    prose: str = ""  # trailing remarks after the flags

    @property
    def flags(self) -> dict[str, FlagValue]:
        return dict(self.values)

    def has(self, key: str) -> bool:
        return any(k == key for k, _ in self.values)

    def items(self, key: str) -> tuple[str, ...]:
        """The items of a list flag, () when absent."""
        value = self.flags.get(key, ())
        return value if isinstance(value, tuple) else ()

    @property
    def is_custom_run(self) -> bool:
        """A partial selection: the run may not set the merge gate green."""
        return self.command is SubCommand.RUN and self.selection_request().custom_run

    def selection_request(self) -> SelectionRequest:
        """The selection request a `/bot run` comment asks for, pointing back at its columns: the one
        place a comment becomes what the selection reads."""
        if self.command is not SubCommand.RUN:
            raise BotError(f"expected a /bot run request to select stages, found {self.words}")
        source = RequestSource(self.line, dict(self.columns))
        return SelectionRequest(**dict(self.values), source=source)  # type: ignore[arg-type]  # run flag keys

    def column(self, key: str, index: int | None = None) -> int:
        """The column of a flag, or of its `index`-th list item."""
        cols = dict(self.columns)[key]
        return cols[0] if index is None else cols[1 + index]

    def to_json(self) -> dict[str, object]:
        """The command and its flags; an empty list (`--stage-list ""`) is left out, as the selection takes it:
        what CI receives reads back as the request the selection ran."""
        flags = {key: list(value) if isinstance(value, tuple) else value for key, value in self.values if value != ()}
        return {"command": self.command or NOT_A_COMMAND, "flags": flags}

    @property
    def words(self) -> str:
        """`/bot run`, for messages (`a comment that is not /bot` when it is none)."""
        return f"/bot {self.command}" if self.command else "a comment that is not /bot"
