"""`ci-tool history` and `ci-tool durations export` through the real entry point, on a real SQLite file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ci_tool.cli import main
from ci_tool.history.store import SCHEMA_VERSION, HistoryStore, RunRecord, StageRecord, TestRecord
from ci_tool.history.unrecorded import unrecorded_json
from tests.ci_tool.file_modes import ci_tool_where_modes_bind


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
    assert (code, err) == (0, f"wrote 2 test durations to {tmp_path / '.test_durations'}: 0 updated, 2 added, 0 kept\n")
    assert json.loads((tmp_path / ".test_durations").read_text()) == {"tests/a.py::t": 3.0, "tests/b.py::t": 0.5}


COMMITTED = {"tests/a.py::t": 9.0, "tests/old.py::t": 7.5, "tests/z.py::t": 1.25}


@pytest.mark.parametrize(
    ("replace", "expected", "message"),
    [
        (
            [],
            {"tests/a.py::t": 3.0, "tests/b.py::t": 0.5, "tests/old.py::t": 7.5, "tests/z.py::t": 1.25},
            "wrote 4 test durations to {path}: 1 updated, 1 added, 2 kept\n",
        ),
        (
            ["--replace"],
            {"tests/a.py::t": 3.0, "tests/b.py::t": 0.5},
            "wrote 2 test durations to {path}, replacing it\n",
        ),
    ],
    ids=["merge-by-default", "replace"],
)
def test_durations_export_merges_into_the_committed_file(
    capsys: pytest.CaptureFixture[str],
    history_file: Path,
    tmp_path: Path,
    replace: list[str],
    expected: dict[str, float],
    message: str,
) -> None:
    path = tmp_path / ".test_durations"
    path.write_text(json.dumps(COMMITTED, indent=2) + "\n")
    code, out, err = run(capsys, "durations", "export", "--history", str(history_file), "--output", str(path), *replace)
    assert (code, out, err) == (0, "", message.format(path=path))
    assert json.loads(path.read_text()) == expected
    assert list(json.loads(path.read_text())) == sorted(expected)


FIX = "fix the file, or pass --replace to write the history's durations over it"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"tests/a.py::t": 1.0,',
            "{path}:1:23: expected JSON, found a syntax error: Expecting property name enclosed in double quotes "
            f"Hint: {FIX}",
        ),
        (
            "[1, 2]",
            "{path}: expected a JSON object of test id -> seconds, found a JSON list Hint: write it as "
            f'{{{{"path/test_x.py::test_y": 12.5, ...}}}}; {FIX}',
        ),
        (
            '{"tests/a.py::t": -1}',
            f"{{path}}: expected a number of seconds >= 0 for 'tests/a.py::t', found -1 Hint: {FIX}",
        ),
    ],
    ids=["truncated-json", "not-an-object", "negative-seconds"],
)
def test_durations_export_leaves_a_bad_committed_file_as_it_is(
    capsys: pytest.CaptureFixture[str], history_file: Path, tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / ".test_durations"
    path.write_text(text)
    code, out, err = run(capsys, "durations", "export", "--history", str(history_file), "--output", str(path))
    assert (code, out, err, path.read_text()) == (1, "", f"error: {message.format(path=path)}\n", text)


def test_durations_export_replace_needs_an_output(capsys: pytest.CaptureFixture[str], history_file: Path) -> None:
    code, out, err = run(capsys, "durations", "export", "--history", str(history_file), "--replace")
    assert (code, out, err.splitlines()[-1]) == (2, "", "Error: --replace goes with --output")


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


READERS = {"history": ["history"], "report": ["report", "latest"], "durations-export": ["durations", "export"]}


def damaged(path: Path) -> str:
    return (
        f"error: {path}: the history is damaged: expected a well-formed SQLite file, found 'database disk image is "
        f"malformed' Hint: keep it aside (`mv {path} {path}.damaged`) and ci-tool starts a new history there, or "
        "pass --history PATH\n"
    )


@pytest.mark.parametrize("verb", list(READERS.values()), ids=list(READERS))
@pytest.mark.parametrize("table", ["runs", "test_results"], ids=["runs-page", "test-results-page"])
def test_a_damaged_page_is_a_located_error_for_every_reader(
    capsys: pytest.CaptureFixture[str], history_file: Path, damage_page: Any, verb: list[str], table: str
) -> None:
    damage_page(history_file, table)
    assert run(capsys, *verb, "--history", str(history_file)) == (1, "", damaged(history_file))


def _write_sqlite(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as db:
        for statement in statements:
            db.execute(statement)
    db.close()


NOT_A_HISTORY = {
    "text-file": (
        lambda path: path.write_text("hello\n" * 100),
        "expected a SQLite history file, found a file that is not a SQLite database Hint: pass the history file "
        "ci-tool writes (--history PATH); this one is left as it is",
    ),
    "foreign-sqlite": (
        lambda path: _write_sqlite(path, "CREATE TABLE users (name TEXT)", "CREATE TABLE orders (id INTEGER)"),
        "expected a ci-tool history (tables runs, stages, test_results), found a SQLite database with other tables "
        "('orders', 'users') Hint: pass the history file ci-tool writes (--history PATH); this one is left as it is",
    ),
    "newer-schema": (
        lambda path: (HistoryStore(path).close(), _write_sqlite(path, "UPDATE schema_version SET version = 99")),
        f"expected history schema version {SCHEMA_VERSION} or older, found 99 Hint: a newer ci-tool wrote this "
        "file; upgrade ci-tool or pass another --history",
    ),
}


@pytest.mark.parametrize("verb", list(READERS.values()), ids=list(READERS))
@pytest.mark.parametrize(("make", "message"), list(NOT_A_HISTORY.values()), ids=list(NOT_A_HISTORY))
def test_a_file_that_is_not_our_history_is_a_located_error_and_stays_as_it_is(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, verb: list[str], make: Any, message: str
) -> None:
    path = tmp_path / "other.file"
    make(path)
    before = path.read_bytes()
    assert run(capsys, *verb, "--history", str(path)) == (1, "", f"error: {path}: {message}\n")
    assert path.read_bytes() == before


def test_a_damaged_header_page_reads_as_not_a_sqlite_file(
    capsys: pytest.CaptureFixture[str], history_file: Path, damage_page: Any
) -> None:
    damage_page(history_file, "header")
    code, _, err = run(capsys, "history", "--history", str(history_file))
    assert (code, err) == (1, f"error: {history_file}: {NOT_A_HISTORY['text-file'][1]}\n")


@pytest.mark.parametrize("verb", list(READERS.values()), ids=list(READERS))
def test_readers_do_not_wait_for_a_writers_lock(
    capsys: pytest.CaptureFixture[str], history_file: Path, verb: list[str]
) -> None:
    """Reading takes no write lock (opening no longer migrates in a write transaction)."""
    writer = sqlite3.connect(history_file, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        code, out, err = run(capsys, *verb, "--history", str(history_file))
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert (code, err, bool(out)) == (0, "", True)


@pytest.mark.parametrize("verb", list(READERS.values()), ids=list(READERS))
def test_a_read_only_history_in_a_read_only_folder_is_read(history_file: Path, verb: list[str]) -> None:
    """In a child where the modes bind root too (tests/ci_tool/file_modes.py), so every host runs it."""
    folder = history_file.parent
    history_file.chmod(0o444)
    folder.chmod(0o555)
    try:
        done = ci_tool_where_modes_bind(*verb, "--history", str(history_file), cwd=folder)
        left = sorted(path.name for path in folder.iterdir())
    finally:
        folder.chmod(0o755)
    assert (done.returncode, done.stderr, bool(done.stdout)) == (0, "", True)
    assert left == ["h.sqlite"]


def test_an_empty_file_is_a_new_history(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "h.sqlite").write_bytes(b"")
    assert run(capsys, "history", "--history", str(tmp_path / "h.sqlite")) == (
        0,
        "Recent runs (newest first):\nSlowest tests (median of the latest results, last 30 runs):\n"
        "Flaky tests (last 30 runs):\n  none\n",
        "",
    )


def test_history_import_into_a_damaged_history_is_a_located_error(
    capsys: pytest.CaptureFixture[str], history_file: Path, damage_page: Any, tmp_path: Path
) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "unrecorded.json").write_text(unrecorded_json(RunRecord("r1", "/bot run", "passed", 1.0), []))
    damage_page(history_file, "runs")
    code, out, err = run(capsys, "history", "import", str(tmp_path / "run"), "--history", str(history_file))
    kept = tmp_path / "run" / "unrecorded.json"
    assert (code, out) == (1, "")
    assert err == (
        f"error: {history_file}: the history is damaged: expected a well-formed SQLite file, found 'database disk "
        f"image is malformed'; run r1's records still wait in {kept} Hint: keep it aside (`mv {history_file} "
        f"{history_file}.damaged`) and ci-tool starts a new history there, or pass --history PATH; run `ci-tool "
        f"history import {tmp_path / 'run'}` again once the history answers\n"
    )


def test_history_import_if_kept_of_a_run_the_history_took_whole_imports_nothing(
    capsys: pytest.CaptureFixture[str], history_file: Path, tmp_path: Path
) -> None:
    """The pipelines' step after a stage: a run whose history took it whole kept nothing to import."""
    (tmp_path / "run").mkdir()
    folder = str(tmp_path / "run")
    code, out, err = run(capsys, "history", "import", "--if-kept", folder, "--history", str(history_file))
    kept = tmp_path / "run" / "unrecorded.json"
    assert (code, out, err) == (0, f"nothing to import: {kept} does not exist (the history took the whole run)\n", "")


def test_report_latest_of_a_history_without_runs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    HistoryStore(tmp_path / "h.sqlite").close()
    assert run(capsys, "report", "latest", "--history", str(tmp_path / "h.sqlite")) == (
        1,
        "",
        f"error: {tmp_path / 'h.sqlite'}: expected a recorded run for `latest`, found a history without runs "
        "Hint: run `ci-tool run` or `ci-tool stage run` first, or pass --history PATH\n",
    )


def test_report_output_in_a_missing_folder_makes_the_folder(
    capsys: pytest.CaptureFixture[str], history_file: Path, tmp_path: Path
) -> None:
    target = tmp_path / "missing" / "report.md"
    assert run(capsys, "report", "latest", "--history", str(history_file), "--output", str(target))[:2] == (0, "")
    assert target.read_text().startswith("## ci-tool run")


@pytest.mark.parametrize("output", ["afile/report.md", "afile/deeper/report.md"])
def test_report_output_below_a_file_is_a_located_error(
    capsys: pytest.CaptureFixture[str], history_file: Path, tmp_path: Path, output: str
) -> None:
    (tmp_path / "afile").write_text("kept")
    target = tmp_path / output
    reason = "a file is in the way" if output.count("/") == 1 else "Not a directory"
    code, out, err = run(capsys, "report", "latest", "--history", str(history_file), "--output", str(target))
    assert (code, out, err) == (1, "", f"error: cannot make the report's folder {str(target.parent)!r}: {reason}\n")
    assert (tmp_path / "afile").read_text() == "kept"


def test_a_history_path_with_uri_characters_is_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "we?ird #dir%20" / "h?.sqlite"
    HistoryStore(path).close()
    assert run(capsys, "history", "--history", str(path), "--json")[0] == 0


def test_a_run_waiting_for_runners_has_the_same_words_in_the_history_and_the_reports(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "h.sqlite"
    with HistoryStore(path) as store:
        run_id = "20260101-000000-abcd"
        store.start_run(RunRecord(run_id, "/bot run", "running", 0.0))
        store.record_stage(StageRecord(run_id, "CPU-Generic-1", "passed", passed=1), [], recorded_at=1.0)
        for name in ("A10-PyTorch-1", "H100-PyTorch-1"):
            store.record_stage(StageRecord(run_id, name, "waiting", reason="needs a GPU"), [], recorded_at=1.0)
        store.finish_run(run_id, state="pending", finished_at=5.0)
    words = "passed here, 2 stages waiting for a runner"
    _, listed, _ = run(capsys, "history", "--history", str(path))
    _, as_json, _ = run(capsys, "history", "--history", str(path), "--json")
    _, markdown, _ = run(capsys, "report", "latest", "--history", str(path))
    _, page, _ = run(capsys, "report", "latest", "--history", str(path), "--format", "html")
    assert listed.splitlines()[1] == f"  {run_id}  {words}      5.0 s  /bot run"
    assert json.loads(as_json)["runs"][0] | {"started_at": 0} == {
        "run_id": run_id, "state": "pending", "state_words": words, "command": "/bot run", "started_at": 0,
        "finished_at": 5.0,
    }  # fmt: skip
    assert markdown.startswith(f"## ci-tool run `{run_id}`: **{words}**\n")
    assert f"<title>ci-tool run {run_id}: {words}</title>" in page
