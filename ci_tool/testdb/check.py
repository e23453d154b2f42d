"""Static checks of a test-db folder and its waives (no pytest run; see `collect` for that).

Each check returns TestDbError values, one per finding, so the command can print them all.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Callable, Iterable

from ci_tool.errors import TestDbError
from ci_tool.layout import TEST_TIMEOUT_SECONDS
from ci_tool.testdb.model import Entry, TestDb
from ci_tool.testdb.waives import Waive


def duplicate_tests(db: TestDb) -> list[TestDbError]:
    """Tests listed twice in one context under equal conditions (they would run twice)."""
    findings = []
    for context in db.contexts.values():
        first_seen: dict[tuple[object, str], Entry] = {}
        for block in context.blocks:
            identity = block.condition.identity()
            for entry in block.entries:
                key = (identity, entry.line.test_id)
                earlier = first_seen.setdefault(key, entry)
                if earlier is not entry:
                    findings.append(
                        TestDbError(
                            f"expected each test once per condition, found {entry.line.test_id!r} again "
                            f"(first at line {earlier.where.line})",
                            where=entry.where,
                            hint="delete one of the two lines",
                        )
                    )
    return findings


def covers(selector: str, test_id: str) -> bool:
    """Whether a folder, file or node id selects `test_id` (or is it)."""
    if selector == test_id:
        return True
    base = selector.rstrip("/")
    return test_id.startswith((base + "/", base + "::", base + "["))


def _bare(test_id: str) -> str:
    """The id without a trailing `-k`/`-m` filter."""
    for flag in (" -k ", " -m "):
        test_id = test_id.split(flag, 1)[0]
    return test_id.strip()


def stale_waives(
    db: TestDb, waives: Iterable[Waive], *, exempt: Callable[[str], bool] = lambda test_id: False
) -> list[TestDbError]:
    """Waives that name a test in no list: they skip nothing and hide that the test is gone. A waive whose
    test `exempt` says yes to is never stale (a project whose unit tests run through a wrapper, not by id)."""
    listed = sorted(
        {
            _bare(entry.line.test_id)
            for context in db.contexts.values()
            for block in context.blocks
            for entry in block.entries
        }
    )
    findings = []
    for waive in waives:
        target = _bare(waive.test_id)
        if exempt(target):
            continue
        if not any(covers(target, test_id) or covers(test_id, target) for test_id in _candidates(listed, target)):
            findings.append(
                TestDbError(
                    f"expected a waive to name a listed test, found {waive.test_id!r} in no test-db list",
                    where=waive.where,
                    hint="delete the stale waive, or fix its id to match the list entry",
                )
            )
    return findings


def _candidates(listed: list[str], target: str) -> list[str]:
    """The listed ids that share the target's top folder (a cheap filter before `covers`)."""
    top = target.split("/", 1)[0].split("::", 1)[0]
    return listed[bisect.bisect_left(listed, top) : bisect.bisect_left(listed, top + "\uffff")]


DEFAULT_TIMEOUT_MINUTES = TEST_TIMEOUT_SECONDS // 60
_TIMEOUT_MARKER = re.compile(r"\s(TIMEOUT\s*\(\s*\d+\s*\))")


def redundant_timeouts(db: TestDb) -> list[TestDbError]:
    """List lines whose TIMEOUT says the default per-test limit: they change nothing and hide the default
    (TensorRT-LLM rejects `TIMEOUT (60)` in test-db for that reason)."""
    findings = []
    for context in db.contexts.values():
        for block in context.blocks:
            for entry in block.entries:
                if entry.line.timeout_minutes != DEFAULT_TIMEOUT_MINUTES:
                    continue
                marker = _TIMEOUT_MARKER.search(entry.line.raw)
                col = (entry.where.col or 1) + (marker.start(1) if marker else 0)
                findings.append(
                    TestDbError(
                        f"expected no TIMEOUT marker that repeats the default of {DEFAULT_TIMEOUT_MINUTES} minutes, "
                        f"found {marker.group(1) if marker else 'one'!r} on {entry.line.test_id!r}",
                        where=dataclasses.replace(entry.where, col=col),
                        hint=f"delete ` {marker.group(1) if marker else 'TIMEOUT'}`: every test gets "
                        f"{DEFAULT_TIMEOUT_MINUTES} minutes",
                    )
                )
    return findings


def duplicate_waives(waives: Iterable[Waive]) -> list[TestDbError]:
    """A test waived twice for the same GPUs: the second line does nothing, and unwaiving one keeps it skipped."""
    first_seen: dict[tuple[str | None, str], Waive] = {}
    findings = []
    for waive in waives:
        earlier = first_seen.setdefault((waive.gpu, waive.test_id), waive)
        if earlier is not waive and earlier.where != waive.where:
            scope = f"full:{waive.gpu}/" if waive.gpu else ""
            findings.append(
                TestDbError(
                    f"expected each test waived once, found {scope + waive.test_id!r} again "
                    f"(first at line {earlier.where.line})",
                    where=waive.where,
                    hint="delete one of the two lines",
                )
            )
    return findings
