"""The replay bench's report (mutation_replay_bench.py): the summary table, the faults each rule misses, time
to the first failure, spot checks, and every commit and fault, as markdown; and the same as JSON."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Sequence
from typing import Any

from replay_count import ORDERS, Fault, Replayed, first_failure_ratio, misses, table
from replay_select import NARROWING, Rule

_SHORT = {Rule.FULL: "full", Rule.TODAY: "today", Rule.FILE: "file", Rule.FUNCTION: "function", Rule.REACH: "reach"}


def report(replayed: Sequence[Replayed], skipped: Sequence[tuple[Any, str]], *, command: str, seconds: float) -> str:
    faults = [fault for commit in replayed for fault in commit.faults]
    lines = [
        "# Mutation replay",
        "",
        f"`.venv/bin/python {command}` on {time.strftime('%Y-%m-%d')}, {platform.machine()} with {os.cpu_count()} "
        f"cores, Python {platform.python_version()}: {seconds / 60:.1f} min, {len(replayed)} commits, "
        f"{len(faults)} faults",
        "",
        *table(replayed),
        "",
        *_first_failure(faults),
        *_spot_checks(faults),
        "",
        "## Faults the full set catches and a rule misses",
        "",
        *_misses(replayed),
        "",
        "## Commits",
        "",
        *_commits(replayed),
        *([""] + [f"- {commit.sha[:10]} left out: {why}" for commit, why in skipped] if skipped else []),
        "",
        "## Faults",
        "",
        *_faults(faults),
    ]
    return "\n".join(lines) + "\n"


def _first_failure(faults: Sequence[Fault]) -> list[str]:
    caught = [fault for fault in faults if fault.caught[Rule.FULL]]
    lines = []
    for order in ORDERS[1:]:
        count, median = first_failure_ratio(caught, order)
        lines.append(f"- time to the first failure, {order} / today (median over {count} faults): {median}")
    return lines


def _spot_checks(faults: Sequence[Fault]) -> list[str]:
    checked = [fault for fault in faults if fault.checked is not None]
    agree = sum(fault.checked == fault.caught[Rule.FUNCTION] for fault in checked)
    return [f"- spot checks (the function grain's set run for real): {agree} of {len(checked)} agree with the reading"]


def _misses(replayed: Sequence[Replayed]) -> list[str]:
    lines = []
    for rule in NARROWING:
        found = misses(replayed, rule)
        lines.append(f"- {rule.value}: {len(found)}")
        lines += [f"  - {fault.commit[:10]} {fault.mutant.label}" for fault in found]
    return lines


def _commits(replayed: Sequence[Replayed]) -> list[str]:
    lines = [
        "| commit | subject | functions | faults | full catches | function grain | GPU-min full / fn | CPU stage-min "
        "full / fn | records at the parent | left out |",
        "|---|---|---:|---:|---:|---|---:|---:|---|---|",
    ]
    for commit in replayed:
        full, mine = commit.costs[Rule.FULL], commit.costs[Rule.FUNCTION]
        caught = sum(fault.caught[Rule.FULL] for fault in commit.faults)
        lines.append(
            f"| {commit.sha[:10]} | {commit.subject[:60]} | {len(commit.functions)} | {len(commit.faults)} "
            f"| {caught} | "
            f"{commit.scopes[Rule.FUNCTION]} | {full.gpu_minutes:.1f} / {mine.gpu_minutes:.1f} | "
            f"{full.cpu_stage_minutes:.2f} / {mine.cpu_stage_minutes:.2f} | {commit.records} "
            f"| {len(commit.left_out)} file(s) under "
            "ci_tool/ |"
        )
    for commit in replayed:
        lines += ["", f"{commit.sha[:10]} function grain:", *(f"- {reason}" for reason in commit.reasons)]
        if commit.baseline_failures:
            lines.append(f"- failing before any fault (never counted): {', '.join(commit.baseline_failures)}")
    return lines


def _faults(faults: Sequence[Fault]) -> list[str]:
    lines = [
        "| commit | fault | " + " | ".join(_SHORT[rule] for rule in Rule) + " | failing tests | first failure s "
        "(today / likelihood / narrowed) | run for real |",
        "|---|---|" + "---|" * len(Rule) + "---:|---|---|",
    ]
    for fault in faults:
        marks = " | ".join("caught" if fault.caught[rule] else "-" for rule in Rule)
        times = " / ".join(_seconds(fault.first_failure.get(order)) for order in ORDERS)
        checked = "-" if fault.checked is None else ("caught" if fault.checked else "not caught")
        broken = f" ({fault.broken})" if fault.broken else ""
        lines.append(
            f"| {fault.commit[:10]} | {fault.mutant.label}{broken} | {marks} | {len(fault.failing)} | {times} "
            f"| {checked} |"
        )
    return lines


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def json_of(replayed: Sequence[Replayed], skipped: Sequence[tuple[Any, str]]) -> dict[str, object]:
    """Every number of the report."""
    return {
        "commits": [_commit_json(commit) for commit in replayed],
        "skipped": [{"commit": commit.sha, "why": why} for commit, why in skipped],
        "missed": {rule.value: [_fault_json(fault) for fault in misses(replayed, rule)] for rule in NARROWING},
    }


def _commit_json(commit: Replayed) -> dict[str, object]:
    return {
        "commit": commit.sha,
        "parent": commit.parent,
        "subject": commit.subject,
        "records": commit.records,
        "runs": {rule.value: list(paths) for rule, paths in commit.runs.items()},
        "functions": list(commit.functions),
        "scopes": {rule.value: scope for rule, scope in commit.scopes.items()},
        "costs": {
            rule.value: {
                "gpu_minutes": cost.gpu_minutes,
                "gpu_stage_minutes": cost.gpu_stage_minutes,
                "cpu_stage_minutes": cost.cpu_stage_minutes,
                "engine_minutes": cost.engine_minutes,
            }
            for rule, cost in commit.costs.items()
        },
        "reasons": list(commit.reasons),
        "left_out": list(commit.left_out),
        "baseline_failures": list(commit.baseline_failures),
        "seconds": commit.seconds,
        "faults": [_fault_json(fault) for fault in commit.faults],
    }


def _fault_json(fault: Fault) -> dict[str, object]:
    mutant = fault.mutant
    return {
        "commit": fault.commit,
        "path": mutant.path,
        "function": mutant.unit,
        "operator": mutant.operator.value,
        "line": mutant.line,
        "before": mutant.before,
        "after": mutant.after,
        "caught": {rule.value: fault.caught[rule] for rule in Rule},
        "failing": sorted(fault.failing),
        "first_failure_seconds": dict(fault.first_failure),
        "broken": fault.broken,
        "checked": fault.checked,
    }
