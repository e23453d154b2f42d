"""Check that every test-db id collects at least one pytest item (`ci-tool testdb check --collect`).

One `pytest --collect-only` process collects the ids of every context at once through ci-tool's
test-list plugin, which reports each id that selected nothing; each becomes an error at the file:line
of every entry that lists it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from ci_tool.errors import TestDbError, Where
from ci_tool.testdb.model import Entry, TestDb


def uncollectable_tests(db: TestDb, *, rootdir: str | Path | None = None) -> list[TestDbError]:
    """One error per test-db entry whose id collects nothing when pytest runs in `rootdir` (default: cwd)."""
    by_id: dict[str, list[Entry]] = {}
    for context in db.contexts.values():
        for block in context.blocks:
            for entry in block.entries:
                by_id.setdefault(entry.line.test_id, []).append(entry)
    if not by_id:
        return []
    ids = list(by_id)
    with tempfile.TemporaryDirectory(prefix="ci-tool-collect-") as scratch:
        list_file = Path(scratch) / "all-ids.txt"
        report_file = Path(scratch) / "collected.json"
        list_file.write_text("".join(test_id + "\n" for test_id in ids), encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "ci_tool.run.plugin",
            f"--test-list={list_file}",
            f"--test-list-report={report_file}",
        ]  # `--opt=value`: a separate value would count as a path when pytest picks its rootdir
        done = subprocess.run(command, cwd=rootdir, capture_output=True, text=True, check=False)
        if not report_file.exists():
            tail = (done.stdout + done.stderr).strip().splitlines()[-5:]
            raise TestDbError(
                f"expected `pytest --collect-only` to report on the test ids, found exit code {done.returncode}: "
                + " | ".join(tail),
                where=Where(db.root),
                hint="run the command in the project root: " + " ".join(command[2:]),
            )
        report = json.loads(report_file.read_text(encoding="utf-8"))
    errors = []
    for missing in report["uncollected"]:
        test_id = ids[int(missing["line"]) - 1]
        for entry in by_id[test_id]:
            errors.append(
                TestDbError(
                    f"expected {test_id!r} to collect at least one test, found none ({missing['reason']})",
                    where=entry.where,
                    hint="fix the id (pytest node id, file or folder, relative to the project root), "
                    "or delete the line if the test is gone",
                )
            )
    return sorted(errors, key=lambda e: (str(e.where.file), e.where.line or 0) if e.where else ("", 0))
