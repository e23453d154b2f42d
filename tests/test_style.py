"""The suite's own house rules, stated by these tests themselves: a table of cases is a parametrize with ids, not
a loop of asserts that stops at the first bad case and hides the rest."""

from __future__ import annotations

import ast
import itertools
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


INSTALLERS = frozenset({"apt-get", "apt", "dnf", "yum", "apk", "brew", "conda", "playwright"})


def package_installs(source: str) -> list[int]:
    """Lines of list or tuple literals that spell a package install: `[apt-get, install, ...]`,
    `[..., pip, install, ...]` (a skip reason that tells the reader to install something is not one)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.List | ast.Tuple):
            words = [item.value for item in node.elts if isinstance(item, ast.Constant) and isinstance(item.value, str)]
            pairs = set(itertools.pairwise(words))
            if (words and words[0] in INSTALLERS) or ("pip", "install") in pairs:
                found.append(node.lineno)
    return found


def test_the_check_finds_package_installs() -> None:
    source = 'a = ["apt-get", "install", "-y", "slurmd"]\nb = (sys.executable, "-m", "pip", "install", "x")\n'
    reason = "pytest.skip(\"actionlint is not installed (pip install '.[test]' installs it)\")\n"
    assert (package_installs(source), package_installs(reason)) == ([1, 2], [])


def test_no_test_installs_packages() -> None:
    """.ci/run installs what the tests need; a test that installs packages changes the host it runs on."""
    found = {
        str(path.relative_to(TESTS)): package_installs(path.read_text(encoding="utf-8"))
        for path in sorted(TESTS.rglob("*.py"))
        if path != Path(__file__)  # its own examples
    }
    assert {path: lines for path, lines in found.items() if lines} == {}


# The modules that may look outside the checkout, each for what the repository does not hold: TensorRT-LLM's
# public corpus ($TRTLLM_CORPUS or ../shared/corpus/trtllm) and GitHub's pinned actions for act
# ($CI_TOOL_SHARED_ACTIONS or ../shared/actions); their tests skip, saying where they looked, without it.
LOCATORS = (TESTS / "ci_tool" / "testdb" / "corpus.py", TESTS / "ci_tool" / "actions" / "act_runner.py")


def outside_paths(source: str) -> list[str]:
    """String constants that name a place outside the checkout: a `/work/...` path or a `shared` folder."""
    return [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and (node.value.startswith("/work/") or node.value == "shared" or "/shared/" in node.value)
    ]


def test_no_test_reads_outside_the_checkout() -> None:
    found = {
        str(path.relative_to(TESTS)): outside_paths(path.read_text(encoding="utf-8"))
        for path in sorted(TESTS.rglob("*.py"))
        if path not in (Path(__file__), *LOCATORS)
    }
    assert {path: names for path, names in found.items() if names} == {}


def imports_of_test_modules(source: str) -> list[str]:
    """`line: module` for each import of a test module (`test_*`) or a conftest, in any spelling:
    `import tests.a.test_b`, `from tests.a.test_b import x`, `from tests.a import conftest`, relative ones too.
    Conftests hold fixtures that pytest injects and test modules hold tests: what tests share is a helper in
    tests/helpers (importing a test module runs its tests' module-level set-up and re-registers its fixtures)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            modules = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            last = parts[-1]
            # Only the suite's own modules: `from ci_tool.change.value import test_path_of` is a function.
            ours = parts[0] in ("tests", "")
            if ours and (last.startswith("test_") or last == "conftest"):
                found.append(f"{node.lineno}: {module}")
    return found


def test_the_check_finds_imports_of_test_modules_and_conftests() -> None:
    source = (
        "import tests.a.test_b\nfrom tests.conftest import Golden\nfrom tests.a import conftest\n"
        "from .test_c import x\nfrom tests.helpers.golden import Golden\nimport tests.a.fakes\n"
        "from ci_tool.change.value import test_path_of\n"
    )
    assert imports_of_test_modules(source) == [
        "1: tests.a.test_b", "2: tests.conftest", "3: tests.a.conftest", "4: .test_c"
    ]  # fmt: skip


def test_no_test_imports_a_test_module_or_a_conftest() -> None:
    found = {
        str(path.relative_to(TESTS)): imports_of_test_modules(path.read_text(encoding="utf-8"))
        for path in sorted(TESTS.rglob("*.py"))
        if path != Path(__file__)  # its own examples
    }
    assert {path: imports for path, imports in found.items() if imports} == {}
