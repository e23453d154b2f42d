"""`.test_durations` loading and per-entry estimates (node ids, files, folders, -k/-m entries)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tool.errors import ShardError
from ci_tool.stages.durations import estimate_seconds, load_durations, parse_durations


def test_parse_keeps_ids_and_seconds() -> None:
    assert parse_durations('{"a.py::t": 1.5, "b.py::u": 2}') == {"a.py::t": 1.5, "b.py::u": 2.0}


NOT_AN_OBJECT = "expected a JSON object of test id -> seconds"
BAD_FILES = {
    "invalid-json": (
        '{"a.py::t": 1.5,\n}',
        f"d.json:2:1: {NOT_AN_OBJECT}, found invalid JSON (Expecting property name enclosed in double quotes)",
    ),
    "a-list": (
        '["a.py::t"]',
        f'd.json: {NOT_AN_OBJECT}, found a JSON list Hint: write it as {{"path/test_x.py::test_y": 12.5, ...}}',
    ),
    "a-string-value": ('{"a.py::t": "1.5"}', "d.json: expected a number of seconds >= 0 for 'a.py::t', found '1.5'"),
    "a-negative-value": ('{"a.py::t": -1}', "d.json: expected a number of seconds >= 0 for 'a.py::t', found -1"),
    "a-boolean-value": ('{"a.py::t": true}', "d.json: expected a number of seconds >= 0 for 'a.py::t', found True"),
    "not-finite": ('{"a.py::t": NaN}', "d.json: expected a number of seconds >= 0 for 'a.py::t', found nan"),
}


@pytest.mark.parametrize(("text", "message"), BAD_FILES.values(), ids=list(BAD_FILES))
def test_bad_durations_files(text: str, message: str) -> None:
    with pytest.raises(ShardError) as caught:
        parse_durations(text, source="d.json")
    assert str(caught.value) == message


def test_load_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / ".test_durations"
    path.write_text('{"a.py::t": 3}')
    assert load_durations(path) == {"a.py::t": 3.0}


def test_a_missing_file_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(ShardError) as caught:
        load_durations(tmp_path / "nope.json")
    assert (
        str(caught.value)
        == f"{tmp_path / 'nope.json'}: expected a readable durations file, found No such file or directory"
    )


DURATIONS = {
    "a/test_x.py::test_one": 10.0,
    "a/test_x.py::test_two[1]": 2.0,
    "a/test_x.py::test_two[2]": 3.0,
    "a/test_y.py::T::test_z": 5.0,
    "a/b/test_w.py::test_q": 7.0,
    "a/b": 100.0,  # a folder recorded whole: its own entry wins over the ids below it
    'u/m -k "gemma"': 40.0,
    "a/test_xx.py::test_other": 1000.0,  # shares a prefix with a/test_x.py but is not under it
}

ESTIMATES = {
    "node-id": ("a/test_x.py::test_one", 10.0),
    "parametrized-function": ("a/test_x.py::test_two", 5.0),
    "file": ("a/test_x.py", 15.0),
    "class": ("a/test_y.py::T", 5.0),
    "folder-without-double-counting": ("a", 10 + 2 + 3 + 5 + 100 + 1000),
    "recorded-folder": ("a/b", 100.0),
    "entry-recorded-with-k": ('u/m -k "gemma"', 40.0),
    "k-entry-falls-back-to-its-path": ('a/test_x.py -k "one"', 15.0),
    "m-entry-falls-back-to-its-path": ('a/test_y.py -m "gpu4"', 5.0),
}


@pytest.mark.parametrize(("entry", "seconds"), ESTIMATES.values(), ids=list(ESTIMATES))
def test_estimate_of_one_entry(entry: str, seconds: float) -> None:
    estimates = estimate_seconds([entry], DURATIONS)
    assert (estimates.seconds[entry], estimates.unknown) == (seconds, frozenset())


def test_unknown_entries_get_the_mean_of_the_known_ones_in_the_list() -> None:
    estimates = estimate_seconds(["a/test_x.py::test_one", "a/test_y.py::T::test_z", "new.py::t"], DURATIONS)
    assert estimates.seconds == {"a/test_x.py::test_one": 10.0, "a/test_y.py::T::test_z": 5.0, "new.py::t": 7.5}
    assert (estimates.unknown, estimates.mean_seconds) == (frozenset({"new.py::t"}), 7.5)


def test_with_nothing_known_every_entry_gets_one_second() -> None:
    estimates = estimate_seconds(["x.py::a", "y.py"], DURATIONS)
    assert (estimates.seconds, estimates.mean_seconds) == ({"x.py::a": 1.0, "y.py": 1.0}, 1.0)
