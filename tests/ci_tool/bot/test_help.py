"""`/bot help` and docs/bot.md come from the flag table; the committed docs/bot.md is fresh."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tool.bot.flags import COMMANDS, FLAGS, Flag, SubCommand, flags_of
from ci_tool.bot.help import render_help
from ci_tool.generate.targets import TARGETS
from ci_tool.layout import BOT_DOCS_PATH
from ci_tool.stages.approvals import FULL_PRE_MERGE_APPROVED, POST_MERGE_APPROVED

ROOT = Path(__file__).resolve().parents[3]


def render_docs() -> str:
    """docs/bot.md as `ci-tool generate` renders it (the catalog does not enter it)."""
    (docs,) = [target for target in TARGETS if target.path == BOT_DOCS_PATH]
    return docs.render(None)  # type: ignore[arg-type]


def test_the_docs_are_a_generated_file_and_the_committed_copy_is_fresh() -> None:
    assert (ROOT / BOT_DOCS_PATH).read_text(encoding="utf-8") == render_docs()


@pytest.mark.parametrize("flag", flags_of(SubCommand.RUN), ids=[f.name for f in flags_of(SubCommand.RUN)])
def test_help_lists_every_run_flag_once_with_its_help_line(flag: Flag) -> None:
    help_text = render_help()
    row = f"| `{flag.usage}` | {flag.help} |"
    assert help_text.count(row) == 1


def test_help_lists_commands_and_labels() -> None:
    help_text = render_help()
    assert all(f"`{c.usage}`" in help_text for c in COMMANDS)
    assert f"`{FULL_PRE_MERGE_APPROVED}`" in help_text and f"`{POST_MERGE_APPROVED}`" in help_text


def test_docs_list_every_flag_with_its_json_key() -> None:
    docs = render_docs()
    assert all(f"`{flag.key}`" in docs for flag in FLAGS)


def test_the_docs_cite_no_document_outside_the_repository() -> None:
    """Users read docs/bot.md on its own: it speaks in plain words, not in sections of notes it does not hold."""
    assert [line for line in render_docs().splitlines() if "reference" in line or "§" in line] == []
