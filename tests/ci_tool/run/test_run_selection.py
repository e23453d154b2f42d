from __future__ import annotations

import pytest

from ci_tool.errors import RunError
from ci_tool.run.selection import Selector, collection_paths, parse_selector


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("tests/a.py::test_x", Selector("tests/a.py::test_x", "tests/a.py::test_x")),
        ("tests/unit/", Selector("tests/unit/", "tests/unit")),
        ("./tests/a.py", Selector("./tests/a.py", "tests/a.py")),
        ('tests/a.py -k "x and not y"', Selector('tests/a.py -k "x and not y"', "tests/a.py", keyword="x and not y")),
        ("tests/a.py -m gpu4", Selector("tests/a.py -m gpu4", "tests/a.py", mark="gpu4")),
        ('tests -m "a" -k b', Selector('tests -m "a" -k b', "tests", keyword="b", mark="a")),
        ("tests/a.py::test_x[a b]", Selector("tests/a.py::test_x[a b]", "tests/a.py::test_x[a b]")),
    ],
    ids=["node", "folder-slash", "dot-slash", "keyword", "mark", "both", "blank-in-param"],
)
def test_parse_selector(text: str, parsed: Selector) -> None:
    assert parse_selector(text) == parsed


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('tests/a.py -k "x', "expected -k/-m filters with balanced quotes, found '-k \"x' (No closing quotation)"),
        ("tests/a.py -k", "expected `-k EXPR` and/or `-m EXPR` after the test path, found '-k'"),
        ("tests/a.py -k a -k b", "expected `-k EXPR` and/or `-m EXPR` after the test path, found '-k a -k b'"),
        ("tests/a.py -m a extra", "expected `-k EXPR` and/or `-m EXPR` after the test path, found '-m a extra'"),
    ],
    ids=["unbalanced", "no-expression", "twice", "trailing"],
)
def test_parse_selector_errors(text: str, message: str) -> None:
    with pytest.raises(RunError) as error:
        parse_selector(text)
    assert error.value.message == message


@pytest.mark.parametrize(
    ("path", "nodeid", "selected"),
    [
        ("tests/a.py", "tests/a.py::test_x", True),
        ("tests", "tests/sub/a.py::test_x", True),
        ("tests/a.py::test_x", "tests/a.py::test_x[1-2]", True),
        ("tests/a.py::TestC", "tests/a.py::TestC::test_y", True),
        ("tests/a.py::test_x", "tests/a.py::test_xy", False),
        ("tests/a", "tests/ab.py::test_x", False),
    ],
    ids=["file", "folder", "param-parent", "class", "name-prefix", "folder-prefix"],
)
def test_covers_nodeid(path: str, nodeid: str, selected: bool) -> None:
    assert parse_selector(path).covers_nodeid(nodeid) is selected


def test_collection_paths_keep_list_order_and_drop_nested_paths() -> None:
    texts = ("tests/b/c.py", "tests/a.py::t", "tests/b", "tests/ab.py -k x", "tests/a.py::u")
    assert collection_paths([parse_selector(t) for t in texts]) == ["tests/a.py", "tests/b", "tests/ab.py"]
