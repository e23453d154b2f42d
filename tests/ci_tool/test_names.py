"""One name per concept: a public class (a value, an enum, a Protocol) is defined in one module of ci_tool, so
a name read at a call site says which concept it is without looking at the import."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "ci_tool"


def public_classes(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.name for node in tree.body if isinstance(node, ast.ClassDef) and not node.name.startswith("_")]


def test_no_public_class_name_is_defined_in_two_modules() -> None:
    modules: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in public_classes(path):
            modules[name].append(str(path.relative_to(PACKAGE)))
    assert {name: found for name, found in modules.items() if len(found) > 1} == {}
