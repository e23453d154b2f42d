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
            "crash_log", "markdown",
        }
    ),
    frozenset({"sysinfo", "gitinfo"}),
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
