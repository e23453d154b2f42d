"""The run record: the selection a run made where it ran, archived with it (Jenkins' selection.json), with the
commit it tested and the target branch's tip it compared with. Pure.

    written by   `ci-tool stage select --json` (L0_MergeRequest archives it and hands it to L0_Test as
                 SELECTION; the GitHub plan job keeps it in the ci-tool-selection artifact)
    read by      the bot's final CI report and statuses, `/bot reuse-pipeline`, and every stage job's
                 `ci-tool stage run NAME --selection FILE`: a `<family>-<K>-cbts` stage runs the filter and
                 shard count the record holds for its family (`cbts.families`), never a narrowing of its own

The bot's reply is a preview made from the GitHub API before the run; the record is what ran. Where the two
differ, the final report names the stages (`differences`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ci_tool.change.narrowing import LineFilter, NarrowPath
from ci_tool.errors import StageError
from ci_tool.stages.catalog import Catalog, Stage
from ci_tool.stages.cbts import narrowed_stages
from ci_tool.stages.names import CBTS_SUFFIX, StageName
from ci_tool.stages.select import Selection


@dataclass(frozen=True)
class SelectionRecord:
    """What a run selected and on which commits."""

    stages: tuple[str, ...]  # the stages it started, in catalog order
    blocked: Mapping[str, str]  # stage -> the approval label it waits for (not started)
    custom_run: bool
    head: str | None = None  # the commit tested (None: not a checkout)
    base: str | None = None  # the target branch's tip the change was measured against (None: no base)
    narrowed: Mapping[str, NarrowedFamily] = field(default_factory=dict)  # family -> what its -cbts stages run

    @property
    def names(self) -> tuple[str, ...]:
        """Every stage the record names, started or blocked, in the order it holds them."""
        return (*self.stages, *(name for name in self.blocked if name not in self.stages))


@dataclass(frozen=True)
class NarrowedFamily:
    """What the `-cbts` stages of a family narrowed by the record's change-based selection run."""

    shards: int
    line_filter: LineFilter


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
    return SelectionRecord(stages, blocked, custom_run, head, base, _narrowed(data.get("cbts"), source))


def narrowed_stage(record: SelectionRecord, catalog: Catalog, name: StageName, *, source: str) -> Stage:
    """The `-cbts` stage `name` as the record's selection made it: its family's render through the record's
    filter, split over the record's shard count (cbts.narrowed_stages, as the selection itself makes it)."""
    if name.name not in record.stages:
        shown = ", ".join(stage for stage in record.stages if stage.endswith(CBTS_SUFFIX)) or "none"
        raise StageError(
            f"{source}: stages: expected {name.name!r} among the stages the selection runs, found it missing "
            f"(its -cbts stages: {shown})",
            hint="run a stage of this selection, or select again for this change (`ci-tool stage select --json`)",
        )
    family = catalog.stage(name.name.removesuffix(CBTS_SUFFIX)).family
    found = record.narrowed.get(family.name.name)
    if found is None:
        raise StageError(f"{source}: cbts.families: expected the narrowing of {family.name.name!r}, found none")
    stages = narrowed_stages(family, found.shards, found.line_filter)
    if name.shard is None or not 1 <= name.shard <= len(stages):
        raise StageError(
            f"{source}: cbts.families.{family.name.name}.shards: expected at least shard {name.shard} of "
            f"{name.name!r}, found {found.shards}"
        )
    return stages[name.shard - 1]


def _narrowed(value: object, source: str) -> dict[str, NarrowedFamily]:
    """`cbts.families` of a record: the narrowed families, each with its filter. A family without one runs its
    own stages: it runs its full set (`full`), or the record is older than the pipelines' `-cbts` stages (their
    builds ran each family's own stages whole, and the bot's report reads their records still)."""
    if value is None:
        return {}
    families = _object(value, f"{source}: cbts").get("families", {})
    found: dict[str, NarrowedFamily] = {}
    for name, value_of_family in _object(families, f"{source}: cbts.families").items():
        where = f"{source}: cbts.families.{name}"
        entry = _object(value_of_family, where)
        if "full" in entry or "filter" not in entry:
            continue  # its own stages run
        shards = entry.get("shards")
        if not isinstance(shards, int) or isinstance(shards, bool) or shards < 1:
            raise StageError(f"{where}.shards: expected a shard count of at least 1, found {shards!r}")
        found[name] = NarrowedFamily(shards, _line_filter(entry.get("filter"), f"{where}.filter"))
    return found


def _line_filter(value: object, where: str) -> LineFilter:
    data = _object(value, where)
    paths = []
    for index, item in enumerate(_list(data.get("paths"), f"{where}.paths")):
        path = _object(item, f"{where}.paths[{index}]")
        test_path, gpu = path.get("path"), path.get("gpu")
        if not isinstance(test_path, str) or not (gpu is None or isinstance(gpu, str)):
            raise StageError(
                f'{where}.paths[{index}]: expected {{"path": "...", "gpu": "..." or null}}, found {item!r}'
            )
        paths.append(NarrowPath(test_path, gpu))
    entries = []
    for index, item in enumerate(_list(data.get("entries"), f"{where}.entries")):
        entry = _object(item, f"{where}.entries[{index}]")
        context, line = entry.get("context"), entry.get("line")
        if not isinstance(context, str) or not isinstance(line, str):
            raise StageError(f'{where}.entries[{index}]: expected {{"context": "...", "line": "..."}}, found {item!r}')
        entries.append((context, line))
    return LineFilter(tuple(paths), tuple(entries))


def _object(value: object, where: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise StageError(f"{where}: expected a JSON object, found {value!r}")
    return value


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
