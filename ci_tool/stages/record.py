"""The run record: the selection a run made where it ran, archived with it (Jenkins' selection.json), with the
commit it tested and the target branch's tip it compared with. Pure.

    written by   `ci-tool stage select --json` (L0_MergeRequest archives it and hands it to L0_Test as
                 SELECTION; the GitHub plan job keeps it in the ci-tool-selection artifact)
    read by      the bot's final CI report and statuses, `/bot reuse-pipeline`, and every stage job's
                 `ci-tool stage run NAME --selection FILE`: a `<family>-<K>-cbts` stage runs the filter and
                 shard count the record holds for its family (`cbts.families`), never a narrowing of its own

The bot's reply is a preview made from the GitHub API before the run; the record is what ran. Where the two
differ, the final report names the stages (`differences`).

A record is read back through typed_json (RecordJson): only the keys read here are declared, the rest of the
selection's JSON being the pipelines', and a key older records lack reads as its default. Errors say where:
`selection.json (cbts.families.A10-PyTorch.shards): expected a shard count of at least 1, found 0`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ci_tool import typed_json
from ci_tool.change.narrowing import LineFilter, NarrowPath
from ci_tool.errors import StageError, Where
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


@dataclass(frozen=True)
class BlockedJson:
    """A stage of `blocked`, as approvals.BlockedStage.to_json writes it."""

    stage: str
    label: str  # the approval label it waits for


@dataclass(frozen=True)
class FilterEntryJson:
    """An entry of a filter's `entries`, as LineFilter.to_json writes it: a list line kept whole."""

    context: str
    line: str


@dataclass(frozen=True)
class FilterJson:
    """A narrowed family's `filter`, as LineFilter.to_json writes it."""

    paths: tuple[NarrowPath, ...]
    entries: tuple[FilterEntryJson, ...]

    def line_filter(self) -> LineFilter:
        return LineFilter(self.paths, tuple((entry.context, entry.line) for entry in self.entries))


@dataclass(frozen=True)
class FamilyJson:
    """A family of `cbts.families`, as cbts.FamilyNarrowing.to_json writes it: its shard count, and its filter
    or why it runs its full set. Neither: a record older than the pipelines' `-cbts` stages."""

    shards: int
    filter: FilterJson | None = None
    full: str | None = None


@dataclass(frozen=True)
class CbtsJson:
    """The record's `cbts` (cbts.Narrowing.to_json), as far as the stage jobs read it."""

    families: Mapping[str, FamilyJson] = field(default_factory=dict)


@dataclass(frozen=True)
class RecordJson:
    """The keys of a record read back (the others are the pipelines'), with the defaults of older records."""

    stages: tuple[str, ...]
    blocked: tuple[BlockedJson, ...] = ()
    custom_run: bool = False
    head: str | None = None
    base: str | None = None
    cbts: CbtsJson | None = None


def read_record(data: object, *, source: str) -> SelectionRecord:
    """A record from its JSON (record_json's shape, of any version); a StageError says where it is not one."""
    found = typed_json.structure(data, RecordJson, file=source, error=StageError, partial=True)
    blocked = {entry.stage: entry.label for entry in found.blocked}
    head, base = _commit(found.head, source, "head"), _commit(found.base, source, "base")
    return SelectionRecord(found.stages, blocked, found.custom_run, head, base, _narrowed(found.cbts, source))


def narrowed_stage(record: SelectionRecord, catalog: Catalog, name: StageName, *, source: str) -> Stage:
    """The `-cbts` stage `name` as the record's selection made it: its family's render through the record's
    filter, split over the record's shard count (cbts.narrowed_stages, as the selection itself makes it)."""
    if name.name not in record.stages:
        shown = ", ".join(stage for stage in record.stages if stage.endswith(CBTS_SUFFIX)) or "none"
        raise StageError(
            f"expected {name.name!r} among the stages the selection runs, found it missing (its -cbts stages: "
            f"{shown})",
            where=Where(source, yaml_path="stages"),
            hint="run a stage of this selection, or select again for this change (`ci-tool stage select --json`)",
        )
    family = catalog.stage(name.name.removesuffix(CBTS_SUFFIX)).family
    found = record.narrowed.get(family.name.name)
    if found is None:
        where = Where(source, yaml_path="cbts.families")
        raise StageError(f"expected the narrowing of {family.name.name!r}, found none", where=where)
    stages = narrowed_stages(family, found.shards, found.line_filter)
    if name.shard is None or not 1 <= name.shard <= len(stages):
        raise StageError(
            f"expected at least shard {name.shard} of {name.name!r}, found {found.shards}",
            where=Where(source, yaml_path=f"cbts.families.{family.name.name}.shards"),
        )
    return stages[name.shard - 1]


def _narrowed(cbts: CbtsJson | None, source: str) -> dict[str, NarrowedFamily]:
    """`cbts.families` of a record: the narrowed families, each with its filter. A family without one runs its
    own stages: it runs its full set (`full`), or the record is older than the pipelines' `-cbts` stages (their
    builds ran each family's own stages whole, and the bot's report reads their records still)."""
    found: dict[str, NarrowedFamily] = {}
    for name, family in (cbts.families if cbts is not None else {}).items():
        if family.full is not None or family.filter is None:
            continue  # its own stages run
        if family.shards < 1:
            where = Where(source, yaml_path=f"cbts.families.{name}.shards")
            raise StageError(f"expected a shard count of at least 1, found {family.shards}", where=where)
        found[name] = NarrowedFamily(family.shards, family.filter.line_filter())
    return found


def differences(preview: Sequence[str], record: SelectionRecord) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The stages the run started that the preview did not name, and the ones the preview named that the
    run did not start (started or blocked alike count as named)."""
    ran = set(record.names)
    previewed = set(preview)
    return tuple(n for n in record.names if n not in previewed), tuple(n for n in preview if n not in ran)


def _commit(value: str | None, source: str, key: str) -> str | None:
    if value == "":
        raise StageError("expected a commit id or null, found ''", where=Where(source, yaml_path=key))
    return value
