"""The units of a Python source file that touch records count in, and the units a change edits. Pure: source
texts and diff hunks in, unit names out.

    unit       each function or method, by its qualified name (`BlockPool.allocate`; a nested one
               `outer.inner`), and the file's `<module>` unit: module-level code, class bodies and each
               def's header (decorators, signature, defaults), which run when the module is imported
    line       belongs to the innermost function whose body holds it, else to <module>
    a change   edits the units its removed lines lie in at the base and its added lines at the head; a
               def header it edits edits <module> too (the header runs at import; a nested def's header
               runs in the body that holds it), except a plain header (no decorator but those that only
               wrap, no call in its defaults or annotations: importing it only binds the name) of a
               function both sides have, or of a free one: that edit is the function's own (the tests that
               called it ran its body); a unit the head has and the base lacks is new: no record made
               before the change can know it (but a def nested in a function, which runs only inside
               that function, whose body the change edits: the function's tests run it)
    inert      a blank or comment-only line runs nothing: a change of one edits no unit (but for a comment
               on the first two lines, which may declare the file's coding)
    free       a new top-level function whose name the base never mentions (no def, assignment, import,
               use or `import *` of it, and not a builtin), with a plain header: no code at the base can
               reach it, so it runs only through code the change also edits, whose records select the
               tests. It (and what it nests) is not new. A new method is never free: it may override an
               inherited one unseen.
    binding    a top-level statement that only binds names: an import (not `*`), an assignment of names
               to a value with no call in it, the module docstring (`__doc__`). Its edit is an edit of the
               units that read what it binds (a name in their code; through other bindings that read it,
               `_B = _A + 1`); a read in module-level code (a class body, a decorator, an evaluated
               annotation) is <module>'s. A public name it assigns, and any name an `__init__.py` imports,
               may be read by other files: `exported` lists them for the caller to look for there. What
               an import imports is judged by its own file's change (or lies outside the repository).
    wraps      a decorator that only wraps the function (functools.cache and lru_cache, triton.jit,
               numba's jit, torch.compile, resolved through the file's imports) keeps the header plain
    compiled   a def a compiler decorates (triton.jit, numba's jit, torch.compile) runs as compiled code
               on a GPU: no record of a GPU runner sees its lines. Its edit is an edit of the units that
               name it too (its launchers, and theirs, `_scores` -> `_kernel` -> `decode`); a public
               one may be launched from other files: `exported` lists it.

    @dataclass                      <module>   (a decorator: runs at import)
    class Pool:                     <module>
        size = 4                    <module>   (a class body)
        def take(self, n):          <module>   (the header)
            return n <= self.size   Pool.take  (the body)
"""

from __future__ import annotations

import ast
import builtins
import functools
import io
import re
import tokenize
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ci_tool.change.python_tree import Unreadable, parse_python

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
# Decorators that only wrap the function they decorate, by the dotted name the file's imports resolve them to;
# the compilers among them run it as compiled code, which a GPU runner's coverage never sees line by line.
_COMPILERS = frozenset({"triton.jit", "numba.jit", "numba.njit", "numba.cuda.jit", "torch.compile"})
_WRAPS = _COMPILERS | {"functools.cache", "functools.lru_cache"}
_CLASS_WRAPS = frozenset({"dataclasses.dataclass"})  # class decorators that only add methods
_NOT_BINDING_VALUES = (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)


@dataclass(frozen=True)
class _Def:
    unit: str
    header: tuple[int, int]  # first decorator line .. the line before the body
    body: tuple[int, int]  # first body line .. last line
    plain_header: bool = False  # only wrapping decorators, no call in its defaults or annotations: import binds it
    at_import: bool = True  # its header runs at import (not nested in a function, whose body runs it)
    compiled: bool = False  # a compiler decorates it: it runs as compiled code, unseen by a GPU runner's records


@dataclass(frozen=True)
class _Binding:
    """A top-level statement that only binds names (module docstring): its lines, the names it binds and
    those its value reads."""

    lines: tuple[int, int]
    names: frozenset[str]
    reads: frozenset[str] = frozenset()
    imports: bool = False  # an import statement (its names are the file's own use, but in an __init__.py)
    is_class: bool = False  # a class statement (its methods' lines are theirs)


@dataclass(frozen=True)
class SourceUnits:
    """Which unit each line of one source text lies in (see the module docstring)."""

    defs: tuple[_Def, ...]  # outer before inner: the last that holds a line is the innermost
    code_lines: frozenset[int] | None = None  # the lines that are not inert (None: every line counts)
    mentioned: frozenset[str] = frozenset()  # every identifier the text names ("*" for an `import *`)
    bindings: tuple[_Binding, ...] = ()
    reads: Mapping[str, frozenset[str]] = field(default_factory=dict)  # name -> the units whose code reads it
    attributes: Mapping[str, frozenset[str]] = field(default_factory=dict)  # `x.NAME`: NAME -> its readers

    @property
    def names(self) -> frozenset[str]:
        return frozenset({MODULE_UNIT, *(found.unit for found in self.defs)})

    @property
    def top_level_names(self) -> frozenset[str]:
        """The names the text binds at its top level, by a def or a binding."""
        defs = {found.unit for found in self.defs if "." not in found.unit}
        return frozenset(defs | {name for found in self.bindings for name in found.names})

    def unit_at(self, line: int) -> str:
        """The unit line `line` (1-based) runs in."""
        return self._units_by_line.get(line, MODULE_UNIT)

    @functools.cached_property
    def _units_by_line(self) -> dict[int, str]:
        found: dict[int, str] = {}
        for candidate in self.defs:  # outer before inner: the innermost is written last
            found |= dict.fromkeys(range(candidate.body[0], candidate.body[1] + 1), candidate.unit)
        return found

    @functools.cached_property
    def _bindings_by_line(self) -> dict[int, _Binding]:
        in_defs = {line for found in self.defs for line in range(found.header[0], found.body[1] + 1)}
        found: dict[int, _Binding] = {}
        for binding in self.bindings:
            found |= {line: binding for line in range(binding.lines[0], binding.lines[1] + 1) if line not in in_defs}
        return found

    @functools.cached_property
    def _headers_by_line(self) -> dict[int, _Def]:
        """Line -> the outermost def whose header runs at import and holds it (an index: a lookup a line)."""
        found: dict[int, _Def] = {}
        for candidate in self.defs:  # outer before inner: the first written stays
            if candidate.at_import:
                for line in range(candidate.header[0], candidate.header[1] + 1):
                    found.setdefault(line, candidate)
        return found

    @functools.cached_property
    def _bindings_reading(self) -> dict[str, list[_Binding]]:
        """Name -> the bindings whose value reads it (an index: following reads is linear in them, not a scan of
        every binding for every name)."""
        found: dict[str, list[_Binding]] = {}
        for binding in self.bindings:
            for name in binding.reads:
                found.setdefault(name, []).append(binding)
        return found

    def edited_by(self, lines: Iterable[int], own_headers: frozenset[str] = frozenset()) -> set[str]:
        """The units an edit of `lines` changes (module docstring): each code line's unit; a binding's readers;
        <module> for a def header's line, but for the plain header of a def in `own_headers`, whose edit is
        the def's own; and the launchers of each compiled def it edits."""
        direct, bindings = self.edits(lines, own_headers)
        return self.launched_through(direct | self.readers(name for found in bindings for name in found.names))

    def edits(self, lines: Iterable[int], own_headers: frozenset[str] = frozenset()) -> tuple[set[str], set[_Binding]]:
        """What an edit of `lines` changes itself: the units of its lines, and the bindings it edits."""
        found: set[str] = set()
        bindings: set[_Binding] = set()
        for line in lines:
            if self.code_lines is not None and line not in self.code_lines:
                continue
            binding = self.binding_at(line)
            if binding is not None:
                bindings.add(binding)
                continue
            header = self._headers_by_line.get(line)
            if header is not None and header.plain_header and header.unit in own_headers:
                found.add(header.unit)
            elif header is not None:
                found |= {self.unit_at(line), MODULE_UNIT}
            else:
                found.add(self.unit_at(line))
        return found, bindings

    def binding_at(self, line: int) -> _Binding | None:
        """The binding a line lies in, outside the defs it holds (a method's lines are the method's)."""
        return self._bindings_by_line.get(line)

    def readers(self, names: Iterable[str]) -> set[str]:
        """The units whose code reads any of `names`, also through the bindings that read them."""
        seen, _ = self._through_bindings(names)
        return {unit for name in seen for unit in self.reads.get(name, ())}

    def readers_elsewhere(self, names: Collection[str]) -> set[str]:
        """The units of this file that read `names`, which another file binds: by name once imported (`from m
        import N as M`), as an attribute (`m.N`), and through this file's bindings that read them; <module>
        where a public binding of this file reads them (what other files then do with it is unseen)."""
        found = self.launched_through(
            {unit for name in names for unit in self.attributes.get(name, ())} | self.readers(names)
        )
        _, through = self._through_bindings(names)
        if any(not binding.imports and any(map(_public, binding.names)) for binding in through):
            found.add(MODULE_UNIT)
        return found

    def _through_bindings(self, names: Iterable[str]) -> tuple[set[str], set[_Binding]]:
        """`names` and the names of the bindings that read them, and those that read those; and those bindings."""
        pending, seen, through = set(names), set(), set()
        while pending:
            name = pending.pop()
            seen.add(name)
            reading = set(self._bindings_reading.get(name, ()))
            through |= reading
            pending |= {bound for found in reading for bound in found.names} - seen
        return seen, through

    def launched_through(self, units: Iterable[str]) -> set[str]:
        """`units` and, for each compiled def among them, the units that name it, and theirs in turn."""
        compiled = {found.unit for found in self.defs if found.compiled}
        found, pending = set(units), [unit for unit in units if unit in compiled]
        while pending:
            launchers = self.readers([pending.pop().rsplit(".", 1)[-1]]) - found
            found |= launchers
            pending += [unit for unit in launchers if unit in compiled]
        return found

    def compiled(self, units: Iterable[str]) -> set[str]:
        """The compiled defs among `units`."""
        return set(units) & {found.unit for found in self.defs if found.compiled}

    def free_functions(self, base: SourceUnits) -> frozenset[str]:
        """The new top-level functions and classes of this text (the head) that no code of `base` can reach,
        with the classes' methods: a free class has no instance but those the change's code makes."""
        if "*" in base.mentioned:
            return frozenset()
        classes = {name for found in self.bindings if found.is_class for name in found.names}
        unreached = {
            name
            for name in classes | {found.unit for found in self.defs if "." not in found.unit}
            if name not in base.mentioned and name not in _BUILTIN_NAMES
        }
        free_classes = unreached & classes
        return frozenset(free_classes) | {
            found.unit
            for found in self.defs
            if found.plain_header
            and found.at_import
            and (found.unit in unreached or found.unit.split(".", 1)[0] in free_classes)
        }


def source_units(text: str) -> SourceUnits | Unreadable:
    """The units of a Python source text, or why it cannot be read (python_tree.py)."""
    tree = parse_python(text)
    if isinstance(tree, Unreadable):
        return tree
    aliases = _aliases(tree)
    found: list[_Def] = []
    _collect(tree.body, "", found, aliases)
    bindings = _bindings(tree, aliases)
    nodes = list(ast.walk(tree))  # walked once: three readers go through every node
    draft = SourceUnits(tuple(found), _code_lines(text), _mentioned(nodes), bindings)
    reads, attributes = _reads(tree, nodes, draft)
    return SourceUnits(draft.defs, draft.code_lines, draft.mentioned, bindings, reads, attributes)


def _aliases(tree: ast.Module) -> dict[str, str]:
    """The dotted name each top-level import binds (`import triton.language as tl`: tl -> triton.language)."""
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                found[alias.asname or alias.name.split(".", 1)[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {alias.asname or alias.name: f"{node.module}.{alias.name}" for alias in node.names}
    return found


def _dotted(node: ast.expr, aliases: Mapping[str, str]) -> str:
    """The dotted name an expression of names and attributes spells, its first name resolved ("" otherwise)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return ""
    return ".".join([aliases[node.id], *reversed(parts)])


def _decorator(node: ast.expr, aliases: Mapping[str, str], known: Collection[str] = _WRAPS) -> str:
    """The wrapping decorator among `known` that `node` is (`functools.lru_cache(maxsize=8)` too: a call with
    call-free arguments), or ""."""
    if isinstance(node, ast.Call):
        arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
        if any(isinstance(sub, ast.Call) for argument in arguments for sub in ast.walk(argument)):
            return ""
        node = node.func
    name = _dotted(node, aliases)
    return name if name in known else ""


def _bindings(tree: ast.Module, aliases: Mapping[str, str]) -> tuple[_Binding, ...]:
    """The top-level statements that only bind names (module docstring)."""
    found: list[_Binding] = []
    classes: set[str] = set()  # the classes bound so far: a base class they may name
    for index, node in enumerate(tree.body):
        lines = (node.lineno, node.end_lineno or node.lineno)
        if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                found.append(_Binding(lines, frozenset({"__doc__"})))
        elif isinstance(node, ast.Import):
            bound = frozenset(alias.asname or alias.name.split(".", 1)[0] for alias in node.names)
            found.append(_Binding(lines, bound, imports=True))
        elif isinstance(node, ast.ImportFrom) and all(alias.name != "*" for alias in node.names):
            bound = frozenset(alias.asname or alias.name for alias in node.names)
            found.append(_Binding(lines, bound, frozenset(alias.name for alias in node.names), imports=True))
        elif isinstance(node, ast.Assign | ast.AnnAssign) and _assigns_names(node):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound = frozenset(sub.id for target in targets for sub in ast.walk(target) if isinstance(sub, ast.Name))
            if "__all__" not in bound:  # what `from this import *` elsewhere binds: no reader names it
                found.append(_Binding(lines, bound, _names_read([node.value])))
        elif isinstance(node, ast.ClassDef) and _binds_a_class(node, aliases, classes):
            classes.add(node.name)
            start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            read: list[ast.expr | None] = [*node.bases, *node.decorator_list]
            read += [statement.value for statement in node.body if isinstance(statement, ast.Assign | ast.AnnAssign)]
            found.append(_Binding((start, lines[1]), frozenset({node.name}), _names_read(read), is_class=True))
    return tuple(found)


def _assigns_names(node: ast.Assign | ast.AnnAssign, *, in_class: bool = False) -> bool:
    """Whether the assignment only binds names (a tuple of them too) to a value with no call in it (in a class
    body a bare annotation, a dataclass field, counts too)."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    parts = [sub for target in targets for sub in ast.walk(target)]
    if not all(isinstance(sub, ast.Name | ast.Tuple | ast.List | ast.expr_context) for sub in parts):
        return False  # an attribute or an item is set: that runs code of the object
    if node.value is None:
        return in_class
    return not any(isinstance(sub, _NOT_BINDING_VALUES) for sub in ast.walk(node.value))


def _binds_a_class(node: ast.ClassDef, aliases: Mapping[str, str], classes: Collection[str]) -> bool:
    """Whether the class statement only binds its name: dataclass decorators alone, no keywords (a
    metaclass), bases that are builtins or classes of this file it judged so (an unknown base's
    __init_subclass__ may register it), and a body of a docstring, defs and name assignments."""
    decorators = all(_decorator(decorator, aliases, _CLASS_WRAPS) for decorator in node.decorator_list)
    bases = all(isinstance(base, ast.Name) and (base.id in _BUILTIN_NAMES or base.id in classes) for base in node.bases)
    body = all(
        (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))
        or isinstance(statement, ast.Pass | ast.FunctionDef | ast.AsyncFunctionDef)
        or (isinstance(statement, ast.Assign | ast.AnnAssign) and _assigns_names(statement, in_class=True))
        for statement in node.body
    )
    return decorators and bases and body and not node.keywords


def _names_read(nodes: Iterable[ast.expr | None]) -> frozenset[str]:
    """The names and attribute names the expressions read (`_X = mod.N` reads `mod` and `N`)."""
    found: set[str] = set()
    for sub in (sub for node in nodes if node is not None for sub in ast.walk(node)):
        if isinstance(sub, ast.Name):
            found.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            found.add(sub.attr)
    return frozenset(found)


def _reads(
    tree: ast.Module, nodes: Sequence[ast.AST], units: SourceUnits
) -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """Name -> the units whose code reads it, and attribute name -> the units that read it off an object
    (`module.NAME`); the bindings' own reads left out, and an annotation where `from __future__ import
    annotations` keeps annotations from being evaluated."""
    skipped: set[int] = set()
    if any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(a.name == "annotations" for a in node.names)
        for node in tree.body
    ):
        for node in nodes:
            annotations: list[ast.expr | None] = []
            if isinstance(node, ast.arg):
                annotations.append(node.annotation)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                annotations.append(node.returns)
            elif isinstance(node, ast.AnnAssign):
                annotations.append(node.annotation)
            skipped |= {id(sub) for part in annotations if part is not None for sub in ast.walk(part)}
    names: dict[str, set[str]] = {}
    attributes: dict[str, set[str]] = {}
    for node in nodes:
        if id(node) in skipped or not hasattr(node, "lineno") or units.binding_at(node.lineno) is not None:
            continue  # a binding's own reads are its `reads`
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            names.setdefault(node.id, set()).add(units.unit_at(node.lineno))
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store):
            attributes.setdefault(node.attr, set()).add(units.unit_at(node.lineno))
    return _frozen(names), _frozen(attributes)


def _frozen(found: Mapping[str, set[str]]) -> dict[str, frozenset[str]]:
    return {name: frozenset(readers) for name, readers in found.items()}


def _code_lines(text: str) -> frozenset[int] | None:
    """The lines a token of code starts on or spans (a multi-line string: each of its lines); None when the
    text does not tokenize (then no line is taken for inert)."""
    lines: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            coding = token.type == tokenize.COMMENT and token.start[0] <= _CODING_LINES
            if coding or token.type not in _INERT_TOKENS:
                lines.update(range(token.start[0], token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        return None
    return frozenset(lines)


def _mentioned(nodes: Iterable[ast.AST]) -> frozenset[str]:
    """Every identifier the nodes name, in any role (a name, an attribute, a def, an import, an argument)."""
    found: set[str] = set()
    for node in nodes:
        for role in ("id", "name", "asname", "attr", "arg"):
            value = getattr(node, role, None)
            if isinstance(value, str):
                found.add(value.split(".", 1)[0])  # `import a.b` binds `a`
        if isinstance(node, ast.Global | ast.Nonlocal):
            found.update(node.names)
    return frozenset(found)


def _plain_header(node: ast.FunctionDef | ast.AsyncFunctionDef, aliases: Mapping[str, str]) -> bool:
    """Whether importing the def only binds its name: wrapping decorators alone, no call among its defaults and
    annotations."""
    if not all(_decorator(decorator, aliases) for decorator in node.decorator_list):
        return False
    arguments = node.args
    header = [*arguments.defaults, *arguments.kw_defaults, node.returns]
    header += [arg.annotation for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    header += [arg.annotation for arg in (arguments.vararg, arguments.kwarg) if arg is not None]
    return not any(isinstance(sub, ast.Call) for part in header if part is not None for sub in ast.walk(part))


def _collect(
    body: Sequence[ast.AST], prefix: str, found: list[_Def], aliases: Mapping[str, str], in_function: bool = False
) -> None:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            unit = prefix + node.name
            start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            first = node.body[0].lineno
            # A one-line def (`def f(): return 1`): its line is the body's, and the header's too.
            header = (start, first - 1 if first > node.lineno else node.lineno)
            compiled = any(_decorator(decorator, aliases) in _COMPILERS for decorator in node.decorator_list)
            body_lines = (first, node.end_lineno or first)
            plain = _plain_header(node, aliases)
            found.append(_Def(unit, header, body_lines, plain, not in_function, compiled))
            _collect(node.body, unit + ".", found, aliases, in_function=True)
        elif isinstance(node, ast.ClassDef):
            _collect(node.body, prefix + node.name + ".", found, aliases, in_function)
        else:  # defs under if/try/with/for/match at this level keep this level's prefix
            blocks = [c for c in ast.iter_child_nodes(node) if isinstance(c, _BLOCKS)]
            _collect(blocks, prefix, found, aliases, in_function)


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
    them, or the head for a unit it adds), the units the head adds, or why it cannot say; the names other
    files may read that it changes (a public constant, a public compiled def, an __init__.py's imports)."""

    units: tuple[str, ...] = ()
    new: tuple[str, ...] = ()
    undecided: str = ""  # "" when the change was mapped to units
    exported: tuple[str, ...] = ()
    through: tuple[str, ...] = ()  # among `units`, those edited only as readers of a binding or launchers
    unbound: tuple[str, ...] = ()  # among `exported`, those the head no longer binds


def changed_units(
    base: str | None, head: str | None, hunks: Sequence[Hunk], *, package_init: bool = False
) -> UnitChange:
    """The units `hunks` edit in a file whose text is `base` at the base and `head` at the head (None: the
    file does not exist there: every unit of the other side is edited); `package_init`: the file is an
    __init__.py, whose imports other files read."""
    base_units = source_units(base) if base is not None else SourceUnits(())
    head_units = source_units(head) if head is not None else SourceUnits(())
    if isinstance(base_units, Unreadable):
        return UnitChange(undecided=f"it {base_units.why} at the base")
    if isinstance(head_units, Unreadable):
        return UnitChange(undecided=f"it {head_units.why} at the head")
    if base is None or head is None:  # added or removed: all of it
        side = head_units if base is None else base_units
        every = tuple(sorted(side.names))
        return UnitChange(every, every if base is None else ())
    free = head_units.free_functions(base_units)
    both = base_units.names & head_units.names  # a def one side lacks binds or unbinds a name: <module>
    edited: set[str] = set()
    direct: set[str] = set()
    exported: set[str] = set()
    for side, lines, own in (
        (base_units, [line for hunk in hunks for line in hunk.removed], both),
        (head_units, [line for hunk in hunks for line in hunk.added], both | free),
    ):
        mine, bindings = side.edits(lines, own)
        direct |= mine
        edited |= side.launched_through(mine | side.readers(name for found in bindings for name in found.names))
        exported |= _exported(bindings, package_init) | {
            unit for unit in side.compiled(edited) if _public(unit.rsplit(".", 1)[-1])
        }
    nested = {found.unit for found in head_units.defs if not found.at_import}  # their function's edit holds them
    new = {unit for unit in edited - base_units.names - nested if unit.split(".", 1)[0] not in free}
    through = edited - direct
    unbound = exported - head_units.top_level_names  # an import of it elsewhere now fails
    return UnitChange(
        tuple(sorted(edited)),
        tuple(sorted(new)),
        exported=tuple(sorted(exported)),
        through=tuple(sorted(through)),
        unbound=tuple(sorted(unbound)),
    )


def _exported(bindings: Iterable[_Binding], package_init: bool) -> set[str]:
    """The names `bindings` bind that other files may read: public assigned names and classes (a dunder is
    public), and an __init__.py's imports."""
    found: set[str] = set()
    for binding in bindings:
        if binding.imports:
            found |= binding.names if package_init else set()
        elif "__doc__" not in binding.names:
            found |= set(filter(_public, binding.names))
    return found


def _public(name: str) -> bool:
    """Whether other files may read the name: no leading underscore, or a dunder."""
    return not name.startswith("_") or name.endswith("__")
