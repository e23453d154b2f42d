"""`/bot help` and docs/bot.md come from the flag table; the committed docs/bot.md is fresh."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from ci_tool.bot.approvals import FULL_PRE_MERGE_APPROVED, POST_MERGE_APPROVED
from ci_tool.bot.flags import COMMANDS, FLAGS, Flag, flags_of
from ci_tool.bot.help import DOCS_PATH, render_docs, render_help

ROOT = Path(__file__).resolve().parents[3]


def test_committed_docs_are_fresh(update_goldens: bool) -> None:
    path = ROOT / DOCS_PATH
    expected = render_docs()
    if update_goldens:
        path.write_text(expected, encoding="utf-8")
    actual = path.read_text(encoding="utf-8")
    diff = "".join(difflib.unified_diff(actual.splitlines(True), expected.splitlines(True), DOCS_PATH, "rendered"))
    assert not diff, f"{DOCS_PATH} is stale; run pytest tests/ci_tool/bot --update-goldens\n{diff}"


@pytest.mark.parametrize("flag", flags_of("run"), ids=[f.name for f in flags_of("run")])
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
