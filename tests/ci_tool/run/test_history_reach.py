"""Only ci-tool writes the history: a stage's tests run a change's code, so they get no way into it (no history
location, no PostgreSQL password, under any variable name), and what they measure (perf-sanity results) travels
back through a file the runner reads and records as its own run's and stage's. Real `ci-tool stage run`s of a
copy of the failing suite, with a shared history and credentials in ci-tool's environment."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.history import queries
from ci_tool.history.perf_results import PerfResult, record_perf_results, run_perf_results
from ci_tool.history.store import HistoryStore, RunRecord
from ci_tool.outcomes import PerfVerdict

ROOT = Path(__file__).resolve().parents[3]
CPU_ONLY = ("--system-info", "cpu-only.json")
CATALOG = """\
version: 1
families:
- {name: CPU-Generic, platform: cpu, context: l0_reach, splits: 1}
- {name: CPU-Generic-PerfSanity-Post-Merge, platform: cpu, context: l0_perf, splits: 1}
"""
TEST_DB = """\
version: 0.0.1
l0_reach:
- condition: {}
  tests: [cases/case_reach.py]
l0_perf:
- condition: {}
  tests: [cases/case_perf.py]
"""
REACH = """\
import json
import os
from pathlib import Path


def test_environment():
    Path(os.environ["REACH_OUT"]).write_text(json.dumps(dict(os.environ)))


def test_hands_back_a_forged_row():
    forged = {"run_id": "forged-run", "stage": "CPU-Generic-Post-Merge-1", "case": "c", "gpu": "cpu",
              "metric": "m", "value": 1.0, "verdict": "passed", "recorded_at": 4.0e12, "baseline": None,
              "threshold": None, "note": "", "test_id": "", "post_merge": True, "branch": "main", "commit": "x",
              "noise": 0.0, "rounds": 1}
    with open(os.environ["CI_TOOL_PERF_RESULTS"], "a") as out:
        out.write(json.dumps(forged) + "\\n" + "not a row\\n")
"""
CASE = "cpu-gemma_like-pool4g-b80"
TPS = "decode_tokens_per_s"
PERF = f"""
from pathlib import Path

from ci_tool.perf.config import load_config
from ci_tool.perf.fixture import perf_sanity  # noqa: F401

CASE = [c for c in load_config(Path({str(ROOT / "tests/scripts/perf-sanity/gemma_like.yaml")!r})).cases
        if c.case_id == {CASE!r}][0]


def test_case(perf_sanity):
    perf_sanity.report(CASE, {{{TPS!r}: 1352.0, "eager_steps": 0.0}}, noise={{{TPS!r}: 3.0}}, rounds=5)
"""
# post-merge medians of earlier runs: the slower attention path landed in commit c9
STEP = [1504.0, 1501.0, 1511.0, 1498.0, 1509.0, 1504.0, 1495.0, 1507.0, 1502.0, 1356.0, 1349.0]
SECRET = "s3cret-pw"


@pytest.fixture
def shared(suite: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The suite with this file's catalog, and ci-tool's environment as a CI agent's: a shared history and the
    database's password (libpq's variable, and a URL bound under a name of the agent's own)."""
    (suite / "reach.yml").write_text(CATALOG)
    (suite / "test-db" / "l0_reach.yml").write_text(TEST_DB)
    (suite / "cases" / "case_reach.py").write_text(REACH)
    (suite / "cases" / "case_perf.py").write_text(PERF)
    history = suite.parent / "shared-history.sqlite"
    monkeypatch.chdir(suite)
    monkeypatch.setenv("CI_TOOL_HISTORY", str(history))
    monkeypatch.setenv("PGPASSWORD", SECRET)
    monkeypatch.setenv("JENKINS_DB_URL", f"postgresql://ci:{SECRET}@db.example.invalid/history")
    monkeypatch.setenv("REACH_OUT", str(suite.parent / "environment.json"))
    monkeypatch.setenv("CI_TOOL_PERF_BASELINES", str(suite.parent / "no-baselines"))
    monkeypatch.setenv("CI_TOOL_COMMIT", "c11")
    return history


def stage_run(capsys: pytest.CaptureFixture[str], name: str) -> tuple[int, str]:
    code = main(["stage", "run", name, "--catalog", "reach.yml", *CPU_ONLY])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def the_run(history: Path) -> RunRecord:
    with HistoryStore(history, read_only=True) as store:
        (run,) = queries.recent_runs(store)
        return run


def test_a_test_gets_no_way_into_the_history(shared: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = stage_run(capsys, "CPU-Generic-1")
    seen = json.loads((shared.parent / "environment.json").read_text())
    assert {"CI_TOOL_HISTORY", "PGPASSWORD", "JENKINS_DB_URL"} & set(seen) == set()
    assert [name for name, value in seen.items() if SECRET in value or shared.name in value] == []
    assert code == 0, out


def test_what_a_test_hands_back_is_recorded_as_its_own_stages(shared: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = stage_run(capsys, "CPU-Generic-1")
    run = the_run(shared)
    run_id = run.run_id
    with HistoryStore(shared, read_only=True) as store:
        (row,) = run_perf_results(store, run_id)
        assert run_perf_results(store, "forged-run") == []
    assert code == 0, out
    stamped = (row.run_id, row.stage, row.post_merge, row.commit, row.case_id)
    assert stamped == (run_id, "CPU-Generic-1", False, "x", "c")
    assert run.started_at <= row.recorded_at <= time.time()  # not the forged 4e12: the newest result forever
    parts = Path(".ci-tool/runs") / run_id / "CPU-Generic-1" / "parts" / "p01-main.perf.jsonl"
    assert (
        f"warning: a perf result of CPU-Generic-1 is not recorded: {parts.absolute()}:2:1: expected JSON, found a "
        "syntax error: Expecting value"
    ) in out


def test_a_perf_case_reads_the_runners_snapshot_and_hands_its_rows_back(
    shared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with HistoryStore(shared) as store:  # the post-merge series a new change point shows in
        record_perf_results(store, [
            PerfResult(f"r{i}", "S", CASE, "cpu", TPS, v, PerfVerdict.PASSED, float(i), post_merge=True,
                       branch="main", commit=f"c{i}") for i, v in enumerate(STEP)
        ])  # fmt: skip
    code, out = stage_run(capsys, "CPU-Generic-PerfSanity-Post-Merge-1")
    with HistoryStore(shared, read_only=True) as store:
        [tps] = [r for r in run_perf_results(store, the_run(shared).run_id) if r.metric == TPS]
    line = ("new change point at run 10 of 12: decode_tokens_per_s 1504 -> 1352 tokens/s (10.1% worse), commits "
            "c8..c9 (p = 0.010)")  # fmt: skip
    assert code == 0, out
    assert (tps.stage, tps.post_merge, tps.commit, tps.verdict, tps.note) == (
        "CPU-Generic-PerfSanity-Post-Merge-1", True, "c11", PerfVerdict.WARNED, line
    )

