"""Touch records on this repository's own tests: what recording costs, how large the records are, and how long
the touched rule takes to judge them for a change.

    cost      the same pytest run of PATHS twice, plain and with the touch plugin (function grain, child
              processes measured), wall seconds and their ratio (best of --rounds each)
    size      the record file (JSON), its (file, unit, test) records, and a SQLite history holding them
              stamped as one CPU stage at REV~1
    judging   change/touch_evidence.touch_evidence for REV~1..REV's changed Python files (--change REV, default
              HEAD; the records stamped at REV~1) against that history (git reads included), then the touched
              rule's plan: mean of --rounds

    .venv/bin/python bench/touch_records_bench.py [PATHS ...] [--rounds 2] [--change REV]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ci_tool import gitinfo
from ci_tool.change.touch_evidence import touch_evidence
from ci_tool.change.touched_rule import plan_touched
from ci_tool.history.store import HistoryStore
from ci_tool.history.touch_table import read_touch_files, record_touches, stamped
from ci_tool.run.touch_recorder import OPTION, PLUGIN

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PATHS = ("tests/kvengine", "tests/ci_tool/stages")


def pytest_seconds(paths: list[str], record: Path | None) -> float:
    plugin = ["-p", PLUGIN, f"{OPTION}={record}"] if record is not None else []
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *plugin, *paths]
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if done.returncode not in (0, 5):
        raise SystemExit(f"pytest failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=list(DEFAULT_PATHS))
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--change", default="HEAD", help="The commit whose change is judged.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        record = Path(folder) / "p01.touches.json"
        plain = min(pytest_seconds(args.paths, None) for _ in range(args.rounds))
        recording = min(pytest_seconds(args.paths, record) for _ in range(args.rounds))
        print(f"cost: plain {plain:.1f} s, recording {recording:.1f} s, ratio {recording / plain:.2f}")
        touches = read_touch_files([record])
        tests = {test for found in touches.values() for test in found}
        base, head = (gitinfo.commit_of(ROOT, rev) or "" for rev in (f"{args.change}~1", args.change))
        rows = stamped(touches, stage="CPU-Generic-1", gpu_type="CPU", commit=base)
        history = Path(folder) / "h.sqlite"
        with HistoryStore(history) as store:
            record_touches(store, "r1", rows, recorded_at=1.0)
        files, kib = len({source for source, _ in touches}), history.stat().st_size / 1024
        print(f"size: {record.stat().st_size / 1024:.0f} KiB JSON, {len(rows)} records ({files} files, "
              f"{len(touches)} units, {len(tests)} tests), history {kib:.0f} KiB")  # fmt: skip
        changed = sorted(path for path in gitinfo.changed_between(ROOT, base, head) if path.endswith(".py"))
        seconds = []
        with HistoryStore(history, read_only=True) as store:
            for _ in range(args.rounds):
                started = time.monotonic()
                evidence = touch_evidence(store, ROOT, base=base, head=head, files=changed, deleted=())
                plan_touched(evidence, sorted(evidence.files), ["CPU"], test_path=lambda path: None)
                seconds.append(time.monotonic() - started)
        print(f"judging: {len(changed)} changed Python file(s) of {head[:12]}, {len(evidence.files)} with records: "
              f"{statistics.mean(seconds) * 1000:.0f} ms")  # fmt: skip
        print(json.dumps({"plain_s": plain, "recording_s": recording, "records": len(rows)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
