"""Every verb that reads the history, on a real history whose rows were edited to what ci-tool never writes
(text in REAL and INTEGER columns, NULL and empty keys, 1e300 timestamps, unknown states, a schema version
'abc'): each answers, or fails with our located one-line error; none crashes."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.history.perf_results import PerfResult, record_perf_results
from ci_tool.history.store import SCHEMA_VERSION, HistoryStore
from ci_tool.outcomes import PerfVerdict
from tests.ci_tool.history.planted import A10, DAY_ONE, plant

CORRUPTIONS = {
    "schema-version-text": "UPDATE schema_version SET version = 'abc'",
    "schema-version-two-rows": "INSERT INTO schema_version VALUES (2)",
    "started-at-huge": "UPDATE runs SET started_at = 1e300 WHERE run_id = 'r6'",
    "started-at-text": "UPDATE runs SET started_at = 'yesterday' WHERE run_id = 'r6'",
    "finished-at-nan-text": "UPDATE runs SET finished_at = 'NaN' WHERE run_id = 'r6'",
    "run-id-null": "UPDATE runs SET run_id = NULL WHERE run_id = 'r5'",
    "run-state-unknown": "UPDATE runs SET state = 'exploded' WHERE run_id = 'r6'",
    "run-details-cut": "UPDATE runs SET details_json = '{\"cut' WHERE run_id = 'r6'",
    "stage-count-text": "UPDATE stages SET passed = 'many' WHERE run_id = 'r6'",
    "stage-duration-negative": "UPDATE stages SET duration_seconds = -5 WHERE run_id = 'r6'",
    "stage-state-blob": "UPDATE stages SET state = x'00ff' WHERE run_id = 'r6'",
    "test-duration-text": "UPDATE test_results SET duration_seconds = 'slow' WHERE run_id = 'r6'",
    "test-outcome-unknown": "UPDATE test_results SET outcome = 'exploded' WHERE run_id = 'r6'",
    "test-id-empty": "UPDATE test_results SET test_id = '' WHERE run_id = 'r6' AND test_id LIKE '%stable'",
    "test-recorded-at-text": "UPDATE test_results SET recorded_at = 'later' WHERE run_id = 'r6'",
    "perf-value-text": "UPDATE perf_results SET value = 'fast'",
    "perf-run-id-empty": "UPDATE perf_results SET run_id = ''",
    "perf-verdict-unknown": "UPDATE perf_results SET verdict = 'great'",
    "perf-post-merge-text": "UPDATE perf_results SET post_merge = 'yes'",
    "touch-test-null": "INSERT INTO touch_records VALUES ('src/a.py', '', 'CPU', 'f', 'S-1', 'c1', 'r6', 1.0)",
}

VERBS = {
    "history": ["history"],
    "history-json": ["history", "--json"],
    "report-latest": ["report", "latest"],
    "report-run": ["report", "r6", "--format", "json"],
    "report-html": ["report", "r6", "--format", "html", "--output", "page/r6.html"],
    "flaky-report": ["flaky", "report", "--today", "2027-01-11"],
    "site": ["site", "--output", "site"],
    "durations-export": ["durations", "export"],
    "perf-baseline-set": ["perf", "baseline", "set", "--gpu", "cpu", "--baselines", "baselines"],
    "perf-baseline-diff": ["perf", "baseline", "diff", "--gpu", "cpu", "--baselines", "baselines"],
    "waive-propose": ["waive", "propose", "--today", "2027-01-11", "--waives", "waives.txt"],
}


def corrupted_history(folder: Path, corruption: str, *, days_ago: float | None = None) -> Path:
    """The planted runs r1..r6 and one perf result of r6 (moved to start `days_ago` when given, so that a
    run's known-flaky window reads them), then one edit outside ci-tool."""
    path = folder / "h.sqlite"
    with HistoryStore(path) as store:
        plant(store)
        record_perf_results(
            store,
            [PerfResult("r6", A10, "perf-a-b", "cpu", "decode_tokens_per_s", 10.0, PerfVerdict.RECORDED, DAY_ONE)],
        )
    db = sqlite3.connect(path, isolation_level=None)
    if days_ago is not None:
        db.execute("UPDATE runs SET started_at = started_at - ?", (DAY_ONE - (time.time() - days_ago * 86_400),))
    db.execute(CORRUPTIONS[corruption])
    db.close()
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("verb", list(VERBS), ids=list(VERBS))
@pytest.mark.parametrize("corruption", list(CORRUPTIONS), ids=list(CORRUPTIONS))
def test_no_verb_crashes_on_a_corrupted_history(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verb: str, corruption: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "waives.txt").write_text("")
    history = corrupted_history(tmp_path, corruption)
    code, out, err = run(capsys, *VERBS[verb], "--history", str(history))
    assert "unexpected" not in out + err
    assert code in (0, 1)
    assert "Traceback" not in out + err
    assert code == 0 or err.splitlines()[-1].startswith("error: "), err  # ours, located (the history or baselines)


def test_a_listing_leaves_a_bad_run_out_and_says_which(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    history = corrupted_history(tmp_path, "started-at-huge")
    code, out, err = run(capsys, "history", "--history", str(history), "--limit", "3")
    assert (code, [line.split()[0] for line in out.splitlines()[1:3]]) == (0, ["r5", "r4"])  # of the newest 3
    assert err.splitlines()[0] == (
        f"warning: {history}: table runs, run id 'r6', column started_at: expected a finite timestamp (seconds "
        "since the epoch) from 0 to 3.25037e+10, found 1e+300 Hint: the history was changed outside ci-tool: fix "
        f"or delete that row, or keep the file aside (`mv {history} {history}.damaged`) and ci-tool starts a new "
        "history there; the row is left out"
    )
    assert err.splitlines()[1:] == [  # the slowest and the flaky tests read r6's test rows: the first in full
        *[f"warning: {history}: table runs, run id 'r6', stage 'A10-PyTorch-1', column started_at: expected a finite "
          "timestamp (seconds since the epoch) from 0 to 3.25037e+10, found 1e+300 Hint: the history was changed "
          f"outside ci-tool: fix or delete that row, or keep the file aside (`mv {history} {history}.damaged`) and "
          "ci-tool starts a new history there; the row is left out, and 3 more bad rows of that read"] * 2
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("corruption", "message"),
    [
        ("stage-count-text", "table stages, run id 'r6', stage 'A10-PyTorch-1', column passed: expected a count "
         "(an integer from 0 to 9223372036854775807), found 'many'"),
        ("test-outcome-unknown", "table test_results, run id 'r6', stage 'A10-PyTorch-1', test 'a.py::test_planted', "
         "column outcome: expected a TestOutcome (passed, failed, error, skipped), found 'exploded'"),
        ("run-details-cut", "table runs, run id 'r6', column details_json: expected a JSON object of details, "
         "found '{\"cut'"),
    ],
    ids=["stage-count", "test-outcome", "run-details"],
)  # fmt: skip
def test_a_report_of_a_run_with_a_bad_row_is_a_located_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, corruption: str, message: str
) -> None:
    history = corrupted_history(tmp_path, corruption)
    code, out, err = run(capsys, "report", "r6", "--history", str(history))
    hint = (
        f"the history was changed outside ci-tool: fix or delete that row, or keep the file aside (`mv {history} "
        f"{history}.damaged`) and ci-tool starts a new history there"
    )
    assert (code, out, err) == (1, "", f"error: {history}: {message} Hint: {hint}\n")


@pytest.mark.parametrize(
    ("corruption", "found"),
    [("schema-version-text", "'abc'"), ("schema-version-two-rows", f"[{SCHEMA_VERSION}, 2]")],
    ids=["text", "two-rows"],
)
def test_an_unreadable_schema_version_names_both_versions_and_is_never_a_duplicate_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, corruption: str, found: str
) -> None:
    history = corrupted_history(tmp_path, corruption)
    before = history.read_bytes()
    assert run(capsys, "history", "--history", str(history)) == (
        1,
        "",
        f"error: {history}: expected history schema version 1 to {SCHEMA_VERSION}, found {found} Hint: table "
        "schema_version was changed outside ci-tool: it holds one row, the version of the file's tables; keep the "
        "file aside and pass another --history if you do not know it\n",
    )
    assert history.read_bytes() == before


@pytest.mark.parametrize("version", [None, 1, 3], ids=["row-deleted", "set-back-to-1", "set-back-to-3"])
def test_a_version_row_set_back_migrates_again_without_a_duplicate_column(tmp_path: Path, version: int | None) -> None:
    history = corrupted_history(tmp_path, "started-at-text")  # any file of the current version
    db = sqlite3.connect(history, isolation_level=None)
    db.execute("DELETE FROM schema_version")
    if version is not None:
        db.execute("INSERT INTO schema_version VALUES (?)", (version,))
    db.close()
    with HistoryStore(history) as store:
        assert store.rows("SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]
        assert store.row("SELECT count(*) FROM runs") == (6,)


RUNNERS = {
    "stage-run": ["stage", "run", "CPU-Generic-Post-Merge-1", "--catalog", "stages.yml"],
    "run": ["run", '/bot run --stage-list "CPU-Generic-Post-Merge-1"', "--catalog", "stages.yml", "--system-info",
            "cpu-only.json"],
}  # fmt: skip
RUN_CORRUPTIONS = ["schema-version-text", "started-at-huge", "run-state-unknown", "test-outcome-unknown",
                   "stage-count-text", "touch-test-null"]  # fmt: skip


@pytest.mark.parametrize("runner", list(RUNNERS), ids=list(RUNNERS))
@pytest.mark.parametrize("corruption", RUN_CORRUPTIONS, ids=RUN_CORRUPTIONS)
def test_a_run_on_a_corrupted_history_runs_its_tests_and_keeps_them(
    capsys: pytest.CaptureFixture[str], suite: Path, monkeypatch: pytest.MonkeyPatch, runner: str, corruption: str
) -> None:
    """The run's tests run and pass, and so does the run (exit 0): with a history it cannot open it keeps its
    records in its folder (one warning line says where), else it is recorded beside the bad rows."""
    monkeypatch.chdir(suite)
    monkeypatch.delenv("CI_TOOL_HISTORY", raising=False)
    history = corrupted_history(suite, corruption, days_ago=1)
    code, out, err = run(capsys, *RUNNERS[runner], "--history", str(history))
    assert "unexpected" not in out + err and "Traceback" not in out + err
    assert out.splitlines()[-1] == "1 passed, 0 failed, 0 skipped"
    *warnings, last = err.splitlines() or [""]
    if corruption == "schema-version-text":
        assert (code, last.startswith("warning: "), "the run is not in the history" in last) == (0, True, True)
    else:
        assert code == 0
        warnings = err.splitlines()
    # a green run's report asks known_flaky about no test, so it reads none of the bad rows
    assert warnings == [], err
