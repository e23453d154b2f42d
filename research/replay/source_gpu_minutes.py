"""GPU-minutes that change-based selection spends on every source commit of this repository's history: each
non-merge commit that changes a Python file other than a test file or conftest.py (ci-tool's own code, the
engine, a helper under tests/; bench/ and research/ are out of scope), its whole change read from git, planned with
today's catalog, test-db and durations (replay_select.rule_plans). Predictions only: no test runs.

    full set        `/bot run --disable-cbts`
    today's rules   `/bot run` without touch records: a source change runs the full set
    import reach    `/bot run` as a GPU type without records narrows: each changed Python file runs the test
                    paths that can load it (change/import_reach.py); a file every test loads (ci-tool's runner
                    plugins, a rootdir conftest) or a change no rule can judge runs the full set

    .venv/bin/python research/replay/source_gpu_minutes.py --history FILE [--limit N] [--json FILE]

FILE is a history with touch records (a post-merge run's, `--record-touches`): the touched rule reads the
change only where the history has records, and the import reach then drops every GPU type's records, so
which records FILE holds does not change the import reach's numbers. Per commit, each GPU type's stages
are summed as minutes x GPUs (replay_gpu_minutes.by_gpu_type), the timed lines (the perf cases) apart.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mutation_replay_bench import ROOT
from replay_gpu_minutes import by_gpu_type
from replay_select import Rule, rule_plans

from ci_tool.change.build import GitRange, read_change
from ci_tool.change.value import test_path_of
from ci_tool.stages.catalog_load import open_catalog

RULES = (Rule.FULL, Rule.TODAY, Rule.REACH)
_GPU_TYPE = re.compile(r"\b(?:CPU|A10|DGX_[\w-]+|GB[\w-]+)(?=[ )])")  # the GPU type a reason names
FULL_REASONS = ("no rule claims", "cannot narrow", "run their full set")  # a plan line that says why
OUT_OF_SCOPE = ("bench/", "research/")  # the catalog's change_rules.out_of_scope (the history has both)


@dataclass(frozen=True)
class Measured:
    sha: str
    subject: str
    kind: str  # which source it changes: engine, ci-tool, tests (helpers), or a mix
    scope: str  # the import reach's: narrowed, noop or full
    gpu: dict[str, dict[str, float]]  # rule -> GPU type (or "timed lines") -> GPU-minutes
    stage_minutes: dict[str, float]  # rule -> every stage's predicted minutes
    why_full: str  # the import reach's lines that run a full set (no rule claims a file, a GPU type's full set)


def source_commits(clone: Path) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(sha, parent, subject, source files) of each non-merge commit that changes source, newest first."""
    listed = subprocess.run(["git", "log", "--no-merges", "--format=%H %P", "--", "*.py"], cwd=clone, check=True,
                            capture_output=True, text=True).stdout.splitlines()  # fmt: skip
    found = []
    for sha, *parents in (line.split() for line in listed):
        if len(parents) != 1:
            continue
        names = subprocess.run(["git", "diff", "--name-only", "--no-renames", parents[0], sha], cwd=clone, check=True,
                               capture_output=True, text=True).stdout.split()  # fmt: skip
        source = tuple(path for path in names if path.endswith(".py") and test_path_of(path) is None
                       and not path.startswith(OUT_OF_SCOPE))  # fmt: skip
        if source:
            subject = subprocess.run(["git", "log", "-1", "--format=%s", sha], cwd=clone, check=True,
                                     capture_output=True, text=True).stdout.strip()  # fmt: skip
            found.append((sha, parents[0], subject, source))
    return found


def kind_of(source: Sequence[str]) -> str:
    kinds = sorted({"engine" if path.startswith("src/") else "ci-tool" if path.startswith("ci_tool/") else "tests"
                    for path in source})  # fmt: skip
    return "+".join(kinds)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--history", type=Path, required=True, help="a history with touch records")
    parser.add_argument("--limit", type=int, default=0, help="the newest N source commits (0: all)")
    parser.add_argument("--json", type=Path, help="write every number (JSON)")
    options = parser.parse_args(argv)
    loaded = open_catalog(ROOT / "jenkins" / "stages.yml", ROOT / "test-db")
    measured: list[Measured] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="source-gpu-") as scratch:
        clone = Path(scratch) / "repository"
        subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(ROOT), str(clone)], check=True)
        chosen = source_commits(clone)
        for sha, parent, subject, source in chosen[: options.limit or None]:
            change = read_change(GitRange(parent, sha), test_db=clone / "test-db", root=clone,
                                 history=options.history)  # fmt: skip
            if change is None or change.touches is None:
                raise SystemExit(f"{sha[:12]}: no touch records read from {options.history}")
            plans = rule_plans(loaded, change, RULES)
            reach = plans[Rule.REACH]
            why = "; ".join(line for line in reach.reasons if any(word in line for word in FULL_REASONS))
            gpu = {rule.value: by_gpu_type(plans[rule], loaded) for rule in RULES}
            stage = {rule.value: math.fsum(plan.predicted_minutes for plan in plans[rule].plans.values())
                     for rule in RULES}  # fmt: skip
            measured.append(Measured(sha, subject, kind_of(source), reach.scope, gpu, stage, why))
            print(f"{len(measured)}/{len(chosen[: options.limit or None])} {sha[:10]} {kind_of(source)} {reach.scope}",
                  file=sys.stderr)  # fmt: skip
    print(report(measured, time.monotonic() - started))
    if options.json is not None:
        rows = [{"commit": found.sha, "subject": found.subject, "kind": found.kind, "scope": found.scope,
                 "gpu_minutes": found.gpu, "stage_minutes": found.stage_minutes, "why_full": found.why_full}
                for found in measured]  # fmt: skip
        options.json.write_text(json.dumps({"commits": rows}, indent=2) + "\n", encoding="utf-8")
    return 0


def _total(found: Sequence[Measured], rule: Rule, gpu_type: str | None = None) -> float:
    return math.fsum(sum(v for k, v in m.gpu[rule.value].items() if gpu_type in (None, k)) for m in found)


def _saved(full: float, kept: float) -> str:
    return f"{100 * (full - kept) / full:.0f} %" if full else "-"


def report(measured: Sequence[Measured], seconds: float) -> str:
    lines = [f"{len(measured)} source commits, {seconds:.0f} s", "",
             "| commits | count | import reach: narrowed / noop / full | GPU-min full | today's rules | saved | "
             "import reach | saved | median saving per commit | stage-min saved (import reach) |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    kinds: dict[str, list[Measured]] = defaultdict(list)
    for found in measured:
        kinds[found.kind].append(found)
    for kind, found in [*sorted(kinds.items()), ("all", list(measured))]:
        full, today, reach = (_total(found, rule) for rule in RULES)
        scopes = "/".join(str(sum(m.scope == scope for m in found)) for scope in ("narrowed", "noop", "full"))
        per_commit = [1 - _total([m], Rule.REACH) / _total([m], Rule.FULL) for m in found if _total([m], Rule.FULL)]
        median = f"{100 * statistics.median(per_commit):.0f} %" if per_commit else "-"
        stage_full = math.fsum(m.stage_minutes[Rule.FULL.value] for m in found)
        stage_reach = math.fsum(m.stage_minutes[Rule.REACH.value] for m in found)
        stages = _saved(stage_full, stage_reach)
        lines.append(f"| {kind} | {len(found)} | {scopes} | {full:.1f} | {today:.1f} | {_saved(full, today)} | "
                     f"{reach:.1f} | {_saved(full, reach)} | {median} | {stages} |")  # fmt: skip
    gpu_types = sorted({gpu for m in measured for gpu in m.gpu[Rule.FULL.value]})
    lines += ["", "| GPU type | GPU-min full | import reach | saved |", "|---|---:|---:|---:|"]
    for gpu in gpu_types:
        full, reach = _total(measured, Rule.FULL, gpu), _total(measured, Rule.REACH, gpu)
        lines.append(f"| {gpu} | {full:.1f} | {reach:.1f} | {_saved(full, reach)} |")
    reasons: dict[str, int] = defaultdict(int)
    for found in measured:
        lines_of = [line.split(": ", 1)[-1] for line in found.why_full.split("; ") if line]
        for why in {_GPU_TYPE.sub("<GPU type>", line) for line in lines_of}:
            reasons[why] += 1
    lines += ["", "Why the import reach ran a full set (commits, by the plan's words):", ""]
    lines += [f"- {count}: {why}" for why, count in sorted(reasons.items(), key=lambda item: -item[1])]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
