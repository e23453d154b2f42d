"""Change-based selection on our own catalog (jenkins/stages.yml, test-db/) never runs less than the safe set:
a test that reads a file as text runs when that file changes (change_rules.readers), and a test that imports
a changed module of a folder that is no package (research/replay/, which its tests' conftest.py puts on
sys.path) runs too.

The guard reads the suite the way those tests read the repository: a path of a test file that joins a file
at the repository's root to a name bound to the file's own place (`ROOT / "README.md"`), and an import of a
bare module name that is a file of a folder without __init__.py outside tests/ (`from replay_count import ...`).
Each such file, changed alone, must run every test that reads or imports it (or the full set)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

from ci_tool.bot.grammar import parse_comment
from ci_tool.change.value import ChangeSet
from ci_tool.change.value import test_path_of as path_of_test
from ci_tool.stages.catalog_load import open_catalog
from ci_tool.stages.cbts import CbtsScope
from ci_tool.stages.engines import Engine
from ci_tool.stages.select import select_for_change
from ci_tool.testdb.check import covers

REPO = Path(__file__).resolve().parents[3]
LOADED = open_catalog(REPO / "jenkins" / "stages.yml", REPO / "test-db")


def ran(files: tuple[str, ...]) -> tuple[CbtsScope, set[str], tuple[str, ...]]:
    """The scope, every list line the selected stages run, and the selected stages, for a change of `files`."""
    request = parse_comment("/bot run").selection_request()
    selection = select_for_change(LOADED, request, engine=Engine.LOCAL, changes=ChangeSet(files))
    assert selection.narrowing is not None
    plans = LOADED.planner.selection(selection.selected)
    return selection.narrowing.scope, {line.test_id for plan in plans.values() for line in plan.lines}, selection.names


def runs(test: str, lines: set[str]) -> bool:
    return any(covers(line.split("::")[0], test) or covers(test, line.split("::")[0]) for line in lines)


def _non_package_modules() -> dict[str, str]:
    """Bare module name -> its file, for the .py files of folders that are no package, at any depth outside
    tests/ and hidden folders (bench/, research/replay/)."""
    tops = [top for top in REPO.iterdir() if top.is_dir() and not top.name.startswith(".") and top.name != "tests"]
    return {
        path.stem: path.relative_to(REPO).as_posix()
        for top in sorted(tops)
        for path in sorted(top.rglob("*.py"))
        if not (path.parent / "__init__.py").exists()
    }


def safe_set() -> dict[str, set[str]]:
    """Changed file -> the test paths that read it as text or import it (see the module docstring)."""
    modules = _non_package_modules()
    root_files = {path.name for path in REPO.iterdir() if path.is_file() and path.suffix != ".py"}
    found: dict[str, set[str]] = defaultdict(set)
    for path in sorted((REPO / "tests").rglob("*.py")):
        test = path_of_test(path.relative_to(REPO).as_posix())
        if test is None:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        here = {  # module-level names bound to a path from the file's own place (ROOT = Path(__file__).parents[2])
            target.id
            for node in tree.body
            if isinstance(node, ast.Assign) and "__file__" in ast.unparse(node.value)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)
                and isinstance(node.left, ast.Name) and node.left.id in here
                and isinstance(node.right, ast.Constant) and node.right.value in root_files
            ):  # fmt: skip
                found[str(node.right.value)].add(test)
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0] in modules:
                    found[modules[name.split(".")[0]]].add(test)
    return found


SAFE = safe_set()


def test_the_guard_sees_the_readers_and_importers_it_is_about() -> None:
    assert "tests/ci_tool/test_layout.py" in SAFE["README.md"]
    assert "tests/research/test_replay_count.py" in SAFE["research/replay/replay_count.py"]


@pytest.mark.parametrize("changed", sorted(SAFE))
def test_a_change_of_one_file_runs_every_test_that_reads_or_imports_it(changed: str) -> None:
    scope, lines, _ = ran((changed,))
    missing = sorted(test for test in SAFE[changed] if not runs(test, lines))
    assert scope is CbtsScope.FULL or missing == [], f"{changed} changed alone runs none of {missing}"


def test_a_readme_only_change_runs_the_docs_stage_and_the_test_that_reads_readme() -> None:
    scope, lines, names = ran(("README.md",))
    assert scope is CbtsScope.NARROWED and "CPU-Build_Docs" in names
    assert runs("tests/ci_tool/test_layout.py", lines)


def test_a_docs_only_change_runs_the_docs_stage_and_the_test_that_reads_the_docs_folder() -> None:
    scope, lines, names = ran(("docs/selection.md",))
    assert scope is CbtsScope.NARROWED and "CPU-Build_Docs" in names
    assert runs("tests/ci_tool/test_layout.py", lines)


def test_a_research_only_change_runs_the_research_tests() -> None:
    scope, lines, names = ran(("research/replay/replay_count.py",))
    assert scope is CbtsScope.NARROWED and names
    assert runs("tests/research/test_replay_count.py", lines)
