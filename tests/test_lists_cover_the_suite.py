"""Every test file of this repository is on a test-db list: a file on none runs in no stage, so neither a
pull request's pipeline nor change-based selection would ever run it (56 of 171 files were on none)."""

from __future__ import annotations

from pathlib import Path

from ci_tool.testdb.check import covers
from ci_tool.testdb.load import load_test_db

ROOT = Path(__file__).resolve().parents[1]
# the suite runs these, never a stage (.ci/run runs the whole suite): they start a Slurm cluster as root, or run
# the generated workflow itself under act (whose stage jobs run stages: a stage must not run them again)
NOT_IN_STAGES = ("tests/ci_tool/run/slurm", "tests/ci_tool/actions")


def test_every_test_file_is_on_a_list_or_named_as_run_by_the_suite_alone() -> None:
    db = load_test_db(ROOT / "test-db")
    listed = {entry.line.path for context in db.contexts.values() for block in context.blocks
              for entry in block.entries}  # fmt: skip
    files = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "tests").rglob("test_*.py"))
    unlisted = [f for f in files if not any(covers(selector, f) for selector in (*listed, *NOT_IN_STAGES))]
    assert unlisted == []
