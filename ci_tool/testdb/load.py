"""Read test-db YAML files into frozen values, validating every node where it is written.

Files are composed (not constructed) with libyaml so that every value keeps its line and column;
a problem is reported as `file:line:col (yaml.path): expected ..., found ...`. Unknown keys are
errors because a typo such as `wildcard:` would otherwise silently select every GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import cast

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from ci_tool.errors import TestDbError, Where, raise_all
from ci_tool.testdb.lines import parse_test_line
from ci_tool.testdb.model import (
    FORMAT_VERSION,
    Block,
    Condition,
    Context,
    Entry,
    Range,
    TestDb,
)
from ci_tool.text_file import read_text
from ci_tool.yaml_fields import Field, integer, keys_of, read_fields
from ci_tool.yaml_nodes import INT_MAX, NodeKind, NodeReader, bool_value, compose, describe, join, kind

_NO_CONDITION = Condition({}, {}, {})


def yaml_files(root: Path) -> list[Path]:
    """The YAML files of a test-db folder, in a stable order."""
    return sorted([*root.glob("*.yml"), *root.glob("*.yaml")])


def load_test_db(root: str | Path, *, texts: Mapping[str, str | None] | None = None) -> TestDb:
    """Load and validate a test-db folder; raise every problem found at once (errors.raise_all). `texts`: file
    name -> the text to read instead of the folder's file (None: as if it were gone), e.g. a pull request's
    lists at its head."""
    db, problems = read_test_db(root, texts=texts)
    raise_all(problems, str(root))
    return db


def read_test_db(
    root: str | Path, *, texts: Mapping[str, str | None] | None = None
) -> tuple[TestDb, list[TestDbError]]:
    """Load a test-db folder (with `texts` in place of its files, as load_test_db says), keeping every valid
    context and collecting every problem."""
    folder = Path(root)
    if not folder.is_dir():
        raise TestDbError(
            f"expected a test-db folder, found {'a file' if folder.exists() else 'nothing'} at {str(folder)!r}",
            hint="pass the folder holding the *.yml lists with --test-db DIR",
        )
    contexts: dict[str, Context] = {}
    problems: list[TestDbError] = []
    instead = dict(texts or {})
    names = sorted({path.name for path in yaml_files(folder)} | {name for name, text in instead.items() if text})
    for path in (folder / name for name in names):
        if path.name in instead:
            text = instead[path.name]
            if text is None:
                continue
            file_contexts, file_problems = parse_test_db_file(text, str(path))
        else:
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
    try:
        text = read_text(path, name="the test-db file", error=TestDbError)
    except TestDbError as error:
        return [], [error]
    return parse_test_db_file(text, str(path))


def parse_test_db_file(text: str, file: str) -> tuple[list[Context], list[TestDbError]]:
    """One test-db file's text (as read from `file`, or from a revision of it) into its contexts."""
    try:
        document = compose(text, file=file, error=TestDbError)
    except TestDbError as error:
        return [], [error]
    reader = _FileReader(file)
    contexts = reader.read_document(document)
    return contexts, cast(list[TestDbError], reader.problems)


class _FileReader(NodeReader):
    """Walks one composed YAML document; every `read_*` method validates one kind of node."""

    def __init__(self, file: str) -> None:
        super().__init__(file, TestDbError)

    def read_document(self, document: Node | None) -> list[Context]:
        if document is None:
            self.problems.append(
                TestDbError(
                    f"expected `version: {FORMAT_VERSION}` and contexts, found an empty file", where=Where(self.file)
                )
            )
            return []
        fields = self.mapping(document, "", "a mapping of `version` and contexts", None)
        if fields is None:
            return []
        contexts: list[Context] = []
        for key, value in fields.items():
            if key == "version":
                if not (isinstance(value, ScalarNode) and value.value == FORMAT_VERSION):
                    self.problem(value, "version", f"expected version {FORMAT_VERSION!r}, found {describe(value)}")
            else:
                context = self.read_context(key, value)
                if context is not None:
                    contexts.append(context)
        if "version" not in fields:
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
        found = read_fields(
            self,
            node,
            path,
            "a block mapping with `condition` and `tests`",
            _BLOCK_FIELDS,
            missing=lambda spec: ("expected a `tests` list in the block, found none", None),
        )
        if found is None or "tests" not in found.values:
            return None
        condition = found.values.get("condition", _NO_CONDITION)
        entries = found.values["tests"]
        return Block(context, index, condition, entries, self.where(node, path))  # type: ignore[arg-type]


def _read_condition(reader: NodeReader, node: Node, path: str) -> Condition:
    if kind(node) is NodeKind.NULL:
        return _NO_CONDITION
    found = read_fields(reader, node, path, "a mapping of terms, ranges and wildcards", _CONDITION_FIELDS)
    if found is None:
        return _NO_CONDITION
    return Condition(**{key: found.values.get(key, {}) for key in CONDITION_KEYS})  # type: ignore[arg-type]


def _read_terms(reader: NodeReader, node: Node, path: str) -> dict[str, str]:
    fields = {} if kind(node) is NodeKind.NULL else reader.mapping(node, path, "a mapping of key: value terms", None)
    terms = {}
    for key, value in (fields or {}).items():
        if kind(value) in (NodeKind.STR, NodeKind.INT, NodeKind.FLOAT, NodeKind.BOOL):
            terms[key] = _term_value(value)
        else:
            reader.mismatch(value, join(path, key), "a string, number or boolean")
    return terms


def _read_ranges(reader: NodeReader, node: Node, path: str) -> dict[str, Range]:
    what = "a mapping of key: {gte, lte} ranges"
    fields = {} if kind(node) is NodeKind.NULL else reader.mapping(node, path, what, None)
    ranges = {}
    for key, value in (fields or {}).items():
        key_path = join(path, key)
        hint = f"write e.g. `{key}: {{gte: 1, lte: 1}}`"
        found = read_fields(reader, value, key_path, "a mapping with gte and/or lte", _RANGE_FIELDS, hint=hint)
        if found is None:
            continue
        gte, lte = found.values.get("gte"), found.values.get("lte")
        assert (gte is None or isinstance(gte, int)) and (lte is None or isinstance(lte, int))  # _BOUND read them
        if gte is not None and lte is not None and gte > lte:
            reader.problem(value, key_path, f"expected gte <= lte, found gte {gte} > lte {lte}")
            continue
        ranges[key] = Range(gte, lte)
    return ranges


def _read_wildcards(reader: NodeReader, node: Node, path: str) -> dict[str, tuple[str, ...]]:
    fields = {} if kind(node) is NodeKind.NULL else reader.mapping(node, path, "a mapping of key: pattern(s)", None)
    wildcards: dict[str, tuple[str, ...]] = {}
    for key, value in (fields or {}).items():
        key_path = join(path, key)
        if isinstance(value, ScalarNode) and kind(value) is not NodeKind.NULL:
            wildcards[key] = (value.value,)
        elif isinstance(value, SequenceNode) and value.value:
            patterns = []
            for index, item in enumerate(value.value):
                if isinstance(item, ScalarNode) and kind(item) is not NodeKind.NULL:
                    patterns.append(item.value)
                else:
                    reader.mismatch(item, f"{key_path}[{index}]", "a pattern string")
            wildcards[key] = tuple(patterns)
        else:
            reader.mismatch(value, key_path, "a pattern or a non-empty list of patterns")
    return wildcards


def _read_tests(reader: NodeReader, node: Node, path: str) -> tuple[Entry, ...]:
    if kind(node) is NodeKind.NULL:
        return ()
    if not isinstance(node, SequenceNode):
        reader.mismatch(node, path, "a list of test lines")
        return ()
    entries = []
    for index, item in enumerate(node.value):
        item_path = f"{path}[{index}]"
        if kind(item) not in (NodeKind.STR, NodeKind.INT):
            hint = (
                "quote the line: a ': ' inside an unquoted line makes YAML read a mapping"
                if isinstance(item, MappingNode)
                else None
            )
            reader.mismatch(item, item_path, "a test line string", hint)
            continue
        where = reader.where(item, item_path)
        try:
            entries.append(Entry(parse_test_line(item.value, where), where))
        except TestDbError as error:
            reader.problems.append(error)
    return tuple(entries)


def _term_value(node: Node) -> str:
    value = bool_value(str(node.value)) if kind(node) is NodeKind.BOOL else None
    return str(node.value) if value is None else "true" if value else "false"


_BOUND = integer("an integer", minimum=-INT_MAX - 1, hint="range bounds are whole numbers, e.g. gte: 4")
_RANGE_FIELDS = (Field("gte", _BOUND), Field("lte", _BOUND))
_CONDITION_FIELDS = (Field("terms", _read_terms), Field("ranges", _read_ranges), Field("wildcards", _read_wildcards))
_BLOCK_FIELDS = (Field("condition", _read_condition), Field("tests", _read_tests, required=True))
BLOCK_KEYS, CONDITION_KEYS, RANGE_KEYS = keys_of(_BLOCK_FIELDS), keys_of(_CONDITION_FIELDS), keys_of(_RANGE_FIELDS)
