"""The priority plugin (run/order.py) in real pytest processes over a copy of tests/fixtures/failing_suite:
the order it runs the items in, with the test list's selection and markers kept."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ci_tool.run.order import ancestors, groups

LIST = """\
cases/case_basic.py::test_pass
cases/case_basic.py::test_prints_timeout TIMEOUT (3)
cases/case_basic.py::test_block_out_of_range
cases/case_basic.py::TestGroup
cases/case_waived.py
"""
# three groups: case_waived's test (listed twice: once counts); two case_basic entries (run in collection
# order); test_prints_timeout, after an entry of a file that collected nothing
PRIORITY = """\
cases/case_waived.py::test_waived_on_a10
cases/case_waived.py::test_waived_on_a10
cases/case_basic.py::TestGroup::test_beta
cases/case_basic.py::test_block_out_of_range
cases/case_gone.py::test_removed
cases/case_basic.py::test_prints_timeout
"""


def started(events: Path) -> list[str]:
    records = [json.loads(line) for line in events.read_text().splitlines()]
    return [record["nodeid"] for record in records if record["event"] == "start"]


@pytest.fixture(scope="module")
def ordered(
    tmp_path_factory: pytest.TempPathFactory, make_suite: Callable[[Path], Path], run_pytest: Any
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    root = make_suite(tmp_path_factory.mktemp("order") / "suite")
    (root / "list.txt").write_text(LIST)
    (root / "priority.txt").write_text(PRIORITY)
    done = run_pytest(
        root, "-s", "--test-list=list.txt", "--events=events.jsonl", "-p", "ci_tool.run.order",
        "--priority-file=priority.txt",
    )  # fmt: skip
    return root, done


def test_the_groups_run_first_in_their_order_each_and_the_rest_in_collection_order(
    ordered: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    root, _ = ordered
    assert started(root / "events.jsonl") == [
        "cases/case_waived.py::test_waived_on_a10",
        "cases/case_basic.py::test_block_out_of_range[17]",
        "cases/case_basic.py::test_block_out_of_range[4242]",
        "cases/case_basic.py::TestGroup::test_beta",
        "cases/case_basic.py::test_prints_timeout",
        "cases/case_basic.py::test_pass",
        "cases/case_basic.py::TestGroup::test_alpha",
        "cases/case_waived.py::test_waived_everywhere",
    ]


def test_a_moved_test_keeps_its_list_timeout(ordered: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    assert "timeout marker: (180,)" in ordered[1].stdout


def test_the_process_says_how_many_run_first(ordered: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    assert "ci-tool order: 5 of 8 selected tests run first (--priority-file)" in ordered[1].stdout


def test_a_missing_priority_file_is_a_usage_error(suite: Path, run_pytest: Any) -> None:
    (suite / "list.txt").write_text(LIST)
    done = run_pytest(suite, "--test-list=list.txt", "-p", "ci_tool.run.order", "--priority-file=gone.txt")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert done.stderr.strip().splitlines()[-1] == (
        "ERROR: gone.txt: cannot read the priority file: No such file or directory"
    )


ANCESTORS = [
    ("a parameter set", "d/e/a.py::C::t[1]", ["d/e/a.py::C::t[1]", "d/e/a.py::C::t", "d/e/a.py::C", "d/e/a.py",
                                              "d/e", "d"]),
    ("a function", "a.py::t", ["a.py::t", "a.py"]),
    ("a file's collection error", "d/a.py", ["d/a.py", "d"]),
    ("brackets in a parameter id", "a.py::t[x[1]]", ["a.py::t[x[1]]", "a.py::t", "a.py"]),
]  # fmt: skip


@pytest.mark.parametrize(("nodeid", "expected"), [c[1:] for c in ANCESTORS], ids=[c[0] for c in ANCESTORS])
def test_the_ids_that_cover_a_node_id(nodeid: str, expected: list[str]) -> None:
    assert list(ancestors(nodeid)) == expected


GROUPS = [
    ("one file", ["a.py::t", "a.py::u"], {"a.py::t": 0, "a.py::u": 0}),
    ("a file again after another", ["a.py::t", "b.py::t", "a.py::u"], {"a.py::t": 0, "b.py::t": 1, "a.py::u": 2}),
    ("an entry listed twice keeps its first group", ["a.py::t", "b.py", "a.py::t"], {"a.py::t": 0, "b.py": 1}),
]


@pytest.mark.parametrize(("entries", "expected"), [c[1:] for c in GROUPS], ids=[c[0] for c in GROUPS])
def test_the_groups_of_a_priority_file(entries: list[str], expected: dict[str, int]) -> None:
    assert groups(entries) == expected
