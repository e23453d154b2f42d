"""What each selection rule runs for a replayed commit (mutation_replay_bench.py), through the real selection:
today's catalog and test-db, the commit's change read from git (change/git_read.py), the touch records of the
throw-away history (change/touch_evidence.py), `select_for_change` and the planner.

    full set                  `/bot run --disable-cbts`: every pre-merge stage, its whole list
    today's rules             `/bot run` without touch records: a source file no rule claims runs the full set
    touched, file grain       `/bot run` with the records cut to files: a changed file runs every test whose
                              records ran any line of it in a test (the rule before records had units)
    touched, function grain   `/bot run` with the records as they are (change/touched_rule.py)
    import reach              `/bot run` as if no GPU type had records: each stage runs the test paths that
                              can load a changed file (change/import_reach.py), what a stage of a GPU type that
                              never recorded runs

The engine's part of a CPU stage is what the bench runs: each line's test files that can reach the engine's
package (replay_scope.py); a folder line runs those files one by one, in path order, with the line's
`-k`/`-m` filter. A line that holds none keeps its place in the stage with its predicted seconds (for the
time to the first failure): it passes with every fault the bench plants, so it is never run. A line that
holds some counts only those (its other files' seconds left out: today's order reaches a failure sooner).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from replay_runs import Batch, TestResult, hits
from replay_scope import EngineScope

from ci_tool.bot.grammar import parse_comment
from ci_tool.change.narrowing import split_filters
from ci_tool.change.touch_records import OUTSIDE_TESTS, GpuRecord, TouchEvidence
from ci_tool.change.units import UnitChange
from ci_tool.change.value import ChangeSet
from ci_tool.stages.catalog_load import LoadedCatalog
from ci_tool.stages.durations import Durations, estimate_seconds
from ci_tool.stages.engines import Engine
from ci_tool.stages.select import select_for_change
from ci_tool.stages.stage_plan import StagePlan

WHOLE_FILE = "<whole file>"  # the file grain's one unit


class Rule(enum.StrEnum):
    FULL = "full set"
    TODAY = "today's rules"
    FILE = "touched, file grain"
    FUNCTION = "touched, function grain"
    REACH = "import reach"


NARROWING = (Rule.TODAY, Rule.FILE, Rule.FUNCTION, Rule.REACH)


@dataclass(frozen=True)
class RulePlan:
    """A rule's selection for one commit: its scope and reasons, and the planned stages."""

    rule: Rule
    scope: str
    reasons: tuple[str, ...]
    plans: Mapping[str, StagePlan]

    @property
    def gpu_minutes(self) -> float:
        """Predicted minutes times GPUs of the GPU stages (test-db/.test_durations and the catalog)."""
        return math.fsum(plan.predicted_minutes * plan.name.gpu_count for plan in self._gpu())

    @property
    def gpu_stage_minutes(self) -> float:
        return math.fsum(plan.predicted_minutes for plan in self._gpu())

    def cpu_lines(self) -> dict[str, tuple[str, ...]]:
        """CPU test stage -> its lines' test ids (path and filter), in list order."""
        return {name: tuple(line.test_id for line in plan.lines) for name, plan in self.plans.items()
                if plan.name.is_cpu and plan.name.is_test}  # fmt: skip

    def _gpu(self) -> list[StagePlan]:
        return [plan for plan in self.plans.values() if not plan.name.is_cpu]


def rule_plans(loaded: LoadedCatalog, change: ChangeSet, rules: Sequence[Rule] = tuple(Rule)) -> dict[Rule, RulePlan]:
    """Each rule's plan for `change` (see the module docstring), of `rules`."""
    evidence = change.touches
    changes = {
        Rule.FULL: change,
        Rule.TODAY: replace(change, touches=None),
        Rule.FILE: replace(change, touches=file_grain(evidence) if evidence is not None else None),
        Rule.FUNCTION: change,
        Rule.REACH: replace(change, touches=reach_only(evidence) if evidence is not None else None),
    }
    return {rule: _plan(loaded, rule, found) for rule, found in changes.items() if rule in rules}


def post_merge_plan(loaded: LoadedCatalog, change: ChangeSet) -> RulePlan:
    """What a post-merge run of the change's head runs: the full set and the Post-Merge stages, whole (the
    run that records touches)."""
    return _plan(loaded, Rule.FULL, change, comment="/bot run --post-merge --disable-cbts")


def _plan(loaded: LoadedCatalog, rule: Rule, change: ChangeSet, *, comment: str = "") -> RulePlan:
    comment = comment or ("/bot run --disable-cbts" if rule is Rule.FULL else "/bot run")
    request = parse_comment(comment).selection_request()
    selection = select_for_change(loaded, request, engine=Engine.LOCAL, changes=change)
    plans = loaded.planner.selection(selection.selected, allow_empty=True)
    narrowing = selection.narrowing
    scope = narrowing.scope.value if narrowing is not None else "off"
    return RulePlan(rule, scope, narrowing.reasons if narrowing is not None else (), plans)


def file_grain(evidence: TouchEvidence) -> TouchEvidence:
    """The records cut to files: each changed file's one unit is the whole file, run by every test that ran a
    line of it in a test (what ran outside the tests belongs to none), whatever the change edits in it."""
    files = {}
    for path, found in evidence.files.items():
        if found.change.undecided:
            files[path] = found
            continue
        records = {gpu: GpuRecord({WHOLE_FILE: record.tests - {OUTSIDE_TESTS}}, record.commits)
                   for gpu, record in found.records.items()}  # fmt: skip
        files[path] = replace(found, change=UnitChange(units=(WHOLE_FILE,)), records=records)
    return replace(evidence, files=files)


def reach_only(evidence: TouchEvidence) -> TouchEvidence:
    """The evidence of a history where no GPU type has records: the touched rule judges each changed file by
    the test paths that can load it, on every GPU type."""
    unrecorded = {path: replace(found, records={}, stale={}) for path, found in evidence.files.items()}
    readers = {path: replace(found, records={}, stale={}) for path, found in evidence.readers.items()}
    return replace(evidence, files=unrecorded, readers=readers, gpu_types={})


@dataclass(frozen=True)
class Slot:
    """One line of a stage's list, in list order: the engine's test paths it holds (the bench runs them), or
    the predicted seconds of a line that holds none (never run: no fault the bench plants reaches it)."""

    filters: str = ""
    paths: tuple[str, ...] = ()
    seconds: float = 0.0


Stages = Mapping[str, Sequence[Slot]]  # stage -> its lines as slots


def stage_slots(
    lines: Mapping[str, Sequence[str]], tree: Path, package: str, durations: Durations
) -> dict[str, list[Slot]]:
    """Each CPU stage's lines on `tree` as slots (see the module docstring and Slot)."""
    scope = EngineScope(tree, package)
    found: dict[str, list[Slot]] = {}
    for stage, test_ids in lines.items():
        predicted = estimate_seconds(list(test_ids), durations).seconds if test_ids else {}
        slots = found.setdefault(stage, [])
        for test_id in test_ids:
            selector, filters = split_filters(test_id)
            paths = tuple(_engine_paths(tree, selector, scope))
            slots.append(Slot(filters.strip(), paths) if paths else Slot(seconds=predicted[test_id]))
    return found


def engine_batches(stages: Stages) -> list[Batch]:
    """The engine's part of the stages as pytest processes: per stage, one batch per filter, in the order its
    lines first use it."""
    batches: list[Batch] = []
    for stage, slots in stages.items():
        by_filter: dict[str, list[str]] = {}
        for slot in slots:
            if slot.paths:
                by_filter.setdefault(slot.filters, []).extend(slot.paths)
        batches += [Batch(stage, tuple(dict.fromkeys(paths)), filters) for filters, paths in by_filter.items()]
    return batches


def _engine_paths(tree: Path, selector: str, scope: EngineScope) -> list[str]:
    path = selector.split("::", 1)[0].split("[", 1)[0]
    found = tree / path
    if found.is_dir():
        files = [file.relative_to(tree).as_posix() for file in sorted(found.rglob("test_*.py"))]
        return [file for file in files if scope.holds(file)]
    return [selector] if found.is_file() and scope.holds(path) else []


def covered(results: Sequence[TestResult], batches: Sequence[Batch]) -> list[TestResult]:
    """The results of a run of the full set that a narrowed set's batches run too (the same filter, a path
    that selects the test), in the order they ran."""
    paths: dict[str, list[str]] = {}
    for batch in batches:
        paths.setdefault(batch.filters, []).extend(batch.paths)
    return [result for result in results if any(hits(path, result.test_id) for path in paths.get(result.filters, ()))]
