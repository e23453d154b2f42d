"""The error hierarchy: one base class, one subclass per domain, each rendered as one line (a bot
comment's syntax error adds the comment and a caret: bot.parsed_comment.BotSyntaxError).

A message says where (file:line:col and YAML path, or a column in a bot comment), what was expected,
what was found, and a hint when one exists.  Only the CLI entry point turns these into exit codes.
Many errors show MAX_SHOWN_ERRORS in full and count the rest (capped, not_shown).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")
# One comment can name thousands of unknown stages, each error echoing the comment with a caret: replies
# and command output show this many in full and count the rest.
MAX_SHOWN_ERRORS = 5


@dataclass(frozen=True)
class Where:
    """A location in a user's file: `file:line:col` plus an optional YAML path such as `l0_a10[0].tests[3]`."""

    file: str | None = None
    line: int | None = None  # 1-based
    col: int | None = None  # 1-based
    yaml_path: str | None = None

    def __str__(self) -> str:
        place = self.file or "<input>"
        if self.line is not None:
            place += f":{self.line}"
            if self.col is not None:
                place += f":{self.col}"
        if self.yaml_path:
            place += f" ({self.yaml_path})"
        return place


class CiToolError(Exception):
    """Base of every error ci-tool reports to a user (exit code 1)."""

    def __init__(
        self,
        message: str,
        *,
        where: Where | None = None,
        hint: str | None = None,
        problems: Sequence[CiToolError] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint
        self.problems = tuple(problems)  # an input's every problem, each a line under this one (raise_all)

    def __str__(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        if self.hint:
            text += f" Hint: {self.hint}"
        return "\n".join([text, *("  " + str(problem) for problem in self.problems)])


class ColumnError(CiToolError):
    """An error at a column of one line the user wrote (a `/bot` comment): three lines, the message with
    its column, the line (a window of it when long) and a caret under the column."""

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


_ECHO_WIDTH = 100  # characters of a long comment line echoed around the column


class TestDbError(CiToolError):
    """A test-db YAML file, test line or waive that is malformed, or a render that selects nothing."""

    __test__ = False  # not a pytest test class despite the name


class SysinfoError(CiToolError):
    """A system-info file that cannot be read or does not hold a JSON object."""


class StageError(CiToolError):
    """A stage catalog entry, stage name or selection that is invalid."""


class ShardError(CiToolError):
    """Sharding input that cannot be split as asked (bad durations file, more shards than tests)."""


class BotError(CiToolError):
    """A `/bot` comment that does not parse or does not validate against the catalog."""


class GenerateError(CiToolError):
    """Generated files that are stale or cannot be rendered."""


class RunError(CiToolError):
    """A local stage run that cannot start or whose results cannot be read."""


class SlurmError(CiToolError):
    """A Slurm command refused or failed a request (sbatch, squeue, scontrol, scancel, sacct)."""


class HistoryError(CiToolError):
    """The history (a SQLite file or a PostgreSQL database) cannot be opened, read or written, or holds an
    unknown run."""


class ReportError(CiToolError):
    """A report or dashboard that cannot be written where it was asked for."""


class DispatchError(CiToolError):
    """A remote CI service (Jenkins, GitHub) refused or failed a request."""


class GitError(CiToolError):
    """git could not answer a question about the checkout (an unknown revision, a failed command)."""


def raise_all(problems: Sequence[CiToolError], file: str) -> None:
    """Raise an input's problems at once: one as it is; several as one error of the first's domain that
    counts them and lists each on a line of its own (a user fixes them all in one pass, not one per try)."""
    if not problems:
        return
    if len(problems) == 1:
        raise problems[0]
    raise all_problems(problems, file)


def all_problems(problems: Sequence[CiToolError], file: str) -> CiToolError:
    """One error of the first problem's domain listing `problems` (at least two) of `file`, in the order they
    stand in the file (whichever check found them)."""
    domain = type(problems[0]) if type(problems[0]).__init__ is CiToolError.__init__ else CiToolError
    ordered = sorted(problems, key=_position)
    return domain(f"{len(problems)} problems, each on a line below", where=Where(file), problems=ordered)


def _position(problem: CiToolError) -> tuple[str, int, int]:
    where = problem.where or Where()
    return where.file or "", where.line or 0, where.col or 0


def closest(name: str, choices: Iterable[str], *, limit: int = 3) -> list[str]:
    """The choices that look most like `name`, best first (for 'did you mean' hints)."""
    return difflib.get_close_matches(name, list(choices), n=limit, cutoff=0.6)


def did_you_mean(name: str, choices: Iterable[str]) -> str | None:
    """A hint naming the closest choices, or None when nothing is close."""
    matches = closest(name, choices)
    if not matches:
        return None
    return "did you mean " + " or ".join(repr(m) for m in matches) + "?"


def shown(text: str, *, limit: int = 60) -> str:
    """`text` as a message shows what was found: its repr, cut short (with its length) when longer than `limit`."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[: limit // 2]!r}... ({len(text)} characters)"


def capped(items: Sequence[T], *, limit: int = MAX_SHOWN_ERRORS) -> tuple[Sequence[T], int]:
    """The first `limit` items, and how many more there are."""
    return items[:limit], max(0, len(items) - limit)


def and_more(count: int, noun: str) -> str:
    """`and 12 more errors` (`and 1 more error`), "" for none."""
    return f"and {count} more {noun}{'' if count == 1 else 's'}" if count else ""


def not_shown(count: int) -> str:
    """The line after capped errors: `and 12 more errors, not shown`, "" for none."""
    return f"{and_more(count, 'error')}, not shown" if count else ""


class PerfError(CiToolError):
    """A perf-sanity config, a baseline file or a perf command's input that is invalid."""


class BuildError(CiToolError):
    """A build (`ci-tool build`) that cannot be made, or a build folder that is not this checkout's."""
