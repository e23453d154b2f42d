"""Reading a YAML mapping against a field table: one declaration per key says how its value is read, whether it
is required, an example for the hint, and the rule its value must follow.

    FIELDS = (
        Field("name", text("a name"), required=True, example="pool4g"),
        Field("max_batch_size", integer("an integer >= 1", minimum=1), required=True, example="256"),
        Field("max_num_tokens", integer("an integer >= 1", minimum=1), nullable=True),
    )
    found = read_fields(reader, node, "server_configs[0]", "a server config mapping", FIELDS)
    found.values["max_batch_size"]      # each key written and read without a problem, by key
    found.nodes["max_batch_size"]       # the node it was written as, for problems found later
    found.complete                      # every required key written, every value read

What `read_fields` reports, each a problem on the reader (`file:line:col (yaml.path): expected ..., found ...`
and a Hint; NodeReader collects every problem of a file): a node that is not a mapping, duplicate and
unknown keys (did-you-mean from the table's keys), a required key not written (`missing` words it; by
default `expected the key 'k', found none Hint: add `k: example``), and each value that its reader refuses.
`check_fields` then runs each written field's rule over every value read, once all of them read.

The catalog (stages/catalog_schema.py), the perf-sanity configs (perf/config.py), the test-db's blocks
(testdb/load.py) and the bot's allowlist (bot/authorize.py) read their mappings this way; what a reader
knows only across mappings (a name given twice, a concurrency above its server's batch size) stays in that
reader, after the table read.

Why ours and not a library: pydantic and cattrs validate values already loaded, which keep no line or
column, and strictyaml stops at the first problem in words of its own. Here each problem is located from the
node's mark (`file:line:col` and the YAML path), an unknown key or word gets a did-you-mean hint, and a
NodeReader collects every problem of a file, so one run lists them all; the table is some 150 lines.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from yaml.nodes import Node

from ci_tool.errors import did_you_mean
from ci_tool.yaml_nodes import INT_MAX, NodeKind, NodeReader, join, kind

Values = Mapping[str, object]  # a mapping's values read so far, by key
Problem = tuple[str, str | None]  # the message (`expected ..., found ...`) and its hint
V = TypeVar("V")
ValueReader = Callable[[NodeReader, Node, str], object | None]  # the value, or None and a problem on the reader


@dataclass(frozen=True)
class Field:
    """One key of a mapping: how to read its value, whether it is required, an example for hints, and the rule
    its value must follow (given every value of the mapping read without a problem)."""

    key: str
    read: ValueReader
    required: bool = False
    example: str = ""  # what `add `key: example`` hints when a required key is missing
    nullable: bool = False  # `key: null` (or `key:`) reads as not written
    check: Callable[[Values], Problem | None] | None = None


@dataclass(frozen=True)
class Found:
    """A mapping read against a table: the nodes written, the values read, and whether all of it read."""

    nodes: Mapping[str, Node]
    values: Mapping[str, object]
    complete: bool

    def get(self, key: str, kind_: type[V]) -> V | None:
        """The value read for `key` (None when not written or not read), of the type its field's reader gives."""
        value = self.values.get(key)
        if value is not None and not isinstance(value, kind_):
            raise TypeError(f"{key!r} read as a {type(value).__name__}, not a {kind_.__name__}")  # a table's bug
        return value


def keys_of(fields: Iterable[Field]) -> tuple[str, ...]:
    return tuple(spec.key for spec in fields)


def missing_key(spec: Field) -> Problem:
    """The default words for a required key not written."""
    return (
        f"expected the key {spec.key!r}, found none",
        f"add `{spec.key}:{' ' + spec.example if spec.example else ''}`",
    )


def read_fields(
    reader: NodeReader,
    node: Node,
    path: str,
    what: str,
    fields: tuple[Field, ...],
    *,
    required: Iterable[str] | None = None,
    missing: Callable[[Field], Problem] = missing_key,
    hint: str | None = None,
    repeated_hint: str | None = None,
) -> Found | None:
    """`node` read as a mapping of `fields` (None, and a problem, when it is no mapping). `required`: the keys
    required of this mapping when they are not the table's own (a catalog's non-test family needs fewer);
    `hint`: the hint when `node` is no mapping; `repeated_hint`: the hint for a key written twice."""
    nodes = reader.mapping(node, path, what, keys_of(fields), hint, repeated_hint=repeated_hint)
    if nodes is None:
        return None
    before = len(reader.problems)  # an unknown or repeated key is reported, and leaves the rest complete
    needed = set(required) if required is not None else {spec.key for spec in fields if spec.required}
    for spec in fields:
        if spec.key in needed and spec.key not in nodes:
            message, hint = missing(spec)
            reader.problem(node, path or None, message, hint)
    values: dict[str, object] = {}
    for spec in fields:
        value_node = nodes.get(spec.key)
        if value_node is None or (spec.nullable and kind(value_node) is NodeKind.NULL):
            continue
        value = spec.read(reader, value_node, join(path, spec.key))
        if value is not None:
            values[spec.key] = value
    return Found(nodes, values, complete=len(reader.problems) == before)


def check_fields(reader: NodeReader, path: str, fields: tuple[Field, ...], found: Found, values: Values) -> bool:
    """Run the rule of each field written over `values` (found.values, with any defaults the reader added);
    whether every rule held."""
    held = True
    for spec in fields:
        if spec.check is not None and spec.key in found.values:
            problem = spec.check(values)
            if problem is not None:
                reader.problem(found.nodes[spec.key], join(path, spec.key), *problem)
                held = False
    return held


# -- value readers: each returns the value, or None after reporting why not -------------------------------


def text(what: str) -> ValueReader:
    """A string scalar."""
    return lambda reader, node, path: reader.scalar(node, path, (NodeKind.STR,), what)


def boolean() -> ValueReader:
    return lambda reader, node, path: reader.boolean(node, path)


def integer(what: str, *, minimum: int, maximum: int = INT_MAX, hint: str | None = None) -> ValueReader:
    """A whole number from `minimum` to `maximum` (NodeReader.integer)."""
    return lambda reader, node, path: reader.integer(node, path, what, minimum=minimum, maximum=maximum, hint=hint)


def number(what: str) -> ValueReader:
    """A finite int or float (NodeReader.number)."""
    return lambda reader, node, path: reader.number(node, path, what)


def choice(kind_: type[enum.Enum], what: str, hint: str | None = None) -> ValueReader:
    """A value of an enum, by its string value; a wrong word gets the closest value (or `hint`)."""
    words = [str(member.value) for member in kind_]

    def read(reader: NodeReader, node: Node, path: str) -> enum.Enum | None:
        word = reader.scalar(node, path, (NodeKind.STR,), what)
        if word is None:
            return None
        if word in words:
            return kind_(word)
        reader.problem(node, path, f"expected {what}, found {word!r}", did_you_mean(word, words) or hint)
        return None

    return read


def node() -> ValueReader:
    """The node itself, for a value read later with what the rest of the mapping says."""
    return lambda reader, value_node, path: value_node
