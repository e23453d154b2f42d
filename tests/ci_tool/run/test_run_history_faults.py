"""`ci-tool run` and `ci-tool stage run` when the history or the results folder fails, through the real entry
point in a copy of the failing suite: nothing that ran is lost, and a run that cannot keep results never starts."""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ci_tool.cli import main
from ci_tool.history import queries
from ci_tool.history.store import HistoryStore
from ci_tool.report.model import load_report
from ci_tool.report.report_markdown import render_markdown
from ci_tool.run.progress import Progress
from ci_tool.run.session import PlannedStage, run_session
from tests.ci_tool.file_modes import ci_tool_where_modes_bind

STAGE = "CPU-Generic-Post-Merge-1"


@pytest.fixture
def in_suite(suite: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(suite)
    monkeypatch.delenv("CI_TOOL_HISTORY", raising=False)
    return suite


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def stage_run(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    return run(capsys, "stage", "run", STAGE, "--catalog", "stages.yml", *extra)


def unrecorded_run_dir(root: Path) -> Path:
    [found] = [path.parent for path in (root / ".ci-tool" / "runs").glob("*/unrecorded.json")]
    return found.relative_to(root)


def damaged_history(root: Path, damage_page: Any, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    """A real history with one recorded run, then one garbage page over its test results."""
    history = root / "h.sqlite"
    assert stage_run(capsys, "--history", str(history))[0] == 0
    damage_page(history, "test_results")
    return history, (
        f"{history}: the history is damaged: expected a well-formed SQLite file, found 'database disk image is "
        "malformed'"
    )


def text_file(root: Path, damage_page: Any, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    """A `--history` that names a file of someone else's: never written."""
    (root / "notes.txt").write_text("my notes\n" * 100)
    return root / "notes.txt", (
        f"{root / 'notes.txt'}: expected a SQLite history file, found a file that is not a SQLite database"
    )


HINTS = {
    "damaged-page": "keep it aside (`mv {history} {history}.damaged`) and ci-tool starts a new history there, or pass "
    "--history PATH",
    "not-a-history": "pass the history file ci-tool writes (--history PATH); this one is left as it is",
}


@pytest.mark.parametrize(
    ("make", "fault"), [(damaged_history, "damaged-page"), (text_file, "not-a-history")], ids=list(HINTS)
)
def test_a_run_on_a_broken_history_passes_on_its_tests_writes_its_html_report_and_keeps_its_records(
    in_suite: Path, capsys: pytest.CaptureFixture[str], damage_page: Any, make: Callable[..., Any], fault: str
) -> None:
    history, cause = make(in_suite, damage_page, capsys)
    before = history.read_bytes()
    code, out, err = stage_run(capsys, "--history", str(history), "--html-report", "report.html")
    run_dir = unrecorded_run_dir(in_suite)
    hint = HINTS[fault].format(history=history)
    # the verdict is the tests': the outage is one warning line naming where the records wait
    assert (code, out.splitlines()[-2:]) == (0, ["1 passed, 0 failed, 0 skipped", "HTML report: report.html"])
    assert err == (
        f"warning: {run_dir}: the run is not in the history ({cause}); its records wait in {run_dir}/unrecorded.json "
        "(its results are in this folder as always: result.json and junit.xml per stage) "
        f"Hint: `ci-tool history import {run_dir}` records them once the history can take them ({hint})\n"
    )
    assert "warning" not in out
    assert (run_dir / STAGE / "result.json").is_file() and (run_dir / STAGE / "junit.xml").is_file()
    page = (in_suite / "report.html").read_text()
    assert f"<title>ci-tool run {run_dir.name}: passed</title>" in page and STAGE in page
    if fault == "not-a-history":
        assert history.read_bytes() == before

    history.rename(in_suite / "kept-aside")  # what the hint says; the import starts a new history
    code, out, err = run(capsys, "history", "import", str(run_dir), "--history", str(history))
    assert (code, err) == (0, "")
    assert out == f"recorded run {run_dir.name} (passed, 1 stages, 1 tests) in {history}\n"
    with HistoryStore(history, read_only=True) as store:
        assert render_markdown(load_report(store, run_dir.name)) == (run_dir / "report.md").read_text()
    # the page the run wrote from its own results is the page the history gives once it holds the run
    assert run(capsys, "report", run_dir.name, "--history", str(history), "--format", "html", "--output",
               "from-history.html")[0] == 0  # fmt: skip
    assert (in_suite / "from-history.html").read_text() == page


def test_history_import_twice_replaces_and_reads_the_outer_history_option(
    in_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_suite / "notes.txt").write_text("not a history\n" * 20)
    assert stage_run(capsys, "--history", "notes.txt")[0] == 0
    run_dir = unrecorded_run_dir(in_suite)
    codes = [run(capsys, "history", "--history", "new.sqlite", "import", str(run_dir))[0] for _ in range(2)]
    assert codes == [0, 0]
    with HistoryStore("new.sqlite", read_only=True) as store:
        assert [(r.run_id, r.state) for r in queries.recent_runs(store)] == [(run_dir.name, "passed")]
        assert [s.name for s in queries.run_stages(store, run_dir.name)] == [STAGE]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            None,
            "expected the records of a run the history could not take, found no such file Hint: a run writes it "
            "only when its history fails; `ci-tool history` lists the recorded runs",
        ),
        (
            "{",
            "expected the run's records as JSON, found Expecting property name enclosed in double quotes: line 1 "
            "column 2 (char 1)",
        ),
        (
            '{"version": 1, "run": {"run_id": "r"}, "stages": []}',
            "(run): expected the key 'command', found an object without it",
        ),
        ("[]", "expected a JSON object, found a JSON list"),
    ],
    ids=["missing", "not-json", "missing-fields", "not-an-object"],
)
def test_history_import_of_a_bad_folder_is_a_located_error(
    in_suite: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    (in_suite / "run").mkdir()
    if content is not None:
        (in_suite / "run" / "unrecorded.json").write_text(content)
    code, out, err = run(capsys, "history", "import", "run", "--history", "h.sqlite")
    where = f"{Path('run') / 'unrecorded.json'}" + ("" if message.startswith("(") else ":")
    assert (code, out, err) == (1, "", f"error: {where} {message}\n")
    assert not (in_suite / "h.sqlite").exists()


def test_a_history_locked_mid_run_loses_no_stage(
    suite: Path, make_config: Callable[..., Any], make_planned: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """Another process takes the write lock while the stage runs and keeps it past every retry."""
    config = make_config(suite, history_busy_timeout_ms=10)
    [planned] = make_planned(suite, (STAGE,))
    lockers: list[sqlite3.Connection] = []

    def lock_then_plan() -> Any:  # the run's start is recorded by now; its stage will not be
        lockers.append(sqlite3.connect(config.history, isolation_level=None))
        lockers[0].execute("BEGIN IMMEDIATE")
        return planned.plan()

    progress = io.StringIO()
    try:
        session = run_session(
            "/bot run", [PlannedStage(planned.name, lock_then_plan)], config=config, fail_fast=True,
            progress=Progress(progress),
        )  # fmt: skip
        with HistoryStore(config.history, read_only=True) as store:  # readers still read under the lock
            seen = [(r.state, queries.run_stages(store, r.run_id)) for r in queries.recent_runs(store)]
    finally:
        for locker in lockers:
            locker.close()  # rolls its transaction back: the lock is free
    run_dir = config.results_root / session.run_id
    assert (session.state, seen) == ("passed", [("running", [])])
    assert str(session.unrecorded).startswith(
        f"{run_dir}: the run is not in the history ({config.history}: the history is locked: expected to write it "
        "within 3 tries of 0.01 s, found another process holding its lock); its records wait in "
        f"{run_dir / 'unrecorded.json'} (its results are in this folder as always"
    )
    # the stage's write, then the run's end tries once more: two retries each
    assert progress.getvalue().count("warning: the history is locked; trying again in") == 4
    assert json.loads((run_dir / STAGE / "result.json").read_text())["counts"]["passed"] == 1

    assert main(["history", "import", str(run_dir), "--history", str(config.history)]) == 0
    with HistoryStore(config.history, read_only=True) as store:
        assert render_markdown(load_report(store, session.run_id)) == session.report_markdown
        assert [t.outcome for t in queries.stage_tests(store, session.run_id, STAGE)] == ["passed"]


def test_a_history_that_answers_again_before_the_run_ends_takes_the_whole_run(
    suite: Path, make_config: Callable[..., Any], make_planned: Callable[..., Any]
) -> None:
    """The lock is taken while the first stage runs (its record fails) and let go while the second plans: the
    run's end records the whole run, so it is not left `running` for the stale-run sweep, and nothing waits."""
    config = make_config(suite, history_busy_timeout_ms=10)
    first, second = make_planned(suite, (STAGE, "CPU-Generic-1"))
    lockers: list[sqlite3.Connection] = []

    def lock_then_plan() -> Any:
        lockers.append(sqlite3.connect(config.history, isolation_level=None))
        lockers[0].execute("BEGIN IMMEDIATE")
        return first.plan()

    def unlock_then_plan() -> Any:
        lockers[0].close()
        return second.plan()

    try:
        session = run_session(
            "/bot run", [PlannedStage(first.name, lock_then_plan), PlannedStage(second.name, unlock_then_plan)],
            config=config, fail_fast=False, progress=Progress(io.StringIO()),
        )  # fmt: skip
    finally:
        for locker in lockers:
            locker.close()
    run_dir = config.results_root / session.run_id
    assert (session.unrecorded, (run_dir / "unrecorded.json").exists()) == (None, False)
    with HistoryStore(config.history, read_only=True) as store:
        run = queries.get_run(store, session.run_id)
        stages = [(s.name, s.state) for s in queries.run_stages(store, session.run_id)]
        assert render_markdown(load_report(store, session.run_id)) == session.report_markdown
    assert (run.state, stages) == (session.state, [(r.stage, r.state) for r in session.results])
    assert [name for name, _ in stages] == [STAGE, "CPU-Generic-1"]


def below_a_file(root: Path) -> tuple[list[str], str, str]:
    (root / "afile").write_text("")
    return ["--results-dir", "afile/runs"], "afile/runs/", "Not a directory"


def output_dir_below_a_file(root: Path) -> tuple[list[str], str, str]:
    (root / "afile").write_text("")
    return ["--output-dir", "afile/out"], "afile/out", "Not a directory"


def not_writable(root: Path) -> tuple[list[str], str, str]:
    (root / "locked").mkdir(mode=0o555)
    return ["--results-dir", "locked"], "locked/", "Permission denied"


@pytest.mark.parametrize(
    "make",
    [below_a_file, output_dir_below_a_file, not_writable],
    ids=["below-a-file", "output-dir-below-a-file", "not-writable"],
)
def test_a_results_folder_that_cannot_be_made_stops_the_run_before_it_is_recorded(
    in_suite: Path, make: Callable[[Path], tuple[list[str], str, str]]
) -> None:
    """In a child where the modes bind root too (tests/ci_tool/file_modes.py), so every host runs it."""
    options, folder, reason = make(in_suite)
    verb = ("stage", "run", STAGE, "--catalog", "stages.yml")
    done = ci_tool_where_modes_bind(*verb, *options, "--history", "h.sqlite", cwd=in_suite)
    code, out, err = done.returncode, done.stdout, done.stderr
    shown = err.split("'")[1]
    # the reuse note is all it printed: nothing ran (the suite is no git checkout, so reuse is off)
    assert (code, out) == (1, "reuse: off (not a git checkout: the code a run tests cannot be told apart)\n")
    assert shown.startswith(folder)
    assert err == (
        f"error: cannot create the results folder {shown!r}: {reason} "
        "Hint: pass --results-dir (or --output-dir) a folder you can write\n"
    )
    assert not (in_suite / "h.sqlite").exists()
