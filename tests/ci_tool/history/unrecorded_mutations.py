"""Mutations of a real `unrecorded.json` for the import fuzz (tests/ci_tool/history/test_import_fuzz.py and
bench/import_fuzz_bench.py): a record as a run writes it, and one change at one JSON path of it."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from typing import Any

from ci_tool.history.store import RunRecord, StageRecord, TestRecord
from ci_tool.history.unrecorded import unrecorded_json
from ci_tool.outcomes import RunState, StageState, TestOutcome

# What replaces a value: every JSON type, the numbers JSON cannot hold, the wrong nesting, other vocabularies.
REPLACEMENTS: tuple[Any, ...] = (
    None, True, False, 0, -1, 1, 2**63, -(2**63), 10**400, 1e300, -1e300, float("nan"), float("inf"),
    float("-inf"), 0.5, "", "NaN", "Infinity", "1e300", "passed", "running", "interrupted", "exploded", "\0",
    "x" * 5000, [], [None], [[[]]], {}, {"": None}, {"stage": {}}, [{"stage": {}, "tests": [], "recorded_at": 1.0}],
    "a\ud800b", {"\udfff": 1},  # lone surrogates: JSON writes them, no UTF-8 file or database holds them
)  # fmt: skip


def real_record() -> Any:
    """What a run that was interrupted in its second stage writes: two stages, a rerun, a waive, a failure."""
    run = RunRecord(
        "20261201-101010-abcd", "/bot run", RunState.INTERRUPTED, 1_764_000_000.0, 1_764_000_100.0, host="box",
        details={"note": [1, 2.5, {"x": None}]}, code_commit="c0ffee", code_diff="", scope="stage S",
    )  # fmt: skip
    first = StageRecord(
        run.run_id, "A10-PyTorch-1", StageState.FAILED, "", 1_764_000_001.0, 40.5, 1, 1, 1, "runs/x/A10-PyTorch-1",
        {"processes": [{"entries": ["a.py"], "seconds": 3.0, "tests_seconds": 2.0}], "uncollected": []},
    )  # fmt: skip
    tests = [
        TestRecord("a.py::test_ok", TestOutcome.PASSED, 1.5),
        TestRecord("a.py::test_bad", TestOutcome.FAILED, 2.0, kind="AssertionError", message="m", signature="s"),
        TestRecord("a.py::test_rerun", TestOutcome.FAILED, 0.5, rerun_outcome=TestOutcome.PASSED),
        TestRecord("a.py::test_waived", TestOutcome.SKIPPED, 0.0, waive_reason="https://bugs/1"),
    ]
    second = StageRecord(run.run_id, "A10-PyTorch-2", StageState.INTERRUPTED, "SIGTERM", 1_764_000_050.0, 9.0)
    return json.loads(unrecorded_json(run, [(first, tests, 1_764_000_045.0), (second, [], 1_764_000_060.0)]))


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every JSON path in `value` (the root too), as tuples of keys and indexes."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*prefix, index))


def mutate(record: Any, path: tuple[Any, ...], how: str, replacement: Any) -> Any:
    """`record` with the value at `path` replaced, deleted, wrapped in a list or an object, or (for the
    root) swapped whole; a deep copy: `record` is left as it is."""
    changed = copy.deepcopy(record)
    if not path:
        return replacement if how == "replace" else [changed] if how == "wrap" else {"wrapped": changed}
    parent = changed
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if how == "delete":
        del parent[last]
    elif how == "wrap":
        parent[last] = [parent[last]]
    elif how == "nest":
        parent[last] = {"value": parent[last]}
    elif how == "add-key" and isinstance(parent[last], dict):
        parent[last]["unknown_key"] = replacement
    else:
        parent[last] = replacement
    return changed


HOWS = ("replace", "delete", "wrap", "nest", "add-key")


def random_mutations(seed: int, count: int) -> Iterator[tuple[str, Any]]:
    """`count` mutated records (one to three changes each), each with a description, from one seed."""
    rng = random.Random(seed)
    base = real_record()
    for _ in range(count):
        changed, said = base, []
        for _ in range(rng.choice((1, 1, 1, 2, 3))):
            found = list(paths(changed))
            path, how, replacement = rng.choice(found), rng.choice(HOWS), rng.choice(REPLACEMENTS)
            try:
                changed = mutate(changed, path, how, replacement)
            except (KeyError, IndexError, TypeError):
                continue
            said.append(f"{how} {'.'.join(map(str, path)) or '<root>'} {replacement!r:.40}")
        yield "; ".join(said), changed


def as_text(record: Any) -> str:
    """The record as a file's text (NaN and Infinity written as Python's json writes them)."""
    return json.dumps(record, indent=1)
