"""The replay bench's counting (mutation_replay_bench.py): what each planted fault says of each rule, what each
commit's selection costs, time to the first failure, and the table. Pure: run results in, numbers and text out.

    caught        a fault is caught by a set when a test of the set fails with it and passed without it
                  (the commit's baseline run), or when a process of the set crashed or outlived its limit
    missed        caught by the full set, not by the rule's set: the goal is none
    minutes       GPU-minutes and GPU stage-minutes predicted (test-db/.test_durations, the catalog); CPU
                  stage-minutes: the engine's tests measured (their seconds in the commit's baseline run),
                  the stages' other lines and the CPU stages without a test list predicted; stage-minutes
                  are GPU and CPU stage-minutes together
    first failure the seconds of a stage's tests before and including its first failing one, in the order
                  its process runs them: the engine's tests measured, the stage's other lines predicted
                  (test-db/.test_durations), its start-up (the same in every order) left out; a fault's time
                  is its earliest stage's (stages run side by side). Today: the full set in list order;
                  likelihood: the priority first, as ci_tool/run/order.py ranks it (a run of one file's
                  entries together, in the order they ran), then the rest in list order
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from replay_mutants import Mutant
from replay_runs import Batch, TestResult
from replay_select import NARROWING, Rule, Slot, Stages, covered

from ci_tool.run.order import ancestors, groups


@dataclass(frozen=True)
class Fault:
    """One planted fault and what each rule's set made of it."""

    commit: str
    mutant: Mutant
    failing: frozenset[str]  # tests that failed with it and passed without it
    caught: Mapping[Rule, bool]
    first_failure: Mapping[str, float | None] = field(default_factory=dict)  # order -> seconds (None: no failure)
    broken: str = ""  # a process that left no results
    checked: bool | None = None  # the function grain's set run for real: did it catch the fault (None: not run)


@dataclass(frozen=True)
class Cost:
    """What a rule's selection of one commit costs (see the module docstring)."""

    gpu_minutes: float
    gpu_stage_minutes: float
    cpu_stage_minutes: float  # the engine's tests measured, the CPU stages' other lines predicted
    engine_minutes: float  # the engine's tests alone, measured

    @property
    def stage_minutes(self) -> float:
        return self.gpu_stage_minutes + self.cpu_stage_minutes


@dataclass(frozen=True)
class Replayed:
    """One replayed commit: each rule's scope and cost, its faults, and the commit's facts for the listing."""

    sha: str
    parent: str
    subject: str
    functions: tuple[str, ...]  # the changed functions, `path:unit`
    runs: Mapping[Rule, tuple[str, ...]]  # what each rule's set runs of the engine's tests (their paths)
    scopes: Mapping[Rule, str]
    costs: Mapping[Rule, Cost]
    faults: tuple[Fault, ...] = ()
    reasons: tuple[str, ...] = ()  # the function grain's reasons
    left_out: tuple[str, ...] = ()  # changed files outside the replayed scope
    baseline_failures: tuple[str, ...] = ()
    seconds: float = 0.0
    records: str = ""  # what the records at the parent cover: "the engine part", or whole stages


ORDERS = ("today", "likelihood", "narrowed, likelihood")


def caught_by(failing: frozenset[str], results: Sequence[TestResult]) -> bool:
    return any(result.test_id in failing for result in results)


def time_to_failure(
    results: Sequence[TestResult], failing: frozenset[str], stages: Stages, priority: Mapping[str, Sequence[str]]
) -> float | None:
    """The earliest stage's first failure (see the module docstring): `stages` in list order, the run's
    `results` in the slots that hold them, `priority`: stage -> the tests its process runs first."""
    times = [
        _stage_time(_timeline(results, slots, priority.get(stage, ())), failing) for stage, slots in stages.items()
    ]
    found = [seconds for seconds in times if seconds is not None]
    return min(found) if found else None


Step = tuple[str, float]  # a test and its seconds; ("", seconds) for a line the bench did not run


def _timeline(results: Sequence[TestResult], slots: Sequence[Slot], priority: Sequence[str]) -> list[Step]:
    """A stage's one process: its priority first, ranked as ci_tool/run/order.py ranks it (the priority's
    groups, each in the order the tests ran), then every line in list order."""
    seen: set[str] = set()
    blocks: list[list[TestResult] | float] = []
    for slot in slots:
        if not slot.paths:
            blocks.append(slot.seconds)
            continue
        found = [
            result for result in covered(results, [Batch("", slot.paths, slot.filters)]) if result.test_id not in seen
        ]
        seen |= {result.test_id for result in found}
        blocks.append(found)
    ranks = groups(list(priority))
    rest = max(ranks.values(), default=-1) + 1

    def rank(result: TestResult) -> int:
        return min((ranks[above] for above in ancestors(result.test_id) if above in ranks), default=rest)

    ran = [result for block in blocks if isinstance(block, list) for result in block]
    first = sorted((result for result in ran if rank(result) < rest), key=rank)  # stable: in the order they ran
    moved = {result.test_id for result in first}
    steps = [(result.test_id, result.seconds) for result in first]
    for block in blocks:
        if isinstance(block, float):
            steps.append(("", block))
        else:
            steps += [(result.test_id, result.seconds) for result in block if result.test_id not in moved]
    return steps


def _stage_time(steps: Sequence[Step], failing: frozenset[str]) -> float | None:
    elapsed = 0.0
    for test_id, seconds in steps:
        elapsed += seconds
        if test_id in failing:
            return elapsed
    return None


def misses(replayed: Sequence[Replayed], rule: Rule) -> list[Fault]:
    return [
        fault for commit in replayed for fault in commit.faults if fault.caught[Rule.FULL] and not fault.caught[rule]
    ]


def saving(replayed: Sequence[Replayed], rule: Rule, measure: str) -> tuple[float, float]:
    """(full, the rule's) total of one Cost measure over the commits."""
    full = math.fsum(getattr(commit.costs[Rule.FULL], measure) for commit in replayed)
    return full, math.fsum(getattr(commit.costs[rule], measure) for commit in replayed)


def percent(full: float, kept: float) -> str:
    return f"{100 * (full - kept) / full:.0f} %" if full > 0 else "-"


def first_failure_ratio(faults: Sequence[Fault], order: str) -> tuple[int, str]:
    """How many faults both orders reach, and the median of order's time over today's."""
    pairs = [(fault.first_failure.get("today"), fault.first_failure.get(order)) for fault in faults]
    ratios = [mine / today for today, mine in pairs if today and mine is not None]
    return len(ratios), f"{statistics.median(ratios):.2f}" if ratios else "-"


def table(replayed: Sequence[Replayed]) -> list[str]:
    """The summary table: one row per rule."""
    faults = [fault for commit in replayed for fault in commit.faults]
    lines = [
        "| rule | faults caught | missed (full catches) | GPU-min | saved | stage-min | saved | CPU stage-min | saved "
        "| engine tests min | saved |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for rule in (Rule.FULL, *NARROWING):
        caught = sum(fault.caught[rule] for fault in faults)
        missed = "-" if rule is Rule.FULL else str(len(misses(replayed, rule)))
        cells = [f"{caught} of {len(faults)}", missed]
        for measure in ("gpu_minutes", "stage_minutes", "cpu_stage_minutes", "engine_minutes"):
            full, kept = saving(replayed, rule, measure)
            cells += [f"{kept:.1f}", percent(full, kept)]
        lines.append(f"| {rule.value} | " + " | ".join(cells) + " |")
    return lines
