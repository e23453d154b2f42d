"""The waives file: parsing, GPU scoping by exact stage token, malformed lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tool.errors import TestDbError, Where
from ci_tool.testdb.waives import Waive, load_waives, parse_waive_line, parse_waives, waive_line, waives_for_gpu

HERE = Where("waives.txt", 7, 1)

PARSED = [
    ("plain", "a.py::t SKIP (https://nvbugs/1)", [Waive("a.py::t", None, "https://nvbugs/1", HERE)]),
    ("no reason", "a.py::t SKIP", [Waive("a.py::t", None, None, HERE)]),
    ("comment instead of reason", "a.py::t SKIP # flaky", [Waive("a.py::t", None, None, HERE)]),
    ("gpu scope", "full:A10/unittest/x/ SKIP (bug)", [Waive("unittest/x/", "A10", "bug", HERE)]),
    (
        "filter kept in the id",
        'full:sm100/u/test_x.py -m "part0" SKIP (oom)',
        [Waive('u/test_x.py -m "part0"', "sm100", "oom", HERE)],
    ),
    (
        "several paths on one line",
        "full:sm100/u/a.py u/b SKIP (Disable for Blackwell)",
        [Waive("u/a.py", "sm100", "Disable for Blackwell", HERE), Waive("u/b", "sm100", "Disable for Blackwell", HERE)],
    ),
    ("blank", "   ", []),
    ("comment line", "# waived until the fix lands", []),
]


@pytest.mark.parametrize(("text", "expected"), [r[1:] for r in PARSED], ids=[r[0] for r in PARSED])
def test_parses(text: str, expected: list[Waive]) -> None:
    assert parse_waive_line(text, HERE) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a.py::t", "waives.txt:7:1: expected `<test id> SKIP (<reason>)`, found 'a.py::t'"),
        ("a.py::t XFAIL (x)", "waives.txt:7:1: expected `<test id> SKIP (<reason>)`, found 'a.py::t XFAIL (x)'"),
        (
            "a.py::t SKIP TIMEOUT (5)",
            "waives.txt:7:1: expected `<test id> SKIP (<reason>)`, found 'a.py::t SKIP TIMEOUT (5)'",
        ),
    ],
    ids=["no marker", "xfail", "timeout"],
)
def test_rejects_lines_that_do_not_skip(text: str, message: str) -> None:
    with pytest.raises(TestDbError) as raised:
        parse_waive_line(text, HERE)
    assert (
        str(raised.value) == message + " Hint: a waive skips a test: end the line with SKIP (https://your-tracker/123)"
    )


def test_gpu_scope_matches_the_stage_token_exactly() -> None:
    waives, _ = parse_waives("full:A100/a.py SKIP (x)\nfull:A10/b.py SKIP (y)\nc.py SKIP (z)\n", "waives.txt")
    assert [w.test_id for w in waives_for_gpu(waives, "A10")] == ["b.py", "c.py"]
    assert [w.test_id for w in waives_for_gpu(waives, "A100")] == ["a.py", "c.py"]
    assert [w.test_id for w in waives_for_gpu(waives, "DGX_A100")] == ["c.py"]


def test_parsing_goes_on_past_a_bad_line_and_reports_its_line_number() -> None:
    waives, problems = parse_waives("a.py SKIP (x)\nbroken line\nc.py SKIP\n", "w.txt")
    assert [w.test_id for w in waives] == ["a.py", "c.py"]
    assert [str(p.where) for p in problems] == ["w.txt:2:1"]


def test_a_missing_file_holds_no_waives(tmp_path: Path) -> None:
    assert load_waives(tmp_path / "waives.txt") == []


def test_load_raises_the_first_bad_line(tmp_path: Path) -> None:
    (tmp_path / "waives.txt").write_text("a.py SKIP (x)\nb.py SKIP because\n")
    with pytest.raises(TestDbError, match=r"waives.txt:2:1: expected the text after SKIP in parentheses"):
        load_waives(tmp_path / "waives.txt")


def test_a_leading_bom_is_no_part_of_the_first_waive(tmp_path: Path) -> None:
    (tmp_path / "waives.txt").write_bytes(b"\xef\xbb\xbfa.py::t SKIP (x)\r\nb.py SKIP (y)\r\n")
    assert [w.test_id for w in load_waives(tmp_path / "waives.txt")] == ["a.py::t", "b.py"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "a.py SKIP (x)\nb.py\fc.py SKIP (y)\n",
            "w.txt:2:1: expected a test line of visible characters, found U+000C in 'b.py\\x0cc.py SKIP (y)'",
        ),
        (
            "a.py SKIP (x)\nb.py\u2028c.py SKIP (y)\n",
            "w.txt:2:1: expected a test line of visible characters, found U+2028 (LINE SEPARATOR) in "
            "'b.py\\u2028c.py SKIP (y)'",
        ),
        (
            "a.py SKIP (x)\nb.py TIMEOUT (²) SKIP (y)\n",
            "w.txt:2:1: expected TIMEOUT (N) with N a positive whole number of minutes, found '²' in "
            "'b.py TIMEOUT (²) SKIP (y)'",
        ),
    ],
    ids=["form feed", "line separator", "superscript timeout"],
)
def test_a_waive_with_a_hidden_line_break_or_odd_digit_is_one_located_error(text: str, message: str) -> None:
    waives, problems = parse_waives(text, "w.txt")
    assert [w.test_id for w in waives] == ["a.py"]
    assert [str(p).split(" Hint: ")[0] for p in problems] == [message]


def test_a_waives_file_that_is_not_utf8_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "waives.txt").write_bytes(b"a.py SKIP (x)\nb\xff.py SKIP (y)\n")
    with pytest.raises(TestDbError) as raised:
        load_waives(tmp_path / "waives.txt")
    assert str(raised.value) == (
        f"{tmp_path / 'waives.txt'}:2:2: cannot read the waives file: it is not UTF-8 text (byte 0xff) "
        "Hint: save the file as UTF-8"
    )


WAIVE_LINES = {
    "node id": ("a/test_x.py::test_y", "a/test_x.py::test_y SKIP (Reused from run r1)"),
    "parametrized": ("a/test_x.py::test_y[1-2]", "a/test_x.py::test_y[1-2] SKIP (Reused from run r1)"),
    "a blank in the id": ("a/test_x.py::test_y[a b]", None),
    "a comment mark in the id": ("a/test_x.py::test_y[x #1]", None),
    "a scope-like id": ("full:A10/a.py::test_y", None),
}


@pytest.mark.parametrize(("test_id", "line"), WAIVE_LINES.values(), ids=WAIVE_LINES.keys())
def test_a_generated_waive_line_reads_back_as_its_one_waive(test_id: str, line: str | None) -> None:
    assert waive_line(test_id, "Reused from run r1") == line
