"""Reading hand-written YAML with positions: compose with libyaml, then walk the nodes, recording problems.

Every value keeps its line and column, so each problem reads `file:line:col (yaml.path): expected ...,
found ... Hint: ...`. A reader collects every problem of a file instead of stopping at the first.

Numbers are read here and nowhere else (`int_value`, `float_value`, `NodeReader.integer/number`). They mean
what YAML 1.1 (libyaml's resolver) says, except for forms that read differently elsewhere or hold more
than a program can: `07` (octal in YAML 1.1, decimal in YAML 1.2 and to people), `1:30` (base 60, 90),
integers beyond 64 bits, and `.inf`, `.nan` or `1.0e+400` (not finite). Those are refused with a hint.

Aliases cost every reader at most what `_walk_problem` allows, whatever their graph: an alias inside the
node its anchor names (`&a [*a]`, which no walk leaves), aliases that repeat more than MAX_ALIAS_REPEATS
nodes and characters (billion laughs, merge keys `<<` taking a mapping twice per level) and nesting deeper
than MAX_DEPTH once aliases are expanded are refused at compose time, at the node where they show.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable

import yaml
import yaml.reader
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ci_tool.errors import CiToolError, Where, did_you_mean, raise_all, shown
from ci_tool.text_file import unprintable

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
TAG_PREFIX = "tag:yaml.org,2002:"
TRUE_WORDS = ("true", "yes", "on", "y")
FALSE_WORDS = ("false", "no", "off", "n")
INT_MAX = 2**63 - 1  # the largest integer SQLite, JSON readers and most tools hold
MAX_DEPTH = 1000  # libyaml's own limit; the pure-Python loader recurses instead
MAX_ALIAS_REPEATS = 1_000_000  # nodes and characters that aliases may repeat in one document, in all
_TOO_DEEP = f"expected YAML nested at most {MAX_DEPTH} deep, found deeper nesting"
_RECURSIVE_ALIAS = "expected an alias outside the node its anchor names, found an alias inside it"
_RECURSIVE_ALIAS_HINT = "a node that holds an alias to itself never ends: move the alias out of the anchored node"
_TOO_MANY_REPEATS = f"expected aliases that repeat at most {MAX_ALIAS_REPEATS} nodes and characters, found more"
_TOO_MANY_REPEATS_HINT = "each alias repeats all of its anchor's node: write the repeated part out, or alias less"
_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"
_NESTING_STARTS: tuple[type[yaml.Token], ...] = (yaml.BlockSequenceStartToken, yaml.BlockMappingStartToken)
_NESTING_STARTS += (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken)
_NESTING_ENDS = (yaml.BlockEndToken, yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken)


def compose(text: str, *, file: str, error: type[CiToolError]) -> Node | None:
    """The document's node tree (None for an empty file); a syntax error raises `error` with its position.

    Errors read the same whichever loader this machine's PyYAML has: a syntax error is worded by the
    pure-Python loader (libyaml, when present, only finds it fast), and nesting deeper than MAX_DEPTH is
    ci-tool's own error (libyaml refuses it, the pure-Python loader recurses or, on a newer Python, composes
    it)."""
    try:
        document = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as problem:
        if problem.problem == _LIBYAML_TOO_DEEP:
            raise _too_deep_error(text, file, error) from None
        problem = _pure_python_problem(text) or problem  # the same words whether or not PyYAML has libyaml
        mark = problem.problem_mark
        where = Where(file, mark.line + 1, mark.column + 1) if mark else Where(file)
        raise error(f"expected valid YAML, found a syntax error: {problem.problem}", where=where) from None
    except yaml.reader.ReaderError as problem:
        found = f"character {chr(problem.character)!r}" if isinstance(problem.character, int) else "a bad byte"
        where = Where(file, text.count("\n", 0, problem.position) + 1)
        raise error(f"expected printable text, found {found}", where=where) from None
    except yaml.YAMLError as problem:
        raise error(f"expected valid YAML, found: {' '.join(str(problem).split())}", where=Where(file)) from None
    except RecursionError:  # the pure-Python loader composes recursively
        raise _too_deep_error(text, file, error) from None
    except UnicodeEncodeError as problem:  # libyaml encodes the text: a lone surrogate cannot be
        raise error(
            f"expected printable text, found character {problem.object[problem.start]!r}",
            where=Where(file, text.count("\n", 0, problem.start) + 1),
        ) from None
    too_costly = None if document is None else _walk_problem(document)
    if too_costly is not None:
        message, node, hint = too_costly
        raise error(message, where=Where(file, node.start_mark.line + 1, node.start_mark.column + 1), hint=hint)
    return document


def _pure_python_problem(text: str) -> yaml.MarkedYAMLError | None:
    """The syntax error PyYAML's pure-Python loader finds in `text` (None when it finds none, or when it
    recurses too deep): libyaml words the same problem differently, so messages come from this one."""
    if _Loader is yaml.SafeLoader:
        return None
    try:
        yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as problem:
        return problem
    except (yaml.YAMLError, RecursionError):
        return None
    return None


def _walk_problem(root: Node) -> tuple[str, Node, str | None] | None:
    """What makes walking `root` too costly, and the node where it shows: (message, node, hint), or None.

    An alias is the very node its anchor names, so a walk that follows aliases can repeat a node any
    number of times (`&a [*a]` forever, ten aliases of ten aliases of ... exponentially). Here each distinct
    node is visited once, in document order, and remembers what walking it costs (its nodes and characters,
    aliases expanded) and how deep it nests: a node met again is an alias, and what it repeats counts
    against MAX_ALIAS_REPEATS. A document accepted costs any walk over it at most its text's own size plus
    MAX_ALIAS_REPEATS, and nests at most MAX_DEPTH deep, whatever its aliases."""
    weight: dict[int, int] = {}  # id(node) -> its nodes and characters, aliases expanded
    depth: dict[int, int] = {}  # id(node) -> how many collections deep it nests, aliases expanded
    on_path: set[int] = {id(root)}
    stack: list[tuple[Node, list[Node]]] = [(root, _children(root))]  # the path: collections (and one leaf)
    repeated = 0
    while stack:
        node, pending = stack[-1]
        if not pending:
            stack.pop()
            on_path.discard(id(node))
            children = _children(node)
            weight[id(node)] = _weight(node) + sum(weight[id(child)] for child in children)
            nested = max((depth[id(child)] for child in children), default=0)
            depth[id(node)] = 0 if isinstance(node, ScalarNode) else 1 + nested
            continue
        child = pending.pop()
        if id(child) in on_path:
            return _RECURSIVE_ALIAS, child, _RECURSIVE_ALIAS_HINT
        if id(child) in weight:  # met before: an alias
            repeated += weight[id(child)]
            if repeated > MAX_ALIAS_REPEATS:
                return _TOO_MANY_REPEATS, node, _TOO_MANY_REPEATS_HINT
            if len(stack) + depth[id(child)] > MAX_DEPTH:
                return _TOO_DEEP, node, None
            continue
        if not isinstance(child, ScalarNode) and len(stack) + 1 > MAX_DEPTH:
            return _TOO_DEEP, child, None
        on_path.add(id(child))
        stack.append((child, _children(child)))
    return None


def _children(node: Node) -> list[Node]:
    """A collection's nodes in reverse document order (a stack pops them in order); none for a scalar."""
    if isinstance(node, SequenceNode):
        return node.value[::-1]
    if isinstance(node, MappingNode):
        return [item for pair in node.value for item in pair][::-1]
    return []


def _weight(node: Node) -> int:
    """What walking one node costs on its own: one, plus a scalar's characters (a reader may copy them)."""
    return 1 + len(node.value) if isinstance(node, ScalarNode) else 1


def _too_deep_error(text: str, file: str, error: type[CiToolError]) -> CiToolError:
    return error(_TOO_DEEP, where=_too_deep(text, file))


def _too_deep(text: str, file: str) -> Where:
    """Where the nesting of `text` first goes past MAX_DEPTH (the scanner does not recurse)."""
    depth = 0
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            depth += isinstance(token, _NESTING_STARTS) - isinstance(token, _NESTING_ENDS)
            if depth > MAX_DEPTH:
                return Where(file, token.start_mark.line + 1, token.start_mark.column + 1)
    except yaml.YAMLError:
        pass
    return Where(file)


class NodeKind(enum.Enum):
    """The YAML type of a node: a scalar's as libyaml's resolver (or an explicit `!!tag`) gives it."""

    STR = "str"
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    NULL = "null"
    OTHER_SCALAR = "other scalar"  # a date (`2024-01-01` is a timestamp), `!!binary`, a tag of the writer's own
    MAPPING = "mapping"
    SEQUENCE = "sequence"


_TAGGED = (NodeKind.STR, NodeKind.INT, NodeKind.FLOAT, NodeKind.BOOL, NodeKind.NULL)  # the kinds a core tag names
_SCALAR_TAGS = {TAG_PREFIX + named.value: named for named in _TAGGED}  # `tag:yaml.org,2002:int` -> INT


def kind(node: Node) -> NodeKind:
    """The YAML type of `node`."""
    if isinstance(node, MappingNode):
        return NodeKind.MAPPING
    if isinstance(node, SequenceNode):
        return NodeKind.SEQUENCE
    return _SCALAR_TAGS.get(node.tag, NodeKind.OTHER_SCALAR)


def describe(node: Node) -> str:
    """What a node is, for the `found ...` part of a message."""
    if isinstance(node, ScalarNode):
        return "nothing (null)" if kind(node) is NodeKind.NULL else shown(str(node.value))
    what = "a mapping" if isinstance(node, MappingNode) else "a list"
    return what.replace("a ", "an empty ", 1) if not node.value else what


def bool_value(text: str) -> bool | None:
    """The value of a YAML bool scalar; None for another word (`!!bool maybe`)."""
    word = text.lower()
    return True if word in TRUE_WORDS else False if word in FALSE_WORDS else None


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def int_value(text: str) -> int | str:
    """The value of a YAML int scalar (`4`, `-3`, `1_000`, `0x1F`, `0b101`), or the hint that says why its
    form is refused ('' when there is nothing more to say, e.g. `!!int x`)."""
    body = text.replace("_", "")
    digits = body.removeprefix("-").removeprefix("+")
    if ":" in digits:
        return f"YAML 1.1 reads {shown(text)} as a base-60 number (1:30 is 90): write the whole number"
    if len(digits) > 1 and digits[0] == "0" and digits[1] not in "xb":
        return "YAML 1.1 reads a leading 0 as octal and YAML 1.2 as decimal: drop the leading zeros"
    if len(digits) > len(str(INT_MAX)) + 2:  # more digits than any 64-bit integer (a 0x prefix counted)
        return f"that is more than {len(str(INT_MAX))} digits: the largest whole number read is {INT_MAX}"
    try:
        return int(body, 0) if body.isascii() else ""  # int() also reads Arabic-Indic and other digits
    except ValueError:  # `!!int x`
        return ""


def float_value(text: str) -> float | str:
    """The value of a YAML float scalar (`1.5`, `.5`, `1_000.5`, `1.0e+3`), or the hint that says why it is
    refused: base 60 (`1:30.5`), and anything not finite (`.inf`, `.nan`, `1.0e+400`)."""
    body = text.replace("_", "")
    if ":" in body:
        return f"YAML 1.1 reads {shown(text)} as a base-60 number: write the number itself"
    try:
        value = float(body) if body.isascii() else None  # float() also reads Arabic-Indic and other digits
    except ValueError:
        value = math.nan if body.lower().lstrip("+-") in (".inf", ".nan") else None  # YAML's spellings
    if value is None:  # `!!float x`
        return ""
    if not math.isfinite(value):
        return "write a finite number, at most about 1.8e308"
    return value


class NodeReader:
    """Typed access to composed nodes; every mismatch becomes one `error` in `problems`."""

    def __init__(self, file: str, error: type[CiToolError]) -> None:
        self.file = file
        self.error = error
        self.problems: list[CiToolError] = []

    def where(self, node: Node, path: str | None) -> Where:
        mark = node.start_mark
        return Where(self.file, mark.line + 1, mark.column + 1, path or None)

    def problem(self, node: Node, path: str | None, message: str, hint: str | None = None) -> None:
        self.problems.append(self.error(message, where=self.where(node, path), hint=hint))

    def mismatch(self, node: Node, path: str | None, what: str, hint: str | None = None) -> None:
        """Report a node that is not `what`."""
        self.problem(node, path, f"expected {what}, found {describe(node)}", hint)

    def mapping(
        self,
        node: Node,
        path: str,
        what: str,
        allowed: tuple[str, ...] | None,
        hint: str | None = None,
        *,
        repeated_hint: str | None = None,
    ) -> dict[str, Node] | None:
        """The pairs of a mapping node (None, and a problem with `hint`, for another node); reports duplicate
        (with `repeated_hint`), non-string and, when `allowed` is given, unknown keys with the closest allowed
        one."""
        if not isinstance(node, MappingNode):
            self.mismatch(node, path, what, hint)
            return None
        result: dict[str, Node] = {}
        for key_node, value in node.value:
            key = key_node.value if isinstance(key_node, ScalarNode) else None
            if key is None:
                self.problem(key_node, path, f"expected a plain key, found {describe(key_node)}")
            elif key in result:
                message = f"expected each key once, found {key!r} again"
                self.problem(key_node, join(path, key), message, repeated_hint)
            elif allowed is not None and key not in allowed:
                hint = did_you_mean(key, allowed) or f"allowed keys are {', '.join(allowed)}"
                self.problem(
                    key_node, join(path, key), f"expected one of {', '.join(allowed)}, found key {key!r}", hint
                )
            else:
                result[key] = value
        return result

    def scalar(
        self, node: Node, path: str, kinds: tuple[NodeKind, ...], what: str, hint: str | None = None
    ) -> str | None:
        """The text of a scalar whose YAML type is one of `kinds`."""
        if kind(node) not in kinds:
            self.mismatch(node, path, what, hint)
            return None
        text = str(node.value)
        character = unprintable(text)
        if character is not None:
            self.mismatch(node, path, what, f"it holds the invisible character {character}: delete it")
            return None
        return text

    def integer(
        self, node: Node, path: str, what: str, *, minimum: int, maximum: int = INT_MAX, hint: str | None = None
    ) -> int | None:
        """A whole number from `minimum` to `maximum` (see int_value for the forms refused)."""
        text = self.scalar(node, path, (NodeKind.INT,), what, hint)
        if text is None:
            return None
        value = int_value(text)
        if isinstance(value, str):
            self.mismatch(node, path, what, value or hint)
            return None
        if value < minimum:
            self.problem(node, path, f"expected {what}, found {value}")
            return None
        if value > maximum:
            self.problem(node, path, f"expected {what}, found {value}", f"the largest accepted is {maximum}")
            return None
        return value

    def number(self, node: Node, path: str, what: str, hint: str | None = None) -> float | None:
        """A finite int or float (see int_value and float_value for the forms refused)."""
        text = self.scalar(node, path, (NodeKind.INT, NodeKind.FLOAT), what, hint)
        if text is None:
            return None
        value = int_value(text) if kind(node) is NodeKind.INT else float_value(text)
        if isinstance(value, str):
            self.mismatch(node, path, what, value or hint)
            return None
        return float(value)

    def boolean(self, node: Node, path: str) -> bool | None:
        text = self.scalar(node, path, (NodeKind.BOOL,), "true or false")
        value = None if text is None else bool_value(text)
        if text is not None and value is None:
            self.mismatch(node, path, "true or false")
        return value

    def strings(self, node: Node, path: str, what: str, check: Callable[[str], str | None]) -> tuple[str, ...]:
        """A non-empty list of strings; `check` returns what was expected of a bad one, or None."""
        if not isinstance(node, SequenceNode) or not node.value:
            self.mismatch(node, path, f"a non-empty list of {what}")
            return ()
        values = []
        for index, item in enumerate(node.value):
            text = self.scalar(item, f"{path}[{index}]", (NodeKind.STR,), f"one of {what}")
            expected = None if text is None else check(text)
            if expected:
                self.problem(item, f"{path}[{index}]", f"expected {expected}, found {text!r}")
            elif text is not None:
                values.append(text)
        return tuple(values)

    def raise_all(self) -> None:
        """Raise every problem found (errors.raise_all)."""
        raise_all(self.problems, self.file)
