"""The units of a Python source file that touch records count in, and the units a change edits. Pure: source
texts and diff hunks in, unit names out.

    unit       each function or method, by its qualified name (`BlockPool.allocate`; a nested one
               `outer.inner`), and the file's `<module>` unit: module-level code, class bodies and each
               def's header (decorators, signature, defaults), which run when the module is imported
    line       belongs to the innermost function whose body holds it, else to <module>
    a change   edits the units its removed lines lie in at the base and its added lines at the head; a
               def header it edits edits <module> too (the header runs at import); a unit the head has
               and the base lacks is new: no record made before the change can know it

    @dataclass                      <module>   (a decorator: runs at import)
    class Pool:                     <module>
        size = 4                    <module>   (a class body)
        def take(self, n):          <module>   (the header)
            return n <= self.size   Pool.take  (the body)
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MODULE_UNIT = "<module>"
_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)  # what holds statements (a def, in an if or a try)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


@dataclass(frozen=True)
class _Def:
    unit: str
    header: tuple[int, int]  # first decorator line .. the line before the body
    body: tuple[int, int]  # first body line .. last line


@dataclass(frozen=True)
class SourceUnits:
    """Which unit each line of one source text lies in (see the module docstring)."""

    defs: tuple[_Def, ...]  # outer before inner: the last that holds a line is the innermost

    @property
    def names(self) -> frozenset[str]:
        return frozenset({MODULE_UNIT, *(found.unit for found in self.defs)})

    def unit_at(self, line: int) -> str:
        """The unit line `line` (1-based) runs in."""
        found = MODULE_UNIT
        for candidate in self.defs:
            if candidate.body[0] <= line <= candidate.body[1]:
                found = candidate.unit
        return found

    def edited_by(self, lines: Iterable[int]) -> set[str]:
        """The units an edit of `lines` changes: each line's unit, and <module> for a def header's line."""
        found: set[str] = set()
        for line in lines:
            found.add(self.unit_at(line))
            if any(d.header[0] <= line <= d.header[1] for d in self.defs):
                found.add(MODULE_UNIT)
        return found


def source_units(text: str) -> SourceUnits | None:
    """The units of a Python source text; None when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):  # ValueError: a NUL byte in the source
        return None
    found: list[_Def] = []
    _collect(tree.body, "", found)
    return SourceUnits(tuple(found))


def _collect(body: Sequence[ast.AST], prefix: str, found: list[_Def]) -> None:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            unit = prefix + node.name
            start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            first = node.body[0].lineno
            # A one-line def (`def f(): return 1`): its line is the body's, and the header's too.
            header = (start, first - 1 if first > node.lineno else node.lineno)
            found.append(_Def(unit, header, (first, node.end_lineno or first)))
            _collect(node.body, unit + ".", found)
        elif isinstance(node, ast.ClassDef):
            _collect(node.body, prefix + node.name + ".", found)
        else:  # defs under if/try/with/for/match at this level keep this level's prefix
            _collect([c for c in ast.iter_child_nodes(node) if isinstance(c, _BLOCKS)], prefix, found)


@dataclass(frozen=True)
class Hunk:
    """One hunk of a `git diff -U0`: the base lines it removes and the head lines it adds (1-based)."""

    removed: range
    added: range


def parse_hunks(diff: str) -> tuple[Hunk, ...]:
    """The hunks of one file's `git diff -U0` text (its `@@ -a,b +c,d @@` lines)."""
    hunks = []
    for match in _HUNK.finditer(diff):
        old, old_count, new, new_count = (int(value) if value is not None else 1 for value in match.groups())
        hunks.append(Hunk(range(old, old + old_count), range(new, new + new_count)))
    return tuple(hunks)


@dataclass(frozen=True)
class UnitChange:
    """What a change does to one source file, unit by unit: the units it edits (names as the base has
    them, or the head for a unit it adds), the units the head adds, or why it cannot say."""

    units: tuple[str, ...] = ()
    new: tuple[str, ...] = ()
    undecided: str = ""  # "" when the change was mapped to units


def changed_units(base: str | None, head: str | None, hunks: Sequence[Hunk]) -> UnitChange:
    """The units `hunks` edit in a file whose text is `base` at the base and `head` at the head (None: the
    file does not exist there: every unit of the other side is edited)."""
    base_units = source_units(base) if base is not None else SourceUnits(())
    head_units = source_units(head) if head is not None else SourceUnits(())
    if base_units is None or head_units is None:
        return UnitChange(undecided=f"it does not parse as Python at the {'base' if base_units is None else 'head'}")
    if base is None or head is None:  # added or removed: all of it
        side = head_units if base is None else base_units
        edited = set(side.names)
    else:
        edited = base_units.edited_by(line for hunk in hunks for line in hunk.removed)
        edited |= head_units.edited_by(line for hunk in hunks for line in hunk.added)
    new = edited - base_units.names if base is not None else edited
    return UnitChange(tuple(sorted(edited)), tuple(sorted(new)))
