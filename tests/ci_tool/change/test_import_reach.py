"""Which test files import a module (change/import_reach.py), read from a real git repository at a commit."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ci_tool.change import import_reach
from ci_tool.change.import_reach import ImportingTests, importing_tests, module_names

FILES = {
    "src/eng/__init__.py": "from eng.pool import Pool\n",
    "src/eng/pool.py": "class Pool:\n    pass\n",
    "src/eng/model.py": "from . import pool\n\n\ndef build():\n    return pool.Pool()\n",
    "tests/eng/helper.py": "from eng.model import build\n\nMADE = build()\n",
    "tests/eng/test_model.py": "from tests.eng.helper import MADE\n\n\ndef test_made():\n    assert MADE\n",
    "tests/eng/test_lazy.py": "def test_lazy():\n    import eng.pool\n    assert eng.pool\n",
    "tests/eng/test_words.py": "def test_words():\n    assert 'pool' != 'model'\n",  # names them, imports nothing
    "tests/other/conftest.py": "import src.eng.pool\n",
    "tests/other/test_x.py": "def test_x():\n    pass\n",
}


def git(root: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"]
    return subprocess.run([*command, *args], cwd=root, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    return root


def test_a_module_is_named_from_the_rootdir_and_from_its_source_root() -> None:
    assert module_names("src/eng/pool.py") == ("src.eng.pool", "eng.pool")
    assert module_names("src/eng/__init__.py") == ("src.eng", "eng")
    assert module_names("tests/eng/helper.py") == ("tests.eng.helper",)


def test_the_test_files_that_import_a_module_directly_through_helpers_lazily_or_by_a_conftest(repo: Path) -> None:
    """pool.py: model.py imports it relatively, helper.py imports model at import and test_model.py imports
    helper; test_lazy.py imports it in a test's body; tests/other's conftest.py imports it as src.eng.pool."""
    assert importing_tests(repo, "HEAD", "src/eng/pool.py") == ImportingTests(
        ("tests/eng/test_lazy.py", "tests/eng/test_model.py", "tests/other")
    )


def test_a_test_file_is_its_own_importer_and_a_conftest_its_folder(repo: Path) -> None:
    assert importing_tests(repo, "HEAD", "tests/eng/test_words.py") == ImportingTests(("tests/eng/test_words.py",))
    assert importing_tests(repo, "HEAD", "tests/other/conftest.py") == ImportingTests(("tests/other",))


def test_the_work_tree_is_read_when_no_commit_is_given(repo: Path) -> None:
    (repo / "tests" / "eng" / "test_new.py").write_text("from tests.eng import helper\n")  # untracked
    assert importing_tests(repo, None, "tests/eng/helper.py") == ImportingTests(
        ("tests/eng/test_model.py", "tests/eng/test_new.py")
    )


def test_a_module_of_a_folder_that_is_no_package_is_imported_by_its_bare_name(repo: Path) -> None:
    """bench/ has no __init__.py: its tests put it on sys.path (their conftest.py) and import `replay` bare."""
    (repo / "bench").mkdir()
    (repo / "bench" / "replay.py").write_text("def count():\n    return 1\n")
    (repo / "bench" / "report.py").write_text("from replay import count\n\nTOTAL = count()\n")
    (repo / "tests" / "bench").mkdir()
    (repo / "tests" / "bench" / "conftest.py").write_text("import sys\n\nsys.path.insert(0, 'bench')\n")
    (repo / "tests" / "bench" / "test_replay.py").write_text("from replay import count\n")
    (repo / "tests" / "bench" / "test_report.py").write_text("def test_total():\n    import report\n")
    assert importing_tests(repo, None, "bench/replay.py") == ImportingTests(
        ("tests/bench/test_replay.py", "tests/bench/test_report.py")
    )
    # a package's module is not: `pool` alone names no module of src/eng/, which has an __init__.py
    (repo / "tests" / "eng" / "test_bare.py").write_text("import pool\n")
    assert "tests/eng/test_bare.py" not in importing_tests(repo, None, "src/eng/pool.py").paths


def test_a_file_that_names_the_module_and_does_not_parse_leaves_the_answer_unknown(repo: Path) -> None:
    (repo / "tests" / "eng" / "test_broken.py").write_text("import tests.eng.helper\ndef (\n")
    assert importing_tests(repo, None, "tests/eng/helper.py") == ImportingTests(
        unknown="tests/eng/test_broken.py may load tests/eng/helper.py and does not parse as Python"
    )


def test_a_file_that_names_the_module_and_nests_too_deeply_leaves_the_answer_unknown(repo: Path) -> None:
    (repo / "tests" / "eng" / "test_deep.py").write_text("import tests.eng.helper\n_D = " + "not " * 100_000 + "1\n")
    assert importing_tests(repo, None, "tests/eng/helper.py") == ImportingTests(
        unknown=(
            "tests/eng/test_deep.py may load tests/eng/helper.py and nests expressions too deeply for Python's parser"
        )
    )


LOADS = {
    "importlib": ("import importlib\nimportlib.import_module('eng.pool')\n", {"eng.pool"}),
    "lazy-table": ('COMMANDS = {"grow": "eng.pool:grow"}\n', {"eng.pool"}),
    "patch-target": ("def test_p(monkeypatch):\n    monkeypatch.setattr('eng.pool.LIMIT', 1)\n", {"eng.pool.LIMIT"}),
    "python-m": (
        "import subprocess, sys\nsubprocess.run([sys.executable, '-m', 'eng', 'plan'])\n",
        {"eng", "eng.__main__"},
    ),
    "python-m-text": ("import os\nos.system('python -m eng plan')\n", {"eng", "eng.__main__"}),
    "pytest-node": (
        "import subprocess\nsubprocess.run(['pytest', f'tests/eng/test_model.py::test_made[{1}]'])\n",
        {"tests.eng.test_model"},
    ),
    "sibling-file": (
        "from pathlib import Path\nHELPER = Path(__file__).with_name('helper.py')\n",
        {"tests.eng.helper"},
    ),
    "script": ("import subprocess\nsubprocess.run(['eng-cli', 'plan'])\n", {"eng.cli"}),
}


@pytest.mark.parametrize(("text", "loaded"), list(LOADS.values()), ids=list(LOADS))
def test_what_a_file_loads_beyond_its_imports(text: str, loaded: set[str]) -> None:
    """Strings that name a module (alone or as module:attribute), a `-m` run, a path to a .py file, or a console
    script a file that starts processes runs."""
    found = import_reach.loads(text, "tests/eng/test_x.py", {"eng-cli": "eng.cli"})
    assert isinstance(found, set) and loaded <= found


@pytest.mark.parametrize(
    "text",
    ['"""eng.pool holds the pool; see tests/eng/helper.py and `eng-cli plan`"""\n', "HINT = 'run eng-cli plan'\n"],
    ids=["docstring", "script-named-by-a-file-that-starts-no-process"],
)
def test_prose_loads_nothing(text: str) -> None:
    found = import_reach.loads(text, "tests/eng/test_x.py", {"eng-cli": "eng.cli"})
    assert isinstance(found, set) and not {name for name in found if name.startswith(("eng", "tests."))}


def test_a_test_that_starts_a_console_script_reaches_the_scripts_module(repo: Path) -> None:
    (repo / "pyproject.toml").write_text('[project.scripts]\neng = "eng.model:main"\n')
    (repo / "tests" / "eng" / "test_cli.py").write_text(
        "import subprocess\n\n\ndef test_cli():\n    subprocess.run(['eng', 'build'], check=True)\n"
    )
    assert importing_tests(repo, None, "src/eng/pool.py") == ImportingTests(
        ("tests/eng/test_cli.py", "tests/eng/test_lazy.py", "tests/eng/test_model.py", "tests/other")
    )


EVERY_TEST = {
    "addopts": ('[tool.pytest.ini_options]\naddopts = "-q -p eng.model -p no:cacheprovider"\n', "eng.model"),
    "addopts-list": ('[tool.pytest.ini_options]\naddopts = ["-peng.model"]\n', "eng.model"),
    "pytest11": ('[project.entry-points.pytest11]\neng = "eng.model"\n', "eng.model"),
}


@pytest.mark.parametrize(("pyproject", "plugin"), list(EVERY_TEST.values()), ids=list(EVERY_TEST))
def test_a_module_a_pytest_plugin_loads_reaches_every_test(repo: Path, pyproject: str, plugin: str) -> None:
    """The project's pytest plugins load into every test process: whatever they reach, every test may run."""
    (repo / "pyproject.toml").write_text(pyproject)
    assert importing_tests(repo, None, "src/eng/pool.py") == ImportingTests(
        unknown=f"every test loads it ({plugin} is loaded into every pytest)"
    )


def test_ci_tools_runner_plugins_and_a_rootdir_conftest_reach_every_test(repo: Path) -> None:
    (repo / "ci_tool" / "run").mkdir(parents=True)
    (repo / "ci_tool" / "run" / "plugin.py").write_text("import eng.pool\n")
    (repo / "ci_tool" / "run" / "__init__.py").write_text("")
    runner = ImportingTests(unknown="every test loads it (ci_tool.run.plugin is loaded into every pytest)")
    assert importing_tests(repo, None, "src/eng/pool.py") == runner
    assert importing_tests(repo, None, "ci_tool/run/__init__.py") == ImportingTests(  # importing a plugin runs it
        unknown="every test loads it (ci_tool.run.order is loaded into every pytest)"
    )
    (repo / "ci_tool" / "run" / "plugin.py").unlink()
    (repo / "conftest.py").write_text("from eng import model\n")
    assert importing_tests(repo, None, "src/eng/pool.py") == ImportingTests(
        unknown="every test loads it (the conftest.py at the rootdir does)"
    )


def test_the_files_that_load_a_module_import_it_or_spell_its_dotted_name(repo: Path) -> None:
    """model.py imports pool relatively and __init__.py by name; a string may load it (an importlib call, an
    entry point); a word alone (test_words.py) or prose loads nothing."""
    (repo / "tests" / "eng" / "test_patch.py").write_text(
        "def test_p(monkeypatch):\n    monkeypatch.setattr('eng.pool.X', 1)\n"
    )
    (repo / "pyproject.toml").write_text('[project.entry-points.x]\npool = "eng.pool:Pool"\n')
    (repo / "README.md").write_text("eng.pool holds the pool\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "more")
    assert import_reach.loading_files(repo, "HEAD", "src/eng/pool.py") == (
        "pyproject.toml", "src/eng/__init__.py", "src/eng/model.py", "tests/eng/test_lazy.py",
        "tests/eng/test_patch.py", "tests/other/conftest.py",
    )  # fmt: skip
