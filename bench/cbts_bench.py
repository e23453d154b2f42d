"""Change-based selection on this repository's own history: what it saves, and whether it still catches.

For each commit (first-parent diff against its parent) with the catalog and test-db of that commit:

    savings   the predicted minutes of the stages a bare `/bot run` selects, narrowed (change-based selection)
              against full (`--disable-cbts`), as GPU-minutes (minutes x GPUs of each GPU stage) and as
              stage-minutes (every stage, CPU ones too); per rule (the rules that claimed the commit's files,
              `fallback` when a file no rule claims ran the full set)
    safety    for up to --faults commits per rule, a planted fault: `raise AssertionError("planted fault")` as
              the first statement of a function the commit changed (the tests rule: a changed test function;
              the waives rule: the test the commit unwaived, read from its diff of waives.txt; the test-db
              rule: the test an entry the commit added names, or its file's first test function; fallback: a
              changed function of a source file). Caught when the narrowed selection holds a test
              that fails with it, measured by running pytest at that commit (a git worktree, its own code on
              the import path): the selected lines that cover the test (tests, test-db, waives), or the
              selected test files that import the changed module (fallback; a subset of the selection, so a
              failure there is a failing selected test). A fault only GPU stages would run counts apart.
    synthetic waives  this history has no commit that changes test-db/waives.txt, so the bench makes some on HEAD
              in a temporary worktree (no branch moves): a base that waives --faults tests CPU stages render
              (the control: adding waives must select nothing) and, per waive, a child of the base that
              removes it; each unwaive is measured as a commit of the history is. Reported apart, as SYNTHETIC.

    .venv/bin/python bench/cbts_bench.py [--faults 5] [--json]

Pipeline grain (--grain-table): what the generated pipelines spend on a one-function source change since they
run a narrowed family's `-cbts` shards, against the family grain they ran before (every stage of a family that
keeps a test, whole). The catalog is TensorRT-LLM's stage table (`ci-tool stages import`, the families whose
test-db context the corpus holds), each family split into at least --min-splits shards, over the corpus' real
test-db and durations. A one-function change is made up, as its touch records would say it: a function of a
source file that --reach test lines of the pre-merge lists ran (drawn at random, --samples per reach, seed 0),
recorded on every GPU type; the touched rule then narrows each GPU type to the lines its lists hold. Predicted
minutes from the durations (no test runs), as GPU-minutes (minutes x GPUs of each stage, plus an assumed
--stage-overhead-minutes of set-up per stage) of the stages an engine that runs `-cbts` stages (jenkins)
selects: full (`--disable-cbts`), family grain, shard grain.

    .venv/bin/python bench/cbts_bench.py --grain-table tests/ci_tool/stages/reference/test_stage_configs.json \
        --grain-corpus ../shared/corpus/trtllm [--min-splits 5] [--reach 1 10 50] [--samples 20] [--json]
"""

from __future__ import annotations

import argparse
import ast
import enum
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ci_tool.bot.grammar import parse_comment
from ci_tool.change.narrowing import split_filters
from ci_tool.change.touch_records import GpuRecord, GpuRecords, RecordedFile, TouchEvidence
from ci_tool.change.units import UnitChange
from ci_tool.change.value import ChangeSet
from ci_tool.errors import CiToolError
from ci_tool.stages.catalog import Stage
from ci_tool.stages.catalog_load import LoadedCatalog, open_catalog, read_catalog
from ci_tool.stages.cbts import CbtsScope
from ci_tool.stages.durations import load_durations
from ci_tool.stages.engines import Engine
from ci_tool.stages.planner import Planner
from ci_tool.stages.reference_import import ImportedCatalog, import_stage_table
from ci_tool.stages.select import Selection, select_for_change
from ci_tool.stages.selection_request import SelectionRequest, Step
from ci_tool.stages.stage_plan import StagePlan
from ci_tool.testdb.check import covers
from ci_tool.testdb.load import load_test_db
from ci_tool.testdb.waives import parse_waives

ROOT = Path(__file__).resolve().parents[1]
EXACT_RULES = ("waives", "test-db", "tests")
FAULT = 'raise AssertionError("planted fault")'
TODAY = open_catalog(ROOT / "jenkins" / "stages.yml", ROOT / "test-db")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


def git(*args: str, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    if check and done.returncode:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout if done.returncode == 0 else ""


def file_at(commit: str, path: str) -> str | None:
    done = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT, capture_output=True, check=False)
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None


@dataclass
class Commit:
    sha: str
    parent: str
    files: tuple[str, ...]
    rule: str = ""
    full_gpu: float = 0.0
    narrowed_gpu: float = 0.0
    full_stage: float = 0.0
    narrowed_stage: float = 0.0
    narrowed: Selection | None = None
    plans: dict[str, StagePlan] = field(default_factory=dict)
    loaded: LoadedCatalog | None = None


def commits() -> Iterator[tuple[str, str]]:
    for line in git("rev-list", "--reverse", "--first-parent", "--parents", "HEAD").splitlines():
        sha, *parents = line.split()
        if parents:
            yield sha, parents[0]


def load_at(commit: str, folder: Path) -> LoadedCatalog | None:
    """The catalog and test-db of `commit`, with today's change rules (a commit older than the rules has none);
    today's catalog when the commit's does not load with today's code; None when neither loads."""
    archive = subprocess.run(["git", "archive", commit, "jenkins/stages.yml", "test-db"], cwd=ROOT,
                             capture_output=True, check=False)  # fmt: skip
    if archive.returncode:
        return None
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    for catalog in (folder / "jenkins" / "stages.yml", ROOT / "jenkins" / "stages.yml"):
        try:
            loaded = open_catalog(catalog, folder / "test-db")
        except CiToolError:
            continue
        return replace(loaded, catalog=replace(loaded.catalog, change_rules=TODAY.catalog.change_rules))
    return None


def change_of(sha: str, parent: str, files: tuple[str, ...]) -> ChangeSet:
    in_db = [path for path in files if path.startswith("test-db/")]
    return ChangeSet(
        files,
        deleted=frozenset(path for path in files if file_at(sha, path) is None),
        base={path: file_at(parent, path) for path in in_db},
        now={path: file_at(sha, path) for path in in_db},
    )


def minutes(plans: dict[str, StagePlan]) -> tuple[float, float]:
    """(GPU-minutes, stage-minutes) of planned stages."""
    gpu = sum(plan.predicted_minutes * plan.name.gpu_count for plan in plans.values())
    return gpu, sum(plan.predicted_minutes for plan in plans.values())


def measure(sha: str, parent: str) -> Commit | None:
    files = tuple(git("diff", "--name-only", "--no-renames", parent, sha).split())
    found = Commit(sha, parent, files)
    with tempfile.TemporaryDirectory() as folder:
        loaded = load_at(sha, Path(folder))
        if loaded is None or not files:
            return None
        changes = change_of(sha, parent, files)
        full = select_for_change(loaded, _request("/bot run --disable-cbts"), engine=Engine.LOCAL, changes=changes)
        narrowed = select_for_change(loaded, _request("/bot run"), engine=Engine.LOCAL, changes=changes)
        full_plans = loaded.planner.selection(full.selected, allow_empty=True)
        found.plans = loaded.planner.selection(narrowed.selected, allow_empty=True)
    assert narrowed.narrowing is not None
    found.full_gpu, found.full_stage = minutes(full_plans)
    found.narrowed_gpu, found.narrowed_stage = minutes(found.plans)
    found.narrowed, found.loaded = narrowed, loaded
    scope = narrowed.narrowing.scope
    found.rule = "fallback" if scope is CbtsScope.FULL else "+".join(sorted(narrowed.narrowing.claimed))
    return found


def _request(comment: str) -> SelectionRequest:
    return parse_comment(comment).selection_request()


# ---------------------------------------------------------------- planted faults


@dataclass(frozen=True)
class Target:
    path: str  # the file the fault goes into
    function: str  # its name (a method: Class.name)
    line: int  # of the function's first statement
    indent: int


def changed_lines(commit: Commit, path: str) -> set[int]:
    diff = git("diff", "-U0", "--no-renames", commit.parent, commit.sha, "--", path)
    lines: set[int] = set()
    for match in _HUNK.finditer(diff):
        start, count = int(match.group(1)), int(match.group(2) or 1)
        lines |= set(range(start, start + max(count, 1)))
    return lines


def functions(text: str, path: str) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError:
        return []
    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            found += [(f"{node.name}.{f.name}", f) for f in node.body if isinstance(f, ast.FunctionDef)]
    return found


def target_in(commit: Commit, path: str, *, tests_only: bool, changed: bool, named: str = "") -> Target | None:
    text = file_at(commit.sha, path)
    if text is None or not path.endswith(".py"):
        return None
    lines = changed_lines(commit, path) if changed else None
    for name, node in functions(text, path):
        if (tests_only and not name.split(".")[-1].startswith("test")) or (named and name != named):
            continue
        if lines is not None and not lines & set(range(node.lineno, (node.end_lineno or node.lineno) + 1)):
            continue
        return Target(path, name, node.body[0].lineno, node.body[0].col_offset)
    return None


def targets(commit: Commit) -> Iterator[Target]:
    """Where to plant a fault for the commit's rule (see the module docstring)."""
    assert commit.narrowed is not None and commit.narrowed.narrowing is not None
    narrowing = commit.narrowed.narrowing
    if commit.rule == "fallback":
        for path in narrowing.unclaimed:
            if path.startswith(("ci_tool/", "src/")) and (found := target_in(commit, path, tests_only=False,
                                                                                changed=True)):  # fmt: skip
                yield found
        return
    for path in narrowing.claimed.get("tests", ()):
        if found := target_in(commit, path, tests_only=True, changed=True):
            yield found
    for path in narrowing.claimed.get("waives", ()):  # the tests the commit unwaived, whatever was selected
        for test in unwaived(commit, path):
            file, _, node = split_filters(test)[0].partition("::")
            named = node.split("[", 1)[0].replace("::", ".")
            if found := target_in(commit, file, tests_only=True, changed=False, named=named):
                yield found
    entries = {line.test_id for plan in commit.plans.values() for line in (*plan.lines, *plan.isolated)}
    for entry in sorted(entries):  # the test-db and waives rules run whole entries: a test of each
        path, _, node = split_filters(entry)[0].partition("::")  # an entry that names a test: that test
        named = node.split("[", 1)[0].replace("::", ".")
        if path.endswith(".py") and (found := target_in(commit, path, tests_only=True, changed=False,
                                                        named=named)):  # fmt: skip
            yield found


def unwaived(commit: Commit, path: str) -> list[str]:
    """The test ids whose waives the commit removed from the waives file `path` (read apart from the rule)."""
    before = parse_waives(file_at(commit.parent, path) or "", path)[0]
    kept = {(waive.test_id, waive.gpu) for waive in parse_waives(file_at(commit.sha, path) or "", path)[0]}
    return list(dict.fromkeys(waive.test_id for waive in before if (waive.test_id, waive.gpu) not in kept))


def selected_lines(commit: Commit, target: Target) -> tuple[list[str], bool]:
    """The narrowed selection's lines that cover the target test, on stages this machine runs (CPU), and
    whether a GPU stage's line covers it."""
    node = f"{target.path}::{target.function.replace('.', '::')}"
    cpu: list[str] = []
    gpu = False
    for plan in commit.plans.values():
        for line in (*plan.lines, *plan.isolated):
            selector, filters = split_filters(line.test_id)
            if covers(selector, node):
                if plan.name.is_cpu:
                    cpu.append(node + filters)
                else:
                    gpu = True
    return cpu, gpu


def module_of(path: str) -> str:
    return path.removeprefix("src/").removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def imported_modules(text: str) -> set[str]:
    """The modules a file imports (`from a.b import c` also counts `a.b.c`, which may be a module)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return found


def importing_tests(commit: Commit, target: Target, *, limit: int = 12) -> list[str]:
    """The selected CPU test files that import the target's module, directly or through the package's
    other modules, nearest first (fallback: a subset of the full selection)."""
    sources = [p for p in git("ls-tree", "-r", "--name-only", commit.sha, "--", "ci_tool", "src").split()
               if p.endswith(".py")]  # fmt: skip
    users: dict[str, set[str]] = defaultdict(set)  # module -> the package modules that import it
    for path in sources:
        for name in imported_modules(file_at(commit.sha, path) or ""):
            users[name].add(module_of(path))
    distance = {module_of(target.path): 0}
    frontier = [module_of(target.path)]
    while frontier:
        module = frontier.pop(0)
        for user in sorted(users[module] - set(distance)):
            distance[user] = distance[module] + 1
            frontier.append(user)
    ranked: dict[str, int] = {}
    for plan in commit.plans.values():
        if not plan.name.is_cpu:
            continue
        for line in (*plan.lines, *plan.isolated):
            selector = split_filters(line.test_id)[0].split("::", 1)[0]
            for path in git("ls-tree", "-r", "--name-only", commit.sha, "--", selector).split():
                near = [distance[m] for m in imported_modules(file_at(commit.sha, path) or "") if m in distance]
                if path.endswith(".py") and near:
                    ranked[path] = min(near)
    return sorted(ranked, key=lambda path: (ranked[path], path))[:limit]


class Ran(enum.Enum):
    CAUGHT = "caught"
    PASSED = "passed"  # the tests ran and none failed with the fault
    NOT_RUN = "not run"  # deselected or skipped here (a GPU test)
    TIMEOUT = "timeout"


def caught(commit: Commit, target: Target, tests: Sequence[str]) -> Ran:
    """Run `tests` at the commit with the fault planted: whether one fails with it."""
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / "tree"
        git("worktree", "add", "--detach", "-q", str(tree), commit.sha)
        try:
            source = tree / target.path
            lines = source.read_text().splitlines(keepends=True)
            lines.insert(target.line - 1, " " * target.indent + FAULT + "\n")
            source.write_text("".join(lines))
            command = [sys.executable, "-m", "pytest", "-q", "--maxfail=20", "-p", "no:cacheprovider", "--tb=line"]
            command += [arg for test in tests for arg in _args(test)]
            environment = {"PYTHONPATH": f"{tree}:{tree / 'src'}", "PATH": "/usr/bin:/bin", "HOME": folder}
            try:
                done = subprocess.run(command, cwd=tree, capture_output=True, text=True, timeout=300,
                                      env=environment, check=False)  # fmt: skip
            except subprocess.TimeoutExpired:
                return Ran.TIMEOUT
            if done.returncode == 1 and "planted fault" in done.stdout:
                return Ran.CAUGHT
            return Ran.NOT_RUN if done.returncode == 5 or " passed" not in done.stdout else Ran.PASSED
        finally:
            git("worktree", "remove", "--force", str(tree), check=False)


def _args(test: str) -> list[str]:
    selector, filters = split_filters(test)
    marker = re.match(r'\s*-([km])\s+"?([^"]*)"?', filters)
    return [selector, f"-{marker.group(1)}", marker.group(2)] if marker else [selector]


# ---------------------------------------------------------------- a synthetic waives case


WAIVES = "test-db/waives.txt"
_BENCH_GIT = ("-c", "user.name=cbts-bench", "-c", "user.email=cbts-bench@localhost", "-c", "commit.gpgsign=false")


def waive_candidates(count: int) -> list[str]:
    """Node ids of `count` test functions today's CPU stages render, from lines spread over the render (no
    GPU-marked test: a CPU line's `-m "not gpu"` leaves those out)."""
    full = select_for_change(TODAY, _request("/bot run --disable-cbts"), engine=Engine.LOCAL,
                             changes=ChangeSet((WAIVES,)))  # fmt: skip
    plans = TODAY.planner.selection(full.selected, allow_empty=True)
    lines = list(dict.fromkeys(split_filters(line.test_id)[0] for plan in plans.values() if plan.name.is_cpu
                               for line in (*plan.lines, *plan.isolated)))  # fmt: skip
    found: list[str] = []
    for index in range(len(lines)):
        selector = lines[(index * 7) % len(lines)]  # 7 is prime to a render of any other length: a spread
        for path in git("ls-tree", "-r", "--name-only", "HEAD", "--", selector.split("::", 1)[0]).split():
            text = file_at("HEAD", path) or ""
            tests = [(name, node) for name, node in functions(text, path) if name.split(".")[-1].startswith("test")
                     and "gpu" not in " ".join(ast.unparse(d) for d in node.decorator_list)]  # fmt: skip
            if path.endswith(".py") and tests and "pytestmark" not in text:
                found.append(f"{path}::{tests[-1][0].replace('.', '::')}")
                break
        if len(found) >= count:
            break
    return found


def synthetic_waives(count: int) -> tuple[Commit | None, list[Commit]]:
    """Commits the bench makes on HEAD in a temporary worktree (no branch moves; the objects stay unreferenced):
    a base that adds a waive for each of `count` CPU-rendered tests (the control: an added waive runs nothing),
    and per waive a child of the base that removes it (an unwaive, a waives-only change); each measured as a
    commit of the history is."""
    tests = waive_candidates(count)
    with tempfile.TemporaryDirectory() as folder:
        tree = Path(folder) / "tree"
        git("worktree", "add", "--detach", "-q", str(tree), "HEAD")
        try:
            before = (tree / WAIVES).read_text()
            waives = [f"{test} SKIP (synthetic: cbts_bench unwaive case)\n" for test in tests]

            def commit(text: str, message: str) -> str:
                (tree / WAIVES).write_text(text)
                git("-C", str(tree), *_BENCH_GIT, "commit", "-q", "--no-verify", "-m", message, "--", WAIVES)
                return git("-C", str(tree), "rev-parse", "HEAD").strip()

            base = commit(before + "".join(waives), f"cbts_bench (synthetic): waive {len(tests)} tests")
            unwaives = []
            for index, test in enumerate(tests):
                git("-C", str(tree), "checkout", "-q", "--detach", base)
                text = before + "".join(waive for other, waive in enumerate(waives) if other != index)
                unwaives.append((commit(text, f"cbts_bench (synthetic): unwaive {test}"), base))
        finally:
            git("worktree", "remove", "--force", str(tree), check=False)
    head = git("rev-parse", "HEAD").strip()
    return measure(base, head), [found for sha, parent in unwaives if (found := measure(sha, parent)) is not None]


def selected_tests(commit: Commit) -> list[str]:
    return [line.test_id for plan in commit.plans.values() for line in (*plan.lines, *plan.isolated)]


# ---------------------------------------------------------------- the report


# ---------------------------------------------------------------- pipeline grain


def grain_catalog(table: Path, corpus: Path, *, min_splits: int) -> LoadedCatalog:
    """TensorRT-LLM's stage table as a catalog over the corpus: the families whose context the corpus holds,
    each split into at least `min_splits` shards."""
    db = load_test_db(corpus / "test-db")
    imported = import_stage_table(table.read_text(encoding="utf-8"), source=table.name)
    present = [family for family in imported.families if family.context in db.contexts]
    families = tuple(replace(family, splits=max(family.splits, min_splits)) for family in present)
    durations = load_durations(corpus / "test_durations.json")
    text = ImportedCatalog(families, imported.source).yaml()
    planner = Planner(db, durations)
    return LoadedCatalog(read_catalog(text, planner, file=table.name), planner)


def pre_merge_lines(loaded: LoadedCatalog, selection: Selection) -> dict[str, set[str]]:
    """GPU type -> the test ids (filters dropped) the pre-merge selection's stages run: what a function's
    records can name."""
    plans = loaded.planner.selection(selection.selected, allow_empty=True)
    found: dict[str, set[str]] = defaultdict(set)
    for plan in plans.values():
        found[plan.name.gpu_type].update(split_filters(line.test_id)[0] for line in plan.lines)
    return found


def one_function_change(by_gpu: dict[str, set[str]], tests: frozenset[str]) -> ChangeSet:
    """A change of one function that `tests` ran, as fresh touch records of every GPU type say it."""
    path = "tensorrt_llm/_torch/made_up.py"
    records = {gpu: GpuRecord({"f": frozenset(tests & lines)}, ("c0",)) for gpu, lines in by_gpu.items()}
    found = RecordedFile(path, UnitChange(units=("f",)), records, importers_read=True)
    evidence = TouchEvidence({path: found}, {gpu: GpuRecords(("c0",)) for gpu in by_gpu})
    return ChangeSet((path,), base={}, now={}, touches=evidence)


def family_grain(selection: Selection) -> list[Stage]:
    """The stages an engine that runs whole shards ran for `selection`: each `-cbts` family's own stages."""
    ran_as = {v.stage for v in selection.verdicts if v.step is Step.CBTS and v.reason.startswith(RUNS_AS)}
    own = [stage for stage in selection.candidates if stage.name.name in ran_as]
    return [stage for stage in selection.stages if not stage.name.cbts] + own


RUNS_AS = "change-based selection: runs as "


def gpu_minutes(plans: dict[str, StagePlan], options: argparse.Namespace) -> float:
    """Predicted GPU-minutes of planned stages, each stage's set-up (--stage-overhead-minutes) on its GPUs too."""
    overhead = sum(options.stage_overhead_minutes * plan.name.gpu_count for plan in plans.values())
    return minutes(plans)[0] + overhead


def measure_grain(options: argparse.Namespace) -> dict[str, object]:
    loaded = grain_catalog(options.grain_table, options.grain_corpus, min_splits=options.min_splits)
    full = select_for_change(loaded, _request("/bot run --disable-cbts"), engine=Engine.JENKINS, changes=None)
    by_gpu = pre_merge_lines(loaded, full)
    every = sorted(set().union(*by_gpu.values()))
    full_plans = loaded.planner.selection(full.stages, allow_empty=True)
    full_gpu = gpu_minutes(full_plans, options)
    rows = []
    for reach in options.reach:
        draws = random.Random(0)
        samples = []
        for _ in range(options.samples):
            change = one_function_change(by_gpu, frozenset(draws.sample(every, reach)))
            narrowed = select_for_change(loaded, _request("/bot run"), engine=Engine.JENKINS, changes=change)
            assert narrowed.narrowing is not None and narrowed.narrowing.scope is CbtsScope.NARROWED, narrowed.narrowing
            shard = loaded.planner.selection(narrowed.stages, allow_empty=True)
            family = loaded.planner.selection(family_grain(narrowed), allow_empty=True)
            samples.append((gpu_minutes(family, options), gpu_minutes(shard, options), len(family), len(shard)))
        family_gpu, shard_gpu = (statistics.mean(sample[i] for sample in samples) for i in (0, 1))
        rows.append({
            "reach": reach, "samples": len(samples), "gpu_min_full": round(full_gpu, 1),
            "gpu_min_family_grain": round(family_gpu, 1), "gpu_min_shard_grain": round(shard_gpu, 1),
            "stages_family_grain": statistics.mean(sample[2] for sample in samples),
            "stages_shard_grain": statistics.mean(sample[3] for sample in samples),
            "shard_vs_family_saving": _percent(family_gpu - shard_gpu, family_gpu),
            "median_shard_vs_family": _percent(statistics.median(f - s for f, s, *_ in samples),
                                               statistics.median(f for f, *_ in samples)),
        })  # fmt: skip
    splits = [family.splits for family in loaded.catalog.families if family.name.is_test]
    return {"families": len(loaded.catalog.families), "stages": len(loaded.catalog.stages), "min_splits": min(splits),
            "pre_merge_stages": len(full.stages), "lines": len(every), "rows": rows}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--faults", type=int, default=5, help="planted faults per rule (0: savings only)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--grain-table", type=Path, help="TensorRT-LLM's stage table: measure the pipeline grain")
    parser.add_argument("--grain-corpus", type=Path, help="its test-db/ and test_durations.json")
    parser.add_argument("--min-splits", type=int, default=5, help="shards a family gets at least")
    parser.add_argument("--reach", type=int, nargs="+", default=[1, 10, 50], help="test lines the function ran")
    parser.add_argument("--samples", type=int, default=20, help="changes drawn per reach")
    parser.add_argument("--stage-overhead-minutes", type=float, default=0.0,
                        help="set-up a stage spends on its GPUs before its tests (an assumption; 0: none)")  # fmt: skip
    options = parser.parse_args(argv)
    if options.grain_table is not None:
        found = measure_grain(options)
        if options.json:
            print(json.dumps(found, indent=2))
            return 0
        print(f"{found['families']} families, {found['stages']} stages (each family at least {found['min_splits']}"
              f" shards), {found['pre_merge_stages']} pre-merge stages running {found['lines']} test ids; "
              f"{options.stage_overhead_minutes:g} min set-up a stage\n")
        print("| function ran by N lines | GPU-min full | family grain | shard grain | shard vs family | median "
              "| stages family | stages shard |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for row in found["rows"]:  # type: ignore[attr-defined]
            print(f"| {row['reach']} | {row['gpu_min_full']} | {row['gpu_min_family_grain']} | "
                  f"{row['gpu_min_shard_grain']} | {row['shard_vs_family_saving']} | {row['median_shard_vs_family']}"
                  f" | {row['stages_family_grain']:.1f} | {row['stages_shard_grain']:.1f} |")
        return 0
    measured = [found for sha, parent in commits() if (found := measure(sha, parent)) is not None]
    by_rule: dict[str, list[Commit]] = defaultdict(list)
    for commit in measured:
        by_rule[commit.rule].append(commit)
    faults: dict[str, list[tuple[str, Target, str]]] = defaultdict(list)  # rule -> (commit, target, verdict)
    for rule, found in sorted(by_rule.items()):
        for commit in found:
            if len(faults[rule]) >= options.faults:
                break
            target = next(targets(commit), None)
            if target is None:
                continue
            faults[rule].append((commit.sha[:10], target, _verdict(commit, target)))
    rows = [_row(rule, found, faults.get(rule, [])) for rule, found in sorted(by_rule.items())]
    rows.append(_row("all", measured, [f for found in faults.values() for f in found]))
    added, unwaived = synthetic_waives(options.faults) if options.faults else (None, [])
    synthetic = [(commit.sha[:10], *_unwaive_verdict(commit)) for commit in unwaived]
    control = (f"selects {len(selected_tests(added))} test line(s) (scope "
               f"{added.narrowed.narrowing.scope.value if added.narrowed and added.narrowed.narrowing else '?'})"
               if added else "not measured")  # fmt: skip
    if options.json:
        print(json.dumps({"commits": len(measured), "rules": rows, "synthetic_waives": {
            "added_waive_control": control, "unwaive": _row("waives (synthetic)", [], synthetic)["caught"],
            "faults": [f"{sha} {target.path}::{target.function}: {verdict}" for sha, target, verdict in synthetic],
        }}, indent=2))  # fmt: skip
        return 0
    print(f"{len(measured)} commits of {ROOT.name} replayed (first parent, catalog and test-db of each commit)\n")
    print("| rule | commits | GPU-min full | GPU-min narrowed | median saving | total saving | stage-min saving "
          "| faults caught |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for row in rows:
        print(f"| {row['rule']} | {row['commits']} | {row['gpu_full']:.1f} | {row['gpu_narrowed']:.1f} | "
              f"{row['median_saving']} | {row['total_saving']} | {row['stage_saving']} | {row['caught']} |")
    print("\nplanted faults per exact rule (commits whose files that rule claimed, with others or alone):")
    for exact in EXACT_RULES:
        found = [f for rule, listed in faults.items() if exact in rule.split("+") for f in listed]
        print(f"- {exact}: {_row(exact, [], found)['caught'] if found else 'no commit of this history'}"
              + (f"; synthetic: {_row(exact, [], synthetic)['caught']}" if exact == "waives" and synthetic else ""))
    print()
    for rule, listed in sorted(faults.items()):
        for sha, target, verdict in listed:
            print(f"- {rule}: {sha} {target.path}::{target.function}: {verdict}")
    if added or synthetic:
        print("\nSYNTHETIC waives case (not this history: commits the bench made on HEAD in a temporary worktree, a"
              " base that waives CPU-rendered tests and one child per waive that removes it):")
        print(f"- added waives (control, {WAIVES} only): {control}")
        for sha, target, verdict in synthetic:
            print(f"- waives (synthetic unwaive): {sha} {target.path}::{target.function}: {verdict}")
        print(f"- waives (synthetic): {_row('waives', [], synthetic)['caught']}")
    return 0


def _verdict(commit: Commit, target: Target) -> str:
    if commit.rule == "fallback":
        tests = importing_tests(commit, target)
        if not tests:
            return "not caught (no selected CPU test imports it)"
        ran = caught(commit, target, tests)
        return "caught" if ran is Ran.CAUGHT else f"not caught by {len(tests)} importing test file(s) ({ran.value})"
    cpu, gpu = selected_lines(commit, target)
    ran = caught(commit, target, cpu) if cpu else Ran.NOT_RUN
    if ran is Ran.CAUGHT:
        return "caught"
    if ran is Ran.NOT_RUN and gpu:
        return "selected on GPU stages only (not run here)"
    return f"not caught ({'not selected' if not cpu and not gpu else ran.value})"


def _unwaive_verdict(commit: Commit) -> tuple[Target, str]:
    target = next(targets(commit), None) if commit.rule == "waives" else None
    if target is None:  # the waives rule did not claim it, or it selected no test to plant into
        return Target(WAIVES, "-", 0, 0), f"not caught (rule {commit.rule}, {len(selected_tests(commit))} line(s))"
    return target, _verdict(commit, target)


def _percent(saved: float, full: float) -> str:
    return f"{100 * saved / full:.0f} %" if full > 0 else "-"


def _row(rule: str, found: Sequence[Commit], faults: Sequence[tuple[str, Target, str]]) -> dict[str, object]:
    savings = [1 - c.narrowed_gpu / c.full_gpu for c in found if c.full_gpu > 0]
    full, narrowed = sum(c.full_gpu for c in found), sum(c.narrowed_gpu for c in found)
    stage_full, stage_narrowed = sum(c.full_stage for c in found), sum(c.narrowed_stage for c in found)
    ran = [verdict for _, _, verdict in faults if "not run here" not in verdict]
    caught_count = sum(verdict == "caught" for verdict in ran)
    gpu_only = len(faults) - len(ran)
    return {
        "rule": rule,
        "commits": len(found),
        "gpu_full": full,
        "gpu_narrowed": narrowed,
        "median_saving": f"{100 * statistics.median(savings):.0f} %" if savings else "-",
        "total_saving": _percent(full - narrowed, full),
        "stage_saving": _percent(stage_full - stage_narrowed, stage_full),
        "caught": (f"{caught_count}/{len(ran)}" if ran else "-") + (f" (+{gpu_only} GPU-only)" if gpu_only else ""),
    }


if __name__ == "__main__":
    raise SystemExit(main())
