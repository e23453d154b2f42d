"""The one text-file rule: strict UTF-8 with located errors, a leading BOM dropped, a size cap, "\\n" lines."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from ci_tool import text_file
from ci_tool.errors import TestDbError
from ci_tool.text_file import lines, read_text, unprintable

READ = [
    ("plain", b"a\nb\n", "a\nb\n"),
    ("leading bom dropped", b"\xef\xbb\xbfa.py SKIP (x)\n", "a.py SKIP (x)\n"),
    ("inner bom kept", b"a\xef\xbb\xbfb", "a\ufeffb"),
    ("only one bom dropped", b"\xef\xbb\xbf\xef\xbb\xbf", "\ufeff"),
    ("empty", b"", ""),
]


@pytest.mark.parametrize(("data", "text"), [r[1:] for r in READ], ids=[r[0] for r in READ])
def test_read_text(tmp_path: Path, data: bytes, text: str) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    assert read_text(path, name="the file", error=TestDbError) == text


NOT_UTF8 = [
    ("first byte", b"\xff", "1:1", "0xff"),
    ("second line", b"version: 1\nab\xfe", "2:3", "0xfe"),
    ("column counts characters", "é€x".encode() + b"\x80", "1:4", "0x80"),
    ("truncated sequence", b"ok\n\xe2\x82", "2:1", "0xe2"),
    ("encoded surrogate", b"\xed\xa0\x80", "1:1", "0xed"),
    ("latin-1", "café".encode("latin-1"), "1:4", "0xe9"),
]


@pytest.mark.parametrize(("data", "place", "byte"), [r[1:] for r in NOT_UTF8], ids=[r[0] for r in NOT_UTF8])
def test_text_that_is_not_utf8_is_an_error_at_its_byte(tmp_path: Path, data: bytes, place: str, byte: str) -> None:
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    with pytest.raises(TestDbError) as raised:
        read_text(path, name="the file", error=TestDbError)
    assert str(raised.value) == (
        f"{path}:{place}: cannot read the file: it is not UTF-8 text (byte {byte}) Hint: save the file as UTF-8"
    )


def test_a_missing_file_and_a_folder_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(TestDbError) as missing:
        read_text(tmp_path / "nope", name="the file", error=TestDbError)
    with pytest.raises(TestDbError) as folder:
        read_text(tmp_path, name="the file", error=TestDbError)
    assert str(missing.value) == f"{tmp_path / 'nope'}: cannot read the file: No such file or directory"
    assert str(folder.value) == f"{tmp_path}: cannot read the file: expected a regular file, found a folder"


SPECIAL = {  # what is no regular file: the reader refuses it at once instead of blocking or filling memory
    "fifo": (lambda path: os.mkfifo(path), "a FIFO (a named pipe)"),
    "link-to-dev-zero": (lambda path: path.symlink_to("/dev/zero"), "a character device"),
    "link-to-dev-null": (lambda path: path.symlink_to("/dev/null"), "a character device"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("make", "found"), list(SPECIAL.values()), ids=list(SPECIAL))
def test_a_fifo_or_a_device_is_refused_without_reading_it(
    tmp_path: Path, make: Callable[[Path], None], found: str
) -> None:
    path = tmp_path / "tests.txt"
    make(path)
    with pytest.raises(TestDbError) as raised:
        read_text(path, name="the file", error=TestDbError)
    assert str(raised.value) == f"{path}: cannot read the file: expected a regular file, found {found}"


def test_a_file_over_the_cap_is_refused_without_reading_it_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text_file, "MAX_BYTES", 2**20)
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * (2**20 + 1))
    with pytest.raises(TestDbError) as raised:
        read_text(path, name="the file", error=TestDbError)
    assert str(raised.value) == f"{path}: cannot read the file: it is larger than 1 MiB"


LINES = [
    ("unix", "a\nb\n", ["a", "b"]),
    ("windows", "a\r\nb\r\n", ["a", "b"]),
    ("no final newline", "a\nb", ["a", "b"]),
    ("blank lines kept", "a\n\n\nb\n", ["a", "", "", "b"]),
    ("form feed stays in its line", "a\fb\nc\n", ["a\fb", "c"]),
    ("line separator stays in its line", "a\u2028b\n", ["a\u2028b"]),
    ("next line stays in its line", "a\x85b\n", ["a\x85b"]),
    ("lone carriage return stays", "a\rb\n", ["a\rb"]),
    ("empty", "", []),
]


@pytest.mark.parametrize(("text", "expected"), [r[1:] for r in LINES], ids=[r[0] for r in LINES])
def test_lines_split_at_newlines_only(text: str, expected: list[str]) -> None:
    assert lines(text) == expected


UNPRINTABLE = [
    ("plain", "tests/a.py::t[x-1] SKIP (https://bug/1 é ü 漢)", None),
    ("tab allowed", "a\tb", None),
    ("no-break space allowed", "a\u00a0b", None),
    ("newline", "a\nb", "U+000A"),
    ("unassigned code point", "a\U00040000", "U+40000"),
    ("private use", "a\ue000", "U+E000"),
    ("nul", "a\x00", "U+0000"),
    ("escape", "a\x1b[31m", "U+001B"),
    ("delete", "a\x7f", "U+007F"),
    ("next line", "a\x85", "U+0085"),
    ("zero width space", "a\u200bb", "U+200B (ZERO WIDTH SPACE)"),
    ("bom inside", "a\ufeff", "U+FEFF (ZERO WIDTH NO-BREAK SPACE)"),
    ("right-to-left override", "a\u202eb", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
    ("line separator", "a\u2028", "U+2028 (LINE SEPARATOR)"),
    ("lone surrogate", "a\ud800", "U+D800"),
]


@pytest.mark.parametrize(("text", "found"), [r[1:] for r in UNPRINTABLE], ids=[r[0] for r in UNPRINTABLE])
def test_unprintable_names_the_first_character_no_line_may_hold(text: str, found: str | None) -> None:
    assert unprintable(text) == found
