"""The touched rule of change-based selection (stages/cbts.py): a changed source file narrows each GPU type's stages
to the tests that ran what the change edits there, and where no record can say, to the test paths that can
load the file (its import reach, change/import_reach.py). Pure: the TouchEvidence in (change/touch_records.py,
whose docstring says when a record is stale), what each GPU type runs out.

    for each changed file F the rule claims (a Python file of the change, tests aside, where some GPU type has
    records), and each file that reads a name F exports (touch_records.TouchEvidence.readers: its reading
    units are its edit):
      F cannot narrow anywhere (it does not parse, or it edits module-level code, a new def's header
        among it, of a module whose import reach is not known): the rule cannot decide, and the full set runs
    and then for each GPU type G of the catalog's test families:
      G has no records at all, F's records on G are stale, none of G's records ran F (a process a test
        started with an environment of its own is not measured), or a function the change edits ran outside
        the tests on G (at import: every test may read what it made): no record of G can say what reaches
        F, so G's stages run the test paths that can load F (what cannot import it cannot run it); its full
        set where those are not known (a file on the way does not parse; every test loads F: ci-tool's
        runner plugins, the project's pytest plugins or a rootdir conftest.py reach it)
      else: G's stages run the tests whose records on G ran a unit the change edits (none when no test
        of G ran one), each test function once; where the change reaches F's module-level code (its own
        edit there, a def it adds, or F reads a changed name at import), the tests that ran any unit of F,
        and the test paths that can load F (what it made at import, they may read; what can call a new def
        is F's code, which those tests ran, or an importer's); the same test paths where a function it edits
        ran outside the tests (some importer's import-time code called it)
    a G that has records also runs, among the tests its records cannot speak for (its stale tests' files,
    the test files changed since its records, the tests its records ran unmeasured (`timed`), and the test
    files no record of G ran), those that can load a changed file; all of them where some changed file's
    import reach is not known.

    a Python file F the change adds (no record knows it; touch_records.AddedFile): where a file the change
    leaves as it is loads F, the rule cannot decide; else F runs only through the changed files that load
    it, whose own lines above select its tests, and F adds none of its own
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ci_tool.change.narrowing import NarrowPath, split_filters
from ci_tool.change.touch_records import OUTSIDE_TESTS, AddedFile, GpuRecord, RecordedFile, TouchEvidence
from ci_tool.change.units import MODULE_UNIT
from ci_tool.testdb.check import covers

_SHOWN = 3  # commits or units a line names before counting the rest


@dataclass
class TouchedPlan:
    """What the touched rule asks of each GPU type's stages, and one line per file and GPU type saying why."""

    paths: dict[str, list[NarrowPath]] = field(default_factory=dict)  # GPU type -> what its stages run
    full: dict[str, str] = field(default_factory=dict)  # GPU type -> why its stages run their full set
    undecided: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    by_gpu: dict[str, list[str]] = field(default_factory=dict)  # GPU type -> its lines among `reasons`

    def say(self, gpu_type: str, line: str) -> None:
        self.reasons.append(line)
        self.by_gpu.setdefault(gpu_type, []).append(line)


TestPath = Callable[[str], NarrowPath | None]  # a changed file -> the test path it runs (None: no test file)


def plan_touched(
    evidence: TouchEvidence, files: Sequence[str], gpu_types: Sequence[str], *, test_path: TestPath
) -> TouchedPlan:
    """The touched rule's plan for the claimed `files` on the stages of `gpu_types` (see the module docstring);
    `test_path` says which changed files are test files (the tests rule's claim)."""
    plan = TouchedPlan()
    recorded = [evidence.files[path] for path in files if path in evidence.files]
    recorded += [found for found in evidence.readers.values() if set(found.read_from) & set(files)]
    added = [evidence.added[path] for path in files if path in evidence.added]
    undecidable: list[RecordedFile | AddedFile] = [*recorded, *added]
    for found in undecidable:
        if found.unrecorded:
            plan.undecided.append(found.unrecorded)
            plan.reasons.append(f"{found.path}: touched rule: cannot narrow ({found.unrecorded})")
    if plan.undecided:
        return plan
    plan.reasons += [_added_line(found) for found in added]
    reach = _reach(recorded)
    for gpu_type in gpu_types:
        for found in recorded:
            plan.say(gpu_type, _plan_file(plan, found, gpu_type, evidence))
        if gpu_type in evidence.gpu_types and gpu_type not in plan.full:
            for line in _rerun(plan, evidence, gpu_type, test_path, reach):
                plan.say(gpu_type, line)
    return plan


def _plan_file(plan: TouchedPlan, found: RecordedFile, gpu_type: str, evidence: TouchEvidence) -> str:
    """What `found` asks of the stages of `gpu_type`, and its line."""
    where = f"{found.path}:{_shown(found.change.units)}" if found.change.units else found.path
    record = found.records.get(gpu_type)
    why = _why_no_record_tells(found, gpu_type, record, evidence)
    if why:
        return _plan_by_reach(plan, found, gpu_type, where, why)
    if record is None:  # fresh records of the GPU type, none of which ran the file (or a child they left unmeasured)
        return _plan_by_reach(plan, found, gpu_type, where, f"no test ran it on {gpu_type} records")
    through_import = found.runs_at_import() and found.reach_known
    loading = f" and the {len(found.importers)} test path(s) that can load it" if through_import else ""
    if through_import:
        plan.paths.setdefault(gpu_type, []).extend(NarrowPath(path) for path in found.importers)
    reads = _reads(found)
    tests = sorted(set(map(_function_of, record.tests_of(found.edited_units(record)) - {OUTSIDE_TESTS})))
    plan.paths.setdefault(gpu_type, []).extend(NarrowPath(test) for test in tests)
    adds = f"; it adds {_shown(found.change.new)}, which no record knows" if found.change.new else ""
    ran = f"ran a unit of it (it changes code that runs at import{adds})" if found.at_import else (
        "ran them" if len(found.change.units) > 1 else "ran it")  # fmt: skip
    made = _shown([commit[:12] for commit in record.commits])
    return f"{where}: touched rule: runs the {len(tests)} test(s) that {ran} on {gpu_type} records from {made}" + (
        f"{loading}{reads}")  # fmt: skip


def _plan_by_reach(plan: TouchedPlan, found: RecordedFile, gpu_type: str, where: str, why: str) -> str:
    """What `found` asks of `gpu_type`'s stages when none of its records can say (`why`): the test paths that
    can load the file, or the full set where those are not known."""
    if not found.reach_known:
        unknown = found.importers_unknown or "what can load it was not looked for"
        plan.full.setdefault(gpu_type, f"{why}, and {unknown}")
        return f"{where}: touched rule: {gpu_type} stages run their full set ({why}, and {unknown})"
    plan.paths.setdefault(gpu_type, []).extend(NarrowPath(path) for path in found.importers)
    return f"{where}: touched rule: {why}: runs the {len(found.importers)} test path(s) that can load it{_reads(found)}"


def _reads(found: RecordedFile) -> str:
    """What a plan line adds for a file that reads what other changed files bind."""
    return f" (it reads what {_shown(found.read_from)} change(s))" if found.read_from else ""


def _added_line(found: AddedFile) -> str:
    if not found.loaded_by:
        return f"{found.path}: touched rule: a new file that no file loads: nothing runs it"
    return (
        f"{found.path}: touched rule: a new file that only files this change edits load ({_shown(found.loaded_by)}): "
        "their records select what reaches it"
    )


def _why_no_record_tells(found: RecordedFile, gpu_type: str, record: GpuRecord | None, evidence: TouchEvidence) -> str:
    """Why no record of `gpu_type` can say which of its tests reach the change ("" when one can)."""
    if gpu_type not in evidence.gpu_types:
        return f"no {gpu_type} records"
    if gpu_type in found.stale:
        return f"its {gpu_type} records are stale: {found.stale[gpu_type]}"
    functions = [unit for unit in found.change.units if unit != MODULE_UNIT]  # importers see module-level code
    if record is not None and OUTSIDE_TESTS in record.tests_of(functions) and not found.reach_known:
        # the test paths that can load the file stand for what ran at import; unknown, nothing does
        return "it ran outside the tests (at import), and every test may read what it made"
    return ""


def _reach(recorded: Sequence[RecordedFile]) -> tuple[str, ...] | None:
    """The test paths that can load some changed file (None: some file's are not known)."""
    if not all(found.reach_known for found in recorded):
        return None
    return tuple(sorted({path for found in recorded for path in found.importers}))


def _rerun(
    plan: TouchedPlan, evidence: TouchEvidence, gpu_type: str, test_path: TestPath, reach: tuple[str, ...] | None
) -> list[str]:
    """What `gpu_type`'s stages run beyond what its records select: of the tests its records cannot speak for
    (the stale tests' files and the test files changed since the records, the tests the records ran
    unmeasured, the test files no record of it ran), those that can load a changed file (`reach`; None: all
    of them); one line for each kind found."""
    records = evidence.gpu_types[gpu_type]
    made = _shown([commit[:12] for commit in records.commits])
    changed = [path for path in map(test_path, records.changed_since) if path is not None]
    stale = list(dict.fromkeys([*(NarrowPath(path) for path in records.stale_test_files), *changed]))
    unmeasured = [NarrowPath(test) for test in sorted(set(map(_function_of, records.unmeasured)))]
    unrecorded = [path for path in map(test_path, records.unrecorded_test_files) if path is not None]
    lines = []
    for candidates, why in (
        (stale, f"their records do not know as they are now (stale, or changed since {made})"),
        (unmeasured, "their records ran unmeasured (timed: coverage would slow what they measure)"),
        (unrecorded, f"no {gpu_type} record ran (never recorded there)"),
    ):
        found = [path for path in candidates if reach is None or _can_load(path, reach)]
        if found:
            plan.paths.setdefault(gpu_type, []).extend(found)
        left_out = len(candidates) - len(found)
        if candidates:
            cut = f"; {left_out} more cannot load the change" if left_out else ""
            lines.append(f"touched rule: {gpu_type} stages also run {len(found)} test path(s) {why}{cut}")
    return lines


def _can_load(path: NarrowPath, reach: tuple[str, ...]) -> bool:
    """Whether the tests under `path` can load a changed file: a path of the reach holds them, or they hold one."""
    test = split_filters(path.path)[0].split("::", 1)[0]
    return any(covers(loading, test) or covers(test, loading) for loading in reach)


def _function_of(test: str) -> str:
    """A parametrized id's function: parameters may hold blanks no list line can carry."""
    return test.split("[", 1)[0]


def _shown(items: Sequence[str]) -> str:
    shown = sorted(items)
    return ", ".join(shown[:_SHOWN]) + (f" and {len(shown) - _SHOWN} more" if len(shown) > _SHOWN else "")
