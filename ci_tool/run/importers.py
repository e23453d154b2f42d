"""Which test files import a module, directly or through other modules, read from the files at a commit: what
a change to the module's import-time code reaches (touch_evidence.py). A record cannot say it: a module's
top-level code runs once, while pytest collects, outside every test.

    importing_tests(root, head, path) -> ImportingTests
    loading_files(root, head, path) -> the other files that may load the module

From the module, each step asks `git grep -w` for the files that name the last dotted part of a module found
(`triton_check` for tests/kvengine/triton_check.py, `kvengine` for src/kvengine/__init__.py), and keeps
those whose import statements (anywhere in the file, a function's too; relative ones read against the
file's package) name the module or something under it. A test file found is kept (the module itself too,
when it is one); a conftest.py stands for its folder (every test under it may use what it imports); any
other module is followed in turn, since what it made at import holds what it read. A file that does not
parse, or more than LIMIT modules on the way, leaves the answer unknown: the caller then cannot narrow.
Dotted names are rootdir-relative, and also relative to a source root (src/) for a file under one; what a
test starts in a process is not here (its record says that).

`loading_files` is one step of the same search, wider: the files (any kind but prose: *.md, *.rst, *.txt)
that import the module or spell one of its dotted names (a string an importlib call, `mock.patch`,
`pytest.importorskip` or an entry point holds). A module loaded by a name built at run time (a loop over a
folder's files) is not seen.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ci_tool import gitinfo
from ci_tool.stages.changes import test_path_of

LIMIT = 60  # modules followed before the answer is unknown
SOURCE_ROOTS = ("src/",)  # folders whose files import without the folder's name (besides the rootdir)


@dataclass(frozen=True)
class ImportingTests:
    """The test paths that import a module (test files, and the folders of conftest.py files), or why they
    are unknown."""

    paths: tuple[str, ...] = ()
    unknown: str = ""


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


def importing_tests(root: Path, head: str | None, path: str) -> ImportingTests:
    """The test paths whose imports reach `path` at `head` (None: the work tree); see the module docstring.
    One `git grep` a step: the modules found at one step are looked for together at the next."""
    found: set[str] = set()
    seen = {path}
    step = [path] if _kept(path, found) else []
    while step:
        if len(seen) > LIMIT:
            return ImportingTests(unknown=f"more than {LIMIT} modules import {path}, directly or not")
        names = {name for module in step for name in module_names(module)}
        if not names:
            return ImportingTests(unknown=f"{path} has no module name to import it by")
        words = {name.rsplit(".", 1)[-1] for name in names}
        step = []
        for other in sorted(gitinfo.files_naming(root, head, words, "*.py") - seen):
            text = gitinfo.file_at(root, head, other) if head is not None else _read(root / other)
            imported = _imports(text, other) if text is not None else None
            if imported is None:
                return ImportingTests(unknown=f"{other} may import {path} and does not parse")
            if not any(_under(found_name, name) for found_name in imported for name in names):
                continue
            seen.add(other)
            if _kept(other, found):
                step.append(other)
    return ImportingTests(tuple(sorted(found)))


PROSE = (":!*.md", ":!*.rst", ":!*.txt")  # files that name a module without loading it


def loading_files(root: Path, head: str | None, path: str) -> tuple[str, ...]:
    """The files at `head` (None: the work tree) but `path` that import the module `path` or spell one of its
    dotted names (see the module docstring); a Python file that does not parse counts as one."""
    names = module_names(path)
    words = {name.rsplit(".", 1)[-1] for name in names}
    found = []
    for other in sorted(gitinfo.files_naming(root, head, words, ("*", *PROSE)) - {path}):
        text = gitinfo.file_at(root, head, other) if head is not None else _read(root / other)
        if text is None:
            continue
        imported = _imports(text, other) if other.endswith(".py") else set()
        if (
            imported is None
            or any(name in text for name in names if "." in name)
            or any(_under(found_name, name) for found_name in imported for name in names)
        ):
            found.append(other)
    return tuple(found)


def _kept(path: str, found: set[str]) -> bool:
    """Add a test file, or a conftest.py's folder, to `found`; whether `path` is a module to follow instead."""
    test_path = test_path_of(path)
    if test_path is None:
        return True
    found.add(test_path)
    return False


def _under(imported: str, module: str) -> bool:
    return imported == module or imported.startswith(f"{module}.")


def _imports(text: str, path: str) -> set[str] | None:
    """The dotted names a file's import statements name (None: it does not parse)."""
    try:
        return imported_names(ast.parse(text), path)
    except (SyntaxError, ValueError):
        return None


def imported_names(tree: ast.Module, path: str) -> set[str]:
    """The dotted names the import statements of the file at `path` name, anywhere in it (`from a.b import c`
    also counts `a.b.c`, which may be a module; a relative import is read against the file's package)."""
    package = _dotted(path) if PurePosixPath(path).name == "__init__.py" else _dotted(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - node.level + 1] if node.level > 1 else parts
                base = ".".join([*parts, *([base] if base else [])])
            found |= {base, *(f"{base}.{alias.name}" for alias in node.names)} - {""}
    return found


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
