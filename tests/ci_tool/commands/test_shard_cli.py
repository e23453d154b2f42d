"""`ci-tool shard` through the real entry point: JSON shape, isolation, auto splits and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tool.cli import main

LIST = """\
# a rendered list: markers and comments are allowed
a.py::t1
b.py ISOLATION
c.py::x TIMEOUT (90)

d.py::y  # trailing comment
"""
DURATIONS = {"a.py::t1": 5, "b.py::q": 3, "b.py::r": 1, "c.py::x": 4, "d.py::y": 2}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    test_list = tmp_path / "list.txt"
    test_list.write_text(LIST)
    durations = tmp_path / ".test_durations"
    durations.write_text(json.dumps(DURATIONS))
    return test_list, durations


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_has_shards_and_predicted_seconds(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    test_list, durations = files
    code, out, err = run(capsys, "shard", "--durations", str(durations), "--splits", "2", str(test_list), "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "shards": [["a.py::t1", "d.py::y"], ["b.py", "c.py::x"]],
        "predicted_seconds": [7.0, 8.0],
    }


def test_least_duration_can_be_chosen(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    test_list, durations = files
    argv = ["shard", "--durations", str(durations), "--splits", "3", "--algorithm", "least_duration", str(test_list)]
    code, out, _ = run(capsys, *argv, "--json")
    assert (code, json.loads(out)["predicted_seconds"]) == (0, [5.0, 6.0, 4.0])


def test_text_output_marks_isolated_tests(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    test_list, durations = files
    code, out, _ = run(capsys, "shard", "--durations", str(durations), "--splits", "2", str(test_list))
    assert (code, out) == (
        0,
        "shard 1/2: 2 tests, 7.0 s\n  a.py::t1\n  d.py::y\n"
        "shard 2/2: 2 tests, 1 isolated, 8.0 s\n  b.py  ISOLATION\n  c.py::x\n"
        "lpt_pairwise: makespan 8.0 s, lower bound 7.5 s\n",
    )


def test_auto_splits_within_a_budget(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    test_list, durations = files
    argv = ["shard", "--durations", str(durations), "--splits", "auto", "--budget-minutes", "0.1", str(test_list)]
    code, out, _ = run(capsys, *argv, "--json")
    assert (code, json.loads(out)["predicted_seconds"]) == (0, [5.0, 6.0, 4.0])


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--splits", "auto"], "--splits auto needs --budget-minutes"),
        (["--splits", "2", "--budget-minutes", "5"], "--budget-minutes goes with --splits auto"),
        (["--splits", "0"], "expected a positive whole number or 'auto', found '0'"),
        (["--splits", "2", "--algorithm", "lpt"], "'lpt' is not one of 'least_duration', 'lpt_pairwise'"),
    ],
    ids=["auto-needs-budget", "budget-needs-auto", "zero-splits", "unknown-algorithm"],
)
def test_usage_errors_exit_2(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    test_list, durations = files
    code, out, err = run(capsys, "shard", "--durations", str(durations), *extra, str(test_list))
    assert (code, out) == (2, "")
    assert message in err


def test_more_shards_than_tests_exit_1(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    test_list, durations = files
    code, out, err = run(capsys, "shard", "--durations", str(durations), "--splits", "5", str(test_list))
    assert (code, out, err) == (
        1,
        "",
        "error: expected at most 4 shards for 4 tests (no shard may be empty), found splits=5 "
        "Hint: use splits=4, or splits=auto with a budget\n",
    )


def test_a_bad_list_line_points_at_its_line(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    test_list, durations = files
    test_list.write_text("a.py::t1\nb.py SKIP reason without parentheses\n")
    code, _, err = run(capsys, "shard", "--durations", str(durations), "--splits", "1", str(test_list))
    assert code == 1
    assert err.startswith(f"error: {test_list}:2: expected the text after SKIP in parentheses")


def test_missing_files_exit_1(tmp_path: Path, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    test_list, durations = files
    code, _, err = run(capsys, "shard", "--durations", str(tmp_path / "none.json"), "--splits", "1", str(test_list))
    assert (code, err) == (
        1,
        f"error: {tmp_path / 'none.json'}: cannot read the durations file: No such file or directory\n",
    )
    code, _, err = run(capsys, "shard", "--durations", str(durations), "--splits", "1", str(tmp_path / "none.txt"))
    assert (code, err) == (
        1,
        f"error: {tmp_path / 'none.txt'}: cannot read the test list: No such file or directory\n",
    )


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"a.py::t1\nb.py TIMEOUT (\xc2\xb2)\n", "{path}:2: expected TIMEOUT (N) with N a positive whole number of "
         "minutes, found '\u00b2' in 'b.py TIMEOUT (\u00b2)' Hint: write e.g. TIMEOUT (90); the value is in minutes"),
        (b"a.py::t1 TIMEOUT (" + b"9" * 5000 + b")\n", "{path}:1: expected TIMEOUT (N) with N at most 10080 minutes "
         "(a week), found '" + "9" * 30 + "'... (5000 characters) in 'a.py::t1 TIMEOUT (999999999999'... (5019 "
         "characters) Hint: write e.g. TIMEOUT (90); the value is in minutes"),
        (b"a.py::t1\x0cb.py\n", "{path}:1: expected a test line of visible characters, found U+000C in "
         "'a.py::t1\\x0cb.py' Hint: a test line is one line of text: delete the character (or split the line into "
         "two entries)"),
        (b"a.py::t1\nb\xff.py\n", "{path}:2:2: cannot read the test list: it is not UTF-8 text (byte 0xff) Hint: "
         "save the file as UTF-8"),
    ],
    ids=["superscript timeout", "timeout of thousands of digits", "form feed", "not utf-8"],
)  # fmt: skip
def test_a_bad_list_line_is_a_located_error(
    tmp_path: Path, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str], data: bytes, message: str
) -> None:
    test_list, durations = files
    test_list.write_bytes(data)
    code, _, err = run(capsys, "shard", "--durations", str(durations), "--splits", "1", str(test_list))
    assert (code, err) == (1, "error: " + message.format(path=test_list) + "\n")


def test_a_list_and_durations_with_a_bom_shard(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    test_list, durations = files
    test_list.write_bytes(b"\xef\xbb\xbfa.py::t1\n")
    durations.write_bytes(b'\xef\xbb\xbf{"a.py::t1": 5}')
    code, out, _ = run(capsys, "shard", "--durations", str(durations), "--splits", "1", str(test_list), "--json")
    assert (code, json.loads(out)["shards"]) == (0, [["a.py::t1"]])


@pytest.mark.parametrize("splits", ["\u00b2", "\u0663", "\u00b2" * 5000], ids=["superscript", "arabic-indic", "huge"])
def test_splits_that_are_not_ascii_digits_are_a_usage_error(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str], splits: str
) -> None:
    test_list, durations = files
    code, _, err = run(capsys, "shard", "--durations", str(durations), "--splits", splits, str(test_list))
    assert (code, "unexpected" in err, "expected a positive whole number or 'auto'" in err) == (2, False, True)
