"""`ci-tool testdb check` on TensorRT-LLM's real test-db and waives: ci-tool's stricter default reports the
reference's `TIMEOUT (60)` lines and its waives of tests outside these files; the reference's own policy,
written as a checks file, passes (where: tests/ci_tool/testdb/corpus.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tool.cli import main
from tests.ci_tool.testdb.corpus import TEST_DB, WAIVES, needs_corpus

pytestmark = needs_corpus(TEST_DB)

# The reference lets `TIMEOUT (60)` stand, and leaves `unittest/` and old `perf/test_perf.py` waives out of the
# stale rule. Its waives also name tests of its QA lists, which the corpus does not hold, so here the stale
# rule is off as a whole.
REFERENCE_CHECKS = """\
checks:
  redundant_timeouts: false
  stale_waives: false
  stale_waives_exempt: [unittest/, perf/test_perf.py]
"""


def check(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, list[str]]:
    code = main(["testdb", "check", "--test-db", str(TEST_DB), "--waives", str(WAIVES), *extra])
    return code, capsys.readouterr().err.splitlines()


def test_the_default_reports_every_repeated_default_timeout(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = check(capsys)
    timeouts = [line for line in lines if "expected no TIMEOUT marker that repeats the default" in line]
    assert code == 1
    assert len(timeouts) == 78
    assert any("expected a waive to name a listed test, found 'unittest/" in line for line in lines)


def test_the_reference_policy_passes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "checks.yml").write_text(REFERENCE_CHECKS, encoding="utf-8")
    code, lines = check(capsys, "--checks", str(tmp_path / "checks.yml"))
    assert (code, lines) == (0, [])


def test_a_checks_file_with_a_typo_is_located(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "checks.yml").write_text("checks:\n  redundant_timeout: false\n", encoding="utf-8")
    code, lines = check(capsys, "--checks", str(tmp_path / "checks.yml"))
    assert code == 1
    assert lines[-1].startswith(f"error: {tmp_path}/checks.yml:2:3 (checks.redundant_timeout): expected one of")
