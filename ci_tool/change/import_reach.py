"""Which test paths can load a module (its import reach), read from the files at a commit: what a change to
the module can reach when no record says more (touch_evidence.py). A record cannot say what a module's
top-level code did (it runs once, while pytest collects, outside every test); and a GPU type with no
records, or a test whose record is stale or was made unmeasured, has none to say what it runs.

    importing_tests(root, head, path) -> ImportingTests
    loading_files(root, head, path) -> the other files that may load the module

A Python file F loads a module M of the repository when

    import      an import statement anywhere in F (a function's too; a relative one read against F's
                package) names M or something under it (`import a.b.c` runs a/__init__.py and a/b/__init__.py
                too);
    name        a string constant of F (docstrings left out) is M's dotted name or a name under it, alone or
                as `module:attribute`: an importlib call, `mock.patch`, `pytest.importorskip`, a lazy
                command table; or F runs `python -m M` (the strings "-m" and M side by side in a list, a
                tuple or a call, or `-m M` in a string), which runs M/__main__.py too for a package M;
    path        a string constant of F holds the path of M's file (`tests/perf/test_x.py::test_y` for a
                pytest it starts, `Path(__file__).with_name("fake.py")`), read against F's folder and the
                rootdir;
    script      F starts processes (it imports subprocess, multiprocessing, pty or asyncio, or calls
                os.system, os.popen, an os.exec* or os.spawn*) and a string constant of F names one of the
                project's console scripts (pyproject.toml's [project.scripts]) whose module is M.

A module of a folder that is no package (no __init__.py: research/replay/, bench/) is also named by its bare
file name: whoever imports it puts its folder on sys.path (a conftest.py, a script run from there) and
imports `from replay_runs import ...`.

From the module, each step asks `git grep -w` for the files that name the last dotted part of a module found
(a package's name for its __main__.py, a script's name for its module) and keeps those that load one of
them. A test file found is kept (the module itself too, when it is one); a conftest.py stands for its folder
(every test under it may use what it imports); any other module is followed in turn, since what it made at
import holds what it read. Dotted names are rootdir-relative, and also relative to a source root (src/) for
a file under one.

Some modules every test of every stage loads, whatever its list: ci-tool's runner plugins
(layout.RUNNER_MODULES), the project's own pytest plugins (`-p NAME` in the pytest configuration's addopts,
pyproject.toml's `pytest11` entry points) and a conftest.py at the rootdir. A module that reaches one of
them reaches every test: the answer is then unknown ("every test loads it"), as it is when a file that
names a module on the way does not parse. The caller cannot narrow then.

Not seen: a module loaded by a name built at run time (a loop over a folder's files), a process started by
a script of another project. `loading_files` is one step of the same search, wider: the files of any kind
but prose (*.md, *.rst, *.txt) that load the module or spell one of its dotted names.
"""

from __future__ import annotations

import ast
import configparser
import functools
import itertools
import posixpath
import re
import shlex
import tomllib
from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ci_tool import gitinfo
from ci_tool.change.python_tree import Unreadable, parse_python
from ci_tool.change.value import test_path_of
from ci_tool.layout import RUNNER_MODULES

SOURCE_ROOTS = ("src/",)  # folders whose files import without the folder's name (besides the rootdir)
_CONFIG_FILES = ("pyproject.toml", "pytest.ini", "tox.ini", "setup.cfg")  # where pytest and the scripts are set
_SPAWNING_MODULES = frozenset({"subprocess", "multiprocessing", "pty", "asyncio"})
_OS_SPAWN = re.compile(r"system|popen|exec\w*|spawn\w*|posix_spawn\w*")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_PY_PATH = re.compile(r"[\w./-]*\w\.py(?![\w])")
_MAIN = "__main__"
_RUN_MODULE = re.compile(r"(?<![\w-])-m\s+([A-Za-z_][\w.]*)")  # `python -m NAME` in a command line's text


@dataclass(frozen=True)
class ImportingTests:
    """The test paths that can load a module (test files, and the folders of conftest.py files), or why they
    are unknown."""

    paths: tuple[str, ...] = ()
    unknown: str = ""


@dataclass(frozen=True)
class Project:
    """What the project's configuration says loads a module: its console scripts (name -> module), and the
    modules every test process loads (ci-tool's runner plugins, the pytest plugins its configuration names)."""

    scripts: dict[str, str]
    everywhere: frozenset[str]


def module_names(path: str) -> tuple[str, ...]:
    """The dotted names a repository-relative .py file may import as: from the rootdir, and from a source
    root it lies under (`src/kvengine/pool.py`: `src.kvengine.pool` and `kvengine.pool`)."""
    found = [_dotted(path)]
    found += [_dotted(path.removeprefix(root)) for root in SOURCE_ROOTS if path.startswith(root)]
    return tuple(name for name in found if name)


def _dotted(path: str) -> str:
    parts = list(PurePosixPath(path).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class ImportIndex:
    """The import reach of modules at one commit (`head`; None: the work tree), each file read and parsed at
    most once however many modules are asked about."""

    def __init__(self, root: Path, head: str | None) -> None:
        self.root, self.head = root, head
        self.project = read_project(root, head)
        self._read: dict[str, str | None] = {}  # file -> its text (None: it does not exist or read)
        self._loaded: dict[str, frozenset[str] | Unreadable] = {}  # file -> what it loads, or why unknown

    def importing_tests(self, path: str) -> ImportingTests:
        """The test paths that can load `path` (see the module docstring). One `git grep` a step: the modules
        found at one step are looked for together at the next."""
        found: set[str] = set()
        seen = {path}
        step = [path] if _kept(path, found) else []
        while step:
            names = {name for module in step for name in self._module_names(module)}
            if not names:
                return ImportingTests(unknown=f"{path} has no module name to import it by")
            runner = sorted(plugin for plugin in self.project.everywhere if _loads_any({plugin}, names))
            if runner:  # the plugin itself, or a package above it (importing a.b.c runs a/__init__.py)
                return ImportingTests(unknown=f"every test loads it ({runner[0]} is loaded into every pytest)")
            scripts = {script for script, module in self.project.scripts.items() if module in names}
            words = {_word(name) for name in names} | scripts
            candidates = sorted(gitinfo.files_naming(self.root, self.head, words, "*.py") - seen)
            needles = _needles(names) | scripts
            texts = self._texts(candidates)
            may_load = [other for other in candidates if _may_load(texts[other], needles)]
            step = []
            for other, loaded in self._loads(may_load).items():
                if isinstance(loaded, Unreadable):
                    return ImportingTests(unknown=f"{other} may load {path} and {loaded.why}")
                if _loads_any(loaded, names):
                    seen.add(other)
                    if _kept(other, found):
                        step.append(other)
        if "." in found:
            return ImportingTests(unknown="every test loads it (the conftest.py at the rootdir does)")
        return ImportingTests(tuple(sorted(found)))

    def _module_names(self, path: str) -> tuple[str, ...]:
        """module_names, and the bare file name of a module whose folder is no package (the module docstring)."""
        names = module_names(path)
        folder, _, name = path.rpartition("/")
        if not folder or not name.endswith(".py") or name == "__init__.py":
            return names
        if self._texts([f"{folder}/__init__.py"])[f"{folder}/__init__.py"] is not None:
            return names
        return (*names, name.removesuffix(".py"))

    def loading_files(self, path: str) -> tuple[str, ...]:
        """The files but `path` that load the module `path` (a Python file, as the module docstring says) or
        spell one of its dotted names (any other file); a Python file that does not parse counts as one."""
        names = module_names(path)
        words = {_word(name) for name in names}
        candidates = sorted(gitinfo.files_naming(self.root, self.head, words, ("*", *PROSE)) - {path})
        python = self._loads([other for other in candidates if other.endswith(".py")])
        found = []
        for other, text in self._texts(candidates).items():
            loaded = python.get(other, frozenset())
            if text is not None and (
                isinstance(loaded, Unreadable)
                or any(name in text for name in names if "." in name)
                or _loads_any(loaded, set(names))
            ):
                found.append(other)
        return tuple(found)

    def _texts(self, paths: list[str]) -> dict[str, str | None]:
        unread = [path for path in paths if path not in self._read]
        self._read.update(gitinfo.texts_at(self.root, self.head, unread))
        return {path: self._read[path] for path in paths}

    def _loads(self, paths: list[str]) -> dict[str, frozenset[str] | Unreadable]:
        scripts = tuple(sorted(self.project.scripts.items()))
        for path, text in self._texts([path for path in paths if path not in self._loaded]).items():
            self._loaded[path] = _loads_of(text, path, scripts) if text is not None else frozenset()
        return {path: self._loaded[path] for path in paths}


PROSE = (":!*.md", ":!*.rst", ":!*.txt")  # files that name a module without loading it


def importing_tests(root: Path, head: str | None, path: str) -> ImportingTests:
    """The test paths that can load `path` at `head` (None: the work tree): ImportIndex for one module."""
    return ImportIndex(root, head).importing_tests(path)


def loading_files(root: Path, head: str | None, path: str) -> tuple[str, ...]:
    """The files at `head` (None: the work tree) but `path` that load or name the module: ImportIndex for one."""
    return ImportIndex(root, head).loading_files(path)


def read_project(root: Path, head: str | None) -> Project:
    """The project's console scripts and the modules every test process loads, from its configuration files
    at `head` (None: the work tree); a file that does not read names none."""
    texts = gitinfo.texts_at(root, head, _CONFIG_FILES)
    scripts: dict[str, str] = {}
    plugins: set[str] = set(RUNNER_MODULES)
    pyproject = _toml(texts.get("pyproject.toml"))
    project = _mapping(pyproject.get("project"))
    for name, target in _table(project.get("scripts")).items():
        scripts[name] = target.split(":", 1)[0].strip()
    pytest11 = _table(_mapping(project.get("entry-points")).get("pytest11"))
    plugins |= {target.split(":", 1)[0].strip() for target in pytest11.values()}
    ini = _mapping(_mapping(_mapping(pyproject.get("tool")).get("pytest")).get("ini_options"))
    addopts = [ini.get("addopts", "")]
    for name, section in (("pytest.ini", "pytest"), ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        addopts.append(_ini_option(texts.get(name), section, "addopts"))
    plugins |= {plugin for options in addopts for plugin in _plugin_options(options)}
    return Project(scripts, frozenset(plugins))


@functools.lru_cache(maxsize=8192)
def _loads_of(text: str, path: str, scripts: tuple[tuple[str, str], ...]) -> frozenset[str] | Unreadable:
    """`loads`, remembered by the file's text: the files of two commits near each other are mostly the same."""
    found = loads(text, path, dict(scripts))
    return found if isinstance(found, Unreadable) else frozenset(found)


def loads(text: str, path: str, scripts: dict[str, str]) -> set[str] | Unreadable:
    """The dotted names the Python file at `path` loads (see the module docstring: its imports, the names
    and paths its strings hold, the modules and scripts it starts), or why it cannot be read
    (change/python_tree.py: it does not parse, or nests too deeply for the parser)."""
    tree = parse_python(text)
    if isinstance(tree, Unreadable):
        return tree
    nodes = _nodes(tree)  # one walk: the checks below read its nodes by kind
    found = _imported(nodes, path)
    spawns = _spawns(nodes, found)
    found |= {name for module in _run_as_module(nodes) for name in (module, f"{module}.{_MAIN}")}
    folder = posixpath.dirname(path)
    for string in _strings(nodes):
        target = string.strip().split(":", 1)[0]
        if _DOTTED.fullmatch(target):
            found.add(target)
        found |= {name for module in _RUN_MODULE.findall(string) for name in (module, f"{module}.{_MAIN}")}
        for written in _PY_PATH.findall(string):
            found |= {name for candidate in _resolved(folder, written) for name in module_names(candidate)}
        if spawns:
            found |= {module for script, module in scripts.items() if _names_script(string, script)}
    return found


Nodes = dict[type, list[Any]]  # a tree's nodes by their kind


def _nodes(tree: ast.AST) -> Nodes:
    """Every node of `tree` by its kind, in no particular order (ast.walk's nodes, at a fraction of its cost)."""
    found: Nodes = defaultdict(list)
    stack = [tree]
    while stack:
        node = stack.pop()
        found[type(node)].append(node)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(item for item in value if isinstance(item, ast.AST))
    return found


def imported_names(tree: ast.Module, path: str) -> set[str]:
    """The dotted names the import statements of the file at `path` name, anywhere in it (`from a.b import c`
    also counts `a.b.c`, which may be a module; a relative import is read against the file's package)."""
    return _imported(_nodes(tree), path)


def _imported(nodes: Nodes, path: str) -> set[str]:
    package = _dotted(path) if PurePosixPath(path).name == "__init__.py" else _dotted(path).rpartition(".")[0]
    found: set[str] = set()
    for node in nodes[ast.Import]:
        found |= {alias.name for alias in node.names}
    for node in nodes[ast.ImportFrom]:
        base = node.module or ""
        if node.level:
            parts = package.split(".") if package else []
            parts = parts[: len(parts) - node.level + 1] if node.level > 1 else parts
            base = ".".join([*parts, *([base] if base else [])])
        found |= {base, *(f"{base}.{alias.name}" for alias in node.names)} - {""}
    return found


def _strings(nodes: Nodes) -> list[str]:
    """A module's string constants (an f-string's literal parts too), its docstrings left out: a docstring
    that names a module runs nothing of it."""
    scopes = [*nodes[ast.Module], *nodes[ast.ClassDef], *nodes[ast.FunctionDef], *nodes[ast.AsyncFunctionDef]]
    docstrings = {id(node.body[0].value) for node in scopes if node.body and isinstance(node.body[0], ast.Expr)}
    return [node.value for node in nodes[ast.Constant] if isinstance(node.value, str) and id(node) not in docstrings]


def _run_as_module(nodes: Nodes) -> set[str]:
    """The modules a command line of the file runs as `-m NAME` (a list, a tuple or a call's arguments holding
    the strings "-m" and NAME one after the other)."""
    found = set()
    sequences = [node.elts for node in (*nodes[ast.List], *nodes[ast.Tuple])] + [node.args for node in nodes[ast.Call]]
    for items in sequences:
        for flag, name in itertools.pairwise(items):
            is_flag = isinstance(flag, ast.Constant) and flag.value == "-m"
            if is_flag and isinstance(name, ast.Constant) and isinstance(name.value, str):
                found |= {name.value} if _DOTTED.fullmatch(name.value) else set()
    return found


def _spawns(nodes: Nodes, imported: Collection[str]) -> bool:
    """Whether the module may start a process: it imports a module that starts them, or calls os's."""
    if any(name.split(".", 1)[0] in _SPAWNING_MODULES for name in imported):
        return True
    return any(isinstance(node.value, ast.Name) and node.value.id == "os" and _OS_SPAWN.fullmatch(node.attr)
               for node in nodes[ast.Attribute])  # fmt: skip


def _names_script(string: str, script: str) -> bool:
    """Whether `string` names the console script as a command (`ci-tool run`, `.venv/bin/ci-tool`)."""
    return re.search(rf"(?<![\w.-]){re.escape(script)}(?![\w.-])", string) is not None


def _resolved(folder: str, written: str) -> list[str]:
    """The repository-relative paths a path in a string may mean: from the file's folder, from the rootdir."""
    found = []
    for base in (folder, ""):
        candidate = posixpath.normpath(posixpath.join(base, written.lstrip("/") if base == "" else written))
        if not candidate.startswith("..") and candidate != ".":
            found.append(candidate)
    return found


def _needles(names: Collection[str]) -> set[str]:
    """Text one of which a file that loads a module of `names` holds, whichever way it loads it (the module
    docstring's): the dotted name (an import of it or from it, a string, `-m`), its package's (`from a.b
    import c`, a package's `-m a.b` for a/b/__main__.py), its file's name (a path in a string). A relative
    import is looked for apart."""
    found = set(names) | {f"{name.rpartition('.')[2]}.py" for name in names}
    return found | {name.rpartition(".")[0] for name in names if "." in name}


def _may_load(text: str | None, needles: Collection[str]) -> bool:
    """Whether a file of `text` may load a module whose needles (_needles) these are: cheaper than parsing it,
    and it never says no to a file that does."""
    return text is not None and ("from ." in text or any(needle in text for needle in needles))


def _word(name: str) -> str:
    """What `git grep -w` looks for to find a file naming module `name` (a __main__.py: its package's name,
    which `python -m` spells)."""
    parts = name.split(".")
    return parts[-2] if parts[-1] == _MAIN and len(parts) > 1 else parts[-1]


def _kept(path: str, found: set[str]) -> bool:
    """Add a test file, or a conftest.py's folder, to `found`; whether `path` is a module to follow instead."""
    test_path = test_path_of(path)
    if test_path is None:
        return True
    found.add(test_path)
    return False


def _loads_any(loaded: Collection[str], modules: Collection[str]) -> bool:
    """Whether a name of `loaded` is one of `modules` or a name under one (`a.b.c` loads `a` and `a.b` too)."""
    return any(prefix in modules for name in loaded for prefix in _prefixes(name))


def _prefixes(name: str) -> Iterable[str]:
    parts = name.split(".")
    return (".".join(parts[:end]) for end in range(1, len(parts) + 1))


def _toml(text: str | None) -> dict[str, Any]:
    try:
        return tomllib.loads(text) if text else {}
    except tomllib.TOMLDecodeError:
        return {}


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _table(value: object) -> dict[str, str]:
    return {str(key): item for key, item in value.items() if isinstance(item, str)} if isinstance(value, dict) else {}


def _ini_option(text: str | None, section: str, option: str) -> str:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text or "")
    except configparser.Error:
        return ""
    return parser.get(section, option, fallback="")


def _plugin_options(addopts: object) -> set[str]:
    """The plugin modules `-p NAME` / `-pNAME` in pytest's addopts name (`-p no:NAME` loads nothing)."""
    if isinstance(addopts, list):
        words = [str(word) for word in addopts]
    else:
        try:
            words = shlex.split(str(addopts))
        except ValueError:
            return set()
    found = set()
    for word, following in itertools.pairwise([*words, ""]):
        value = following if word == "-p" else word.removeprefix("-p") if word.startswith("-p") else ""
        if value and not value.startswith("no:"):
            found.add(value)
    return found
