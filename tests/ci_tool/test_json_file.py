"""The one JSON reader: values within its limits parse; anything else is our error at file:line:col."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tool.errors import CiToolError, ShardError
from ci_tool.json_file import MAX_DEPTH, describe_json, parse_json, read_json, value_position

PARSED = [
    ("object", '{"a.py::t": 1.5, "b": [1, -2, true, null]}', {"a.py::t": 1.5, "b": [1, -2, True, None]}),
    ("big but float-sized int", "1" + "0" * 300, 10**300),
    ("largest float", "1.7976931348623157e308", 1.7976931348623157e308),
    ("tiny float underflows to 0", "1e-400", 0.0),
    ("same key in two objects", '[{"a": 1}, {"a": 2}]', [{"a": 1}, {"a": 2}]),
    ("nested as deep as allowed", "[" * MAX_DEPTH + "]" * MAX_DEPTH, json.loads("[" * MAX_DEPTH + "]" * MAX_DEPTH)),
    ("paired surrogates", '"\\ud83d\\ude00"', "\U0001f600"),
    ("escaped control character", '"a\\u0000b"', "a\x00b"),
]


@pytest.mark.parametrize(("text", "value"), [r[1:] for r in PARSED], ids=[r[0] for r in PARSED])
def test_parses(text: str, value: object) -> None:
    assert parse_json(text, file="f.json", error=ShardError) == value


TOO_BIG = "expected a number within the range of a 64-bit float (about ±1.8e308), found"
NOT_A_NUMBER = "expected a number, found {!r} Hint: JSON has no NaN or Infinity: write a finite number"
REFUSED = [
    ("syntax", '{"a": 1,\n}', "f.json:2:1: expected JSON, found a syntax error: Expecting property name enclosed in "
     "double quotes"),
    ("empty", "", "f.json:1:1: expected JSON, found a syntax error: Expecting value"),
    ("bom in text", "\ufeff{}", "f.json:1:1: expected JSON, found a syntax error: Unexpected UTF-8 BOM (decode using "
     "utf-8-sig)"),
    ("too deep", "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1),
     f"f.json:1:{MAX_DEPTH + 1}: expected JSON nested at most {MAX_DEPTH} deep, found deeper nesting"),
    ("thousands deep", '{"a":' * 50_000 + "1" + "}" * 50_000,
     f"f.json:1:{5 * MAX_DEPTH + 1}: expected JSON nested at most {MAX_DEPTH} deep, found deeper nesting"),
    ("deep and unterminated", "[" * 100_000,
     f"f.json:1:{MAX_DEPTH + 1}: expected JSON nested at most {MAX_DEPTH} deep, found deeper nesting"),
    ("int over the float range", '{"a": 1' + "0" * 400 + "}", f"f.json:1:7: {TOO_BIG} '1" + "0" * 29 + "'... (401 "
     "characters)"),
    ("int over python's digit limit", "[" + "9" * 5000 + "]", f"f.json:1:2: {TOO_BIG} '" + "9" * 30 + "'... (5000 "
     "characters)"),
    ("negative int over the range", "[-" + "9" * 400 + "]", f"f.json:1:2: {TOO_BIG} '-" + "9" * 29 + "'... (401 "
     "characters)"),
    ("float overflow", '{"a": 1.0e+400}', f"f.json:1:7: {TOO_BIG} '1.0e+400'"),
    ("NaN", '{"a.py::t": NaN}', "f.json:1:13: " + NOT_A_NUMBER.format("NaN")),
    ("Infinity", "[1, Infinity]", "f.json:1:5: " + NOT_A_NUMBER.format("Infinity")),
    ("-Infinity", "[\n -Infinity]", "f.json:2:2: " + NOT_A_NUMBER.format("-Infinity")),
    ("duplicate key", '{"a": 1,\n "a": 2}', "f.json:2:2: expected each key once, found 'a' again"),
    ("duplicate nested key", '{"x": {"b": 1, "a": 1, "a": 2}}', "f.json:1:24: expected each key once, found 'a' again"),
    ("duplicate escaped key", '{"ab": 1, "a\\u0062": 2}', "f.json:1:11: expected each key once, found 'ab' again"),
    ("lone surrogate", '["ok", "\\ud800"]', "f.json:1:8: expected text of Unicode characters, found the lone surrogate "
     "\\ud800"),
    ("lone low surrogate key", '{"\\udc00x": 1}', "f.json:1:2: expected text of Unicode characters, found the lone "
     "surrogate \\udc00"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_refuses_with_a_located_error(text: str, message: str) -> None:
    with pytest.raises(ShardError) as raised:
        parse_json(text, file="f.json", error=ShardError)
    assert str(raised.value) == message


def test_read_json_drops_a_bom_and_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    assert read_json(path, name="the file", error=ShardError) == {"a": 1}


def test_read_json_locates_a_byte_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(b'{\n  "a\xff": 1}')
    with pytest.raises(ShardError) as raised:
        read_json(path, name="the file", error=ShardError)
    assert (
        str(raised.value)
        == f"{path}:2:5: cannot read the file: it is not UTF-8 text (byte 0xff) Hint: save the file as UTF-8"
    )


@pytest.mark.parametrize(
    ("value", "described"),
    [({}, "a JSON object"), ([1], "a JSON list"), ("x" * 100, "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'... (100 characters)"),
     (None, "None"), (1.5, "1.5")],
    ids=["object", "list", "long string", "null", "number"],
)  # fmt: skip
def test_describe_json(value: object, described: str) -> None:
    assert describe_json(value) == described


# Pieces of JSON that reach every limit: numbers at and past the float range, the non-JSON constants,
# escapes (paired and lone surrogates), repeated keys, brackets for nesting, and broken syntax.
PIECES = [
    "0", "-0", "1.5", "1e308", "1e309", "-1e400", "1" * 309, "1" * 5000, "NaN", "Infinity", "-Infinity", "true",
    "null", '""', '"a"', '"\\ud800"', '"\\ud83d\\ude00"', '"\\u0000"', '"a\\', "[", "]", "{", "}", ",", ":",
    '"k":', '{"k": 1, "k": 2}', " ", "\n", "\ufeff", "\\", "'",
]  # fmt: skip
json_like = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=20,
)


def _check(text: str) -> None:
    try:
        value = parse_json(text, file="f.json", error=ShardError)
    except ShardError as error:
        assert "\n" not in str(error)
        assert error.where is not None and error.where.file == "f.json"
        return
    json.dumps(value, allow_nan=False).encode()  # whatever parses can be written out again as UTF-8


@settings(max_examples=500, deadline=None)
@given(st.text())
def test_any_text_parses_or_raises_our_error(text: str) -> None:
    _check(text)


@settings(max_examples=1000, deadline=None)
@given(json_like)
def test_any_json_like_text_parses_or_raises_our_error(text: str) -> None:
    _check(text)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_json_within_the_limits_round_trips(value: object) -> None:
    assert parse_json(json.dumps(value), file="f.json", error=ShardError) == value


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=64))
def test_any_file_reads_or_raises_our_error(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    path = tmp_path_factory.getbasetemp() / "any.json"
    path.write_bytes(data)
    try:
        value = read_json(path, name="the file", error=ShardError)
    except CiToolError as error:
        assert isinstance(error, ShardError)
        return
    assert not isinstance(value, float) or math.isfinite(value)


NESTED = '{"a": [1, {"b": "x"}, []],\n "c": {"d": [[2]], "e": "]}"}, "f": {"g": 3}}'
POSITIONS = [
    ("the whole value", (), (1, 1)),
    ("a key's value", ("a",), (1, 7)),
    ("an item", ("a", 0), (1, 8)),
    ("an object in a list", ("a", 1), (1, 11)),
    ("a key inside it", ("a", 1, "b"), (1, 17)),
    ("an empty list", ("a", 2), (1, 23)),
    ("on the next line", ("c",), (2, 7)),
    ("deep", ("c", "d", 0, 0), (2, 15)),
    ("after brackets in a string", ("f", "g"), (2, 43)),
    ("past a list's end", ("a", 3), None),
    ("no such key", ("z",), None),
]


@pytest.mark.parametrize(("path", "position"), [r[1:] for r in POSITIONS], ids=[r[0] for r in POSITIONS])
def test_value_position_finds_the_value_at_a_json_path(path: tuple[str | int, ...], position: object) -> None:
    assert value_position(NESTED, path) == position
