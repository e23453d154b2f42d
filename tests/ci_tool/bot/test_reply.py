"""Replies: comment text stays inside code, so a comment cannot inject markdown or mentions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tool.bot.authorize import Allowlist
from ci_tool.bot.event import Action, decide, read_event
from ci_tool.bot.reply import render_reply
from ci_tool.cli import main
from ci_tool.markdown_safe import code, code_block
from tests.ci_tool.change.checkout import pull_request_checkout

FIXTURES = Path(__file__).parent / "fixtures"


def event_with(body: str, association: str = "MEMBER") -> object:
    payload = json.loads((FIXTURES / "event_run_member.json").read_text(encoding="utf-8"))
    payload["comment"]["body"] = body
    payload["comment"]["author_association"] = association
    return payload


@pytest.mark.parametrize(
    ("text", "span"),
    [("a", "`a`"), ("a`b", "`` a`b ``"), ("``x", "``` ``x ```"), ("", "``")],
)
def test_code_span_fences_outgrow_the_backticks_inside(text: str, span: str) -> None:
    assert code(text) == span


def test_code_block_fence_outgrows_the_backticks_inside() -> None:
    assert code_block("x ```` y") == "`````text\nx ```` y\n`````"


def test_a_changed_files_name_in_a_rule_reason_stays_in_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PR's file names reach the plan's reasons: escaping would still leave the mention and the links
    live on GitHub; a code span leaves none."""
    name = "src/@NVIDIA/team www.evil.example <b>x</b> ![i](evil.png).py"  # a path: no "//"
    monkeypatch.chdir(pull_request_checkout(tmp_path / "checkout", {name: "x = 1\n"}))
    catalog = ("--catalog", str(FIXTURES / "stages.yml"), "--test-db", str(FIXTURES / "test-db"))
    assert main(["bot", "plan", "/bot run", "--base", "main", "--head", "pr", *catalog]) == 0
    assert f"- `{name}: no rule claims it`\n" in capsys.readouterr().out


def test_skip_reason_is_quoted_as_code_with_table_pipes_escaped() -> None:
    body = '/bot skip --comment "@everyone ```` | ![x](http://e/x.png)"'
    reply = render_reply(decide(read_event(event_with(body)), Allowlist()), dry_run=True)
    assert reply is not None
    assert "| `--comment` | ````` @everyone ```` \\| ![x](http://e/x.png) ````` |" in reply


def test_syntax_error_reply_keeps_comment_text_in_a_code_block() -> None:
    body = "/bot run --stage-list ```@team"
    decision = decide(read_event(event_with(body)), Allowlist())
    reply = render_reply(decision)
    assert decision.action is Action.HELP and reply is not None
    head, block, tail = reply.split("````")
    assert "@team" not in head + tail and "@team" in block


def test_unknown_sub_command_reply_quotes_the_word_as_code() -> None:
    reply = render_reply(decide(read_event(event_with("/bot **@team**")), Allowlist()))
    assert reply is not None and reply.startswith("@maintainer-amy, `/bot **@team**` is not a command.\n")


def test_ignored_comment_gets_no_reply() -> None:
    decision = decide(read_event(event_with("just a remark")), Allowlist())
    assert render_reply(decision) is None


def test_dispatch_reply_without_dry_run_has_no_dry_run_note() -> None:
    decision = decide(read_event(event_with("/bot run")), Allowlist())
    assert render_reply(decision) == (
        "@maintainer-amy, running `/bot run`.\n\nNo flags: the default pre-merge selection.\n"
    )
