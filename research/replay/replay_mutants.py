"""Mutation-style faults for the replay bench (mutation_replay_bench.py): one small edit in the body of one
function of a Python source text, by one of four operators. Pure: a text in, mutated texts out.

    operator            edit                                            e.g.
    flipped comparison  a comparison's operator to its negation         n <= free  ->  n > free
    off-by-one          an integer literal plus one; a range()'s stop   size * 2   ->  size * 3
                        bound (not a literal) minus one                 range(n)   ->  range((n) - 1)
    dropped statement   a statement of the body becomes `pass`          total += n ->  pass
    swapped arguments   a call's first two positional arguments         f(a, b)    ->  f(b, a)

Only the function's own lines count (its body, not a nested def's, which is a unit of its own:
ci_tool/change/units.py). Each edit keeps every other line where it was (a dropped statement leaves blank
lines), so line numbers in tracebacks and records stay those of the tree. A mutant is left out when it does
not compile, or when it is equivalent by construction: the same syntax tree as the original, a dropped
`pass`, `...`, docstring or body-ending `return None`, two equal arguments swapped, or the arguments of a
symmetric call (max, min).
"""

from __future__ import annotations

import ast
import enum
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ci_tool.change.units import SourceUnits, source_units


class Operator(enum.StrEnum):
    FLIP_COMPARISON = "flipped comparison"
    OFF_BY_ONE = "off-by-one"
    DROP_STATEMENT = "dropped statement"
    SWAP_ARGUMENTS = "swapped arguments"


# A comparison's operator token (the text between its operands), and what it becomes.
_FLIPS: dict[type[ast.cmpop], tuple[str, str]] = {
    ast.Lt: (r"<(?!=)", ">="),
    ast.LtE: (r"<=", ">"),
    ast.Gt: (r">(?!=)", "<="),
    ast.GtE: (r">=", "<"),
    ast.Eq: (r"==", "!="),
    ast.NotEq: (r"!=", "=="),
    ast.Is: (r"\bis\b(?!\s+not\b)", "is not"),
    ast.IsNot: (r"\bis\s+not\b", "is"),
    ast.In: (r"(?<!not )\bin\b", "not in"),
    ast.NotIn: (r"\bnot\s+in\b", "in"),
}
_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)  # what holds statements, as units.py reads them
_SYMMETRIC = frozenset({"max", "min", "gcd", "lcm", "hypot", "isclose", "eq", "ne", "add", "mul"})


@dataclass(frozen=True)
class Mutant:
    """One planted fault: where, by which operator, the edited text before and after, and the whole file."""

    path: str
    unit: str
    operator: Operator
    line: int
    before: str
    after: str
    text: str

    @property
    def label(self) -> str:
        return f"{self.path}:{self.line} {self.unit}: {self.operator.value} (`{self.before}` -> `{self.after}`)"


@dataclass(frozen=True)
class _Edit:
    operator: Operator
    start: tuple[int, int]  # (line, byte column) where the replaced text starts
    end: tuple[int, int]
    replacement: str
    swap: tuple[tuple[int, int], tuple[int, int], str] | None = None  # a second span and its text (a swap)


def function_node(tree: ast.Module, unit: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The def of `unit` (a qualified name: `Pool.take`, `outer.inner`) in a module's tree."""
    body: Sequence[ast.AST] = tree.body
    node: ast.AST | None = None
    for name in unit.split("."):
        node = next((found for found in _defs(body) if found.name == name), None)
        if node is None:
            return None
        body = node.body
    return node if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else None


def _defs(body: Sequence[ast.AST]) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef]:
    """The defs and classes of a body, those under if/try/with at its level too (as units.py counts them)."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node
        else:
            yield from _defs([child for child in ast.iter_child_nodes(node) if isinstance(child, _BLOCKS)])


def mutants(path: str, text: str, unit: str) -> dict[Operator, list[Mutant]]:
    """Every mutant of `unit`'s own lines in `text`, by operator (none when the text or the unit is not there)."""
    units = source_units(text)
    tree = _parse(text)
    node = function_node(tree, unit) if tree is not None else None
    if units is None or node is None:
        return {}
    lines = text.encode("utf-8").splitlines(keepends=True)
    found: dict[Operator, list[Mutant]] = {operator: [] for operator in Operator}
    original = ast.dump(tree) if tree is not None else ""
    for edit in _edits(node, lines, units, unit):
        mutant = _apply(path, unit, text, lines, edit)
        if mutant is not None and _compiles_differently(mutant.text, original):
            found[edit.operator].append(mutant)
    return {operator: listed for operator, listed in found.items() if listed}


def pick(found: dict[Operator, list[Mutant]], count: int, rng: random.Random) -> list[Mutant]:
    """`count` mutants spread over the operators (each operator in turn, a random site of it)."""
    pools = {operator: list(listed) for operator, listed in found.items()}
    order = sorted(pools)
    rng.shuffle(order)
    chosen: list[Mutant] = []
    while len(chosen) < count and any(pools.values()):
        for operator in order:
            if pools[operator] and len(chosen) < count:
                chosen.append(pools[operator].pop(rng.randrange(len(pools[operator]))))
    return chosen


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _compiles_differently(text: str, original: str) -> bool:
    tree = _parse(text)
    if tree is None or ast.dump(tree) == original:
        return False
    try:
        compile(tree, "<mutant>", "exec")
    except (SyntaxError, ValueError):
        return False
    return True


def _own_nodes(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of a def's body, not descending into nested defs or classes."""
    stack: list[ast.AST] = list(reversed(node.body))
    while stack:
        current = stack.pop()
        yield current
        if not isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            stack.extend(reversed(list(ast.iter_child_nodes(current))))


def _edits(
    node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[bytes], units: SourceUnits, unit: str
) -> Iterator[_Edit]:
    docstring = _docstring(node)
    for found in _own_nodes(node):
        if not hasattr(found, "lineno") or units.unit_at(found.lineno) != unit:
            continue
        if isinstance(found, ast.Compare) and len(found.ops) == 1:
            yield from _flip(found, lines)
        elif isinstance(found, ast.Constant) and type(found.value) is int:
            yield _Edit(Operator.OFF_BY_ONE, _start(found), _end(found), str(found.value + 1))
        elif isinstance(found, ast.Call):
            yield from _call_edits(found, lines)
        if isinstance(found, ast.stmt) and found is not docstring and not _returns_none_last(node, found):
            yield from _drop(found, lines)


def _docstring(node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.stmt | None:
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first
    return None


def _returns_none_last(node: ast.FunctionDef | ast.AsyncFunctionDef, found: ast.stmt) -> bool:
    """A bare `return` (or `return None`) ending the body: dropping it changes nothing."""
    value = found.value if isinstance(found, ast.Return) else ast.Constant(0)
    return found is node.body[-1] and (value is None or (isinstance(value, ast.Constant) and value.value is None))


def _flip(found: ast.Compare, lines: list[bytes]) -> Iterator[_Edit]:
    pattern, replacement = _FLIPS[type(found.ops[0])]
    start, end = _end(found.left), _start(found.comparators[0])
    between = _text(lines, start, end)
    match = re.search(pattern, between)
    if match is not None:
        yield _Edit(
            Operator.FLIP_COMPARISON, start, end, between[: match.start()] + replacement + between[match.end() :]
        )


def _call_edits(found: ast.Call, lines: list[bytes]) -> Iterator[_Edit]:
    name = found.func.attr if isinstance(found.func, ast.Attribute) else getattr(found.func, "id", "")
    positional = [arg for arg in found.args if not isinstance(arg, ast.Starred)]
    if name == "range" and positional and len(positional) == len(found.args):
        stop = positional[1] if len(positional) > 1 else positional[0]
        if not (isinstance(stop, ast.Constant) and type(stop.value) is int):  # a literal is an off-by-one already
            yield _Edit(
                Operator.OFF_BY_ONE, _start(stop), _end(stop), f"({_text(lines, _start(stop), _end(stop))}) - 1"
            )
    if len(found.args) >= 2 and len(positional) == len(found.args) and name not in _SYMMETRIC:
        first, second = found.args[0], found.args[1]
        first_text, second_text = _text(lines, _start(first), _end(first)), _text(lines, _start(second), _end(second))
        if first_text != second_text:
            yield _Edit(Operator.SWAP_ARGUMENTS, _start(first), _end(first), second_text,
                        swap=(_start(second), _end(second), first_text))  # fmt: skip


def _drop(found: ast.stmt, lines: list[bytes]) -> Iterator[_Edit]:
    if isinstance(found, ast.Pass | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Global | ast.Nonlocal):
        return
    if isinstance(found, ast.Expr) and isinstance(found.value, ast.Constant):  # `...` or a bare string
        return
    start, end = _start(found), _end(found)
    head = lines[start[0] - 1][: start[1]]
    tail = lines[end[0] - 1][end[1] :].strip()
    if head.strip() or (tail and not tail.startswith(b"#")):  # shares a line with another statement
        return
    blank = "\n" * (end[0] - start[0])
    yield _Edit(Operator.DROP_STATEMENT, start, end, "pass" + blank)


def _apply(path: str, unit: str, text: str, lines: list[bytes], edit: _Edit) -> Mutant | None:
    spans = [(edit.start, edit.end, edit.replacement)]
    if edit.swap is not None:
        spans.append(edit.swap)
    if len(spans) == 2 and not spans[0][1] <= spans[1][0]:
        return None
    data = b"".join(lines)
    offsets = _line_offsets(lines)
    for start, end, replacement in sorted(spans, reverse=True):  # from the end: earlier offsets stay valid
        begin, finish = offsets[start[0] - 1] + start[1], offsets[end[0] - 1] + end[1]
        data = data[:begin] + replacement.encode("utf-8") + data[finish:]
    before = _text(lines, edit.start, edit.end if edit.swap is None else edit.swap[1])
    after = edit.replacement if edit.swap is None else f"{edit.replacement}, {edit.swap[2]}"
    return Mutant(path, unit, edit.operator, edit.start[0], _short(before), _short(after), data.decode("utf-8"))


def _line_offsets(lines: list[bytes]) -> list[int]:
    offsets, total = [], 0
    for line in lines:
        offsets.append(total)
        total += len(line)
    return offsets


def _start(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset  # type: ignore[attr-defined]


def _end(node: ast.AST) -> tuple[int, int]:
    return node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]


def _text(lines: list[bytes], start: tuple[int, int], end: tuple[int, int]) -> str:
    if start[0] == end[0]:
        return lines[start[0] - 1][start[1] : end[1]].decode("utf-8")
    middle = b"".join(lines[start[0] : end[0] - 1])
    return (lines[start[0] - 1][start[1] :] + middle + lines[end[0] - 1][: end[1]]).decode("utf-8")


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 60 else flat[:57] + "..."
