"""Read test-db YAML files into frozen values, validating every node where it is written.

Files are composed (not constructed) with libyaml so that every value keeps its line and column;
a problem is reported as `file:line:col (yaml.path): expected ..., found ...`. Unknown keys are
errors because a typo such as `wildcard:` would otherwise silently select every GPU.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ci_tool.errors import TestDbError, Where, did_you_mean
from ci_tool.testdb.lines import parse_test_line
from ci_tool.testdb.model import (
    BLOCK_KEYS,
    CONDITION_KEYS,
    FORMAT_VERSION,
    RANGE_KEYS,
    Block,
    Condition,
    Context,
    Entry,
    Range,
    TestDb,
)

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_TAG_STR = "tag:yaml.org,2002:str"
_TAG_INT = "tag:yaml.org,2002:int"
_TAG_BOOL = "tag:yaml.org,2002:bool"
_TAG_NULL = "tag:yaml.org,2002:null"
_KIND = {MappingNode: "a mapping", SequenceNode: "a list", ScalarNode: "a scalar"}


def yaml_files(root: Path) -> list[Path]:
    """The YAML files of a test-db folder, in a stable order."""
    return sorted([*root.glob("*.yml"), *root.glob("*.yaml")])


def load_test_db(root: str | Path) -> TestDb:
    """Load and validate a test-db folder; raise the first problem found."""
    db, problems = read_test_db(root)
    if problems:
        first = problems[0]
        if len(problems) > 1:
            first.hint = (first.hint + " " if first.hint else "") + (
                f"({len(problems) - 1} more problem(s); `ci-tool testdb check` lists them all)"
            )
        raise first
    return db


def read_test_db(root: str | Path) -> tuple[TestDb, list[TestDbError]]:
    """Load a test-db folder, keeping every valid context and collecting every problem."""
    folder = Path(root)
    if not folder.is_dir():
        raise TestDbError(
            f"expected a test-db folder, found {'a file' if folder.exists() else 'nothing'} at {str(folder)!r}",
            hint="pass the folder holding the *.yml lists with --test-db DIR",
        )
    contexts: dict[str, Context] = {}
    problems: list[TestDbError] = []
    for path in yaml_files(folder):
        file_contexts, file_problems = read_test_db_file(path)
        problems.extend(file_problems)
        for context in file_contexts:
            earlier = contexts.get(context.name)
            if earlier is not None:
                problems.append(
                    TestDbError(
                        f"expected each context name once across the test-db, found {context.name!r} "
                        f"again (first defined at {earlier.where})",
                        where=context.where,
                        hint="context names are global: rename one of them",
                    )
                )
                continue
            contexts[context.name] = context
    return TestDb(root=str(folder), contexts=contexts), problems


def read_test_db_file(path: Path) -> tuple[list[Context], list[TestDbError]]:
    """Read one YAML file into its contexts, collecting problems instead of stopping at the first."""
    reader = _FileReader(str(path))
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "it is not UTF-8 text"
        return [], [TestDbError(f"cannot read the test-db file: {reason}", where=Where(str(path)))]
    try:
        document = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = Where(str(path), mark.line + 1, mark.column + 1) if mark else Where(str(path))
        return [], [TestDbError(f"expected valid YAML, found a syntax error: {error.problem}", where=where)]
    except yaml.YAMLError as error:
        return [], [TestDbError(f"expected valid YAML, found: {error}", where=Where(str(path)))]
    contexts = reader.read_document(document)
    return contexts, reader.problems


class _FileReader:
    """Walks one composed YAML document; every `_read_*` method validates one kind of node."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[TestDbError] = []

    def where(self, node: Node, yaml_path: str | None = None) -> Where:
        mark = node.start_mark
        return Where(self.file, mark.line + 1, mark.column + 1, yaml_path)

    def problem(self, node: Node, yaml_path: str | None, message: str, hint: str | None = None) -> None:
        self.problems.append(TestDbError(message, where=self.where(node, yaml_path), hint=hint))

    def mismatch(self, node: Node, yaml_path: str, what: str, hint: str | None = None) -> None:
        """Report a node of the wrong kind."""
        self.problem(node, yaml_path, f"expected {what}, found {_describe(node)}", hint)

    def pairs(self, node: MappingNode, yaml_path: str, allowed: tuple[str, ...] | None) -> list[tuple[str, Node]]:
        """The (key, value) pairs of a mapping; reports duplicate, non-string and (if given) unknown keys."""
        seen: set[str] = set()
        result: list[tuple[str, Node]] = []
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, ScalarNode) else None
            key_path = _join(yaml_path, str(key))
            if key is None:
                self.problem(key_node, yaml_path, f"expected a plain key, found {_describe(key_node)}")
            elif key in seen:
                self.problem(key_node, key_path, f"expected each key once, found {key!r} again")
            elif allowed is not None and key not in allowed:
                hint = did_you_mean(key, allowed) or f"allowed keys are {', '.join(allowed)}"
                self.problem(key_node, key_path, f"expected one of {', '.join(allowed)}, found key {key!r}", hint)
            else:
                seen.add(key)
                result.append((key, value_node))
        return result

    def read_document(self, document: Node | None) -> list[Context]:
        if document is None:
            self.problems.append(
                TestDbError(
                    f"expected `version: {FORMAT_VERSION}` and contexts, found an empty file", where=Where(self.file)
                )
            )
            return []
        if not isinstance(document, MappingNode):
            self.mismatch(document, "", "a mapping of `version` and contexts")
            return []
        contexts: list[Context] = []
        version_seen = False
        for key, value in self.pairs(document, "", None):
            if key == "version":
                version_seen = True
                if not (isinstance(value, ScalarNode) and value.value == FORMAT_VERSION):
                    self.problem(value, "version", f"expected version {FORMAT_VERSION!r}, found {_describe(value)}")
            else:
                context = self.read_context(key, value)
                if context is not None:
                    contexts.append(context)
        if not version_seen:
            self.problem(
                document,
                None,
                f"expected a top-level `version: {FORMAT_VERSION}`, found none",
                hint=f"add `version: {FORMAT_VERSION}` as the first line",
            )
        return contexts

    def read_context(self, name: str, node: Node) -> Context | None:
        if not isinstance(node, SequenceNode):
            self.mismatch(node, name, "a list of blocks (- condition: ... tests: ...)")
            return None
        blocks = []
        for index, block_node in enumerate(node.value):
            block = self.read_block(name, index, block_node)
            if block is not None:
                blocks.append(block)
        return Context(name=name, file=self.file, blocks=tuple(blocks), where=self.where(node, name))

    def read_block(self, context: str, index: int, node: Node) -> Block | None:
        path = f"{context}[{index}]"
        if not isinstance(node, MappingNode):
            self.mismatch(node, path, "a block mapping with `condition` and `tests`")
            return None
        fields = dict(self.pairs(node, path, BLOCK_KEYS))
        if "tests" not in fields:
            self.problem(node, path, "expected a `tests` list in the block, found none")
            return None
        condition_node = fields.get("condition")
        condition = (
            self.read_condition(condition_node, _join(path, "condition"))
            if condition_node is not None
            else Condition({}, {}, {})
        )
        entries = self.read_tests(fields["tests"], _join(path, "tests"))
        return Block(context, index, condition, entries, self.where(node, path))

    def read_condition(self, node: Node, path: str) -> Condition:
        if _is_null(node):
            return Condition({}, {}, {})
        if not isinstance(node, MappingNode):
            self.mismatch(node, path, "a mapping of terms, ranges and wildcards")
            return Condition({}, {}, {})
        parts = dict(self.pairs(node, path, CONDITION_KEYS))
        return Condition(
            terms=self.read_terms(parts["terms"], _join(path, "terms")) if "terms" in parts else {},
            ranges=self.read_ranges(parts["ranges"], _join(path, "ranges")) if "ranges" in parts else {},
            wildcards=self.read_wildcards(parts["wildcards"], _join(path, "wildcards")) if "wildcards" in parts else {},
        )

    def read_terms(self, node: Node, path: str) -> dict[str, str]:
        if _is_null(node):
            return {}
        if not isinstance(node, MappingNode):
            self.mismatch(node, path, "a mapping of key: value terms")
            return {}
        terms = {}
        for key, value in self.pairs(node, path, None):
            if isinstance(value, ScalarNode) and value.tag != _TAG_NULL:
                terms[key] = _term_value(value)
            else:
                self.problem(value, _join(path, key), f"expected a string, number or boolean, found {_describe(value)}")
        return terms

    def read_ranges(self, node: Node, path: str) -> dict[str, Range]:
        if _is_null(node):
            return {}
        if not isinstance(node, MappingNode):
            self.mismatch(node, path, "a mapping of key: {gte, lte} ranges")
            return {}
        ranges = {}
        for key, value in self.pairs(node, path, None):
            key_path = _join(path, key)
            if not isinstance(value, MappingNode):
                self.mismatch(
                    value, key_path, "a mapping with gte and/or lte", hint=f"write e.g. `{key}: {{gte: 1, lte: 1}}`"
                )
                continue
            bounds: dict[str, int] = {}
            for bound, bound_node in self.pairs(value, key_path, RANGE_KEYS):
                if isinstance(bound_node, ScalarNode) and bound_node.tag == _TAG_INT:
                    bounds[bound] = int(bound_node.value.replace("_", ""), 0)
                else:
                    self.problem(
                        bound_node,
                        _join(key_path, bound),
                        f"expected an integer, found {_describe(bound_node)}",
                        hint="range bounds are whole numbers, e.g. gte: 4",
                    )
            gte, lte = bounds.get("gte"), bounds.get("lte")
            if gte is not None and lte is not None and gte > lte:
                self.problem(value, key_path, f"expected gte <= lte, found gte {gte} > lte {lte}")
                continue
            ranges[key] = Range(gte, lte)
        return ranges

    def read_wildcards(self, node: Node, path: str) -> dict[str, tuple[str, ...]]:
        if _is_null(node):
            return {}
        if not isinstance(node, MappingNode):
            self.mismatch(node, path, "a mapping of key: pattern(s)")
            return {}
        wildcards: dict[str, tuple[str, ...]] = {}
        for key, value in self.pairs(node, path, None):
            key_path = _join(path, key)
            if isinstance(value, ScalarNode) and value.tag != _TAG_NULL:
                wildcards[key] = (value.value,)
            elif isinstance(value, SequenceNode) and value.value:
                patterns = []
                for index, item in enumerate(value.value):
                    if isinstance(item, ScalarNode) and item.tag != _TAG_NULL:
                        patterns.append(item.value)
                    else:
                        self.problem(
                            item, f"{key_path}[{index}]", f"expected a pattern string, found {_describe(item)}"
                        )
                wildcards[key] = tuple(patterns)
            else:
                self.problem(
                    value, key_path, f"expected a pattern or a non-empty list of patterns, found {_describe(value)}"
                )
        return wildcards

    def read_tests(self, node: Node, path: str) -> tuple[Entry, ...]:
        if _is_null(node):
            return ()
        if not isinstance(node, SequenceNode):
            self.mismatch(node, path, "a list of test lines")
            return ()
        entries = []
        for index, item in enumerate(node.value):
            item_path = f"{path}[{index}]"
            if not isinstance(item, ScalarNode) or item.tag not in (_TAG_STR, _TAG_INT):
                hint = (
                    "quote the line: a ': ' inside an unquoted line makes YAML read a mapping"
                    if isinstance(item, MappingNode)
                    else None
                )
                self.problem(item, item_path, f"expected a test line string, found {_describe(item)}", hint)
                continue
            where = self.where(item, item_path)
            try:
                entries.append(Entry(parse_test_line(item.value, where), where))
            except TestDbError as error:
                self.problems.append(error)
        return tuple(entries)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _is_null(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.tag == _TAG_NULL


def _term_value(node: ScalarNode) -> str:
    if node.tag == _TAG_BOOL:
        return "true" if node.value.lower() in ("true", "yes", "on", "y") else "false"
    return str(node.value)


def _describe(node: Node) -> str:
    if isinstance(node, ScalarNode):
        return "nothing (null)" if node.tag == _TAG_NULL else repr(node.value)
    kind = _KIND.get(type(node), type(node).__name__)
    return kind.replace("a ", "an empty ", 1) if not node.value else kind
