"""Change-based test selection (selection step 16, as TensorRT-LLM's CI narrows a change): from a change's
files, the narrowed set of a bare `/bot run` or `/bot run --post-merge`. Pure: values in (catalog, the planner
of its test-db and durations, the ChangeSet), a Narrowing out, which the selection applies.

Each changed file is claimed by the first rule that claims it:

    rule          claims                                 runs
    out of scope  change_rules.out_of_scope              nothing (durations, benchmarks)
    waives        TEST_DB/waives.txt                     the tests whose waives the change removed
    test-db       TEST_DB/*.yml                          the entries the change added or changed
    tests         a test file under change_rules.tests   the list entries that cover it, cut down to it
                  that a list entry covers, or a          (a conftest.py: to its folder); a deleted file:
                  conftest.py there (not a helper         only the entries that name it
                  module or data file: its readers
                  are elsewhere)
    docs          change_rules.docs                      the docs stage
    touched       a Python file, tests aside, once a      per GPU type, the tests whose records there ran
                  GPU type has touch records (post-merge  the units the change edits (touched_rule.py;
                  runs and `--record-touches` make them;  where no record of a GPU type can tell, the
                  not in a post-merge request, which      test paths that can load the file, its import
                  runs everything)                        reach; the full set where that is unknown)

Whatever claims a file, a test that reads it as text (change_rules.readers: a check of the code itself, which
no touch record or import shows reaching it) runs too. A file no rule claims, or a rule that cannot decide
(no base revision to compare the test-db with, a file that does not read), runs the full set. When every
file is claimed the set is narrowed: a family keeps the lines of its render the rules' filter keeps
(change/narrowing.LineFilter: every rule's paths, and the touched rule's for the family's GPU type; the planner
filters the render it made loading the catalog, rendering no list again) and runs them on
`k = clamp(ceil(predicted / budget), 1, splits)` shards, its stages named `<family>-<K>-cbts`; a family that
keeps none drops out; a family whose GPU type the touched rule runs in full keeps its own stages. Nothing
kept and no docs to check is a noop: no test stage runs.
"""

from __future__ import annotations

import enum
import math
import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ci_tool.change.narrowing import LineFilter, NarrowPath, split_filters
from ci_tool.change.touch_records import TouchEvidence
from ci_tool.change.touched_rule import plan_touched
from ci_tool.change.value import ChangeSet, is_test_file, test_path_of
from ci_tool.errors import CiToolError
from ci_tool.layout import WAIVES_NAME
from ci_tool.stages.catalog import Catalog, Family, Stage, path_matches
from ci_tool.stages.names import StageKind
from ci_tool.stages.planner import Planner
from ci_tool.stages.selection_request import SelectionRequest
from ci_tool.testdb.check import covers
from ci_tool.testdb.load import parse_test_db_file
from ci_tool.testdb.model import TestDb
from ci_tool.testdb.waives import parse_waives

NARROWED_SHARD_BUDGET_MINUTES = 120  # a narrowed shard's predicted minutes (TensorRT-LLM's 2 h)
_SHOWN_FILES = 3  # changed files a reason names before counting the rest


class CbtsScope(enum.StrEnum):
    OFF = "off"  # a selection option, --disable-cbts, or no changed files
    FULL = "full"  # a file no rule claims, or a rule that cannot decide
    NARROWED = "narrowed"
    NOOP = "noop"  # nothing to test: no test stage runs


@dataclass(frozen=True)
class FamilyNarrowing:
    """A family that keeps tests: its filter, what it keeps (rendered as the catalog renders it: the facts its
    platform reports, else the stage name's) and its narrowed shard count."""

    family: str
    line_filter: LineFilter
    lines: int
    predicted_seconds: float
    shards: int
    full: str = ""  # why the family runs its full set, as its own stages ("" when it is narrowed)
    touched: tuple[str, ...] = ()  # the touched rule's lines for the family's GPU type

    def to_json(self) -> dict[str, object]:
        found: dict[str, object] = {"lines": self.lines, "predicted_seconds": round(self.predicted_seconds, 3),
                                    "shards": self.shards}  # fmt: skip
        # a narrowed family's filter: what its `-cbts` stage jobs run (record.py), decided here once
        return found | ({"full": self.full} if self.full else {"filter": self.line_filter.to_json()})


@dataclass(frozen=True)
class Narrowing:
    """What change-based selection makes of a request: its scope, one reason per rule (for the plan), the
    families that keep tests, and whether the docs stage runs."""

    scope: CbtsScope
    reasons: tuple[str, ...]
    families: Mapping[str, FamilyNarrowing] = field(default_factory=dict)
    docs: bool = False
    claimed: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # rule -> the files it claimed
    unclaimed: tuple[str, ...] = ()  # the files no rule claims (they run the full set)

    @property
    def narrows(self) -> bool:
        return self.scope in (CbtsScope.NARROWED, CbtsScope.NOOP)

    def to_json(self) -> dict[str, object]:
        """TensorRT-LLM's CBTS output, as far as it applies: scope, reasons, and per family what it keeps."""
        return {
            "scope": self.scope.value,
            "reasons": list(self.reasons),
            "families": {name: found.to_json() for name, found in self.families.items()},
            "docs": self.docs,
        }


@dataclass
class _Effect:
    """What the claimed files ask for, gathered over the rules."""

    paths: list[NarrowPath] = field(default_factory=list)
    entries: list[tuple[str, str]] = field(default_factory=list)
    docs: bool = False
    undecided: list[str] = field(default_factory=list)  # why a rule could not decide
    gpu_paths: dict[str, list[NarrowPath]] = field(default_factory=dict)  # GPU type -> what its stages add
    full_gpus: dict[str, str] = field(default_factory=dict)  # GPU type -> why its stages run their full set
    gpu_reasons: dict[str, list[str]] = field(default_factory=dict)  # GPU type -> the touched rule's lines


@dataclass(frozen=True)
class _Inputs:
    catalog: Catalog
    db: TestDb
    changes: ChangeSet
    post_merge: bool = False  # a post-merge run: a source change runs everything (and records it again)

    @property
    def waives_file(self) -> str:
        return f"{self.changes.test_db_dir}/{WAIVES_NAME}"


Claim = Callable[[str, _Inputs], bool]
Apply = Callable[[Sequence[str], _Inputs, _Effect], str | list[str]]  # the files it claimed -> its reason(s)


@dataclass(frozen=True)
class _Rule:
    name: str
    claims: Claim
    apply: Apply


def narrow(catalog: Catalog, planner: Planner, request: SelectionRequest, changes: ChangeSet | None) -> Narrowing:
    """The narrowing of `request` for `changes` (see the module docstring)."""
    off = request.narrowing_off
    if off is not None:
        return Narrowing(CbtsScope.OFF, (f"change-based selection off: {off}",))
    if changes is None or not changes.files:
        return Narrowing(CbtsScope.OFF, ("change-based selection off: no changed files given",))
    inputs = _Inputs(catalog, planner.db, changes, post_merge=request.post_merge)
    claimed: dict[str, list[str]] = {rule.name: [] for rule in RULES}
    unclaimed: list[str] = []
    for path in changes.files:
        rule = next((rule for rule in RULES if rule.claims(path, inputs)), None)
        (claimed[rule.name] if rule is not None else unclaimed).append(path)
    effect = _Effect()
    reasons: list[str] = []
    for rule in RULES:
        if claimed[rule.name]:
            said = rule.apply(claimed[rule.name], inputs, effect)
            reasons += [said] if isinstance(said, str) else said
    found = {name: tuple(paths) for name, paths in claimed.items() if paths}
    reasons += _add_readers(inputs, effect)
    if unclaimed:
        reasons.append(f"{_files(unclaimed)}: no rule claims {'them' if len(unclaimed) > 1 else 'it'}")
    if unclaimed or effect.undecided:
        reasons.append("change-based selection: the full set runs")
        return Narrowing(CbtsScope.FULL, tuple(reasons), claimed=found, unclaimed=tuple(unclaimed))
    families = _families(catalog, planner, effect)
    scope = CbtsScope.NARROWED if families or effect.docs else CbtsScope.NOOP
    reasons.append(_summary(len(families), effect.docs))
    return Narrowing(scope, tuple(reasons), families, effect.docs, claimed=found)


def _add_readers(inputs: _Inputs, effect: _Effect) -> list[str]:
    """The tests that read a changed file as text (change_rules.readers), whatever the rules narrowed to; a
    line each."""
    lines = []
    for reader in inputs.catalog.change_rules.readers:
        read = reader.reads_any(inputs.changes.files)
        if read:
            effect.paths.append(NarrowPath(reader.test))
            lines.append(f"{reader.test}: readers rule: it reads {_files(read)} as text")
    return lines


def _summary(families: int, docs: bool) -> str:
    if not families:
        return (
            "change-based selection: the docs stage only" if docs else "change-based selection: noop (nothing to test)"
        )
    narrowed = f"change-based selection: narrowed to {families} famil{'ies' if families != 1 else 'y'}"
    return narrowed + (" and the docs stage" if docs else "")


def _families(catalog: Catalog, planner: Planner, effect: _Effect) -> dict[str, FamilyNarrowing]:
    found: dict[str, FamilyNarrowing] = {}
    for family in _narrowable(catalog):
        full = effect.full_gpus.get(family.name.gpu_type, "")
        paths = [*effect.paths, *effect.gpu_paths.get(family.name.gpu_type, ())]
        line_filter = LineFilter(tuple(dict.fromkeys(paths)), tuple(dict.fromkeys(effect.entries)))
        rendered = planner.render(replace(family.listing, line_filter=None if full else line_filter), allow_empty=True)
        if rendered.test_ids:
            seconds = math.fsum(rendered.seconds)
            shards = family.splits if full else narrowed_shards(family, seconds, len(rendered.test_ids))
            touched = tuple(effect.gpu_reasons.get(family.name.gpu_type, ()))
            found[family.name.name] = FamilyNarrowing(
                family.name.name, line_filter, len(rendered.rendered), seconds, shards, full, touched
            )
    return found


def _narrowable(catalog: Catalog) -> list[Family]:
    """The families change-based selection narrows: those that render a test-db list."""
    return [f for f in catalog.families if f.context and f.name.kind in (StageKind.TEST, StageKind.PACKAGE_SANITY)]


def narrowed_stages(family: Family, shards: int, line_filter: LineFilter) -> list[Stage]:
    """A narrowed family's stages `<family>-<K>-cbts`, K = 1..shards: its render through `line_filter`, split
    over `shards` (the selection makes them, and a pipeline's stage job from the run record alike)."""
    narrowed = replace(family, splits=shards, line_filter=line_filter)
    return [Stage(family.name.with_shard(k).with_cbts(), narrowed) for k in range(1, shards + 1)]


def cbts_stages(catalog: Catalog) -> list[Stage]:
    """Every `-cbts` stage a selection can name: one per shard of each family change-based selection
    narrows (a narrowed family runs on at most its own shard count), each with its family as the catalog
    has it (the generated pipelines' stage tables: runner, timeout, executor)."""
    return [
        Stage(stage.name.with_cbts(), family)
        for family in _narrowable(catalog)
        if family.name.is_test
        for stage in catalog.stages_of(family)
    ]


def narrowed_shards(family: Family, predicted_seconds: float, tests: int) -> int:
    """k = clamp(ceil(predicted / budget), 1, splits), and no more shards than tests."""
    budget = NARROWED_SHARD_BUDGET_MINUTES * 60
    return max(1, min(family.splits, tests, math.ceil(predicted_seconds / budget)))


# ---------------------------------------------------------------- the rules


def _claims_out_of_scope(path: str, inputs: _Inputs) -> bool:
    return any(path_matches(rule, path) for rule in inputs.catalog.change_rules.out_of_scope)


def _apply_out_of_scope(paths: Sequence[str], inputs: _Inputs, effect: _Effect) -> str:
    return f"{_files(paths)}: out of scope: nothing to test"


def _claims_waives(path: str, inputs: _Inputs) -> bool:
    return path == inputs.waives_file


def _apply_waives(paths: Sequence[str], inputs: _Inputs, effect: _Effect) -> str:
    path = paths[0]
    texts = _texts(path, inputs)
    if isinstance(texts, str):
        effect.undecided.append(texts)
        return f"{path}: waives rule: cannot decide ({texts})"
    before, after = texts
    old, old_problems = parse_waives(before or "", _at_base(path))
    new, new_problems = parse_waives(after or "", path)
    if old_problems or new_problems:
        problem = (old_problems or new_problems)[0]
        effect.undecided.append(str(problem))
        return f"{path}: waives rule: cannot decide ({problem})"
    kept = {(waive.test_id, waive.gpu) for waive in new}
    removed = [waive for waive in old if (waive.test_id, waive.gpu) not in kept]
    effect.paths += [NarrowPath(waive.test_id, waive.gpu) for waive in removed]
    if not removed:
        return f"{path}: waives rule: the change removes no waive: nothing to run"
    named = ", ".join(("full:" + w.gpu + "/" if w.gpu else "") + w.test_id for w in removed[:_SHOWN_FILES])
    more = f" and {len(removed) - _SHOWN_FILES} more" if len(removed) > _SHOWN_FILES else ""
    return f"{path}: waives rule: runs the {len(removed)} test(s) whose waives it removes ({named}{more})"


def _claims_test_db(path: str, inputs: _Inputs) -> bool:
    folder, name = posixpath.split(path)
    return folder == inputs.changes.test_db_dir and name.endswith((".yml", ".yaml"))


def _apply_test_db(paths: Sequence[str], inputs: _Inputs, effect: _Effect) -> str:
    added: list[tuple[str, object, str]] = []
    for path in paths:
        texts = _texts(path, inputs)
        if isinstance(texts, str):
            effect.undecided.append(texts)
            return f"{_files(paths)}: test-db rule: cannot decide ({texts})"
        try:
            before, after = _entries(texts[0], _at_base(path)), _entries(texts[1], path)
        except CiToolError as error:
            effect.undecided.append(str(error))
            return f"{_files(paths)}: test-db rule: cannot decide ({error})"
        added += [entry for entry in after if entry not in before]
    effect.entries += [(context, raw) for context, _condition, raw in added]
    if not added:
        return f"{_files(paths)}: test-db rule: the change adds or changes no entry: nothing to run"
    entries = f"{len(added)} entr{'ies' if len(added) != 1 else 'y'}"
    return f"{_files(paths)}: test-db rule: runs the {entries} it adds or changes"


def _entries(text: str | None, path: str) -> list[tuple[str, object, str]]:
    """(context, condition, line as written) of every entry of a test-db file's text."""
    if text is None:
        return []
    contexts, problems = parse_test_db_file(text, path)
    if problems:
        raise problems[0]
    return [
        (context.name, block.condition.identity(), entry.line.raw)
        for context in contexts
        for block in context.blocks
        for entry in block.entries
    ]


def _claims_tests(path: str, inputs: _Inputs) -> bool:
    """A test file a list entry covers, or a conftest.py, under change_rules.tests. Not a helper module or a
    data file there: the tests that read one live in other files, which its own path does not run (the
    touched rule and change/import_reach.py find them for a module with records; otherwise the full set runs)."""
    if not any(path_matches(rule, path) for rule in inputs.catalog.change_rules.tests):
        return False
    if posixpath.basename(path) == "conftest.py":
        return True
    selectors = _selectors(inputs.db)
    return is_test_file(path) and any(covers(selector, path) or covers(path, selector) for selector in selectors)


def _apply_tests(paths: Sequence[str], inputs: _Inputs, effect: _Effect) -> str:
    for path in paths:
        if path in inputs.changes.deleted and is_test_file(path):  # only entries naming it still reach it
            effect.paths += [NarrowPath(s) for s in _selectors(inputs.db) if covers(path, s)]
        else:
            effect.paths.append(NarrowPath(test_path_of(path) or path))  # the rule claims no other file
    return f"{_files(paths)}: tests rule: runs the list entries that cover {'them' if len(paths) > 1 else 'it'}"


def _selectors(db: TestDb, context: str | None = None) -> set[str]:
    """The paths the lines of `context` (None: every context) name, their filters left out."""
    if context is None:
        contexts = list(db.contexts.values())
    else:
        contexts = [db.contexts[context]] if context in db.contexts else []
    return {
        split_filters(entry.line.test_id)[0] for found in contexts for block in found.blocks for entry in block.entries
    }


def _claims_docs(path: str, inputs: _Inputs) -> bool:
    return any(path_matches(rule, path) for rule in inputs.catalog.change_rules.docs)


def _apply_docs(paths: Sequence[str], inputs: _Inputs, effect: _Effect) -> str:
    effect.docs = True
    return f"{_files(paths)}: docs rule: the docs stage checks {'them' if len(paths) > 1 else 'it'}"


def _claims_touched(path: str, inputs: _Inputs) -> bool:
    touches = inputs.changes.touches
    return not inputs.post_merge and touches is not None and (path in touches.files or path in touches.added)


def _apply_touched(paths: Sequence[str], inputs: _Inputs, effect: _Effect) -> list[str]:
    touches = inputs.changes.touches
    if touches is None:  # never: the rule claims only files it has records of
        return []
    gpu_types = sorted({family.name.gpu_type for family in _narrowable(inputs.catalog)})
    plan = plan_touched(
        _listed_only(touches, inputs), paths, gpu_types, test_path=lambda path: _test_path(path, inputs)
    )
    for gpu_type, found in plan.paths.items():
        effect.gpu_paths.setdefault(gpu_type, []).extend(found)
    for gpu_type, why in plan.full.items():
        effect.full_gpus.setdefault(gpu_type, why)
    for gpu_type, lines in plan.by_gpu.items():
        effect.gpu_reasons.setdefault(gpu_type, []).extend(lines)
    effect.undecided += plan.undecided
    return plan.reasons


def _listed_only(touches: TouchEvidence, inputs: _Inputs) -> TouchEvidence:
    """The evidence with each GPU type's test files that no record ran cut to those its families' lists hold
    (a line under the file, or above it): no stage of the GPU type runs the others, and the plan would
    count them."""
    selectors: dict[str, set[str]] = {}
    for family in _narrowable(inputs.catalog):
        selectors.setdefault(family.name.gpu_type, set()).update(_selectors(inputs.db, family.context))

    def listed(gpu_type: str, path: str) -> bool:
        return any(covers(line, path) or covers(path, line) for line in selectors.get(gpu_type, ()))

    gpu_types = {
        gpu_type: replace(found, unrecorded_test_files=tuple(
            path for path in found.unrecorded_test_files if listed(gpu_type, path)))
        for gpu_type, found in touches.gpu_types.items()
    }  # fmt: skip
    return replace(touches, gpu_types=gpu_types)


def _test_path(path: str, inputs: _Inputs) -> NarrowPath | None:
    """What a test file changed since the records runs (the tests rule's claim and path); None: no test file."""
    found = test_path_of(path) if path.endswith(".py") and _claims_tests(path, inputs) else None
    return NarrowPath(found) if found is not None else None


RULES: tuple[_Rule, ...] = (
    _Rule("out of scope", _claims_out_of_scope, _apply_out_of_scope),
    _Rule("waives", _claims_waives, _apply_waives),
    _Rule("test-db", _claims_test_db, _apply_test_db),
    _Rule("tests", _claims_tests, _apply_tests),
    _Rule("docs", _claims_docs, _apply_docs),
    _Rule("touched", _claims_touched, _apply_touched),  # last: a rule of the paths' own kind decides first
)


# ---------------------------------------------------------------- helpers


def _texts(path: str, inputs: _Inputs) -> tuple[str | None, str | None] | str:
    """A changed test-db file at the base and now, or why it cannot be compared."""
    if inputs.changes.base is None:
        return "no base revision to compare it with; pass --base REF"
    return inputs.changes.base.get(path), inputs.changes.now.get(path)


def _at_base(path: str) -> str:
    """How a file's text at the base revision is named in its errors."""
    return f"{path} at the base"


def _files(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:_SHOWN_FILES])
    return shown + (f" and {len(paths) - _SHOWN_FILES} more" if len(paths) > _SHOWN_FILES else "")
