"""The packages are layers: each imports only its own layer and those below it (ARCHITECTURE.md
boundary 0), so the selection never learns about the bot, nor the generators about the bot."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "ci_tool"
# Lowest first. A top-level module is its own layer: `ci_tool.errors` is "errors".
LAYERS: tuple[frozenset[str], ...] = (
    frozenset(
        {
            "errors", "layout", "outcomes", "text_file", "json_file", "yaml_nodes", "atomic", "interrupts",
            "crash_log", "markdown", "output_files", "url_secrets",
        }
    ),
    frozenset({"sysinfo", "gitinfo"}),
    frozenset({"build"}),  # the wheels the stages install: below run (package sanity installs the build's)
    frozenset({"testdb"}),
    frozenset({"stages"}),
    frozenset({"history"}),
    frozenset({"perf"}),
    frozenset({"report"}),  # the report model and its renderers read history rows, never a running stage
    frozenset({"run"}),
    frozenset({"dispatch"}),  # below the bot: its pure status and report modules read dispatch's values
    frozenset({"bot"}),
    frozenset({"generate"}),
    frozenset({"commands"}),
    frozenset({"cli", "__main__", "__init__"}),
)


def layer_of(part: str) -> int:
    return next(index for index, names in enumerate(LAYERS) if part in names)


def imported_parts(path: Path) -> set[str]:
    """The first part after `ci_tool.` of every module `path` imports (TYPE_CHECKING imports too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
        names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module == "ci_tool":  # from ci_tool import sysinfo
            names = [f"ci_tool.{'__init__' if alias.name == '__version__' else alias.name}" for alias in node.names]
        found |= {name.split(".")[1] for name in names if name.startswith("ci_tool.")}
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_a_module_imports_no_layer_above_its_own(path: Path) -> None:
    own = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
    above = sorted(part for part in imported_parts(path) if layer_of(part) > layer_of(own))
    assert above == [], f"{path.relative_to(PACKAGE)} ({own}) imports {above}, a layer above its own"


def test_every_package_and_module_has_a_layer() -> None:
    parts = {path.relative_to(PACKAGE).parts[0].removesuffix(".py") for path in MODULES}
    assert parts <= set().union(*LAYERS)


# commands/ is the CLI layer and nothing more (ARCHITECTURE.md, Layout): each module is one verb (options, a call
# into a library function, output, an exit code), or one of these, which hold what several verbs' options share.
COMMANDS = PACKAGE / "commands"
OPTION_MODULES = {
    "__init__": "the package",
    "bounds": "the bounded number types of the options",
    "catalog_inputs": "the catalog, test-db and pull-request options",
    "clock": "--today",
    "dispatch_options": "the Jenkins and GitHub options of `bot handle`",
    "run_options": "the options `run`, `stage run` and `waive verify` share, and a run's closing line",
    "waive_diff": "--output and the diff `waive propose` and `waive verify` write",
}
MAX_COMMAND_FUNCTION_LINES = 30
COMMAND_MODULES = sorted(COMMANDS.glob("*.py"))


def defines_a_command(source: str) -> bool:
    """Whether a function of `source` is a click command or group (`@click.command`, `@group.command(...)`)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if isinstance(target, ast.Attribute) and target.attr in ("command", "group"):
                    return True
    return False


def long_functions(source: str, *, limit: int) -> list[str]:
    """`name (N lines)` of each function whose body, its docstring left out, is over `limit` lines."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body[1:] if ast.get_docstring(node) is not None and len(node.body) > 1 else node.body
            lines = (node.end_lineno or node.lineno) - body[0].lineno + 1
            if lines > limit:
                found.append(f"{node.name} ({lines} lines)")
    return found


def test_the_checks_find_a_command_and_a_long_function() -> None:
    verb = "import click\n@click.command('x')\ndef x():\n    pass\n"
    grouped = "@bot.command('handle')\n@other\ndef handle():\n    pass\n"
    long = "def f():\n    '''doc'''\n" + "    a = 1\n" * 31
    short = "def g():\n    '''doc\n\n    more doc'''\n" + "    a = 1\n" * 30
    assert (defines_a_command(verb), defines_a_command(grouped), defines_a_command(short)) == (True, True, False)
    assert (long_functions(long, limit=30), long_functions(short, limit=30)) == (["f (31 lines)"], [])


@pytest.mark.parametrize("path", COMMAND_MODULES, ids=[p.stem for p in COMMAND_MODULES])
def test_a_commands_module_is_a_verb_or_an_option_module(path: Path) -> None:
    is_verb = defines_a_command(path.read_text(encoding="utf-8"))
    assert is_verb != (path.stem in OPTION_MODULES), (
        f"commands/{path.name}: " + ("a verb listed as an option module" if is_verb else "defines no command: "
        "move what it does to the package it belongs to, or list it in OPTION_MODULES if it holds shared options")
    )


@pytest.mark.parametrize("path", COMMAND_MODULES, ids=[p.stem for p in COMMAND_MODULES])
def test_no_function_in_commands_is_long(path: Path) -> None:
    found = long_functions(path.read_text(encoding="utf-8"), limit=MAX_COMMAND_FUNCTION_LINES)
    assert found == [], f"commands/{path.name}: split into a library call: {found}"


def imports_of(path: Path, module: str) -> set[str]:
    """The names `path` imports from `module`."""
    return {
        alias.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module == module
        for alias in node.names
    }


def test_the_planner_is_the_one_place_a_stage_list_is_rendered() -> None:
    """Catalog loading, change-based selection and every run plan through stages/planner.py, which renders a
    family once for all of them; only `ci-tool testdb render` (a raw query, no stage) renders on its own."""
    callers = {
        str(path.relative_to(PACKAGE))
        for path in MODULES
        if "render" in imports_of(path, "ci_tool.testdb.select")
    }
    assert callers == {"stages/planner.py", "commands/testdb.py"}


def _history_imports(path: Path) -> set[str]:
    """The history modules `path` imports anywhere in it: at the top, in a function or under TYPE_CHECKING."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module == "ci_tool.history":
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ci_tool.history."):
            found.add((node.module or "").split(".")[2])
    return found


def test_the_history_modules_import_each_other_in_no_circle() -> None:
    # a circle was kept apart by imports inside functions and under TYPE_CHECKING: now none is needed, since
    # the modules below the store type against backend.StoreView and every table's DDL is schema.py's
    folder = PACKAGE / "history"
    graph = {path.stem: _history_imports(path) - {path.stem} for path in folder.glob("*.py")}
    done: set[str] = set()

    def visit(module: str, trail: tuple[str, ...]) -> None:
        assert module not in trail, " -> ".join([*trail[trail.index(module):], module])
        if module in done:
            return
        for imported in sorted(graph.get(module, ())):
            visit(imported, (*trail, module))
        done.add(module)

    for module in sorted(graph):
        visit(module, ())
