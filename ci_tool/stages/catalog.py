"""The stage catalog: `jenkins/stages.yml` (hand-written, the single source of truth) as frozen values.

    version: 1
    timeouts: {margin: 2.0, minimum_minutes: 30, maximum_minutes: 240}   optional (the defaults); TimeoutRule
    multi_gpu_paths: [PATH, ...]        a changed file here adds the pre-merge multi-GPU stages (selection step 2)
    tag_triggers: {PATH: TOKEN, ...}    a changed file here adds every stage carrying TOKEN   (step 3)
    file_groups:                         a change confined to one group runs only its stages   (step 11)
    - {name: docs, paths: [PATH, ...], stages: [STAGE_GLOB, ...]}
    change_rules:                        change-based selection of a bare /bot run (step 16, cbts.py)
      tests: [PATH, ...]                 test files here run the list entries that cover them
      docs: [PATH, ...]                  docs: the docs stage checks them
      out_of_scope: [PATH, ...]          nothing to test (durations, benchmarks)
      readers: {TEST: [PATH, ...], ...}  a test that reads files as text (a check of the code itself:
                                         layers, names, style): a change to one runs it, whatever narrows
    checks:                              what `testdb check` holds the test-db to (CheckPolicy)
      redundant_timeouts: true           `TIMEOUT (60)` repeating the default is flagged
      stale_waives: true                 a waive naming a test in no list is flagged ...
      stale_waives_exempt: [PATH, ...]   ... unless it lies under one of these
    platforms:                           what each platform's runners report (sysinfo keys), e.g.
      dgx-b200-flex: {gpu: B100, system_gpu_count: 8, gpu_memory: 183359, cpu: x86_64}
                                         dry runs render with these in place of a probe (the label
                                         without `auto:`); a platform not here renders with the name's facts
    families:
    - name: DGX_H100-4_GPUs-PyTorch      one entry per family: its keys are the field table's
      platform: dgx-h100-x4              (catalog_schema.FAMILY_FIELDS: key, reader, required, example, rule)
      context: l0_dgx_h100
      splits: 2                          the shard count, or `auto` with `budget_minutes`
      executor: slurm                    optional: each stage a Slurm batch job (platform: a partition
                                         or `auto:<pool>`); local (the default) runs on the agent
    - name: CPU-Build_Docs               a non-test stage: the docs stage, or a package-sanity stage
      platform: cpu                      (`CPU-PackageSanityCheck-KEY`, with the context of its smoke tests)

A test family expands to the stages `<name>-1 .. <name>-<splits>`, a non-test family to one stage of its
name. PATH is a prefix of a changed file's path,
or a whole-path glob when it holds `*` (fnmatch: `*` crosses `/`). TOKEN is a tag or backend token of
the stage grammar (`DeepSeek`, `PerfSanity`, `Triton`). The name decides GPU, counts, backend, mode and
post-merge; the catalog only repeats a fact to have it checked. Reading the file is catalog_schema.py;
resolving it against the test-db (contexts, `splits: auto`, derived timeouts) is catalog_load.py.
"""

from __future__ import annotations

import fnmatch
import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ci_tool.change.narrowing import LineFilter
from ci_tool.errors import StageError, Where, did_you_mean
from ci_tool.stages.executors import Executor
from ci_tool.stages.modes import TestMode
from ci_tool.stages.names import BACKENDS, StageName
from ci_tool.stages.query import QueryValue

FORMAT_VERSION = 1
STAGES_LIST_HINT = "`ci-tool stages list` prints every stage"
_BACKEND_TOKENS = {value: token for token, value in BACKENDS.items()}


@dataclass(frozen=True)
class TimeoutRule:
    """A family without `timeout_minutes` gets its slowest stage's predicted minutes times `margin`,
    rounded up to a multiple of `step_minutes`, at least `minimum_minutes` and at most `maximum_minutes`
    (predictions come from test-db/.test_durations; an entry without a recorded duration is priced by its
    folder's recorded neighbours: durations.py). The cap is the policy for predictions that run away: a
    shard predicted at over `maximum_minutes / margin` should be split further (more `splits`, or `splits:
    auto` with a budget), and a stage that truly needs longer writes its own `timeout_minutes`."""

    margin: float = 2.0
    minimum_minutes: int = 30
    maximum_minutes: int = 240
    step_minutes: int = 5

    def minutes(self, predicted_seconds: float) -> int:
        scaled = math.ceil(predicted_seconds / 60 * self.margin / self.step_minutes) * self.step_minutes
        return min(self.maximum_minutes, max(self.minimum_minutes, scaled))

    def explain(self, predicted_seconds: float) -> str:
        """Where a derived timeout came from, for `stage show`."""
        minutes = self.minutes(predicted_seconds)
        bound = (
            f", capped at {self.maximum_minutes}" if minutes == self.maximum_minutes
            else f", raised to the minimum {self.minimum_minutes}" if minutes == self.minimum_minutes
            else f", rounded up to {self.step_minutes}"
        )  # fmt: skip
        return f"derived: {self.margin:g} x the slowest shard's predicted {predicted_seconds / 60:.1f} min{bound}"


def path_matches(pattern: str, path: str) -> bool:
    """A changed-file rule: a glob when it holds `*` (whole path, `*` crosses `/`), else a path prefix."""
    if "*" in pattern:
        return fnmatch.fnmatchcase(path, pattern)
    return path.startswith(pattern)


def stage_glob_matches(pattern: str, name: str) -> bool:
    """A stage selector (selection step 13): without `*` an exact name; with `*` a whole-name glob whose `*`
    matches any run of characters (nothing else is special: `[` and `?` are literal)."""
    if "*" not in pattern:
        return pattern == name
    return _glob(pattern).fullmatch(name) is not None


@functools.lru_cache(maxsize=1024)
def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(piece) for piece in pattern.split("*")))


def carries(name: StageName, token: str) -> bool:
    """Whether a stage name carries a tag or backend token (`PerfSanity`, `PyTorch`); topology tokens are
    descriptive and never count."""
    return token in name.selection_tags or (name.backend is not None and _BACKEND_TOKENS.get(name.backend) == token)


def tokens_of(name: StageName) -> tuple[str, ...]:
    """The tags and backend token of a name (what a tag trigger can name)."""
    backend = (_BACKEND_TOKENS[name.backend],) if name.backend in _BACKEND_TOKENS else ()
    return (*backend, *name.selection_tags)


@dataclass(frozen=True)
class TagTrigger:
    path: str  # a PATH rule (path_matches)
    token: str


@dataclass(frozen=True)
class FileGroup:
    """Files of one kind: a change touching only these runs only the selected stages matching `stages`."""

    name: str
    paths: tuple[str, ...]  # PATH rules
    stages: tuple[str, ...]  # stage-name globs (`*` only)

    def covers(self, path: str) -> bool:
        return any(path_matches(rule, path) for rule in self.paths)


@dataclass(frozen=True)
class ChangeRules:
    """Which changed files the change-based rules claim besides the test-db's own (cbts.py): PATH rules."""

    tests: tuple[str, ...] = ()
    docs: tuple[str, ...] = ()
    out_of_scope: tuple[str, ...] = ()
    readers: tuple[TextReader, ...] = ()


@dataclass(frozen=True)
class CheckPolicy:
    """What `ci-tool testdb check` holds the test-db to beyond its schema (the catalog's `checks:`). The
    defaults are ci-tool's stricter rules; a project moving over keeps its own (TensorRT-LLM's test-db
    carries `TIMEOUT (60)` on many lines, and its check leaves `unittest/` waives out of the stale rule)."""

    redundant_timeouts: bool = True  # flag a TIMEOUT marker that repeats the default per-test limit
    stale_waives: bool = True  # flag a waive that names a test in no list (off: waives also cover other lists)
    stale_waives_exempt: tuple[str, ...] = ()  # waives under these PATH rules are never stale

    def exempts(self, test_id: str) -> bool:
        """Whether a waive of `test_id` is left out of the stale-waive rule."""
        return not self.stale_waives or any(path_matches(rule, test_id) for rule in self.stale_waives_exempt)


@dataclass(frozen=True)
class TextReader:
    """A test path that reads files as text, not by importing them (a check of the code itself: its layers,
    names or style): no touch record and no import shows that it reaches them, so a change to a file matching
    one of `reads` (PATH rules) runs it."""

    test: str
    reads: tuple[str, ...]

    def reads_any(self, paths: Sequence[str]) -> tuple[str, ...]:
        """The paths of `paths` this test reads."""
        return tuple(path for path in paths if any(path_matches(rule, path) for rule in self.reads))


@dataclass(frozen=True)
class FamilyList:
    """What a family's test list renders from (stages/planner.py renders it): the family's name (no shard), its
    test-db context and build architecture, what its platform's runners report (None: the name's facts alone)
    and, narrowed by change-based selection, the filter its render goes through."""

    name: StageName
    context: str
    arch: str = "x86_64"
    facts: Mapping[str, QueryValue] | None = field(default=None, compare=False)
    line_filter: LineFilter | None = None


@dataclass(frozen=True)
class Family:
    """One catalog entry, resolved: a family name and how its stages run. A family narrowed by change-based
    selection (cbts.py) carries the filter its render goes through, and its narrowed shard count."""

    name: StageName  # shard is None
    platform: str
    context: str  # "" for the docs stage, which renders no list
    splits: int  # the shard count (resolved when written `auto`; 1 for a non-test stage)
    timeout_minutes: int
    timeout_derived: bool  # False when written in the catalog
    predicted_minutes: float  # of the slowest stage: an upper bound (a greedy split), for `facts`
    arch: str
    where: Where
    executor: Executor = Executor.LOCAL
    line_filter: LineFilter | None = None  # narrowed: the lines of its render it runs
    parallel_tests: bool = False  # its tests run in several processes at once (pytest-xdist), one per core given
    # what its platform's runners report (the catalog's `platforms:`), which a dry run renders with in place of
    # a machine's probe; None: the catalog does not say, and the stage name's facts stand alone
    facts: Mapping[str, QueryValue] | None = field(default=None, compare=False)

    @property
    def listing(self) -> FamilyList:
        """What its list renders from."""
        return FamilyList(self.name, self.context, self.arch, self.facts, self.line_filter)


@dataclass(frozen=True)
class Stage:
    """One stage: `<family>-<shard>` (a non-test stage: the family's name). Everything but the name comes
    from its family."""

    name: StageName  # with its shard index (none for a non-test stage)
    family: Family

    @property
    def shard(self) -> int:
        return self.name.shard if self.name.shard is not None else 1

    @property
    def platform(self) -> str:
        return self.family.platform

    @property
    def context(self) -> str:
        return self.family.context

    @property
    def splits(self) -> int:
        return self.family.splits

    @property
    def timeout_minutes(self) -> int:
        return self.family.timeout_minutes

    @property
    def arch(self) -> str:
        return self.family.arch

    @property
    def executor(self) -> Executor:
        return self.family.executor

    @property
    def gpu_count(self) -> int:
        return self.name.gpu_count

    @property
    def node_count(self) -> int:
        return self.name.node_count

    @property
    def mode(self) -> TestMode:
        return self.name.mode

    @property
    def post_merge(self) -> bool:
        return self.name.post_merge

    @property
    def multi_gpu(self) -> bool:
        return self.name.multi_gpu

    @property
    def on_demand(self) -> bool:
        return self.name.on_demand

    def to_json(self) -> dict[str, object]:
        """The `ci-tool stages list --json` object: exactly these keys, in this order."""
        return {
            "name": self.name.name,
            "family": self.family.name.name,
            "platform": self.platform,
            "context": self.context,
            "shard": self.shard,
            "splits": self.splits,
            "gpu": self.name.gpu,
            "gpu_count": self.gpu_count,
            "node_count": self.node_count,
            "backend": self.name.backend,
            "mode": self.mode.value,
            "post_merge": self.post_merge,
            "multi_gpu": self.multi_gpu,
            "on_demand": self.on_demand,
            "timeout_minutes": self.timeout_minutes,
            "arch": self.arch,
            "executor": self.executor.value,
        }


@dataclass(frozen=True)
class Catalog:
    """The validated catalog: families in file order and their stages, family by family."""

    file: str
    families: tuple[Family, ...]
    stages: tuple[Stage, ...]
    timeouts: TimeoutRule = TimeoutRule()
    multi_gpu_paths: tuple[str, ...] = ()
    tag_triggers: tuple[TagTrigger, ...] = ()
    file_groups: tuple[FileGroup, ...] = ()
    change_rules: ChangeRules = ChangeRules()
    checks: CheckPolicy = CheckPolicy()
    platforms: Mapping[str, Mapping[str, QueryValue]] = field(default_factory=dict)  # pool label -> facts

    @functools.cached_property
    def by_name(self) -> Mapping[str, Stage]:
        return {stage.name.name: stage for stage in self.stages}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(stage.name.name for stage in self.stages)

    @functools.cached_property
    def _by_family(self) -> Mapping[str, tuple[Stage, ...]]:
        grouped: dict[str, list[Stage]] = {}
        for stage in self.stages:
            grouped.setdefault(stage.family.name.name, []).append(stage)
        return {family: tuple(stages) for family, stages in grouped.items()}

    def stages_of(self, family: Family) -> tuple[Stage, ...]:
        return self._by_family.get(family.name.name, ())

    def stage(self, name: str) -> Stage:
        """The stage called `name`; a StageError names the closest stages otherwise."""
        found = self.by_name.get(name)
        if found is None:
            raise StageError(
                f"expected a stage of the catalog, found no stage {name!r}",
                where=Where(self.file),
                hint=did_you_mean(name, self.names) or STAGES_LIST_HINT,
            )
        return found
