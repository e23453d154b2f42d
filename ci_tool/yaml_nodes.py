"""Reading hand-written YAML with positions: compose with libyaml, then walk the nodes, recording problems.

Every value keeps its line and column, so each problem reads `file:line:col (yaml.path): expected ...,
found ... Hint: ...`. A reader collects every problem of a file instead of stopping at the first.
"""

from __future__ import annotations

from collections.abc import Callable

import yaml
import yaml.reader
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ci_tool.errors import CiToolError, Where, did_you_mean

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
TAG_PREFIX = "tag:yaml.org,2002:"
TRUE_WORDS = ("true", "yes", "on", "y")


def compose(text: str, *, file: str, error: type[CiToolError]) -> Node | None:
    """The document's node tree (None for an empty file); a syntax error raises `error` with its position."""
    try:
        return yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as problem:
        mark = problem.problem_mark
        where = Where(file, mark.line + 1, mark.column + 1) if mark else Where(file)
        raise error(f"expected valid YAML, found a syntax error: {problem.problem}", where=where) from None
    except yaml.reader.ReaderError as problem:
        found = f"character {chr(problem.character)!r}" if isinstance(problem.character, int) else "a bad byte"
        where = Where(file, text.count("\n", 0, problem.position) + 1)
        raise error(f"expected printable text, found {found}", where=where) from None
    except yaml.YAMLError as problem:
        raise error(f"expected valid YAML, found: {' '.join(str(problem).split())}", where=Where(file)) from None


def kind(node: Node) -> str:
    """The YAML type of a scalar: str, int, float, bool or null ('' for collections)."""
    return node.tag.removeprefix(TAG_PREFIX) if isinstance(node, ScalarNode) else ""


def describe(node: Node) -> str:
    """What a node is, for the `found ...` part of a message."""
    if isinstance(node, ScalarNode):
        return "nothing (null)" if kind(node) == "null" else repr(node.value)
    what = "a mapping" if isinstance(node, MappingNode) else "a list"
    return what.replace("a ", "an empty ", 1) if not node.value else what


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


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
        self, node: Node, path: str, what: str, allowed: tuple[str, ...] | None, hint: str | None = None
    ) -> dict[str, Node] | None:
        """The pairs of a mapping node (None, and a problem, for another node); reports duplicate,
        non-string and, when `allowed` is given, unknown keys with the closest allowed one."""
        if not isinstance(node, MappingNode):
            self.mismatch(node, path, what, hint)
            return None
        result: dict[str, Node] = {}
        for key_node, value in node.value:
            key = key_node.value if isinstance(key_node, ScalarNode) else None
            if key is None:
                self.problem(key_node, path, f"expected a plain key, found {describe(key_node)}")
            elif key in result:
                self.problem(key_node, join(path, key), f"expected each key once, found {key!r} again")
            elif allowed is not None and key not in allowed:
                hint = did_you_mean(key, allowed) or f"allowed keys are {', '.join(allowed)}"
                self.problem(
                    key_node, join(path, key), f"expected one of {', '.join(allowed)}, found key {key!r}", hint
                )
            else:
                result[key] = value
        return result

    def scalar(self, node: Node, path: str, kinds: tuple[str, ...], what: str, hint: str | None = None) -> str | None:
        """The text of a scalar whose YAML type is one of `kinds` (str, int, float, bool)."""
        if kind(node) in kinds:
            return str(node.value)
        self.mismatch(node, path, what, hint)
        return None

    def integer(self, node: Node, path: str, what: str, *, minimum: int) -> int | None:
        text = self.scalar(node, path, ("int",), what)
        if text is None:
            return None
        value = int(text.replace("_", ""), 0)
        if value < minimum:
            self.problem(node, path, f"expected {what}, found {value}")
            return None
        return value

    def boolean(self, node: Node, path: str) -> bool | None:
        text = self.scalar(node, path, ("bool",), "true or false")
        return None if text is None else text.lower() in TRUE_WORDS

    def strings(self, node: Node, path: str, what: str, check: Callable[[str], str | None]) -> tuple[str, ...]:
        """A non-empty list of strings; `check` returns what was expected of a bad one, or None."""
        if not isinstance(node, SequenceNode) or not node.value:
            self.mismatch(node, path, f"a non-empty list of {what}")
            return ()
        values = []
        for index, item in enumerate(node.value):
            text = self.scalar(item, f"{path}[{index}]", ("str",), f"one of {what}")
            expected = None if text is None else check(text)
            if expected:
                self.problem(item, f"{path}[{index}]", f"expected {expected}, found {text!r}")
            elif text is not None:
                values.append(text)
        return tuple(values)

    def raise_first(self) -> None:
        """Raise the first problem, its hint counting the others (`ci-tool` shows one line)."""
        if not self.problems:
            return
        first, more = self.problems[0], len(self.problems) - 1
        if more:
            first.hint = (first.hint + " " if first.hint else "") + f"({more} more problem(s) in {self.file})"
        raise first
