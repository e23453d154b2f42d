"""`.test_durations` loading and per-entry estimates (node ids, files, folders, -k/-m entries)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tool.errors import ShardError
from ci_tool.stages.durations import MAX_SECONDS, estimate_seconds, load_durations, parse_durations


def test_parse_keeps_ids_and_seconds() -> None:
    assert parse_durations('{"a.py::t": 1.5, "b.py::u": 2}') == {"a.py::t": 1.5, "b.py::u": 2.0}


NOT_AN_OBJECT = "expected a JSON object of test id -> seconds"
BAD_FILES = {
    "invalid-json": (
        '{"a.py::t": 1.5,\n}',
        "d.json:2:1: expected JSON, found a syntax error: Expecting property name enclosed in double quotes",
    ),
    "a-list": (
        '["a.py::t"]',
        f'd.json: {NOT_AN_OBJECT}, found a JSON list Hint: write it as {{"path/test_x.py::test_y": 12.5, ...}}',
    ),
    "a-string-value": ('{"a.py::t": "1.5"}', "d.json: expected a number of seconds >= 0 for 'a.py::t', found '1.5'"),
    "a-negative-value": ('{"a.py::t": -1}', "d.json: expected a number of seconds >= 0 for 'a.py::t', found -1"),
    "a-boolean-value": ('{"a.py::t": true}', "d.json: expected a number of seconds >= 0 for 'a.py::t', found True"),
    "over a week": (
        '{"a.py::t": 1e300}',
        "d.json: expected at most 604800 seconds (a week) for 'a.py::t', found 1e+300",
    ),
    "a-list-value": ('{"a.py::t": [1]}', "d.json: expected a number of seconds >= 0 for 'a.py::t', found a JSON list"),
    "too-large-for-a-float": (
        '{"a.py::t": 1' + "0" * 400 + "}",
        "d.json:1:13: expected a number within the range of a 64-bit float (about ±1.8e308), found '1"
        + "0" * 29
        + "'... (401 characters)",
    ),
    "duplicate-id": ('{"a.py::t": 1,\n "a.py::t": 2}', "d.json:2:2: expected each key once, found 'a.py::t' again"),
    "not-finite": (
        '{"a.py::t": NaN}',
        "d.json:1:13: expected a number, found 'NaN' Hint: JSON has no NaN or Infinity: write a finite number",
    ),
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
    assert str(caught.value) == f"{tmp_path / 'nope.json'}: cannot read the durations file: No such file or directory"


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


def test_an_unknown_entry_outside_every_known_folder_gets_the_lists_median() -> None:
    estimates = estimate_seconds(["a/test_x.py::test_one", "a/test_y.py::T::test_z", "new.py::t"], DURATIONS)
    assert estimates.seconds == {"a/test_x.py::test_one": 10.0, "a/test_y.py::T::test_z": 5.0, "new.py::t": 7.5}
    assert (estimates.unknown, estimates.mean_seconds) == (frozenset({"new.py::t"}), 7.5)


def test_with_nothing_known_every_entry_gets_one_second() -> None:
    estimates = estimate_seconds(["x.py::a", "y.py"], DURATIONS)
    assert (estimates.seconds, estimates.mean_seconds) == ({"x.py::a": 1.0, "y.py": 1.0}, 1.0)


def test_load_ignores_a_leading_bom(tmp_path: Path) -> None:
    path = tmp_path / ".test_durations"
    path.write_bytes(b'\xef\xbb\xbf{"a.py::t": 3}')
    assert load_durations(path) == {"a.py::t": 3.0}


def test_the_largest_durations_add_up_to_a_finite_estimate() -> None:
    durations = parse_durations(json.dumps({f"a/t{i}.py": MAX_SECONDS for i in range(1000)}))
    assert estimate_seconds(["a"], durations).seconds["a"] == 1000 * MAX_SECONDS


seconds = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(),
    st.sampled_from([MAX_SECONDS, MAX_SECONDS + 1, 10**308, "1", None, True, [1], {"a": 1}]),
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "a/b.py", "a/b.py::t", "a/c.py", 'a -k "x"']), seconds, max_size=5))
def test_any_durations_parse_or_raise_our_error_and_estimate_finite_seconds(data: dict[str, object]) -> None:
    try:
        durations = parse_durations(json.dumps(data), source="d.json")
    except ShardError as error:
        assert "\n" not in str(error)
        return
    estimates = estimate_seconds(["a", "a/b.py", "z.py"], durations)
    assert all(math.isfinite(value) for value in estimates.seconds.values())


def test_each_entry_adds_its_recorded_per_process_cost() -> None:
    durations = {"a.py::t": 2.0, "b.py::t": 3.0, "process-cost:a.py": 1.5, "process-cost:b.py": 0.5}
    estimates = estimate_seconds(["a.py", "b.py", "c.py"], durations)
    # c.py: the median of the known test seconds (2.5) and the mean of the recorded costs (1.0)
    assert estimates.seconds == {"a.py": 3.5, "b.py": 3.5, "c.py": 3.5}


def test_without_recorded_costs_nothing_is_added() -> None:
    assert estimate_seconds(["a.py"], {"a.py::t": 2.0}).seconds == {"a.py": 2.0}


def test_an_unknown_entry_is_priced_by_its_nearest_folder_not_by_slow_strangers() -> None:
    """A list mixing second-long unit tests with hour-long perf cases: an unknown unit-test file costs what
    its folder's recorded files do (the median, so one slow neighbour does not price the folder)."""
    durations = {
        "unittest/a/test_1.py": 2.0, "unittest/a/test_2.py": 4.0, "unittest/a/test_3.py": 900.0,
        "unittest/b/test_4.py": 6.0, "perf/test_perf.py::case": 7200.0,
    }  # fmt: skip
    entries = [*durations, "unittest/a/test_new.py", "unittest/c/test_new.py", "examples/test_new.py"]
    estimates = estimate_seconds(entries, durations)
    assert [estimates.seconds[entry] for entry in entries[-3:]] == [4.0, 5.0, 6.0]
    # unittest/a/: median of 2, 4, 900; unittest/: median of 2, 4, 900, 6; the whole list: of all five
    assert estimates.unknown == frozenset(entries[-3:])
