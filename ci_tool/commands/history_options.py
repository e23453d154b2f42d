"""`--history`: the SQLite file or PostgreSQL URL of the history, which every verb that reads or writes
it takes (its default: $CI_TOOL_HISTORY, else .ci-tool/history.sqlite; history/store.py)."""

from __future__ import annotations

from pathlib import Path

import click

from ci_tool.history.locator import History, PostgresUrl, locate


class HistoryType(click.ParamType):
    """`--history`: a SQLite file's path or a `postgresql://` URL (locator.py)."""

    name = "PATH|URL"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> History:
        if isinstance(value, Path | PostgresUrl):
            return value
        return locate(str(value))


HISTORY = HistoryType()
history_option = click.option(
    "--history",
    "history_file",
    type=HISTORY,
    help="SQLite history file or postgresql://USER@HOST:PORT/DB URL [default: $CI_TOOL_HISTORY, else "
    ".ci-tool/history.sqlite].",
)
