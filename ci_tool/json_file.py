"""Reading JSON that users hand to ci-tool: one reader, one set of limits, every problem at file:line:col.

    read_json(path, name=..., error=...)    the file as text (ci_tool.text_file: UTF-8, BOM dropped), parsed
    parse_json(text, file=..., error=...)   the value, or `error` with the position of the first problem
    key_value_position(text, key)           where a top-level key's value starts, for errors about the value
    value_position(text, path)              where the value at a JSON path starts (typed_json's errors)

Refused besides JSON syntax errors, so that no caller meets a value it cannot hold, print or walk:
- nesting deeper than MAX_DEPTH (json recurses; so would every walk over the value);
- numbers a 64-bit float cannot hold, and NaN/Infinity (not JSON; RFC 8259 section 6 gives no wider
  portable range, and Python cannot even print an int of more than 4,300 digits);
- a key twice in one object (the later one would win silently);
- a lone UTF-16 surrogate (`"\\ud800"`): no UTF-8 output can carry it.

The hooks of `json.loads` and a walk over the parsed value find that something is refused; `_first_problem`
then scans the text once more to say where.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from ci_tool.errors import CiToolError, Where, shown
from ci_tool.text_file import read_text

MAX_DEPTH = 64
_MAX_INT_DIGITS = 308  # every int of this many digits is below the largest float, 1.8e308
_CONSTANTS = ("NaN", "Infinity", "-Infinity")
_SURROGATE = re.compile("[\ud800-\udfff]")
# what the scan needs to see outside strings: strings (as a whole), words (numbers, literals) and punctuation
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[-+.\w]+|[\[\]{},:]', re.DOTALL)


class _Refused(Exception):
    """Raised inside json's hooks: the value holds something this module refuses (located afterwards)."""


def read_json(path: str | Path, *, name: str, error: type[CiToolError]) -> object:
    """The JSON value of a file; `name` says what it is in messages ("the event")."""
    return parse_json(read_text(path, name=name, error=error), file=str(path), error=error)


def parse_json(text: str, *, file: str, error: type[CiToolError], hint: str | None = None) -> object:
    """The JSON value of `text`; any problem raises `error` at its position (`hint` for syntax errors)."""
    try:
        value = json.loads(
            text, parse_int=_int, parse_float=_float, parse_constant=_constant, object_pairs_hook=_object
        )
    except json.JSONDecodeError as problem:
        # Text both too deep and malformed: the first of the two is the error, whichever the json module of
        # this Python (3.11 recurses into RecursionError sooner than 3.12) reached first.
        found = _first_problem(text[: problem.pos])
        if found is None:
            raise error(
                f"expected JSON, found a syntax error: {problem.msg}",
                where=Where(file, problem.lineno, problem.colno),
                hint=hint,
            ) from None
    except (_Refused, RecursionError):
        found = _first_problem(text)
    else:
        if _within_limits(value):
            return value
        found = _first_problem(text)
    if found is None:  # the hooks and the scan disagree: still one located line, never a crash
        raise error(f"expected JSON within ci-tool's limits (nesting at most {MAX_DEPTH} deep)", where=Where(file))
    offset, message, found_hint = found
    line = text.count("\n", 0, offset) + 1
    raise error(message, where=Where(file, line, offset - text.rfind("\n", 0, offset)), hint=found_hint)


def key_value_position(text: str, key: str) -> tuple[int, int] | None:
    """The 1-based (line, column) of the value of `key` in the top-level object of valid JSON `text`."""
    depth, expect_key, after_key = 0, False, False
    for token in _TOKEN.finditer(text):
        word = token.group()
        if after_key and word != ":":
            line = text.count("\n", 0, token.start()) + 1
            return line, token.start() - (text.rfind("\n", 0, token.start()) + 1) + 1
        if word in ("[", "{"):
            depth += 1
            expect_key = depth == 1 and word == "{"
        elif word in ("]", "}"):
            depth -= 1
        elif word == ",":
            expect_key = depth == 1
        elif expect_key and word.startswith('"'):
            after_key, expect_key = json.loads(word) == key, False
    return None


def value_position(text: str, path: tuple[str | int, ...]) -> tuple[int, int] | None:
    """The 1-based (line, column) where the value at `path` (object keys and array indexes, from the top) starts
    in valid JSON `text`; None when no value is there."""
    frames: list[list[object]] = []  # per open container: [is an object, its current key or index, expects a key]
    for token in _TOKEN.finditer(text):
        word = token.group()
        if frames and frames[-1][0] and frames[-1][2] and word.startswith('"'):
            frames[-1][1:] = [json.loads(word), False]  # a key, not a value
            continue
        if word in ("]", "}"):
            del frames[-1:]
            continue
        if word == ",":
            if frames and frames[-1][0]:
                frames[-1][2] = True
            elif frames:
                frames[-1][1] = int(str(frames[-1][1])) + 1
            continue
        if word == ":":
            continue
        if tuple(frame[1] for frame in frames) == path:  # a value starts here
            line = text.count("\n", 0, token.start()) + 1
            return line, token.start() - (text.rfind("\n", 0, token.start()) + 1) + 1
        if word in ("[", "{"):
            frames.append([word == "{", None if word == "{" else 0, word == "{"])
    return None


def describe_json(value: object) -> str:
    """What a JSON value is, for the `found ...` part of a message (containers by kind, long text cut)."""
    if isinstance(value, dict):
        return "a JSON object"
    if isinstance(value, list):
        return "a JSON list"
    return shown(value) if isinstance(value, str) else repr(value)


def _int(text: str) -> int:
    if len(text.removeprefix("-")) > _MAX_INT_DIGITS:
        raise _Refused
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused
    return value


def _constant(text: str) -> float:
    raise _Refused


def _object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise _Refused
    return value


def has_lone_surrogate(text: str) -> bool:
    """Whether `text` holds a lone UTF-16 surrogate (`json.loads('"\\ud800"')`), which no UTF-8 output carries."""
    return _SURROGATE.search(text) is not None


def _within_limits(value: object) -> bool:
    """Whether the parsed value nests at most MAX_DEPTH deep and its strings hold no lone surrogate."""
    pending: list[tuple[object, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return False
        elif isinstance(item, dict | list):
            if depth >= MAX_DEPTH:
                return False
            children = [*item, *item.values()] if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
    return True


def _first_problem(text: str) -> tuple[int, str, str | None] | None:
    """The offset, message and hint of the first refused thing in `text` (JSON up to that point)."""
    stack: list[set[str] | None] = []  # per open container: an object's keys so far, None for a list
    expect_key = False
    for token in _TOKEN.finditer(text):
        word, offset = token.group(), token.start()
        if word in ("[", "{"):
            if len(stack) >= MAX_DEPTH:
                return offset, f"expected JSON nested at most {MAX_DEPTH} deep, found deeper nesting", None
            stack.append(set() if word == "{" else None)
            expect_key = word == "{"
        elif word in ("]", "}"):
            del stack[-1:]
            expect_key = False
        elif word == ",":
            expect_key = bool(stack) and stack[-1] is not None
        elif word.startswith('"'):
            problem = _string_problem(word, stack[-1] if stack and expect_key else None)
            expect_key = False
            if problem:
                return offset, problem, None
        elif word != ":":
            problem, hint = _number_problem(word)
            if problem:
                return offset, problem, hint
    return None


def _string_problem(token: str, keys: set[str] | None) -> str | None:
    """What is refused in a string token (`keys`: the object's keys so far when the string is a key)."""
    try:
        value = json.loads(token)
    except ValueError:  # past the point json.loads reached: not ours to judge
        return None
    surrogate = _SURROGATE.search(value)
    if surrogate:
        return f"expected text of Unicode characters, found the lone surrogate \\u{ord(surrogate.group()):04x}"
    if keys is not None:
        if value in keys:
            return f"expected each key once, found {shown(value)} again"
        keys.add(value)
    return None


def _number_problem(word: str) -> tuple[str | None, str | None]:
    if word in _CONSTANTS:
        return f"expected a number, found {word!r}", "JSON has no NaN or Infinity: write a finite number"
    if not word[:1].isdigit() and not word.startswith("-"):
        return None, None  # true, false, null
    try:
        (_int if word.lstrip("-").isdigit() else _float)(word)
    except (_Refused, ValueError):
        return f"expected a number within the range of a 64-bit float (about ±1.8e308), found {shown(word)}", None
    return None, None
