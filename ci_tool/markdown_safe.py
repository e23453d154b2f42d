"""Markdown that holds text from PR code (test ids, commands, output, rule reasons) without being changed
by it: code spans and blocks fenced longer than any backtick run inside, table cells without a bare `|`.
The bot's replies and the CI reports write through these.

Text read from the PR's files (test ids, stage names, waive reasons, failure messages and signatures, perf
case and metric names, stage reasons that quote them) goes into a code span or block, never into the
markdown itself: there a `@team` would notify, `![x](url)` load an image, a bare URL turn into a link and
`<b>` into HTML; inside code none of them does."""

from __future__ import annotations

import re


def code(text: object) -> str:
    """An inline code span holding `text` verbatim on one line, whatever backticks it contains."""
    value = " ".join(str(text).splitlines())
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {value} {fence}" if "`" in value else f"{fence}{value}{fence}"


def code_block(text: str) -> str:
    """A fenced code block holding `text` verbatim."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def cell(text: object) -> str:
    """Text for a table cell on one line: GitHub splits cells at `|` even inside code spans."""
    return " ".join(str(text).splitlines()).replace("|", "\\|")


def code_cell(text: object) -> str:
    """A code span holding `text`, for a table cell (GitHub renders `\\|` inside it as `|`)."""
    return cell(code(text))
