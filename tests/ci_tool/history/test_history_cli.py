"""`ci-tool history` and `ci-tool durations export` through the real entry point, on a real SQLite file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord, TestRecord


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def history_file(tmp_path: Path) -> Path:
    path = tmp_path / "h.sqlite"
    with HistoryStore(path) as store:
        for index, (outcome, seconds) in enumerate([("passed", 2.0), ("failed", 4.0), ("passed", 3.0)]):
            run_id = f"2026010{index}-000000-abcd"
            store.start_run(RunRecord(run_id, "/bot run", "running", 100.0 * index))
            tests = [TestRecord("tests/a.py::t", outcome, seconds), TestRecord("tests/b.py::t", "passed", 0.5)]
            store.record_stage(StageRecord(run_id, "CPU-Generic-1", outcome), tests, recorded_at=100.0 * index + 1)
            store.finish_run(run_id, state=outcome, finished_at=100.0 * index + 5)
    return path


def test_durations_export_to_stdout(capsys: pytest.CaptureFixture[str], history_file: Path) -> None:
    code, out, _ = run(capsys, "durations", "export", "--history", str(history_file))
    assert (code, json.loads(out)) == (0, {"tests/a.py::t": 3.0, "tests/b.py::t": 0.5})


def test_durations_export_to_file_reads_the_environment(
    capsys: pytest.CaptureFixture[str], history_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI_TOOL_HISTORY", str(history_file))
    code, _, err = run(capsys, "durations", "export", "--output", str(tmp_path / ".test_durations"))
    assert (code, err) == (0, f"wrote 2 test durations to {tmp_path / '.test_durations'}\n")
    assert json.loads((tmp_path / ".test_durations").read_text()) == {"tests/a.py::t": 3.0, "tests/b.py::t": 0.5}


def test_history_shows_runs_slowest_and_flaky(capsys: pytest.CaptureFixture[str], history_file: Path) -> None:
    code, out, _ = run(capsys, "history", "--history", str(history_file), "--limit", "2")
    assert code == 0
    assert out == (
        "Recent runs (newest first):\n"
        "  20260102-000000-abcd  passed           5.0 s  /bot run\n"
        "  20260101-000000-abcd  failed           5.0 s  /bot run\n"
        "Slowest tests (median of the latest results, last 30 runs):\n"
        "      3.00 s  tests/a.py::t\n"
        "      0.50 s  tests/b.py::t\n"
        "Flaky tests (last 30 runs):\n"
        "  tests/a.py::t  [CPU-Generic]  2 flips, 0 passed on rerun, 3 results\n"
    )


def test_history_json(capsys: pytest.CaptureFixture[str], history_file: Path) -> None:
    code, out, _ = run(capsys, "history", "--history", str(history_file), "--json")
    data = json.loads(out)
    assert (code, [r["run_id"] for r in data["runs"]][:1], data["flaky"][0]["flips"]) == (
        0,
        ["20260102-000000-abcd"],
        2,
    )


def test_missing_history_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "history", "--history", str(tmp_path / "none.sqlite"))
    assert (code, err) == (
        1,
        f"error: {tmp_path / 'none.sqlite'}: expected a history file, found none "
        "Hint: run `ci-tool run` or `ci-tool stage run` first, or pass --history PATH\n",
    )
