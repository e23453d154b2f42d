"""Mutation replay: does change-based selection's narrowed set catch the faults the full set catches, on this
repository's own history, and what does it save?

For each non-merge commit C (parent P) of the history that changes Python source under --source (newest first):

    records   the engine part of today's CPU pre-merge stages (replay_select.py) runs at P, a tree of P in a
              temporary folder, with touch recording (ci_tool/run/touch_recorder.py), into a throw-away SQLite
              history: the records a post-merge run of P leaves, stamped with P, the stage and GPU type CPU;
              with --records DIR, DIR/<P>.sqlite instead where it is there: whole stages' records, every
              test file's, made by research/replay/replay_records.py (on a GPU runner: its GPU type's too)
    change    C's change against P read from git with those records (change/build.read_change), less its files
              under ci_tool/ (ci-tool's own code: its tests are not what this bench records; listed per commit)
    rules     the full set, today's rules, and the touched rule at file and at function grain, each through
              `select_for_change` and the planner with today's catalog and test-db
    baseline  the full set at C, unmutated: the tests already failing there never count as catching
    faults    for --functions-per-commit of the functions C changes (units its diff edits that exist at C:
              ci_tool/change/units.py), --faults-per-function mutants each (replay_mutants.py), each planted
              alone in a tree of C (never in this repository): the full set runs once (JUnit per test); a
              narrowed set's verdict is read from that run's results for the tests it selects (a subset), and
              --spot-checks of them are run for real to check that reading

Counting (replay_count.py): faults the full set catches that a rule's set misses (listed with commit, function
and operator), GPU-minutes and stage-minutes per rule, and time to the first failure: today's order against
the likelihood order (ci_tool/stages/priority.py: the tests whose records ran the change first).

    .venv/bin/python research/replay/mutation_replay_bench.py [--commits N] [--functions-per-commit F]
        [--faults-per-function K] [--seed S] [--spot-checks C] [--jobs J] [--records DIR] [--report FILE]
        [--json FILE]
    .venv/bin/python research/replay/mutation_replay_bench.py --quick --json FILE   (a tiny made-up repository)
"""

from __future__ import annotations

import argparse
import json
import math
import queue
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from replay_count import Cost, Fault, Replayed, caught_by, time_to_failure
from replay_mutants import Mutant, mutants, pick
from replay_quick import build
from replay_report import json_of, report
from replay_runs import Batch, Run, export_tree, run_batches
from replay_select import NARROWING, Rule, RulePlan, Slot, covered, engine_batches, rule_plans, stage_slots

from ci_tool import gitinfo
from ci_tool.change.build import GitRange, read_change
from ci_tool.change.units import MODULE_UNIT, changed_units, parse_hunks, source_units
from ci_tool.change.value import ChangeSet
from ci_tool.history.store import HistoryStore
from ci_tool.history.touch_table import read_touch_files, record_touches, stamped
from ci_tool.stages.catalog_load import LoadedCatalog, open_catalog
from ci_tool.stages.priority import Likelihood, prioritize, touching_tests

ROOT = Path(__file__).resolve().parents[2]  # research/replay/ -> the checkout
UNRECORDED = ("ci_tool/",)  # changed files left out of the replayed change (see the module docstring)


@dataclass(frozen=True)
class Settings:
    repository: Path  # whose history is replayed
    catalog: Path  # where today's catalog and test-db are (jenkins/stages.yml, test-db/)
    source: str
    commits: int
    functions: int
    faults: int  # per function; 0: every mutant
    seed: int
    spot_checks: int
    jobs: int
    limit_seconds: float
    records: Path | None = None  # made elsewhere: DIR/<parent>.sqlite (research/replay/replay_records.py)


@dataclass(frozen=True)
class Commit:
    sha: str
    parent: str
    subject: str
    functions: tuple[tuple[str, str], ...]  # (path, unit) C changes, as C has them


@dataclass
class _Context:
    """What one commit's faults are judged with."""

    commit: Commit
    plans: dict[Rule, RulePlan]
    full: list[Batch]
    narrowed: dict[Rule, list[Batch]]
    baseline: Run
    stages: dict[Rule, dict[str, list[Slot]]]  # the full set's and the function grain's stages
    priority: dict[Rule, dict[str, tuple[str, ...]]]  # the same stages' likelihood order


def source_commits(clone: Path, source: str) -> list[Commit]:
    """The non-merge commits with a parent that change Python source under `source`, newest first."""
    listed = _git(clone, "log", "--no-merges", "--format=%H %P", "--", f"{source}/*.py").splitlines()
    found = []
    for sha, *parents in (line.split() for line in listed):
        if len(parents) == 1:
            subject = _git(clone, "log", "-1", "--format=%s", sha).strip()
            found.append(Commit(sha, parents[0], subject, changed_functions(clone, parents[0], sha, source)))
    return found


def changed_functions(clone: Path, parent: str, sha: str, source: str) -> tuple[tuple[str, str], ...]:
    """(path, unit) of each function C's diff edits in a .py file under `source` that C has (change/units.py)."""
    paths = _git(clone, "diff", "--name-only", "--no-renames", parent, sha, "--", source).split()
    found: list[tuple[str, str]] = []
    for path in [path for path in paths if path.endswith(".py")]:
        head = gitinfo.file_at(clone, sha, path)
        units = source_units(head) if head is not None else None
        if units is None:
            continue
        change = changed_units(
            gitinfo.file_at(clone, parent, path), head, parse_hunks(gitinfo.line_diff(clone, parent, sha, path))
        )
        edited = set(change.units) - set(change.through)  # the readers of what it binds are as they were
        found += [(path, unit) for unit in sorted(edited) if unit != MODULE_UNIT and unit in units.names]
    return tuple(found)


def replay_commit(
    commit: Commit, settings: Settings, clone: Path, loaded: LoadedCatalog, folder: Path
) -> Replayed | str:
    """One commit replayed (see the module docstring), or why it cannot be."""
    started = time.monotonic()
    if not commit.functions:
        return "it changes no function (module-level code only): no fault to plant"
    at_commit = export_tree(clone, commit.sha, folder / "commit")
    plain = plain_change(clone, commit)
    full_plan = rule_plans(loaded, plain)[Rule.FULL]
    full = engine_batches(stage_slots(full_plan.cpu_lines(), at_commit, _package(settings), loaded.durations))
    if not full:
        return "no test of today's CPU stages reaches the engine at this commit"
    history = folder / "history.sqlite"
    made = settings.records / f"{commit.parent}.sqlite" if settings.records is not None else None
    if made is not None and made.is_file():
        shutil.copyfile(made, history)
        records = "whole stages (research/replay/replay_records.py)"
    else:
        tree = export_tree(clone, commit.parent, folder / "parent")
        _record(commit, tree, full_plan, settings, loaded, folder, history)
        records = "the engine part"
    change = _change(clone, commit, history=history)
    plans = rule_plans(loaded, change)
    stages = {rule: stage_slots(plans[rule].cpu_lines(), at_commit, _package(settings), loaded.durations)
              for rule in plans}  # fmt: skip
    narrowed = {rule: engine_batches(stages[rule]) for rule in NARROWING}
    baseline = run_batches(at_commit, full, folder / "baseline", limit_seconds=settings.limit_seconds)
    if baseline.broken:
        return f"the unmutated full set does not finish at this commit: {baseline.broken}"
    likelihood = Likelihood(touching=touching_tests(change))
    ordered = {rule: {name: prioritize(likelihood, plans[rule].plans[name].lines, loaded.durations).test_ids
                      for name in stages[rule]} for rule in (Rule.FULL, Rule.FUNCTION)}  # fmt: skip
    context = _Context(commit, plans, full, narrowed, baseline, {rule: stages[rule] for rule in ordered}, ordered)
    faults = _faults(context, settings, clone, folder)
    runs = {Rule.FULL: full, **narrowed}
    return Replayed(
        commit.sha, commit.parent, commit.subject, tuple(f"{path}:{unit}" for path, unit in commit.functions),
        {rule: tuple(path for batch in batches for path in batch.paths) for rule, batches in runs.items()},
        {rule: plan.scope for rule, plan in plans.items()},
        {rule: _cost(plans[rule], stages[rule], baseline) for rule in plans},
        tuple(faults), tuple(plans[Rule.FUNCTION].reasons),
        _left_out(clone, commit),
        tuple(sorted(baseline.failed())), time.monotonic() - started, records,
    )  # fmt: skip


def _package(settings: Settings) -> str:
    return settings.source.rstrip("/").rsplit("/", 1)[-1]


def plain_change(clone: Path, commit: Commit) -> ChangeSet:
    """C's change without touch records."""
    return _change(clone, commit, history=None)


def _change(clone: Path, commit: Commit, *, history: Path | None) -> ChangeSet:
    source = GitRange(commit.parent, commit.sha)
    found = read_change(source, test_db=clone / "test-db", root=clone, history=history)
    if found is None:  # source_commits chose commits that change files
        raise RuntimeError(f"{commit.sha[:12]} changes no file")
    return replace(found, files=tuple(path for path in found.files if not path.startswith(UNRECORDED)))


def _left_out(clone: Path, commit: Commit) -> tuple[str, ...]:
    """The commit's changed files the replayed change leaves out (UNRECORDED)."""
    paths = _git(clone, "diff", "--name-only", "--no-renames", commit.parent, commit.sha).split()
    return tuple(path for path in paths if path.startswith(UNRECORDED))


def _record(
    commit: Commit, tree: Path, plan: RulePlan, settings: Settings, loaded: LoadedCatalog, folder: Path, history: Path
) -> None:
    """The touch records of the full set's engine part at P, into `history` (as a post-merge run of P)."""
    batches = engine_batches(stage_slots(plan.cpu_lines(), tree, _package(settings), loaded.durations))
    run_batches(tree, batches, folder / "record", record=True, limit_seconds=settings.limit_seconds)
    with HistoryStore(history) as store:
        for index, batch in enumerate(batches):
            written = folder / "record" / f"b{index}.touches.json"
            if written.is_file():
                gpu_type = plan.plans[batch.stage].name.gpu_type
                rows = stamped(read_touch_files([written]), stage=batch.stage, gpu_type=gpu_type, commit=commit.parent)
                record_touches(store, f"replay-{commit.parent[:12]}-{index}", rows, recorded_at=time.time())
    shutil.rmtree(tree)


def _cost(plan: RulePlan, stages: dict[str, list[Slot]], baseline: Run) -> Cost:
    """A rule's minutes (replay_count.py): its engine tests as the baseline run measured them, the rest predicted."""
    engine = math.fsum(result.seconds for result in covered(baseline.results, engine_batches(stages))) / 60
    others = math.fsum(slot.seconds for slots in stages.values() for slot in slots) / 60
    untested = math.fsum(found.predicted_minutes for found in plan.plans.values() if found.name.is_cpu
                         and not found.name.is_test)  # fmt: skip
    return Cost(plan.gpu_minutes, plan.gpu_stage_minutes, engine + others + untested, engine)


def _faults(context: _Context, settings: Settings, clone: Path, folder: Path) -> list[Fault]:
    """Plant the commit's faults, `settings.jobs` at a time, each job in a tree of C of its own."""
    planted = _mutants(context.commit, settings, folder / "commit")
    trees: queue.Queue[Path] = queue.Queue()
    for job in range(max(1, min(settings.jobs, len(planted)))):
        trees.put(folder / "commit" if job == 0 else export_tree(clone, context.commit.sha, folder / f"job{job}"))
    checks = iter(range(settings.spot_checks))

    def one(mutant: Mutant) -> Fault:
        tree = trees.get()
        try:
            return _fault(context, mutant, tree, folder / f"fault-{id(mutant)}", settings, checks)
        finally:
            trees.put(tree)

    with ThreadPoolExecutor(max_workers=trees.qsize()) as pool:
        return list(pool.map(one, planted))


def _mutants(commit: Commit, settings: Settings, tree: Path) -> list[Mutant]:
    rng = random.Random(f"{settings.seed}:{commit.sha}")
    functions = list(commit.functions)
    chosen = functions if len(functions) <= settings.functions else rng.sample(functions, settings.functions)
    planted: list[Mutant] = []
    for path, unit in chosen:
        found = mutants(path, (tree / path).read_text(encoding="utf-8"), unit)
        every = [mutant for listed in found.values() for mutant in listed]
        planted += every if settings.faults == 0 else pick(found, settings.faults, random.Random(f"{rng.random()}"))
    return planted


def _fault(context: _Context, mutant: Mutant, tree: Path, scratch: Path, settings: Settings, checks: object) -> Fault:
    source = tree / mutant.path
    original = source.read_text(encoding="utf-8")
    source.write_text(mutant.text, encoding="utf-8")
    try:
        run = run_batches(tree, context.full, scratch / "full", limit_seconds=settings.limit_seconds)
        failing = run.failed() - context.baseline.failed()
        caught = {Rule.FULL: bool(failing) or bool(run.broken)}
        real = lambda rule: _real(tree, context, rule, scratch, settings)  # noqa: E731
        for rule in NARROWING:
            caught[rule] = (
                real(rule) if run.broken else caught_by(failing, covered(run.results, context.narrowed[rule]))
            )
        checked = real(Rule.FUNCTION) if _spot(context, caught, checks) else None
    finally:
        source.write_text(original, encoding="utf-8")
    shutil.rmtree(scratch, ignore_errors=True)
    full, narrowed = context.stages[Rule.FULL], context.stages[Rule.FUNCTION]
    first = {
        "today": time_to_failure(run.results, failing, full, {}),
        "likelihood": time_to_failure(run.results, failing, full, context.priority[Rule.FULL]),
        "narrowed, likelihood": time_to_failure(run.results, failing, narrowed, context.priority[Rule.FUNCTION]),
    }
    return Fault(context.commit.sha, mutant, frozenset(failing), caught, first, run.broken, checked)


def _spot(context: _Context, caught: dict[Rule, bool], checks: object) -> bool:
    """Whether this fault's function-grain set is run for real: a set narrower than the full one, while
    spot checks are left."""
    narrower = len(covered(context.baseline.results, context.narrowed[Rule.FUNCTION])) < len(context.baseline.results)
    return narrower and caught[Rule.FULL] and next(checks, None) is not None  # type: ignore[call-overload]


def _real(tree: Path, context: _Context, rule: Rule, scratch: Path, settings: Settings) -> bool:
    """Run a rule's set for real on the planted tree: whether it catches the fault."""
    batches = context.narrowed[rule]
    if not batches:
        return False
    run = run_batches(tree, batches, scratch / rule.name.lower(), limit_seconds=settings.limit_seconds)
    return bool(run.broken) or bool(run.failed() - context.baseline.failed())


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def replay(settings: Settings, say: Callable[[str], None]) -> tuple[list[Replayed], list[tuple[Commit, str]]]:
    """Every chosen commit replayed, and those left out with why."""
    loaded = open_catalog(settings.catalog / "jenkins" / "stages.yml", settings.catalog / "test-db")
    replayed: list[Replayed] = []
    skipped: list[tuple[Commit, str]] = []
    with tempfile.TemporaryDirectory(prefix="mutation-replay-") as scratch:
        clone = Path(scratch) / "repository"
        subprocess.run(
            ["git", "clone", "-q", "--shared", "--no-checkout", str(settings.repository), str(clone)], check=True
        )
        for commit in source_commits(clone, settings.source):
            if len(replayed) >= settings.commits:
                break
            with tempfile.TemporaryDirectory(prefix="commit-", dir=scratch) as folder:
                found = replay_commit(commit, settings, clone, loaded, Path(folder))
            if isinstance(found, str):
                skipped.append((commit, found))
                say(f"{commit.sha[:10]} left out: {found}")
                continue
            replayed.append(found)
            caught = sum(fault.caught[Rule.FULL] for fault in found.faults)
            say(
                f"{commit.sha[:10]} {len(found.faults)} faults, {caught} caught by the full set ({found.seconds:.0f} s)"
            )
    return replayed, skipped


def _options(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=4, help="commits replayed, newest first (default 4)")
    parser.add_argument("--functions-per-commit", type=int, default=3, help="changed functions planted (default 3)")
    parser.add_argument("--faults-per-function", type=int, default=1, help="mutants per function; 0: every one")
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--spot-checks", type=int, default=3, help="narrowed sets run for real (default 3)")
    parser.add_argument("--jobs", type=int, default=1, help="faults run at a time (default 1)")
    parser.add_argument("--source", default="src/kvengine")
    parser.add_argument("--repository", type=Path, default=ROOT, help="whose history (default: this checkout)")
    parser.add_argument("--limit-minutes", type=float, default=30, help="one pytest process at most (default 30)")
    parser.add_argument("--records", type=Path, help="records made by replay_records.py: DIR/<parent>.sqlite")
    parser.add_argument("--quick", action="store_true", help="a tiny made-up repository, every mutant")
    parser.add_argument("--report", type=Path, help="write the tables and the commits and faults (markdown)")
    parser.add_argument("--json", type=Path, help="write every number (JSON)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    options = _options(argv)
    started = time.monotonic()
    say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="mutation-replay-quick-") as quick:
        repository = build(Path(quick) / "repository") if options.quick else options.repository
        every = 1_000_000 if options.quick else 0  # --quick: every commit, function and mutant
        settings = Settings(
            repository, repository, options.source, every or options.commits, every or options.functions_per_commit,
            0 if options.quick else options.faults_per_function, options.seed, options.spot_checks, options.jobs,
            options.limit_minutes * 60, options.records,
        )  # fmt: skip
        replayed, skipped = replay(settings, say)
    command = " ".join(["research/replay/mutation_replay_bench.py", *(argv if argv is not None else sys.argv[1:])])
    text = report(replayed, skipped, command=command, seconds=time.monotonic() - started)
    print(text)
    if options.report:
        options.report.write_text(text, encoding="utf-8")
    if options.json:
        options.json.write_text(json.dumps(json_of(replayed, skipped), indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
