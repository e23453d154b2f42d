"""Loading test-db YAML: valid shapes become values; every invalid fixture gives its pinned one-line error."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ci_tool.errors import TestDbError
from ci_tool.testdb.load import load_test_db, read_test_db, read_test_db_file
from ci_tool.testdb.model import Range

if TYPE_CHECKING:
    from tests.helpers.golden import Golden

INVALID = Path(__file__).parent / "invalid"
INVALID_FIXTURES = sorted(INVALID.glob("*.yml"))


@pytest.mark.parametrize("fixture", INVALID_FIXTURES, ids=[f.stem for f in INVALID_FIXTURES])
def test_invalid_fixture_reports_its_expected_errors(
    fixture: Path, monkeypatch: pytest.MonkeyPatch, golden: Golden
) -> None:
    monkeypatch.chdir(INVALID)
    _, problems = read_test_db_file(Path(fixture.name))
    assert problems, "an invalid fixture must produce at least one problem"
    golden(fixture.with_suffix(".err"), "".join(f"{problem}\n" for problem in problems))


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_a_valid_file_becomes_frozen_values(tmp_path: Path) -> None:
    write(
        tmp_path,
        "l0_x.yml",
        """\
version: 0.0.1
l0_x:
- condition:
    terms: {stage: pre_merge, supports_fp8: true}
    ranges: {system_gpu_count: {gte: 1, lte: 2}}
    wildcards: {gpu: ['*a10*', '*l40s*'], cpu: x86_64}
  tests:
  - a.py::test_one TIMEOUT (90)  # a comment
  - b.py ISOLATION
- tests:
  - c.py
""",
    )
    db = load_test_db(tmp_path)
    first, second = db.contexts["l0_x"].blocks
    assert dict(first.condition.terms) == {"stage": "pre_merge", "supports_fp8": "true"}
    assert dict(first.condition.ranges) == {"system_gpu_count": Range(1, 2)}
    assert dict(first.condition.wildcards) == {"gpu": ("*a10*", "*l40s*"), "cpu": ("x86_64",)}
    assert [e.line.raw for e in first.entries] == ["a.py::test_one TIMEOUT (90)", "b.py ISOLATION"]
    assert (first.entries[0].where.line, first.entries[0].where.yaml_path) == (8, "l0_x[0].tests[0]")
    assert second.condition.keys() == frozenset()


def test_a_context_defined_in_two_files_is_an_error(tmp_path: Path) -> None:
    write(tmp_path, "a.yml", "version: 0.0.1\nl0_x:\n- tests: [a.py]\n")
    write(tmp_path, "b.yml", "version: 0.0.1\nl0_x:\n- tests: [b.py]\n")
    _, problems = read_test_db(tmp_path)
    assert [p.message for p in problems] == [
        "expected each context name once across the test-db, found 'l0_x' again "
        f"(first defined at {tmp_path}/a.yml:3:1 (l0_x))"
    ]


def test_load_raises_every_problem_at_once(tmp_path: Path) -> None:
    write(tmp_path, "a.yml", "version: 0.0.1\nl0_x:\n- tests: [a.py TIMEOUT (0), b.py TIMEOUT (x)]\n")
    with pytest.raises(TestDbError) as raised:
        load_test_db(tmp_path)
    headline, first, second = str(raised.value).splitlines()
    assert headline == f"{tmp_path}: 2 problems, each on a line below"
    assert first.startswith(f"  {tmp_path}/a.yml:3:11 (l0_x[0].tests[0]): expected TIMEOUT (N)")
    assert second.startswith(f"  {tmp_path}/a.yml:3:29 (l0_x[0].tests[1]): expected TIMEOUT (N)")


def test_a_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TestDbError, match=r"expected a test-db folder, found nothing at '.*nowhere'"):
        load_test_db(tmp_path / "nowhere")


def test_an_unreadable_file_is_reported_where_it_is(tmp_path: Path) -> None:
    (tmp_path / "folder.yml").mkdir()  # a directory named like a list: reading it fails
    write(tmp_path, "binary.yml", "").write_bytes(b"version: 0.0.1\n\xff\xfe")
    _, problems = read_test_db(tmp_path)
    assert sorted(str(p) for p in problems) == [
        f"{tmp_path}/binary.yml:2:1: cannot read the test-db file: it is not UTF-8 text (byte 0xff) "
        "Hint: save the file as UTF-8",
        f"{tmp_path}/folder.yml: cannot read the test-db file: expected a regular file, found a folder",
    ]


RANGE_HINT = "Hint: range bounds are whole numbers, e.g. gte: 4"
ODD_RANGES = [
    ("leading zero", "07", "expected an integer, found '07' Hint: YAML 1.1 reads a leading 0 as octal and YAML 1.2 "
     "as decimal: drop the leading zeros"),
    ("base 60", "1:30", "expected an integer, found '1:30' Hint: YAML 1.1 reads '1:30' as a base-60 number (1:30 is "
     "90): write the whole number"),
    ("thousands of digits", "1" * 5000, "expected an integer, found '" + "1" * 30 + "'... (5000 characters) Hint: that "
     "is more than 19 digits: the largest whole number read is 9223372036854775807"),
    ("over 64 bits", "9223372036854775808", "expected an integer, found 9223372036854775808 Hint: the largest "
     "accepted is 9223372036854775807"),
    ("octal prefix is a string in YAML 1.1", "0o17", f"expected an integer, found '0o17' {RANGE_HINT}"),
    ("tagged word", "!!int x", f"expected an integer, found 'x' {RANGE_HINT}"),
    ("tagged prefix only", "0x_", f"expected an integer, found '0x_' {RANGE_HINT}"),
]  # fmt: skip


@pytest.mark.parametrize(("bound", "message"), [r[1:] for r in ODD_RANGES], ids=[r[0] for r in ODD_RANGES])
def test_odd_range_bounds_are_located_errors(tmp_path: Path, bound: str, message: str) -> None:
    text = f"version: 0.0.1\nl0_x:\n- condition:\n    ranges: {{n: {{gte: {bound}}}}}\n  tests: [a]\n"
    _, problems = read_test_db_file(write(tmp_path, "l0_x.yml", text))
    assert [str(p) for p in problems] == [f"{tmp_path}/l0_x.yml:4:23 (l0_x[0].condition.ranges.n.gte): {message}"]


@pytest.mark.parametrize(
    ("bound", "value"),
    [("+3", 3), ("-3", -3), ("1_000", 1000), ("0x1F", 31), ("0b11", 3), ("-9223372036854775808", -(2**63))],
    ids=["plus", "minus", "underscores", "hex", "binary", "smallest"],
)
def test_range_bounds_read_as_yaml_says(tmp_path: Path, bound: str, value: int) -> None:
    write(
        tmp_path,
        "l0_x.yml",
        f"version: 0.0.1\nl0_x:\n- condition:\n    ranges: {{n: {{gte: {bound}}}}}\n  tests: [a]\n",
    )
    assert load_test_db(tmp_path).contexts["l0_x"].blocks[0].condition.ranges["n"] == Range(value, None)


HIDDEN = "expected a test line of visible characters, found"
SPLIT_HINT = "Hint: a test line is one line of text: delete the character (or split the line into two entries)"
HIDDEN_CHARACTERS = [
    ("newline", '"a.py::t\\nb.py::u"', f"{HIDDEN} U+000A in 'a.py::t\\nb.py::u' {SPLIT_HINT}"),
    ("block scalar", "|\n    a.py\n    b.py", f"{HIDDEN} U+000A in 'a.py\\nb.py\\n' {SPLIT_HINT}"),
    ("nul", '"a.py\\0"', f"{HIDDEN} U+0000 in 'a.py\\x00' {SPLIT_HINT}"),
    ("carriage return", '"a.py\\r"', f"{HIDDEN} U+000D in 'a.py\\r' {SPLIT_HINT}"),
    ("escape", '"a.py\\e[0m"', f"{HIDDEN} U+001B in 'a.py\\x1b[0m' {SPLIT_HINT}"),
    ("zero width space", '"a.py\\u200b"', f"{HIDDEN} U+200B (ZERO WIDTH SPACE) in 'a.py\\u200b' {SPLIT_HINT}"),
    ("line separator", '"a.py\\L"', f"{HIDDEN} U+2028 (LINE SEPARATOR) in 'a.py\\u2028' {SPLIT_HINT}"),
]


@pytest.mark.parametrize(("item", "message"), [r[1:] for r in HIDDEN_CHARACTERS], ids=[r[0] for r in HIDDEN_CHARACTERS])
def test_a_test_line_with_a_control_character_is_refused_at_its_entry(tmp_path: Path, item: str, message: str) -> None:
    path = write(tmp_path, "l0_x.yml", f"version: 0.0.1\nl0_x:\n- tests:\n  - c.py\n  - {item}\n")
    _, problems = read_test_db_file(path)
    assert [str(p) for p in problems] == [f"{path}:5:5 (l0_x[0].tests[1]): {message}"]


def test_a_leading_bom_is_ignored(tmp_path: Path) -> None:
    write(tmp_path, "l0_x.yml", "").write_bytes(b"\xef\xbb\xbfversion: 0.0.1\nl0_x:\n- tests: [a.py]\n")
    assert [e.line.test_id for e in load_test_db(tmp_path).contexts["l0_x"].blocks[0].entries] == ["a.py"]


LIST_A = "version: 0.0.1\nl0_a:\n- condition: {}\n  tests: [tests/a.py]\n"
LIST_B = "version: 0.0.1\nl0_b:\n- condition: {}\n  tests: [tests/b.py]\n"
LIST_A2 = "version: 0.0.1\nl0_a:\n- condition: {}\n  tests: [tests/a.py, tests/a2.py]\n"


@pytest.mark.parametrize(
    ("texts", "contexts"),
    [
        ({}, {"l0_a": 1}),
        ({"a.yml": LIST_A2}, {"l0_a": 2}),
        ({"a.yml": None}, {}),
        ({"b.yml": LIST_B}, {"l0_a": 1, "l0_b": 1}),
    ],
    ids=["the folder's", "a file's text replaced", "a file gone", "a file added"],
)
def test_texts_stand_in_for_the_folders_files(
    tmp_path: Path, texts: dict[str, str | None], contexts: dict[str, int]
) -> None:
    write(tmp_path, "a.yml", LIST_A)
    db = load_test_db(tmp_path, texts=texts)
    assert {name: len(context.blocks[0].entries) for name, context in db.contexts.items()} == contexts
