"""The units of a Python source file that touch records count in, and the units a change edits. Pure: source
texts and diff hunks in, unit names out.

    unit       each function or method, by its qualified name (`BlockPool.allocate`; a nested one
               `outer.inner`), and the file's `<module>` unit: module-level code, class bodies and each
               def's header (decorators, signature, defaults), which run when the module is imported
    line       belongs to the innermost function whose body holds it, else to <module>
    a change   edits the units its removed lines lie in at the base and its added lines at the head; a
               def header it edits edits <module> too (the header runs at import; a nested def's header
               runs in the body that holds it), except a plain header (no decorator, no call in its
               defaults or annotations: importing it only binds the name) of a function both sides have,
               or of a free one: that edit is the function's own (the tests that called it ran its body);
               a unit the head has and the base lacks is new: no record made before the change can know it
    inert      a blank or comment-only line (past the first two, where a coding line may stand) runs
               nothing: a change of one edits no unit
    free       a new top-level function whose name the base never mentions (no def, assignment, import,
               use or `import *` of it, and not a builtin), with no decorator and no call in its header:
               no code at the base can reach it, so it runs only through code the change also edits, whose
               records select the tests. It (and what it nests) is not new. A new method is never free:
               it may override an inherited one unseen.

    @dataclass                      <module>   (a decorator: runs at import)
    class Pool:                     <module>
        size = 4                    <module>   (a class body)
        def take(self, n):          <module>   (the header)
            return n <= self.size   Pool.take  (the body)
"""

from __future__ import annotations

import ast
import builtins
import io
import re
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MODULE_UNIT = "<module>"
_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)  # what holds statements (a def, in an if or a try)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


_INERT_TOKENS = frozenset(
    {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENCODING,
        tokenize.ENDMARKER,
    }
)
_CODING_LINES = 2  # a comment on these lines may be a coding declaration, which changes how the file reads
_BUILTIN_NAMES = frozenset(dir(builtins))


@dataclass(frozen=True)
class _Def:
    unit: str
    header: tuple[int, int]  # first decorator line .. the line before the body
    body: tuple[int, int]  # first body line .. last line
    plain_header: bool = False  # no decorator, no call in its defaults or annotations: import only binds it
    at_import: bool = True  # its header runs at import (not nested in a function, whose body runs it)


@dataclass(frozen=True)
class SourceUnits:
    """Which unit each line of one source text lies in (see the module docstring)."""

    defs: tuple[_Def, ...]  # outer before inner: the last that holds a line is the innermost
    code_lines: frozenset[int] | None = None  # the lines that are not inert (None: every line counts)
    mentioned: frozenset[str] = frozenset()  # every identifier the text names ("*" for an `import *`)

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

    def edited_by(self, lines: Iterable[int], own_headers: frozenset[str] = frozenset()) -> set[str]:
        """The units an edit of `lines` changes: each code line's unit, and <module> for a def header's line,
        but for the plain header of a def in `own_headers`, whose edit is the def's own (module docstring)."""
        found: set[str] = set()
        for line in lines:
            if self.code_lines is not None and line not in self.code_lines:
                continue
            headers = [d for d in self.defs if d.at_import and d.header[0] <= line <= d.header[1]]
            if headers and headers[0].plain_header and headers[0].unit in own_headers:
                found.add(headers[0].unit)
            elif headers:
                found |= {self.unit_at(line), MODULE_UNIT}
            else:
                found.add(self.unit_at(line))
        return found

    def free_functions(self, base: SourceUnits) -> frozenset[str]:
        """The new top-level functions of this text (the head) that no code of `base` can reach."""
        if "*" in base.mentioned:
            return frozenset()
        return frozenset(
            found.unit
            for found in self.defs
            if "." not in found.unit
            and found.plain_header
            and found.unit not in base.mentioned
            and found.unit not in _BUILTIN_NAMES
        )


def source_units(text: str) -> SourceUnits | None:
    """The units of a Python source text; None when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):  # ValueError: a NUL byte in the source
        return None
    found: list[_Def] = []
    _collect(tree.body, "", found)
    return SourceUnits(tuple(found), _code_lines(text), _mentioned(tree))


def _code_lines(text: str) -> frozenset[int] | None:
    """The lines a token of code starts on or spans (a multi-line string: each of its lines); None when the
    text does not tokenize (then no line is taken for inert)."""
    lines: set[int] = set(range(1, _CODING_LINES + 1))
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type not in _INERT_TOKENS:
                lines.update(range(token.start[0], token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        return None
    return frozenset(lines)


def _mentioned(tree: ast.AST) -> frozenset[str]:
    """Every identifier the tree names, in any role (a name, an attribute, a def, an import, an argument)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        for field in ("id", "name", "asname", "attr", "arg"):
            value = getattr(node, field, None)
            if isinstance(value, str):
                found.add(value.split(".", 1)[0])  # `import a.b` binds `a`
        if isinstance(node, ast.Global | ast.Nonlocal):
            found.update(node.names)
    return frozenset(found)


def _plain_header(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether importing the def only binds its name: no decorator, no call among its defaults and annotations."""
    if node.decorator_list:
        return False
    arguments = node.args
    header = [*arguments.defaults, *arguments.kw_defaults, node.returns]
    header += [arg.annotation for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    header += [arg.annotation for arg in (arguments.vararg, arguments.kwarg) if arg is not None]
    return not any(isinstance(sub, ast.Call) for part in header if part is not None for sub in ast.walk(part))


def _collect(body: Sequence[ast.AST], prefix: str, found: list[_Def], in_function: bool = False) -> None:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            unit = prefix + node.name
            start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            first = node.body[0].lineno
            # A one-line def (`def f(): return 1`): its line is the body's, and the header's too.
            header = (start, first - 1 if first > node.lineno else node.lineno)
            found.append(_Def(unit, header, (first, node.end_lineno or first), _plain_header(node), not in_function))
            _collect(node.body, unit + ".", found, in_function=True)
        elif isinstance(node, ast.ClassDef):
            _collect(node.body, prefix + node.name + ".", found, in_function)
        else:  # defs under if/try/with/for/match at this level keep this level's prefix
            _collect([c for c in ast.iter_child_nodes(node) if isinstance(c, _BLOCKS)], prefix, found, in_function)


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
        return UnitChange(tuple(sorted(edited)), tuple(sorted(edited)) if base is None else ())
    free = head_units.free_functions(base_units)
    both = base_units.names & head_units.names  # a def one side lacks binds or unbinds a name: <module>
    edited = base_units.edited_by((line for hunk in hunks for line in hunk.removed), both)
    edited |= head_units.edited_by((line for hunk in hunks for line in hunk.added), both | free)
    new = {unit for unit in edited - base_units.names if unit.split(".", 1)[0] not in free}
    return UnitChange(tuple(sorted(edited)), tuple(sorted(new)))
