"""What `waive propose` and `waive verify` share: reading the waives file they diff, and writing the diff
(stdout, or a new `--output` file: an existing file is never replaced)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from ci_tool import output_files
from ci_tool.atomic import refuse_existing, write_text_new
from ci_tool.errors import TestDbError
from ci_tool.testdb.waives import Waive, parse_waives
from ci_tool.text_file import read_text

output_option = click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the diff to this new file (an existing file is never replaced) instead of stdout.",
)


def read_waives_text(path: Path) -> tuple[str | None, list[Waive]]:
    """The waives file's text and waives (None and none when there is no file); a malformed line is refused:
    a diff over a file its reader rejects would not apply as meant."""
    if not path.exists():
        return None, []
    text = read_text(path, name="the waives file", error=TestDbError)
    waives, problems = parse_waives(text, str(path))
    if problems:
        first = problems[0]
        raise TestDbError(first.message, where=first.where, hint=f"{first.hint + '; ' if first.hint else ''}fix the "
                          "waives file first (`ci-tool testdb check` lists every problem)")  # fmt: skip
    return text, waives


OUTPUT_HINT = "pass another --output, or move that file away first"


def check_output(output: Path | None, *, what: str) -> None:
    """Refuse an --output that exists before any work is done for it."""
    if output is not None:
        refuse_existing(output, what=what, hint=OUTPUT_HINT)


def write_diff(diff: str, output: Path | None, *, what: str) -> None:
    """The diff on stdout, or in a new file `output` (never over one that exists)."""
    if output is None:
        click.echo(diff, nl=False)
        return
    write_text_new(output, diff, what=what, hint=OUTPUT_HINT)
    output_files.record([output])  # a proposal to review, never a change to the code
    click.echo(f"wrote {what} to {output}", err=True)


def shown_path(path: Path) -> str:
    """The waives file as the diff names it: relative to the current folder when under it."""
    relative = os.path.relpath(path.absolute(), Path.cwd())
    return Path(relative).as_posix() if not relative.startswith("..") else path.as_posix()
