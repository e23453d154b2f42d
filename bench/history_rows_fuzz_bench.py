"""Fuzz campaign of the history's readers: a real history (six runs with a flaky test, a perf result, a touch
record) whose rows are edited N ways outside ci-tool (one to three columns of random rows set to another
JSON type, NaN, inf, 1e300, huge integers, blobs, empty or unknown vocabulary), each read by the verbs
through the real CLI: history, report latest and of a run, flaky report, durations export, perf baseline
diff, waive propose (and the site every 20th).

    python bench/history_rows_fuzz_bench.py [--count N] [--seed S]

Prints how many answered (exit 0), how many were our located error (exit 1) and how many anything else
("unexpected"), with the first few edits that caused one. Exit code 1 when any was unexpected.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ci_tool.cli import main
from ci_tool.history.perf_results import PerfResult, record_perf_results
from ci_tool.history.store import HistoryStore
from ci_tool.history.touch_table import TouchRow, record_touches
from ci_tool.outcomes import PerfVerdict
from tests.ci_tool.history.planted import A10, DAY_ONE, plant

VALUES = (
    None, 0, -1, 2**63 - 1, 1e300, -1e300, float("nan"), float("inf"), "", "x", "NaN", "1e300", "exploded",
    "passed", "running", "{", "[]", "{\"a\": NaN}", b"\x00\xff", 0.5,
)  # fmt: skip
TABLES = ("runs", "stages", "test_results", "perf_results", "touch_records", "schema_version")
VERBS = (
    ["history", "--json"], ["report", "latest"], ["report", "r3", "--format", "json"],
    ["flaky", "report", "--today", "2027-01-11"], ["durations", "export"],
    ["perf", "baseline", "diff", "--gpu", "cpu", "--baselines", "baselines"],
    ["waive", "propose", "--today", "2027-01-11", "--waives", "waives.txt"],
)  # fmt: skip


def base_history(path: Path) -> None:
    with HistoryStore(path) as store:
        plant(store)
        record_perf_results(
            store,
            [PerfResult("r6", A10, "perf-a-b", "cpu", "decode_tokens_per_s", 10.0, PerfVerdict.RECORDED, DAY_ONE)],
        )
        row = TouchRow("src/a.py", "f", "a.py::test_stable", "CPU", "CPU-Generic-1", "c1")
        record_touches(store, "r6", [row], recorded_at=DAY_ONE)


def edit(path: Path, rng: random.Random) -> str:
    db = sqlite3.connect(path, isolation_level=None)
    said = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        table = rng.choice(TABLES)
        columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
        column, value = rng.choice(columns), rng.choice(VALUES)
        rowids = [row[0] for row in db.execute(f"SELECT rowid FROM {table}")]
        if not rowids:
            continue
        rowid = rng.choice(rowids)
        try:
            db.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (value, rowid))
        except sqlite3.IntegrityError:  # NOT NULL or a key taken: SQLite refuses that edit itself
            continue
        said.append(f"{table}.{column}[{rowid}] = {value!r:.30}")
    db.close()
    return "; ".join(said)


def quiet(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue() + err.getvalue()


def campaign(count: int, seed: int) -> int:
    rng = random.Random(seed)
    outcomes: collections.Counter[str] = collections.Counter()
    unexpected: list[tuple[str, str, str]] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder, contextlib.chdir(folder):
        Path("waives.txt").write_text("")
        base_history(Path("base.sqlite"))
        for number in range(count):
            history = Path(f"h{number % 2}.sqlite")
            shutil.copyfile("base.sqlite", history)
            said = edit(history, rng)
            verbs = [*VERBS, *([["site", "--output", f"site{number}"]] if number % 20 == 0 else [])]
            for verb in verbs:
                code, printed = quiet([*verb, "--history", str(history)])
                if "error: unexpected " in printed or code not in (0, 1):
                    outcomes["unexpected"] += 1
                    unexpected.append((said, " ".join(verb), printed.strip().splitlines()[-1]))
                else:
                    outcomes["answered" if code == 0 else "our error"] += 1
            if number % 20 == 0:
                shutil.rmtree(f"site{number}", ignore_errors=True)
    seconds = time.monotonic() - started
    print(f"{count} edited histories (seed {seed}), {sum(outcomes.values())} verb runs in {seconds:.1f} s: "
          + ", ".join(f"{n} {k}" for k, n in outcomes.items()))  # fmt: skip
    print(f"  {outcomes['unexpected']} unexpected")
    for said, verb, line in unexpected[:5]:
        print(f"  UNEXPECTED {verb} after {said}: {line}")
    return 1 if unexpected else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    sys.exit(campaign(options.count, options.seed))
