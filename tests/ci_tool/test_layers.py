"""The packages are layers: each imports only its own layer and those below it (README.md, Layout; docs/layout.md
lists each folder), so the selection never learns about the bot, nor the generators about the bot."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "ci_tool"
CHANGE_PURE = (
    "__init__", "value", "narrowing", "git_rows", "python_tree", "units", "touch_records", "touched_rule",
)  # fmt: skip
# Lowest first. A top-level module is its own layer: `ci_tool.errors` is "errors".
LAYERS: tuple[frozenset[str], ...] = (
    frozenset(
        {
            "errors", "layout", "outcomes", "text_file", "json_file", "yaml_nodes", "atomic", "interrupts",
            "crash_log", "markdown_safe", "output_files", "url_secrets", "yaml_fields", "typed_json",
        }
    ),
    frozenset({"sysinfo", "gitinfo"}),
    frozenset({"build"}),  # the wheels the stages install: below run (package sanity installs the build's)
    frozenset({"testdb"}),
    # The change (ci_tool/change) spans three layers, each module named `change.<module>`: its pure value and
    # evidence below the selection that narrows by them, its git half below the run that merges the pull
    # request's waives, its GitHub half and the builder above dispatch, whose client it reads with.
    frozenset(f"change.{name}" for name in CHANGE_PURE),
    frozenset({"stages"}),
    frozenset({"history"}),
    frozenset({"perf"}),
    frozenset({"report"}),  # the report model and its renderers read history rows, never a running stage
    frozenset({"change.git_read", "change.import_reach", "change.touch_evidence"}),
    frozenset({"run"}),
    frozenset({"dispatch"}),  # below the bot: its pure status and report modules read dispatch's values
    frozenset({"change.github_rows", "change.github_read", "change.build"}),
    frozenset({"bot"}),  # the comment language: what a comment says and the words the bot answers with
    frozenset({"pr_bot"}),  # the application: what a comment sets going, from the event to the final report
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
        if isinstance(node, ast.ImportFrom) and node.module == "ci_tool.change":  # from ci_tool.change import units
            names = [f"ci_tool.change.{alias.name}" for alias in node.names]
        found |= {_part(name) for name in names if name.startswith("ci_tool.")}
    return found


def _part(name: str) -> str:
    """The layer name of module `name`: `ci_tool.stages.select` -> `stages`, `ci_tool.change.units` ->
    `change.units` (the change spans layers), `ci_tool.change` -> `change.__init__`."""
    parts = name.split(".")
    if parts[1] == "change":
        return f"change.{parts[2] if len(parts) > 2 else '__init__'}"
    return parts[1]


def own_part(path: Path) -> str:
    """The layer name of the module at `path` (see _part)."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return _part(".".join(("ci_tool", *parts)))


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_a_module_imports_no_layer_above_its_own(path: Path) -> None:
    own = own_part(path)
    above = sorted(part for part in imported_parts(path) if layer_of(part) > layer_of(own))
    assert above == [], f"{path.relative_to(PACKAGE)} ({own}) imports {above}, a layer above its own"


def test_every_package_and_module_has_a_layer() -> None:
    parts = {own_part(path) for path in MODULES}
    assert parts <= set().union(*LAYERS)


CHANGE = PACKAGE / "change"
CHANGE_MODULES = sorted(CHANGE.glob("*.py"))


@pytest.mark.parametrize("path", CHANGE_MODULES, ids=[p.stem for p in CHANGE_MODULES])
def test_the_change_imports_neither_the_runner_nor_the_commands(path: Path) -> None:
    """The change is read and judged the same for every consumer: nothing in it knows how a stage runs or which
    verb asked (issue 42)."""
    assert imported_parts(path) & {"run", "commands"} == set()


def _gitinfo_calls(path: Path) -> set[str]:
    """The gitinfo functions `path` calls (`gitinfo.merge_base(...)`)."""
    return {
        node.attr
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "gitinfo"
    }


# What a run asks git for itself: the commit it runs (its record names it) and the files changed since it.
RUN_GIT = frozenset({"commit_of", "code_version", "changed_since"})


def test_run_holds_no_git_half_of_the_change() -> None:
    """The change's git reads (its merge base, name-status, texts at a commit, diffs, import reach) are the
    change package's: a run module that reads git for the change again would be a second way to build it."""
    change_reads = set().union(*(_gitinfo_calls(path) for path in CHANGE_MODULES)) - RUN_GIT
    in_run = {str(path.relative_to(PACKAGE)): sorted(_gitinfo_calls(path) & change_reads)
              for path in sorted((PACKAGE / "run").glob("*.py"))}  # fmt: skip
    assert {path: reads for path, reads in in_run.items() if reads} == {}
    assert {"merge_base", "name_status", "file_at"} <= change_reads  # the pin reads what the change reads


# commands/ is the CLI layer and nothing more (docs/layout.md, commands/): each module is one verb (options, a call
# into a library function, output, an exit code), or one of these, which hold what several verbs' options share.
COMMANDS = PACKAGE / "commands"
# These are the only commands modules another commands module may import (test_no_verb_module_imports_another).
OPTION_MODULES = {
    "__init__": "the package",
    # options and their load: each verb that takes --catalog/--test-db reads them the same way
    "catalog_inputs": "the catalog, test-db and pull-request options",
    "clock": "--today",
    "dispatch_options": "the Jenkins and GitHub options of `bot handle`",
    "flake_options": "--days, and the flake stats of that window `flaky report` and `waive propose` read",
    "history_options": "--history, which every verb that reads or writes the history takes",
    "number_types": "the bounded number types of the options",
    # a helper beside the options: the closing line and exit code both run verbs print (the run is run/'s)
    "run_options": "the options `run`, `stage run` and `waive verify` share, and a run's closing line",
    # a helper beside its option: the diff both waive verbs write to --output (the waives are testdb/'s)
    "waive_diff": "--output and the diff `waive propose` and `waive verify` write",
}
# A group's module attaches its subcommands' modules (`bot labels`, `stage run`, `stage lost`, `waive verify`):
# registration, not logic; a subcommand's module imports no verb module in turn.
SUBCOMMANDS = {"bot": {"bot_labels"}, "stage": {"stage_run", "stage_lost"}, "waive": {"waive_verify"}}
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


def commands_imported(source: str) -> set[str]:
    """The ci_tool.commands modules `source` imports: `from ci_tool.commands.x import ...`, `from
    ci_tool.commands import x`, `import ci_tool.commands.x`, and `importlib.import_module("ci_tool.commands.x")`."""
    prefix = "ci_tool.commands."
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module == "ci_tool.commands":
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(prefix):
            found.add((node.module or "").removeprefix(prefix).split(".")[0])
        elif isinstance(node, ast.Import):
            found |= {a.name.removeprefix(prefix).split(".")[0] for a in node.names if a.name.startswith(prefix)}
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module":
            names = [arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
            found |= {name.removeprefix(prefix).split(".")[0] for name in names if name.startswith(prefix)}
    return found


def test_the_check_finds_every_way_to_import_a_commands_module() -> None:
    source = (
        "import importlib\nimport ci_tool.commands.a\nfrom ci_tool.commands import b\n"
        "from ci_tool.commands.c import f\nfrom ci_tool.report import d\n"
        "importlib.import_module('ci_tool.commands.e').g\n"
    )
    assert commands_imported(source) == {"a", "b", "c", "e"}


@pytest.mark.parametrize("path", COMMAND_MODULES, ids=[p.stem for p in COMMAND_MODULES])
def test_no_verb_module_imports_another(path: Path) -> None:
    """What two verbs share lives in the package it belongs to (report/, history/, ...) or in an option
    module: a verb imported for its logic drags its options and its imports into the other verb."""
    allowed = OPTION_MODULES.keys() | SUBCOMMANDS.get(path.stem, set())
    found = sorted(commands_imported(path.read_text(encoding="utf-8")) - allowed)
    assert found == [], f"commands/{path.name} imports the verb module(s) {found}: move what it uses out of them"


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


# The PR bot is one application (ci_tool/pr_bot/): what a `/bot` comment (or a review or label event) sets
# going lives there, the comment language in bot/, and the bot's verb modules only turn options into the
# application's values and build clients.
APPLICATION = "pr_bot"
# a bot verb module -> the application modules it calls (its entry points), and what else it may import: the
# comment language (parse, help, the plan's words), the option modules, and the default paths of its options;
# no dispatch, run, history, stages or authorization
BOT_COMMANDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "bot": (
        frozenset({"handle", "preview", "settings"}),
        frozenset(
            {
                "ci_tool.bot.flags", "ci_tool.bot.grammar", "ci_tool.bot.help", "ci_tool.bot.parsed_comment",
                "ci_tool.bot.reply", "ci_tool.commands.bot_labels", "ci_tool.commands.catalog_inputs",
                "ci_tool.commands.dispatch_options", "ci_tool.commands.history_options", "ci_tool.layout",
            }
        ),
    ),
    "bot_labels": (frozenset({"label_actions", "labels"}), frozenset({"ci_tool.layout"})),
}  # fmt: skip


def imported_modules(path: Path) -> set[str]:
    """The ci_tool modules `path` imports, anywhere in it (`from ci_tool.commands import bot_labels` names
    ci_tool.commands.bot_labels)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            package = (PACKAGE / node.module.removeprefix("ci_tool.").replace(".", "/")).is_dir()
            found |= {f"{node.module}.{alias.name}" for alias in node.names} if package else {node.module}
    return {name for name in found if name.startswith("ci_tool.")}


def test_the_checks_read_a_module_s_imports(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "import ci_tool.errors\nfrom ci_tool.commands import bot_labels\nfrom ci_tool.bot.flags import FLAGS\n"
        "def f():\n    from ci_tool.pr_bot.carry_out import answer\nimport click\n",
        encoding="utf-8",
    )
    assert imported_modules(source) == {
        "ci_tool.errors", "ci_tool.commands.bot_labels", "ci_tool.bot.flags", "ci_tool.pr_bot.carry_out"
    }  # fmt: skip


@pytest.mark.parametrize("stem", sorted(BOT_COMMANDS))
def test_a_bot_command_holds_no_application_logic(stem: str) -> None:
    """A bot verb module reaches the application through its entry points only, and no library below it."""
    entry_points, allowed = BOT_COMMANDS[stem]
    imported = imported_modules(COMMANDS / f"{stem}.py")
    application = {name.split(".")[2] for name in imported if name.startswith(f"ci_tool.{APPLICATION}.")}
    others = {name for name in imported if not name.startswith(f"ci_tool.{APPLICATION}.")}
    assert application <= entry_points, f"commands/{stem}.py calls into pr_bot/{sorted(application - entry_points)}"
    assert others <= allowed, f"commands/{stem}.py imports {sorted(others - allowed)}"


def test_only_the_bot_commands_import_the_application() -> None:
    importers = sorted(
        str(path.relative_to(PACKAGE))
        for path in MODULES
        if path.relative_to(PACKAGE).parts[0] != APPLICATION
        and any(name.startswith(f"ci_tool.{APPLICATION}") for name in imported_modules(path))
    )
    assert importers == sorted(f"commands/{stem}.py" for stem in BOT_COMMANDS)


def test_the_bot_command_imports_no_http_client_until_it_dispatches() -> None:
    """`bot parse`, `bot plan` and a dry run skip PyGithub and python-jenkins (half a second to import): the
    application imports them in the steps that reach GitHub and Jenkins."""
    script = (
        "import sys, ci_tool.commands.bot, ci_tool.pr_bot.handle; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'github', 'jenkins', 'ci_tool'}))"
    )
    found = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    assert found.stdout.split("\n")[0] == "['ci_tool']"


# The change's constructors, and the only modules that may call each: one builder over two readers (issue 42).
CHANGE_BUILDERS = {
    "from_git": {"change/build.py"},
    "from_github": {"change/build.py"},
    "change_of": {"change/git_read.py", "change/github_read.py"},
    "ChangeSet(...)": {"change/value.py"},  # change_of alone; a hand-made one is a test's tiny fake
}


def _builds(path: Path) -> set[str]:
    """Which of the change's constructors `path` imports (anywhere in it) or calls."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ci_tool.change"):
            found |= {alias.name for alias in node.names} & CHANGE_BUILDERS.keys()
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "ChangeSet":
            found.add("ChangeSet(...)")
    return found


def test_every_consumer_builds_the_change_through_the_one_builder() -> None:
    """Commands, the bot and the runner ask change/build.read_change; only it reads the change from git or
    GitHub, and only the two readers assemble the value (value.change_of), so no consumer builds it a third way."""
    builders = {
        name: {str(path.relative_to(PACKAGE)) for path in MODULES if name in _builds(path)} for name in CHANGE_BUILDERS
    }
    assert builders == CHANGE_BUILDERS
