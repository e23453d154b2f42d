"""The `/bot` comment grammar: a scanner and a parser that turn a PR comment into a frozen BotRequest.

Only the first line of a comment is the command; later lines are free text.  Columns are 1-based
positions in that line, and every syntax error names one and echoes the line with a caret.

    comment   := "/bot" (blank command)?              anything not starting with the word /bot: ignored
    command   := "run" run-flag* prose?
               | "skip" "--comment" TEXT prose?        --comment is required
               | "kill" prose? | "reuse-pipeline" prose?
               | ("help" | "-h" | "--help") any*
               | any*                                  any other word: help (naming the word)
    run-flag  := SWITCH | LIST-FLAG STRING | "--reuse-test" (DIGITS | RUN-ID)?
    STRING    := '"' (char | "\\" char)* '"'          a backslash drops itself: \\_ -> _, \\* -> *
    TEXT      := STRING, up to the line's last '"'     `--comment "a "b" c"` -> `a "b" c`
    list      := item ("," item)*                      items trimmed; empty items dropped; at least one
    item      := [-+A-Za-z0-9_[\\]]+                   plus `*` for the flags that take globs
    prose     := WORD any*                             trailing remarks: `/bot run --post-merge to check`
    blank     := whitespace

Flags and sub-commands match exactly (no prefixes, no `--flag=value`); a flag appears at most once;
conflicting pairs come from flags.CONFLICTS; `--debug` needs exactly one exact name in `--stage-list`.
Prose may not hold a later word that starts with `-`, and its first word may not be a flag missing
its dashes (`disable-fail-fast`): both are errors, not silently ignored flags. Likewise a closing
quote must be followed by a blank (`"A","B"` is an error, not the list A), and a word after
`--reuse-test` that starts with a digit or `#`, or is the line's last word, must be an id (`123abc` and
`--reuse-test abc` are errors; `--reuse-test to save time` is the flag alone and a remark). A remark may
not mention anyone (`@everyone`, `@team`): the bot notifies no one, so a mention would be a silent no-op.

The command line holds no invisible character (zero-width spaces and joiners, U+FEFF, bidi and other
format or control characters; see is_invisible): each is an error that names its code point at its
column, also before or right after the word /bot. The bot acts only on what its readers can see, and
the columns stay those of the comment as written. Unicode blanks (no-break and thin spaces) are blanks.

Examples:
    /bot run --disable-fail-fast --stage-list "DGX_H100-PyTorch-1, A30-*"
    /bot run  --stage-list "\\*GB300\\*PerfSanity\\*"          -> stage_list ["*GB300*PerfSanity*"]
    /bot skip --comment "waive only"
"""

from __future__ import annotations

import difflib
import enum
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NoReturn

from ci_tool.bot.flags import (
    CONFLICTS,
    DEBUG_FLAG,
    DEBUG_NEEDS,
    FLAGS,
    HELP_WORDS,
    Arg,
    Flag,
    SubCommand,
    command,
    flag_by_name,
    flags_of,
)
from ci_tool.bot.parsed_comment import BotRequest, BotSyntaxError, FlagValue
from ci_tool.errors import did_you_mean
from ci_tool.stages.names import NAME_CHARSET
from ci_tool.stages.selection_request import is_pipeline_id

PREFIX = "/bot"
_DASHES = "-\u2013\u2014"  # hyphen, en dash, em dash (phones and editors turn -- into a dash)
_QUOTE_LIKE = "'\u2018\u2019\u201c\u201d"


class TokenKind(enum.Enum):
    WORD = "word"  # a run of non-blank characters
    STRING = "string"  # a double-quoted string, quotes and backslashes removed


@dataclass(frozen=True)
class _Token:
    kind: TokenKind
    text: str  # the word, or the string's value with quotes and backslashes removed
    col: int  # column of the first character (the opening quote of a string)
    raw: str  # as written
    char_cols: tuple[int, ...] = ()  # strings: the column of each character of `text`


def command_line(comment: str) -> str:
    """The line of a comment that holds the command: the first one, without a trailing CR."""
    return comment.split("\n", 1)[0].rstrip("\r")


def is_invisible(char: str) -> bool:
    """A character that shows nothing and is no blank: format characters (zero-width spaces and joiners,
    U+FEFF, bidi controls), control characters, unassigned and private-use code points."""
    return not char.isprintable() and not char.isspace()


def is_bot_comment(comment: str) -> bool:
    """Whether a comment starts with the word `/bot` (not `/bots`, not ` /bot`), invisible characters
    around the word not counted (they make the comment a malformed one, not a remark)."""
    line = command_line(comment)
    start = next((index for index, char in enumerate(line) if not is_invisible(char)), len(line))
    after = line[start + len(PREFIX) : start + len(PREFIX) + 1]
    return line.startswith(PREFIX, start) and (not after or after.isspace() or is_invisible(after))


def parse_comment(comment: str) -> BotRequest:
    """Parse a PR comment; raise BotSyntaxError (with a column) when it is a malformed /bot command."""
    line = command_line(comment)
    if not is_bot_comment(comment):
        return BotRequest(None, line=line)
    _check_visible(line)
    tokens = _Scanner(line, len(PREFIX))
    word = tokens.next()
    if word is None or word.text in HELP_WORDS:
        return BotRequest(SubCommand.HELP, line=line)
    sub = command(word.text) if word.kind is TokenKind.WORD else None
    if sub is None:
        return BotRequest(SubCommand.HELP, line=line, unknown_command=word.raw)
    return _Parser(line, sub.name, word, tokens).parse()


def _check_visible(line: str) -> None:
    """The bot reads only what its reader sees: an invisible character in the command line is an error
    naming it (removing it would move every column after it)."""
    col = next((index + 1 for index, char in enumerate(line) if is_invisible(char)), None)
    if col is not None:
        char = line[col - 1]
        name = " ".join(filter(None, (f"U+{ord(char):04X}", unicodedata.name(char, ""))))
        raise BotSyntaxError(
            f"expected a visible character or a blank, found the invisible {name}",
            line=line,
            col=col,
            hint="delete it: retype the text around the caret",
        )


class _Scanner:
    """Hands out words and double-quoted strings one at a time, so unscanned prose never errors."""

    def __init__(self, line: str, index: int) -> None:
        self.line = line
        self.index = index
        self._peeked: _Token | None = None

    def peek(self, *, to_last_quote: bool = False) -> _Token | None:
        """The next token; with `to_last_quote`, a string runs to the last double quote on the line."""
        if self._peeked is None:
            self._peeked = self._scan(to_last_quote)
        return self._peeked

    def next(self) -> _Token | None:
        token = self.peek()
        self._peeked = None
        return token

    def rest(self, token: _Token) -> str:
        """The line from `token` on, for prose."""
        return self.line[token.col - 1 :]

    def _scan(self, to_last_quote: bool) -> _Token | None:
        line, i = self.line, self.index
        while i < len(line) and line[i].isspace():
            i += 1
        if i == len(line):
            self.index = i
            return None
        if line[i] != '"':
            j = i
            while j < len(line) and not line[j].isspace() and line[j] != '"':
                j += 1
            self.index = j
            return _Token(TokenKind.WORD, line[i:j], i + 1, line[i:j])
        chars: list[str] = []
        cols: list[int] = []
        closing: tuple[int, int] | None = None  # (index of the closing quote, characters before it)
        j = i + 1
        while j < len(line):
            if line[j] == '"':
                closing = (j, len(chars))
                if not to_last_quote:
                    break
            cols.append(j + 1)  # an escaped character's column is its backslash's
            if line[j] == "\\" and j + 1 < len(line):
                j += 1  # the backslash drops itself; the next character is taken as is
            chars.append(line[j])
            j += 1
        if closing is None:
            raise BotSyntaxError(
                "unterminated quote: expected a closing '\"' on the same line",
                line=line,
                col=i + 1,
                hint='end the value with a double quote: "A,B"',
            )
        end, count = closing
        if end + 1 < len(line) and not line[end + 1].isspace():
            raise BotSyntaxError(
                f"expected a blank after the closing quote, found {line[end + 1]!r}",
                line=line,
                col=end + 2,
                hint='a value is one double-quoted string ("A,B"); write \\" for a quote inside it',
            )
        self.index = end + 1
        return _Token(TokenKind.STRING, "".join(chars[:count]), i + 1, line[i : end + 1], tuple(cols[:count]))


class _Parser:
    """Parses the flags after a sub-command word, then checks how they combine."""

    def __init__(self, line: str, sub: SubCommand, word: _Token, tokens: _Scanner) -> None:
        self.line = line
        self.sub = sub
        self.word = word
        self.tokens = tokens
        self.allowed = flags_of(sub)
        self.seen: dict[str, _Token] = {}  # flag name -> where it was given, in comment order
        self.values: dict[str, FlagValue] = {}  # JSON key -> value
        self.columns: dict[str, tuple[int, ...]] = {}
        self.lists: dict[str, tuple[str, ...]] = {}  # flag name -> items, for the combination checks

    def error(self, col: int, message: str, hint: str | None = None) -> BotSyntaxError:
        return BotSyntaxError(message, line=self.line, col=col, hint=hint)

    def parse(self) -> BotRequest:
        prose = ""
        while (token := self.tokens.next()) is not None:
            if token.kind is TokenKind.STRING:
                last = flag_by_name(next(reversed(self.seen), ""))
                hint = f"put all items of {last.name} in one quoted string" if last and last.arg is Arg.LIST else None
                raise self.error(token.col, f"expected a flag, found the value {token.raw!r}", hint)
            if token.text in HELP_WORDS:
                return BotRequest(SubCommand.HELP, line=self.line)
            if not _dashed(token.text):
                self._check_prose(token)
                prose = self.tokens.rest(token)
                break
            self._flag(token)
        self._check_combination()
        order = {flag.key: index for index, flag in enumerate(FLAGS)}
        keys = sorted(self.values, key=order.__getitem__)
        return BotRequest(
            self.sub,
            tuple((k, self.values[k]) for k in keys),
            self.line,
            tuple((k, self.columns[k]) for k in keys),
            prose=prose,
        )

    def _check_prose(self, token: _Token) -> None:
        names = [flag.name for flag in self.allowed]
        bare = [name.lstrip("-") for name in names]
        if token.text in bare or ("-" in token.text and difflib.get_close_matches(token.text, bare, cutoff=0.8)):
            self._unknown_flag(token)
        mention = next((word for word in _words(self.tokens.rest(token), token.col) if _is_mention(word[1])), None)
        if mention is not None:
            col, word = mention
            raise self.error(
                col,
                f"expected a flag or a remark, found the mention {word!r}",
                "the bot notifies no one: mention people in a comment of their own",
            )
        later = self.tokens.rest(token).split()[1:]
        dashed = next((w for w in later if _dashed(w)), None)
        if dashed is not None:
            raise self.error(
                token.col,
                f"expected a flag, found {token.text!r}",
                f"put remarks after the last flag (found {dashed!r} later on the line)",
            )

    def _unknown_flag(self, token: _Token) -> NoReturn:
        name = token.text
        other = flag_by_name(name)
        if other is not None:
            raise self.error(token.col, f"{name} is a flag of /bot {other.command}, not of /bot {self.sub}")
        names = [flag.name for flag in self.allowed]
        if not names:
            raise self.error(token.col, f"/bot {self.sub} takes no flags, found {name!r}")
        dashed = "--" + name.lstrip(_DASHES)  # `-x`, `—x` and `x` are most likely `--x`
        hint = (f"did you mean {dashed!r}?" if dashed in names else did_you_mean(dashed, names)) or (
            f"/bot {self.sub} takes " + ", ".join(names)
        )
        raise self.error(token.col, f"unknown flag {name!r}", hint)

    def _flag(self, token: _Token) -> None:
        written, equals, _ = token.text.partition("=")
        flag = next((f for f in self.allowed if written in (f.name, *f.aliases)), None)
        if flag is None:
            self._unknown_flag(_Token(TokenKind.WORD, written, token.col, written))
        name = flag.name  # an old spelling counts as the flag it now is (the selection notes it)
        if equals:
            col = token.col + len(written)
            if flag.arg is Arg.SWITCH:
                found = token.raw[len(written) :]
                raise self.error(col, f"{written} takes no value, found {found!r}", f"write {written} alone")
            raise self.error(col, f"expected a blank after {written}, found '='", f'write {written} "…"')
        if name in self.seen:
            first = self.seen[name].col
            hint = "merge the values into one list" if flag.arg is Arg.LIST else "drop one of them"
            raise self.error(token.col, f"{name} given twice (first at column {first})", hint)
        self.seen[name] = token
        value, cols = self._value(flag, token)
        self.values[flag.key] = value
        self.columns[flag.key] = (token.col, *cols)
        if isinstance(value, tuple):
            self.lists[name] = value

    def _value(self, flag: Flag, token: _Token) -> tuple[FlagValue, tuple[int, ...]]:
        following = self.tokens.peek(to_last_quote=flag.arg is Arg.TEXT)
        if flag.arg is Arg.SWITCH:
            if following is not None and following.kind is TokenKind.STRING:
                raise self.error(
                    following.col, f"{flag.name} takes no value, found {following.raw!r}", f"write {flag.name} alone"
                )
            return True, ()
        if flag.arg is Arg.OPTIONAL_ID:
            if following is None or not is_pipeline_id(following.text):
                # a string, or a word that starts like an id (`123abc`, `#123`), is a bad id, not a remark
                if following is not None and (
                    following.kind is TokenKind.STRING
                    or _looks_like_an_id(following.text)
                    or (self.tokens.rest(following).rstrip() == following.raw and not _dashed(following.text))
                ):  # the line's last word, no flag: meant as the id
                    raise self.error(
                        following.col,
                        f"expected a pipeline id (digits) or a run id after {flag.name}, found {following.raw!r}",
                        f"write {flag.name} 1234, {flag.name} 20261130-054838-3f2a (a run `ci-tool history` "
                        f"lists), or {flag.name} alone",
                    )
                return True, ()
            self.tokens.next()
            return following.text, (following.col,)
        string = self._string(flag, following)
        if flag.arg is Arg.TEXT:
            text = string.text.strip()
            if not text:
                raise self.error(
                    string.col, f"expected text in {flag.name}, found {string.raw!r}", f"write {flag.usage}"
                )
            return text, (string.col,)
        return self._list(flag, string)

    def _string(self, flag: Flag, following: _Token | None) -> _Token:
        what = "a double-quoted list" if flag.arg is Arg.LIST else "a double-quoted text"
        if following is None:
            raise self.error(
                len(self.line) + 1,
                f"expected {what} after {flag.name}, found the end of the line",
                f"write {flag.usage}",
            )
        if following.kind is TokenKind.WORD:
            if following.text[0] in _QUOTE_LIKE:
                hint = f"use straight double quotes: {flag.usage}"
            elif _dashed(following.text):
                hint = f"write {flag.usage}"
            else:
                hint = f'write {flag.name} "{following.text}"'
            raise self.error(following.col, f"expected {what} after {flag.name}, found {following.raw!r}", hint)
        self.tokens.next()
        return following

    def _list(self, flag: Flag, string: _Token) -> tuple[tuple[str, ...], tuple[int, ...]]:
        items: list[str] = []
        cols: list[int] = []
        for text, text_cols in _split(string.text, string.char_cols):
            self._check_item(flag, text, text_cols)
            items.append(text.lower() if flag.choices else text)
            cols.append(text_cols[0])
        if not items and not flag.empty_ok:
            raise self.error(
                string.col,
                f"expected at least one item in {flag.name}, found {string.raw!r}",
                flag.empty_hint or f"name at least one, or leave {flag.name} out",
            )
        return tuple(items), tuple(cols)

    def _check_item(self, flag: Flag, item: str, cols: tuple[int, ...]) -> None:
        for char, col in zip(item, cols, strict=True):
            if NAME_CHARSET.fullmatch(char) or (char == "*" and flag.globs):
                continue
            if char.isspace():
                raise self.error(col, f"unexpected blank inside {flag.name} item {item!r}", "separate items with ','")
            if char == "*":
                globbers = " and ".join(f.name for f in FLAGS if f.globs)
                raise self.error(
                    col,
                    f"unexpected '*' in {flag.name} item {item!r}",
                    f"{flag.name} takes exact names; only {globbers} take globs",
                )
            allowed = "letters, digits and - _ + [ ]" + (" *" if flag.globs else "")
            raise self.error(col, f"unexpected {char!r} in {flag.name} item {item!r}", f"items hold only {allowed}")
        if flag.choices and item.lower() not in flag.choices:
            raise self.error(
                cols[0],
                f"unknown value {item!r} for {flag.name}, expected one of " + ", ".join(flag.choices),
                did_you_mean(item.lower(), flag.choices),
            )

    def _check_combination(self) -> None:
        given = list(self.seen)
        for index, later in enumerate(given):
            for conflict in CONFLICTS:
                pair = {conflict.first, conflict.second}
                earlier = next((g for g in given[:index] if {g, later} == pair), None)
                if earlier is not None:
                    raise self.error(
                        self.seen[later].col,
                        f"{later} conflicts with {earlier} (column {self.seen[earlier].col}): {conflict.reason}",
                        "drop one of them",
                    )
        for flag in self.allowed:
            if flag.required and flag.name not in self.seen:
                raise self.error(
                    self.word.col,
                    f"/bot {self.sub} needs {flag.usage}, found no {flag.name}",
                    f'write /bot {self.sub} {flag.name} "why testing is not needed"',
                )
        if DEBUG_FLAG in self.seen:
            self._check_debug()

    def _check_debug(self) -> None:
        col = self.seen[DEBUG_FLAG].col
        hint = f'write {DEBUG_FLAG} {DEBUG_NEEDS} "STAGE-NAME-1"'
        if DEBUG_NEEDS not in self.seen:
            raise self.error(
                col, f"{DEBUG_FLAG} needs exactly one stage in {DEBUG_NEEDS}, found no {DEBUG_NEEDS}", hint
            )
        stages = self.lists[DEBUG_NEEDS]
        if len(stages) != 1:
            raise self.error(
                col,
                f"{DEBUG_FLAG} needs exactly one stage in {DEBUG_NEEDS}, found {len(stages)}: {', '.join(stages)}",
                hint,
            )
        if "*" in stages[0]:
            raise self.error(
                col, f"{DEBUG_FLAG} needs one exact stage name in {DEBUG_NEEDS}, found the glob {stages[0]!r}", hint
            )


def _is_mention(word: str) -> bool:
    """A GitHub mention: `@` then a letter or digit (`@everyone`, `@org/team`; not `@` alone)."""
    return word.startswith("@") and word[1:2].isalnum()


def _words(text: str, col: int) -> Iterator[tuple[int, str]]:
    """The blank-separated words of `text`, which starts at column `col`, with their columns."""
    index = 0
    for word in text.split():
        index = text.index(word, index)
        yield col + index, word
        index += len(word)


def _looks_like_an_id(word: str) -> bool:
    """A word meant as a pipeline id: it starts with a digit or `#` (`123abc`, `#123`, `١٢٣`)."""
    return word[:1].isdigit() or word.startswith("#")


def _dashed(word: str) -> bool:
    """A word that looks like a flag: dashes, then a letter (`-x`, `--x`, `—x`; not `-` or `-1`)."""
    rest = word.lstrip(_DASHES)
    return rest != word and rest[:1].isalpha()


def _split(text: str, cols: tuple[int, ...]) -> Iterator[tuple[str, tuple[int, ...]]]:
    """The comma-separated items of a string value, trimmed, with the columns of their characters."""
    start = 0
    for end in [*(i for i, c in enumerate(text) if c == ","), len(text)]:
        lo, hi = start, end
        while lo < hi and text[lo].isspace():
            lo += 1
        while hi > lo and text[hi - 1].isspace():
            hi -= 1
        if lo < hi:
            yield text[lo:hi], cols[lo:hi]
        start = end + 1
