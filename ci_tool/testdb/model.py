"""The test database as frozen values: files hold contexts, contexts hold blocks, blocks hold test entries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ci_tool.errors import Where
from ci_tool.testdb.lines import TestLine

FORMAT_VERSION = "0.0.1"


@dataclass(frozen=True)
class Range:
    """An inclusive integer range; either bound may be open."""

    gte: int | None = None
    lte: int | None = None

    def contains(self, value: int) -> bool:
        return (self.gte is None or value >= self.gte) and (self.lte is None or value <= self.lte)


@dataclass(frozen=True)
class Condition:
    """What a query must satisfy for a block's tests to be selected. Empty means: always."""

    terms: Mapping[str, str]  # values normalised to strings ("true"/"false" for booleans)
    ranges: Mapping[str, Range]
    wildcards: Mapping[str, tuple[str, ...]]  # any-of fnmatch patterns, compared case-insensitively

    def keys(self) -> frozenset[str]:
        return frozenset(self.terms) | frozenset(self.ranges) | frozenset(self.wildcards)

    def identity(self) -> tuple[object, ...]:
        """A hashable value equal for equal conditions (used to find duplicates)."""
        return (
            tuple(sorted(self.terms.items())),
            tuple(sorted((key, (r.gte, r.lte)) for key, r in self.ranges.items())),
            tuple(sorted((key, tuple(sorted(p))) for key, p in self.wildcards.items())),
        )


@dataclass(frozen=True)
class Entry:
    """A test line and where it is written."""

    line: TestLine
    where: Where


@dataclass(frozen=True)
class Block:
    context: str
    index: int  # position within the context, 0-based
    condition: Condition
    entries: tuple[Entry, ...]
    where: Where


@dataclass(frozen=True)
class Context:
    name: str
    file: str
    blocks: tuple[Block, ...]
    where: Where


@dataclass(frozen=True)
class TestDb:
    """Every context of a test-db folder; context names are global across its files."""

    __test__ = False  # not a pytest test class despite the name

    root: str
    contexts: Mapping[str, Context]
