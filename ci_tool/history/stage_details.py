"""Two lists a stage's details hold, as typed values: the known flaky failures it ran again (`reruns`) and the
list entries that collected nothing (`uncollected`). The history keeps them as JSON inside the stage's
details; run/recording.py writes them through `as_details`, the report reads them back through
`stage_reruns` and `stage_uncollected`: the one place their keys are spelled, so no dict travels past the
history. An entry of another shape (a hand-edited row) is left out, as the report leaves out a bad row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ci_tool.history.records import StageRecord
from ci_tool.outcomes import TestOutcome

RERUNS = "reruns"  # a stage's details key: its reruns of known flaky failures
UNCOLLECTED = "uncollected"  # a stage's details key: its list entries that selected no test


@dataclass(frozen=True)
class Rerun:
    """A known flaky failure of `stage` run once more: the flaky signature that earned the rerun, and how the
    rerun ended (passed: the stage is unstable, not green)."""

    stage: str
    test_id: str
    signature: str
    outcome: TestOutcome

    def as_details(self) -> dict[str, object]:
        """The entry as the stage's details hold it (the stage is the one they belong to)."""
        return {"test_id": self.test_id, "signature": self.signature, "rerun": self.outcome.value}


@dataclass(frozen=True)
class Uncollected:
    """A list entry of `stage` that selected no test, and why; `line`: its line in the list (None where the
    list is not a file), `list_name`: the list ('' where one list ran)."""

    stage: str
    entry_id: str
    reason: str
    line: int | None = None
    list_name: str = ""

    def as_details(self) -> dict[str, object]:
        """The entry as the stage's details hold it: `id` and `reason`, and `line` and `list` where known."""
        found: dict[str, object] = {"id": self.entry_id, "reason": self.reason}
        if self.line is not None:
            found["line"] = self.line
        if self.list_name:
            found["list"] = self.list_name
        return found


def stage_reruns(stage: StageRecord) -> tuple[Rerun, ...]:
    """The stage's reruns, in the order it ran them."""
    found = []
    for entry in _entries(stage.details, RERUNS):
        test_id, signature, outcome = entry.get("test_id"), entry.get("signature"), entry.get("rerun")
        known = isinstance(outcome, str) and outcome in _OUTCOMES
        if isinstance(test_id, str) and isinstance(signature, str | None) and known:
            found.append(Rerun(stage.name, test_id, signature or "", TestOutcome(str(outcome))))
    return tuple(found)


def stage_uncollected(stage: StageRecord) -> tuple[Uncollected, ...]:
    """The stage's list entries that collected nothing, in list order."""
    return uncollected_entries(stage.name, _entries(stage.details, UNCOLLECTED))


def uncollected_entries(stage: str, entries: Iterable[Mapping[str, object]]) -> tuple[Uncollected, ...]:
    """`entries` as the pytest plugin reports them (`id`, `reason`, `line`, `list`), typed."""
    found = []
    for entry in entries:
        entry_id, reason, line, name = entry.get("id"), entry.get("reason", ""), entry.get("line"), entry.get("list")
        if isinstance(entry_id, str) and isinstance(reason, str) and isinstance(name, str | None):
            number = line if isinstance(line, int) and not isinstance(line, bool) else None
            found.append(Uncollected(stage, entry_id, reason, number, name or ""))
    return tuple(found)


_OUTCOMES = frozenset(outcome.value for outcome in TestOutcome)


def _entries(details: Mapping[str, object], key: str) -> list[Mapping[str, object]]:
    found = details.get(key, [])
    return [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []
