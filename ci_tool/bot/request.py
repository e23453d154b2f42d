"""The values the `/bot` grammar produces: a parsed BotRequest, or a BotSyntaxError with a column and a caret."""

from __future__ import annotations

from dataclasses import dataclass, field

from ci_tool.bot.flags import flag_by_key
from ci_tool.errors import BotError

FlagValue = bool | str | tuple[str, ...]

_ECHO_WIDTH = 100  # characters of a long comment line echoed around the column


class BotSyntaxError(BotError):
    """A `/bot` comment that does not parse: a message, a 1-based column and the line to echo."""

    def __init__(self, message: str, *, line: str, col: int, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.line = line
        self.col = col

    @property
    def headline(self) -> str:
        """The one-line message with its hint, without the column."""
        return f"{self.message} Hint: {self.hint}" if self.hint else self.message

    def caret(self) -> str:
        """Two lines: the comment line (a window of it when long) and a caret under the column."""
        start = max(0, min(self.col - 1 - _ECHO_WIDTH // 2, len(self.line) - _ECHO_WIDTH))
        end = start + _ECHO_WIDTH
        shown = "".join(c if c.isprintable() else " " for c in self.line[start:end])
        before = "…" if start > 0 else ""
        after = "…" if end < len(self.line) else ""
        return f"{before}{shown}{after}\n{' ' * (len(before) + self.col - 1 - start)}^"

    def __str__(self) -> str:
        echo = "\n".join("  " + row for row in self.caret().splitlines())
        return f"/bot comment, column {self.col}: {self.headline}\n{echo}"


@dataclass(frozen=True)
class BotRequest:
    """A parsed comment. `command` is a sub-command name, "help" or "ignore" (not a /bot comment).

    `values` holds (JSON key, value) in flag-table order: True for switches, a tuple of strings for
    lists, a string for text and for a `--reuse-test` pipeline id.  `columns` keeps, per key, the
    column of the flag and then of each list item, so later checks (catalog, approvals) can point
    at the comment too.
    """

    command: str
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
        """A partial selection (reference §4.9): the run may not set the merge gate green."""
        return any(flag_by_key(key).custom_run for key, _ in self.values)

    def column(self, key: str, index: int | None = None) -> int:
        """The column of a flag, or of its `index`-th list item."""
        cols = dict(self.columns)[key]
        return cols[0] if index is None else cols[1 + index]

    def error_at(self, key: str, index: int | None, message: str, hint: str | None = None) -> BotSyntaxError:
        """An error pointing at a flag or list item of this comment (for checks made after parsing)."""
        return BotSyntaxError(message, line=self.line, col=self.column(key, index), hint=hint)

    def to_json(self) -> dict[str, object]:
        flags = {key: list(value) if isinstance(value, tuple) else value for key, value in self.values}
        return {"command": self.command, "flags": flags}
