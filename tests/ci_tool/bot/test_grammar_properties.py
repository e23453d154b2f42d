"""Properties: whatever a comment holds, the parser returns a request or raises our error, never anything else;
an invisible character anywhere in a /bot command line is an error at its column."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tool.bot.flags import COMMANDS, FLAGS, HELP_WORDS, flag_by_key
from ci_tool.bot.grammar import PREFIX, command_line, is_invisible, parse_comment
from ci_tool.bot.parsed_comment import BotRequest, BotSyntaxError
from ci_tool.stages.selection_request import request_from_json

# Pieces that reach deep into the grammar: sub-commands, flags (and near misses), quotes, escapes, commas.
WORDS = [
    *(c.name for c in COMMANDS),
    *HELP_WORDS,
    *(f.name for f in FLAGS),
    *(f.name[1:] for f in FLAGS),
    *(f.name + "=x" for f in FLAGS),
    "A10-PyTorch-1",
    "DGX_H100-*",
    "*",
    "1234",
    "to",
    "start",
    '"',
    "'",
    "\\",
    ",",
    '"A10-PyTorch-1, A30-*"',
    '""',
    '" , "',
    '"pytorch"',
    '"a\\"b"',
    '"\\*x\\_y"',
    "\u201c",
    "\u2014debug",
    "\t",
    "\r\n",
    "\u00a0",
    "\u200b",
    "\ufeff",
    "\x1b",
    "12ab",
    "#12",
    '"a "b" c"',
    '"A","B"',
]

tokens = st.one_of(st.sampled_from(WORDS), st.text(max_size=8))
bot_comments = st.lists(tokens, max_size=12).map(lambda parts: "/bot " + " ".join(parts))


def _check(comment: str) -> None:
    try:
        request = parse_comment(comment)
    except BotSyntaxError as error:
        line = command_line(comment)
        assert error.line == line
        assert 1 <= error.col <= len(line) + 1
        assert str(error).count("\n") == 2  # the message, the echo, the caret
        return
    assert isinstance(request, BotRequest)
    if request.command == "run":  # what CI receives reads back as the same request
        wanted = request.selection_request()
        assert request_from_json(wanted.to_json()) == wanted
        assert wanted.to_json()["flags"] == request.to_json()["flags"]
        assert request.is_custom_run is any(flag_by_key(key).custom_run for key, _ in request.values)


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_any_text_parses_or_raises_our_error(comment: str) -> None:
    _check(comment)


@settings(max_examples=1500, deadline=None)
@given(bot_comments)
def test_any_bot_comment_parses_or_raises_our_error(comment: str) -> None:
    _check(comment)


@settings(max_examples=300, deadline=None)
@given(bot_comments)
def test_parsing_is_deterministic_and_ignores_later_lines(comment: str) -> None:
    def outcome(text: str) -> object:
        try:
            return parse_comment(text).to_json()
        except BotSyntaxError as error:
            return (error.col, error.headline)

    assert outcome(comment) == outcome(comment + '\n--junk "unterminated')


@settings(max_examples=300)
@given(bot_comments, st.sampled_from(["\u200b", "\ufeff", "\u2060", "\u202e", "\u00ad", "\x00"]), st.data())
def test_an_invisible_character_anywhere_is_named_at_its_column(comment: str, char: str, data: st.DataObject) -> None:
    line = command_line(comment)
    index = data.draw(st.integers(min_value=0, max_value=len(line)))
    if 0 < index < len(PREFIX):  # it splits the word /bot: not a bot comment at all
        return
    changed = line[:index] + char + line[index:]
    first = next(k for k, c in enumerate(changed) if is_invisible(c))
    try:
        parse_comment(changed + comment[len(line) :])
    except BotSyntaxError as error:
        assert (error.col, "found the invisible" in error.message) == (first + 1, True)
        return
    raise AssertionError(f"{changed!r} parsed")
