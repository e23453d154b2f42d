"""`ci-tool flaky report` and `ci-tool waive propose` over a hand-written history (planted.py), and their
refusals: an --output that exists, a bad --issue, a malformed waives file, a waive verify of no waive."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci_tool import output_files
from ci_tool.history.store import HistoryStore
from tests.ci_tool.history.planted import PLANTED, RERUN, plant
from tests.helpers.flaky_cli import run

DAY = ("--today", "2027-01-10")


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "history.sqlite"
    with HistoryStore(path) as store:
        plant(store)
    monkeypatch.setenv("CI_TOOL_HISTORY", str(path))
    (tmp_path / "test-db").mkdir()
    (tmp_path / "test-db" / "waives.txt").write_text("a.py::test_other SKIP (https://bugs/1)\n")
    return path




def test_report_text_ranks_by_gpu_minutes_lost(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "flaky", "report", *DAY)
    assert (code, out) == (
        0,
        "Flaky tests of the last 30 days, most GPU minutes lost first:\n"
        "  lost GPU min   rate   runs   red  rerun  flips  gpu / test\n"
        f"         20.00    33%      6     2      0      3  A10 / {PLANTED}\n"
        "                first seen 2027-01-10 02:00 UTC (r3), last seen 2027-01-10 05:00 UTC (r6)\n"
        "                2 x AssertionError: planted flake on run <n>\n"
        f"          1.20    50%      6     0      3      0  DGX_H100 / {RERUN}\n"
        "                first seen 2027-01-10 00:00 UTC (r1), last seen 2027-01-10 04:00 UTC (r5)\n"
        "                3 x ConnectionResetError: Connection reset by peer\n",
    )


@pytest.mark.parametrize(("today", "tests"), [("2027-01-10", 2), ("2027-02-08", 2), ("2027-02-09", 0)])
def test_report_window_is_the_days_ending_today(
    history: Path, capsys: pytest.CaptureFixture[str], today: str, tests: int
) -> None:
    code, out, _ = run(capsys, "flaky", "report", "--json", "--today", today)
    assert (code, len(json.loads(out)["tests"])) == (0, tests)


def test_propose_writes_a_diff_and_leaves_the_waives_file(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "waive", "propose", *DAY, "--min-rate", "0.4", "--issue", "https://bugs/9")
    assert (code, out) == (
        0,
        "--- a/test-db/waives.txt\n+++ b/test-db/waives.txt\n@@ -1 +1,2 @@\n a.py::test_other SKIP (https://bugs/1)\n"
        f"+full:DGX_H100/{RERUN} SKIP (https://bugs/9 until 2027-02-09)  # flake rate 50% (3 of 6 runs on DGX_H100), "
        "ConnectionResetError: Connection reset by peer\n",
    )
    assert err == (
        "1 waive(s) proposed at a flake rate of at least 40% over at least 5 run(s); 0 already waived, 1 flaky "
        "below the rate, 0 with too few runs\n"
    )
    assert Path("test-db/waives.txt").read_text() == "a.py::test_other SKIP (https://bugs/1)\n"


def test_propose_sets_aside_a_test_with_too_few_runs_and_says_how_many_more(
    history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "waive", "propose", *DAY, "--min-rate", "0.4", "--min-runs", "9")
    assert (code, out) == (0, "")
    assert err == (
        f"too few runs: {RERUN} on DGX_H100, flake rate 50% (3 of 6 runs on DGX_H100): 3 more runs needed "
        "(--min-runs 9)\n"
        "nothing to propose: 0 waive(s) proposed at a flake rate of at least 40% over at least 9 run(s); "
        "0 already waived, 1 flaky below the rate, 1 with too few runs\n"
    )


def test_a_proposal_written_to_a_file_is_output_not_code(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = run(capsys, "waive", "propose", *DAY, "--min-rate", "0.4", "--output", "w.diff")
    assert (code, output_files.is_output(Path.cwd(), "w.diff", output_files.recorded(Path.cwd()))) == (0, True)


def test_propose_never_replaces_an_existing_output(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("mine.diff").write_text("my notes\n")
    code, _, err = run(capsys, "waive", "propose", *DAY, "--output", "mine.diff")
    assert (code, err, Path("mine.diff").read_text()) == (
        1,
        "error: expected no file at 'mine.diff' for the proposed waives, found one; it is left as it is "
        "Hint: pass another --output, or move that file away first\n",
        "my notes\n",
    )


def test_propose_refuses_a_malformed_waives_file(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("test-db/waives.txt").write_text("ok.py::t SKIP\nbad.py::t SKIP (x until 2027-13-01)\n")
    code, out, err = run(capsys, "waive", "propose", *DAY)
    assert (code, out) == (1, "")
    assert err == (
        "error: test-db/waives.txt:2:25: expected `until YYYY-MM-DD` with a real day, found '2027-13-01' Hint: write "
        "the last day the waive holds as year-month-day, e.g. until 2027-01-31; fix the waives file first "
        "(`ci-tool testdb check` lists every problem)\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ("--issue", "bug 9"),
            "Invalid value for '--issue': expected a link like https://tracker/issues/123, found 'bug 9'",
        ),
        (("--min-rate", "0"), "Invalid value for '--min-rate': 0.0 is not in the range 0<x<=1."),
        (
            ("--today", "2027-02-30"),
            "Invalid value for '--today': expected a real day as YYYY-MM-DD, found '2027-02-30'",
        ),
        (
            ("--today", "0001-01-01"),  # 30 days before it is no day at all
            "Invalid value for '--today': expected a day from 1970-01-01 to 9000-12-31, found '0001-01-01'",
        ),
    ],
    ids=["issue", "rate", "today", "today out of range"],
)
def test_propose_usage_errors(
    history: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    code, _, err = run(capsys, "waive", "propose", *argv)
    assert (code, err.splitlines()[-1]) == (2, f"Error: {message}")


def test_verify_of_a_test_no_waive_names_says_the_closest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = {
        "stages.yml": "version: 1\nfamilies:\n- {name: CPU-Generic, platform: cpu, context: l0_x, splits: 1}\n",
        "test-db/l0_x.yml": "version: 0.0.1\nl0_x:\n- condition: {}\n  tests: [cases/a.py]\n",
        "test-db/waives.txt": "cases/a.py::test_flaky SKIP (https://bugs/1)\n",
        "cpu-only.json": '{"gpu": null, "system_gpu_count": 0}',
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    options = ("--catalog", str(tmp_path / "stages.yml"), "--test-db", str(tmp_path / "test-db"))
    code, _, err = run(capsys, "waive", "verify", "cases/a.py::test_flakey", *options, "--system-info",
                       str(tmp_path / "cpu-only.json"))  # fmt: skip
    assert (code, err) == (
        1,
        "error: expected the id of a waived test, found 'cases/a.py::test_flakey', which no waive names "
        "Hint: did you mean 'cases/a.py::test_flaky'?\n",
    )
