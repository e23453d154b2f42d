"""Pure matching of a query (system and stage facts) against test-db conditions, and rendering.

Rules (compatible with TensorRT-LLM's trt-test-db):
- terms:     the query value equals the block value as a string (booleans as "true"/"false");
- ranges:    the query value, read as an integer, lies in [gte, lte];
- wildcards: the query value matches any of the patterns (fnmatch, case-insensitive);
- a key missing from the query (or null there) matches; a key missing from the block is unconstrained;
- a render is the union of the matching blocks' tests, in file order, each line once.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Mapping

from ci_tool.errors import TestDbError, Where, did_you_mean
from ci_tool.testdb.lines import TestLine
from ci_tool.testdb.model import Block, Condition, TestDb

Query = Mapping[str, str | None]


def normalize_query(raw: Mapping[str, object]) -> dict[str, str | None]:
    """Turn a JSON/sysinfo mapping into string values: booleans become "true"/"false", null stays None."""
    query: dict[str, str | None] = {}
    for key, value in raw.items():
        if value is None:
            query[key] = None
        elif isinstance(value, bool):
            query[key] = "true" if value else "false"
        elif isinstance(value, str) and value.lower() in ("true", "false"):
            query[key] = value.lower()
        elif isinstance(value, int | float | str):
            query[key] = str(value)
        else:
            raise TestDbError(
                f"expected a string, number, boolean or null for query key {key!r}, found {type(value).__name__}",
                hint='the query is a flat JSON object, e.g. {"gpu": "A10", "system_gpu_count": 1}',
            )
    return query


@functools.lru_cache(maxsize=4096)
def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(pattern.lower()))


def _as_int(key: str, value: str, block: Block) -> int:
    try:
        return int(value)
    except ValueError:
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if number.is_integer():
            return int(number)
    raise TestDbError(
        f"expected an integer query value for range key {key!r}, found {value!r}",
        where=block.where,
        hint=f'pass {key} as a whole number, e.g. "{key}": 1',
    )


def matches(block: Block, query: Query) -> bool:
    """Whether the block's condition admits the query."""
    condition: Condition = block.condition
    for key, expected in condition.terms.items():
        value = query.get(key)
        if value is not None and value != expected:
            return False
    for key, bounds in condition.ranges.items():
        value = query.get(key)
        if value is not None and not bounds.contains(_as_int(key, value, block)):
            return False
    for key, patterns in condition.wildcards.items():
        value = query.get(key)
        if value is not None and not any(_glob(p).match(value.lower()) for p in patterns):
            return False
    return True


def matching_blocks(db: TestDb, context: str, query: Query) -> list[Block]:
    """The blocks of `context` whose condition admits the query, in file order."""
    found = db.contexts.get(context)
    if found is None:
        known = sorted(db.contexts)
        raise TestDbError(
            f"expected a context defined in the test-db, found no context {context!r}",
            where=Where(db.root),
            hint=did_you_mean(context, known) or f"known contexts: {', '.join(known) or 'none'}",
        )
    return [block for block in found.blocks if matches(block, query)]


def render(db: TestDb, context: str, query: Query, *, allow_empty: bool = False) -> list[TestLine]:
    """The union of matching blocks' test lines, in file order, each distinct line once."""
    seen: set[str] = set()
    lines: list[TestLine] = []
    for block in matching_blocks(db, context, query):
        for entry in block.entries:
            if entry.line.raw not in seen:
                seen.add(entry.line.raw)
                lines.append(entry.line)
    if not lines and not allow_empty:
        raise empty_render(db, context, query)
    return lines


def empty_render(db: TestDb, context: str, query: Query) -> TestDbError:
    """The error of a render that selects nothing where a list must run."""
    shown = ", ".join(f"{k}={v!r}" for k, v in sorted(query.items()))
    return TestDbError(
        f"expected the query to select at least one test, found an empty render of context {context!r} "
        f"for query {{{shown}}}",
        where=Where(db.contexts[context].file),
        hint="check the query's gpu, system_gpu_count, stage and backend against the blocks' conditions",
    )
