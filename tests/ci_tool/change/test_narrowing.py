"""What of a list line a narrowed stage runs (change/narrowing.narrowed_line)."""

from __future__ import annotations

import pytest

from ci_tool.change.narrowing import narrowed_line
from ci_tool.testdb.lines import TestLine

GPU_LINE = TestLine(raw='tests/kvengine -m "gpu" TIMEOUT (30)', test_id='tests/kvengine -m "gpu"', timeout_minutes=30)

NARROWED = {
    "its paths, the line's filter on each": (
        ["tests/kvengine/test_a.py", "tests/kvengine/test_b.py::test_x"],
        ['tests/kvengine/test_a.py -m "gpu"', 'tests/kvengine/test_b.py::test_x -m "gpu"'],
    ),
    # the file runs whole with the same filter: its node id would be predicted, and listed, twice
    "a node id of a file that runs whole": (
        ["tests/kvengine/test_a.py::test_x", "tests/kvengine/test_a.py", "tests/kvengine/test_a.py::test_y[1]"],
        ['tests/kvengine/test_a.py -m "gpu"'],
    ),
    "a path above the line: the line": (["tests"], ['tests/kvengine -m "gpu"']),
    "a path elsewhere: nothing": (["tests/ci_tool/test_x.py"], []),
}


@pytest.mark.parametrize(("paths", "expected"), list(NARROWED.values()), ids=list(NARROWED))
def test_a_narrowed_line_runs_each_test_once(paths: list[str], expected: list[str]) -> None:
    found = narrowed_line(GPU_LINE, paths)
    assert [line.test_id for line in found] == expected
    assert all(line.raw == f"{line.test_id} TIMEOUT (30)" for line in found)


def test_a_node_id_stays_when_the_file_runs_under_another_filter() -> None:
    """`file -k fast` may leave the node id out: both run."""
    line = TestLine(raw="tests/kvengine", test_id="tests/kvengine")
    found = narrowed_line(line, ["tests/kvengine/test_a.py -k fast", "tests/kvengine/test_a.py::test_slow"])
    assert [one.test_id for one in found] == ["tests/kvengine/test_a.py -k fast", "tests/kvengine/test_a.py::test_slow"]
