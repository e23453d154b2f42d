"""The suite's own house rules (ARCHITECTURE.md, Tests): a table of cases is a parametrize with ids, not a loop
of asserts that stops at the first bad case and hides the rest."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def loop_asserts(source: str) -> list[str]:
    """`test_name:line` of each `for`/`while` loop in a test function whose body holds an `assert`."""
    found = []
    for function in ast.walk(ast.parse(source)):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) and function.name.startswith("test_"):
            found += [
                f"{function.name}:{loop.lineno}"
                for loop in ast.walk(function)
                if isinstance(loop, ast.For | ast.AsyncFor | ast.While)
                and any(isinstance(node, ast.Assert) for node in ast.walk(loop))
            ]
    return found


def test_the_check_finds_an_assert_in_a_loop_and_passes_a_collected_one() -> None:
    looped = "def test_a():\n    for x in [1, 2]:\n        assert x\n"
    collected = "def test_b():\n    seen = []\n    for x in [1, 2]:\n        seen.append(x)\n    assert seen\n"
    assert (loop_asserts(looped), loop_asserts(collected)) == (["test_a:2"], [])


def test_no_test_asserts_inside_a_loop() -> None:
    found = {
        str(path.relative_to(TESTS)): loop_asserts(path.read_text(encoding="utf-8"))
        for path in sorted(TESTS.rglob("test_*.py"))
    }
    assert {path: tests for path, tests in found.items() if tests} == {}
