"""Which test files of a tree can meet a fault planted in the engine's package (replay_select.py): those that
import the package, directly or through the tree's own modules (a helper under tests/, a ci_tool module),
and test-side files (under tests/) whose string constants name it (a test that starts `python -m kvengine`
in a process; docstrings and comments do not count), their folders'
conftest.py files counted with them. A test file outside this scope runs none of the package's code, so it
passes with every fault the bench plants; it is left out of every set alike.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path, PurePosixPath

from ci_tool.change.import_reach import imported_names


class EngineScope:
    def __init__(self, tree: Path, package: str, *, roots: tuple[str, ...] = ("", "src/")) -> None:
        self.tree, self.package, self.roots = tree, package, roots
        self.known: dict[str, bool] = {}  # repository-relative file -> whether it reaches the package

    def holds(self, test_file: str) -> bool:
        """Whether the test file (repository-relative) or a conftest.py above it reaches the package."""
        folders = PurePosixPath(test_file).parents
        conftests = [(folder / "conftest.py").as_posix().removeprefix("./") for folder in folders]
        return any(self._reaches(path) for path in [test_file, *conftests] if (self.tree / path).is_file())

    def _reaches(self, path: str) -> bool:
        if path in self.known:
            return self.known[path]
        self.known[path] = False  # an import cycle: the file in progress adds nothing to itself
        try:
            module = ast.parse((self.tree / path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            return False
        names = imported_names(module, path)
        found = any(name.split(".")[0] == self.package for name in names)
        found = found or (path.startswith("tests/") and self.package in _words(module))
        found = found or any(self._reaches(imported) for imported in self._files(names))
        self.known[path] = found
        return found

    def _files(self, names: set[str]) -> list[str]:
        """The tree's files the imported names are (a module or a package's __init__.py)."""
        found = []
        for name in sorted(names):
            for root in self.roots:
                for candidate in (f"{root}{name.replace('.', '/')}.py", f"{root}{name.replace('.', '/')}/__init__.py"):
                    if (self.tree / candidate).is_file():
                        found.append(candidate)
        return found


def _words(module: ast.Module) -> set[str]:
    """The words of a module's string constants, its docstrings left out (a docstring that names the package
    runs nothing of it)."""
    docstrings = {id(node.body[0].value) for node in ast.walk(module)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)}  # fmt: skip
    texts = [node.value for node in ast.walk(module) if isinstance(node, ast.Constant)
             and isinstance(node.value, str) and id(node) not in docstrings]  # fmt: skip
    return {word for text in texts for word in re.findall(r"\w+", text)}
