"""The run record: the selection a run made where it ran, archived with it (Jenkins' selection.json), with the
commit it tested and the target branch's tip it compared with. Pure.

    written by   `ci-tool stage select --json` (L0_MergeRequest archives it; L0_Test reads the commits)
    read by      the bot's final CI report and statuses, `/bot reuse-pipeline`

The bot's reply is a preview made from the GitHub API before the run; the record is what ran. Where the two
differ, the final report names the stages (`differences`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ci_tool.errors import StageError
from ci_tool.stages.select import Selection


@dataclass(frozen=True)
class SelectionRecord:
    """What a run selected and on which commits."""

    stages: tuple[str, ...]  # the stages it started, in catalog order
    blocked: Mapping[str, str]  # stage -> the approval label it waits for (not started)
    custom_run: bool
    head: str | None = None  # the commit tested (None: not a checkout)
    base: str | None = None  # the target branch's tip the change was measured against (None: no base)

    @property
    def names(self) -> tuple[str, ...]:
        """Every stage the record names, started or blocked, in the order it holds them."""
        return (*self.stages, *(name for name in self.blocked if name not in self.stages))


def record_json(selection: Selection, *, head: str | None, base: str | None) -> dict[str, object]:
    """The record `ci-tool stage select --json` prints: the selection and the commits."""
    return {**selection.to_json(), "head": head, "base": base}


def read_record(data: object, *, source: str) -> SelectionRecord:
    """A record from its JSON (record_json's shape); a StageError names what is missing or wrong."""
    if not isinstance(data, dict):
        raise StageError(f"{source}: expected a JSON object, found {type(data).__name__}")
    stages = _strings(data.get("stages"), f"{source}: stages")
    blocked: dict[str, str] = {}
    for entry in _list(data.get("blocked", []), f"{source}: blocked"):
        named = isinstance(entry, dict) and isinstance(entry.get("stage"), str) and isinstance(entry.get("label"), str)
        if not named:
            raise StageError(f'{source}: blocked: expected {{"stage": ..., "label": ...}} objects, found {entry!r}')
        blocked[entry["stage"]] = entry["label"]  # type: ignore[index]  # checked above
    custom_run = data.get("custom_run", False)
    if not isinstance(custom_run, bool):
        raise StageError(f"{source}: custom_run: expected true or false, found {custom_run!r}")
    head, base = _commit(data.get("head"), source, "head"), _commit(data.get("base"), source, "base")
    return SelectionRecord(stages, blocked, custom_run, head, base)


def differences(preview: Sequence[str], record: SelectionRecord) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The stages the run started that the preview did not name, and the ones the preview named that the
    run did not start (started or blocked alike count as named)."""
    ran = set(record.names)
    previewed = set(preview)
    return tuple(n for n in record.names if n not in previewed), tuple(n for n in preview if n not in ran)


def _list(value: object, where: str) -> list[object]:
    if not isinstance(value, list):
        raise StageError(f"{where}: expected a JSON list, found {value!r}")
    return value


def _strings(value: object, where: str) -> tuple[str, ...]:
    items = _list(value, where)
    if not all(isinstance(item, str) for item in items):
        raise StageError(f"{where}: expected stage names, found {value!r}")
    return tuple(str(item) for item in items)


def _commit(value: object, source: str, key: str) -> str | None:
    if value is None or (isinstance(value, str) and value):
        return value
    raise StageError(f"{source}: {key}: expected a commit id or null, found {value!r}")
