"""Property: whatever a test-db file holds, loading gives contexts and TestDbErrors, never another exception."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tool.errors import TestDbError
from ci_tool.testdb.load import BLOCK_KEYS, CONDITION_KEYS, RANGE_KEYS, read_test_db_file
from ci_tool.testdb.model import TestDb
from ci_tool.testdb.select import normalize_query, render
from ci_tool.text_file import unprintable

# Scalars that reach every reader: odd YAML numbers, explicit tags, escapes of hidden characters, anchors.
SCALARS = [
    "1", "-3", "07", "1:30", "0x1F", "0b_", "1" * 5000, "9223372036854775808", "1_000", "+0", ".inf", ".nan",
    "1.0e+400", "1.5", "!!int x", "!!float x", "!!bool maybe", "!!str 1", "!!binary aGk=", "~", "null", "true",
    "[]", "{}", "[1, 2]", "{gte: 1}", "a10", "'*a10*'", '"a\\nb"', '"\\0"', '"\\u200b"', '"\\e"', "&a x", "*a",
    "!custom x",
]  # fmt: skip
LINES = [
    "a.py", "a.py::t TIMEOUT (90)", "a.py TIMEOUT (\u00b2)", "a.py TIMEOUT (" + "9" * 5000 + ")", "a.py TIMEOUT (0)",
    "a.py ISOLATION", "a.py SKIP (x)", "a.py SKIP x", 'a.py -k "x and"', '"a.py\\nb.py"', '"a.py\\0"',
    '"a.py\\u2028b"', '"a.py\\tISOLATION"', "|\n    a\n    b", "TIMEOUT (5)", "a.py # c", "07", "{a: b}",
]  # fmt: skip
scalars = st.sampled_from(SCALARS)
keys = st.sampled_from([*BLOCK_KEYS, *CONDITION_KEYS, *RANGE_KEYS, "gpu", "system_gpu_count", "wildcard", "version"])


@st.composite
def blocks(draw: st.DrawFn) -> str:
    terms = ", ".join(f"{draw(keys)}: {draw(scalars)}" for _ in range(draw(st.integers(0, 2))))
    ranges = ", ".join(f"{draw(keys)}: {{{draw(keys)}: {draw(scalars)}}}" for _ in range(draw(st.integers(0, 2))))
    part = draw(st.sampled_from(["terms", "ranges", "wildcards", "wildcard"]))
    condition = f"{{{part}: {{{terms if part != 'ranges' else ranges}}}}}"
    tests = "\n".join(f"  - {draw(st.sampled_from(LINES))}" for _ in range(draw(st.integers(0, 3))))
    return f"- condition: {condition if draw(st.booleans()) else draw(scalars)}\n  tests:\n{tests}\n"


@st.composite
def db_text(draw: st.DrawFn) -> str:
    lines = [f"version: {draw(st.sampled_from(['0.0.1', '1', '07', '[]']))}"]
    for name in draw(st.lists(st.sampled_from(["l0_x", "l0_y", "version", "07"]), max_size=2)):
        lines.append(f"{name}:")
        lines += draw(st.lists(blocks(), max_size=3))
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.text(max_size=20)))
    return "\n".join(lines) + "\n"


def _check(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    contexts, problems = read_test_db_file(path)
    assert all(isinstance(problem, TestDbError) and "\n" not in str(problem) for problem in problems)
    for context in contexts:
        for block in context.blocks:
            assert all(unprintable(entry.line.test_id) is None for entry in block.entries)


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("test-db") / "l0_x.yml"


@settings(max_examples=400, deadline=None)
@given(text=db_text())
def test_any_test_db_file_loads_or_reports_our_errors(path: Path, text: str) -> None:
    _check(path, text.encode())


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=80))
def test_any_bytes_load_or_report_our_errors(path: Path, data: bytes) -> None:
    _check(path, b"version: 0.0.1\nl0_x:\n- tests: [" + data + b"]\n")


@settings(max_examples=300, deadline=None)
@given(text=db_text(), query=st.dictionaries(keys, st.sampled_from(["1", "9" * 5000, "nan", "1e400", "a10", ""])))
def test_rendering_any_valid_file_gives_lines_or_our_error(path: Path, text: str, query: dict[str, str]) -> None:
    path.write_text(text)
    contexts, _ = read_test_db_file(path)
    db = TestDb(root=str(path.parent), contexts={context.name: context for context in contexts})
    for name in db.contexts:
        with contextlib.suppress(TestDbError):
            render(db, name, normalize_query(query), allow_empty=True)
