"""`ci-tool bot parse|help|handle` through the real entry point; `handle` output is pinned per fixture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ci_tool.bot.help import render_help
from ci_tool.cli import main

if TYPE_CHECKING:
    from tests.helpers.golden import Golden

FIXTURES = Path(__file__).parent / "fixtures"
EVENTS = sorted(FIXTURES.glob("event_*.json"))
ALLOWLIST = str(FIXTURES / "allowlist.yml")
CATALOG = ("--catalog", str(FIXTURES / "stages.yml"), "--test-db", str(FIXTURES / "test-db"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(
    ("comment", "out"),
    [
        (
            '/bot run --stage-list "A10-PyTorch-1, DGX\\_H100-*" --disable-fail-fast',
            '{"command": "run", "flags": {"disable_fail_fast": true, "stage_list": ["A10-PyTorch-1", "DGX_H100-*"]}}\n',
        ),
        ('/bot skip --comment "waive only"', '{"command": "skip", "flags": {"comment": "waive only"}}\n'),
        ("/bot reuse-pipeline", '{"command": "reuse-pipeline", "flags": {}}\n'),
        ("/bot -h", '{"command": "help", "flags": {}}\n'),
        ("nice work", '{"command": "ignore", "flags": {}}\n'),
    ],
)
def test_parse_json(capsys: pytest.CaptureFixture[str], comment: str, out: str) -> None:
    assert run(capsys, "bot", "parse", comment, "--json") == (0, out, "")


def test_parse_describes_the_request(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "bot", "parse", '/bot run --gpu-type "A30, A10" --post-merge to check')
    assert (code, out) == (
        0,
        "run\n  --gpu-type A30, A10\n  --post-merge\ncustom run: cannot set the merge gate green\n"
        "ignored remark: 'to check'\n",
    )


def test_parse_reads_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("/bot run --post-merge\n\nLonger explanation.\n"))
    assert run(capsys, "bot", "parse", "-", "--json") == (0, '{"command": "run", "flags": {"post_merge": true}}\n', "")


def test_parse_error_exits_1_with_the_column_and_caret(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "bot", "parse", "/bot run --post-merge -disable-fail-fast", "--json")
    assert (code, out) == (1, "")
    assert err == (
        "error: /bot comment, column 23: unknown flag '-disable-fail-fast' Hint: did you mean '--disable-fail-fast'?\n"
        "  /bot run --post-merge -disable-fail-fast\n"
        "                        ^\n"
    )


def test_help_prints_the_help_reply(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "bot", "help") == (0, render_help(), "")


@pytest.mark.parametrize("event", EVENTS, ids=[e.stem for e in EVENTS])
def test_handle_dry_run_output_is_pinned(capsys: pytest.CaptureFixture[str], event: Path, golden: Golden) -> None:
    code, out, err = run(
        capsys, "bot", "handle", "--event", str(event), "--allowlist", ALLOWLIST, "--dry-run", *CATALOG
    )
    assert (code, err) == (0, "")
    golden(event.with_suffix(".out"), out)


def test_handle_writes_the_reply_file_only_when_there_is_a_reply(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    reply = tmp_path / "reply.md"
    event = FIXTURES / "event_syntax_error.json"
    code, out, _ = run(
        capsys, "bot", "handle", "--dry-run", "--event", str(event), "--allowlist", ALLOWLIST, "--reply-file",
        str(reply),
    )
    assert (code, out) == (0, "decision: help: syntax error at column 23\n")
    assert "column 23: unknown flag '-disable-fail-fast'" in reply.read_text(encoding="utf-8")
    quiet = tmp_path / "quiet.md"
    event = FIXTURES / "event_not_a_command.json"
    assert (
        run(capsys, "bot", "handle", "--event", str(event), "--allowlist", ALLOWLIST, "--reply-file", str(quiet),
            "--dry-run")[0]
        == 0
    )
    assert not quiet.exists()


def test_handle_without_a_jenkins_url_says_where_to_give_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CI_TOOL_JENKINS_URL", raising=False)
    event = FIXTURES / "event_run_listed_contributor.json"
    code, out, err = run(capsys, "bot", "handle", "--event", str(event), "--allowlist", ALLOWLIST, *CATALOG)
    assert (code, out) == (1, "")
    assert err == (
        "error: expected the Jenkins URL in --jenkins-url or CI_TOOL_JENKINS_URL, found neither "
        "Hint: set it (the bot workflow passes a repository variable), or pass --dry-run\n"
    )


def test_handle_without_a_github_token_says_which_variable(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    event = FIXTURES / "event_help.json"
    code, out, err = run(capsys, "bot", "handle", "--event", str(event), "--allowlist", ALLOWLIST)
    assert (code, out) == (1, "")
    assert err == (
        "error: expected a GitHub token in GITHUB_TOKEN to reply on the pull request, found none "
        "Hint: in Actions pass `GITHUB_TOKEN: ${{ github.token }}`, or pass --dry-run\n"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "{",
            "error: {event}:1:2: expected JSON, found a syntax error: Expecting property name enclosed in double "
            "quotes\n",
        ),
        (
            '{"action": "created"}',
            "error: {event} (comment.user.login): expected an issue_comment event with 'comment.user.login', "
            "found none\n",
        ),
        ("[" * 5000, "error: {event}:1:65: expected JSON nested at most 64 deep, found deeper nesting\n"),
        (
            '{"action": ' + "1" * 5000 + "}",
            "error: {event}:1:12: expected a number within the range of a 64-bit float (about ±1.8e308), found '"
            + "1" * 30
            + "'... (5000 characters)\n",
        ),
        (
            '{"action": "created", "action": "deleted"}',
            "error: {event}:1:23: expected each key once, found 'action' again\n",
        ),
        (
            '{"action": "created", "comment": {"body": "/bot help", "user": {"login": "a"}, "author_association": 1}}',
            "error: {event} (comment.author_association): expected str at 'comment.author_association', found int\n",
        ),
        (
            '{"action": "created", "comment": {"body": "/bot help", "user": {"login": "a"}}, "sender": {"login": "a"}, '
            '"repository": {"full_name": "o/r"}, "issue": {"number": 1, "labels": ["x"]}}',
            "error: {event} (issue.labels[0].name): expected an issue_comment event with 'issue.labels[0].name', "
            "found none\n",
        ),
    ],
    ids=["bad json", "not a comment event", "nested thousands deep", "huge number", "key twice", "wrong type",
         "label not an object"],
)  # fmt: skip
def test_handle_bad_event_file(capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, message: str) -> None:
    event = tmp_path / "event.json"
    event.write_text(text, encoding="utf-8")
    assert run(capsys, "bot", "handle", "--event", str(event), "--allowlist", ALLOWLIST) == (
        1,
        "",
        message.format(event=event),
    )


def test_handle_missing_allowlist(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    event = FIXTURES / "event_help.json"
    missing = tmp_path / "nope.yml"
    assert run(capsys, "bot", "handle", "--event", str(event), "--allowlist", str(missing)) == (
        1,
        "",
        f"error: {missing}: cannot read the allowlist: No such file or directory\n",
    )


def test_dispatch_line_is_json(capsys: pytest.CaptureFixture[str]) -> None:
    event = FIXTURES / "event_run_listed_contributor.json"
    _, out, _ = run(capsys, "bot", "handle", "--event", str(event), "--allowlist", ALLOWLIST, "--dry-run", *CATALOG)
    line = next(line for line in out.splitlines() if line.startswith("would dispatch: "))
    assert json.loads(line.removeprefix("would dispatch: "))["requested_by"] == "outside-contributor"


def test_handle_event_that_is_not_utf8(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_bytes(b'{"action": "cr\xe9ated"}')
    assert run(capsys, "bot", "handle", "--event", str(event), "--allowlist", ALLOWLIST) == (
        1,
        "",
        f"error: {event}:1:15: cannot read the event: it is not UTF-8 text (byte 0xe9) Hint: save the file as UTF-8\n",
    )


def test_handle_event_with_a_bom(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_bytes(b"\xef\xbb\xbf" + (FIXTURES / "event_help.json").read_bytes())
    code, out, err = run(capsys, "bot", "handle", "--event", str(event), "--allowlist", ALLOWLIST, "--dry-run")
    assert (code, err, out.splitlines()[0]) == (0, "", "decision: help: help asked for")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"run: [al\xffice]\n", "{allowlist}:1:9: cannot read the allowlist: it is not UTF-8 text (byte 0xff) "
         "Hint: save the file as UTF-8"),
        (b"run: " + b"[" * 5000 + b"]" * 5000, "{allowlist}:1:1005: expected YAML nested at most 1000 deep, "
         "found deeper nesting"),
        (b"run:\n  - " + b"- " * 3000 + b"x\n", "{allowlist}:2:2001: expected YAML nested at most 1000 deep, "
         "found deeper nesting"),
    ],
    ids=["not utf-8", "flow nested thousands deep", "block nested thousands deep"],
)  # fmt: skip
def test_handle_bad_allowlist(capsys: pytest.CaptureFixture[str], tmp_path: Path, data: bytes, message: str) -> None:
    allowlist = tmp_path / "allowlist.yml"
    allowlist.write_bytes(data)
    event = FIXTURES / "event_help.json"
    assert run(capsys, "bot", "handle", "--event", str(event), "--allowlist", str(allowlist)) == (
        1,
        "",
        "error: " + message.format(allowlist=allowlist) + "\n",
    )


# argv -> what `bot parse` prints: a comment that starts with `-` is a comment, never an option
DASHED = {
    "an HTML comment's tail": (["bot", "parse", "-->/bot run", "--json"], '{"command": "ignore", "flags": {}}\n'),
    "short-option look-alike": (["bot", "parse", "-x /bot help"], "ignore: not a /bot comment\n"),
    "after the options": (["bot", "parse", "--json", "--/bot run"], '{"command": "ignore", "flags": {}}\n'),
    "after --": (["bot", "parse", "--json", "--", "--json"], '{"command": "ignore", "flags": {}}\n'),
}


@pytest.mark.parametrize(("argv", "out"), DASHED.values(), ids=DASHED.keys())
def test_a_comment_starting_with_a_dash_is_a_comment(
    capsys: pytest.CaptureFixture[str], argv: list[str], out: str
) -> None:
    assert run(capsys, *argv) == (0, out, "")


def test_plan_reads_a_dashed_comment_with_its_options_after_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "bot", "plan", "-->/bot run", "--label", "x", *CATALOG)
    assert (code, out.splitlines()[0]) == (0, "ignore: not a /bot comment")
