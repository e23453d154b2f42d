"""The flaky-test lifecycle end to end, through the real entry point and real pytest processes: a suite with
a planted flaky test (it fails one run in three, counted in a file beside it, so no timing decides) is run,
measured, waived by proposal, expired, refused an unwaive while it still flakes, and unwaived once fixed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from ci_tool.history import queries
from ci_tool.history.store import HistoryStore
from tests.helpers.flaky_cli import run

CATALOG = "version: 1\nfamilies:\n- {name: CPU-Generic, platform: cpu, context: l0_planted, splits: 1}\n"
TEST_DB = "version: 0.0.1\nl0_planted:\n- condition: {}\n  tests:\n  - cases/case_planted.py\n"
PYTEST_INI = "[pytest]\npython_files = case_*.py\naddopts = -p no:cacheprovider\n"
FLAKY = """\
from pathlib import Path

COUNTER = Path(__file__).with_name("planted.count")


def test_flaky():
    count = int(COUNTER.read_text()) + 1 if COUNTER.exists() else 1
    COUNTER.write_text(str(count))
    assert count % 3 != 1, f"planted flake on run {count}"


def test_stable():
    pass
"""
FIXED = "def test_flaky():\n    pass\n\n\ndef test_stable():\n    pass\n"
FLAKY_ID = "cases/case_planted.py::test_flaky"
CPU_ONLY = ("--catalog", "stages.yml", "--system-info", "cpu-only.json")


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    for name, text in {
        "stages.yml": CATALOG,
        "test-db/l0_planted.yml": TEST_DB,
        "test-db/waives.txt": "# waives\n",
        "pytest.ini": PYTEST_INI,
        "cpu-only.json": '{"gpu": null, "system_gpu_count": 0}',
        "cases/case_planted.py": FLAKY,
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    monkeypatch.chdir(root)
    return root


@pytest.mark.skipif(shutil.which("git") is None, reason="applies the proposed diffs with git apply")
def test_a_planted_flake_is_measured_waived_expired_refused_and_unwaived_once_fixed(
    planted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for _ in range(3):  # run 1 fails, runs 2 and 3 pass
        run(capsys, "stage", "run", "CPU-Generic-1", *CPU_ONLY)

    code, out, _ = run(capsys, "flaky", "report", "--json")
    (flaky,) = json.loads(out)["tests"]
    assert (code, flaky["test_id"], flaky["gpu"], flaky["runs"], flaky["failures"], flaky["rate"]) == (
        0, FLAKY_ID, "CPU", 3, 1, 0.3333
    )  # fmt: skip
    assert flaky["signatures"] == [{"signature": "AssertionError: planted flake on run <n>", "count": 1}]

    code, _, err = run(capsys, "waive", "propose", "--min-rate", "0.3", "--min-runs", "3", "--expires", "2031-01-31",
                       "--output", "w.diff")  # fmt: skip
    assert code == 0 and "1 waive(s) proposed at a flake rate of at least 30%" in err
    assert Path("w.diff").read_text().splitlines()[-1] == (
        f"+full:CPU/{FLAKY_ID} SKIP (flaky until 2031-01-31)  # flake rate 33% (1 of 3 runs on CPU), "
        "AssertionError: planted flake on run <n>"
    )
    subprocess.run(["git", "apply", "w.diff"], check=True)
    code, _, err = run(capsys, "waive", "propose", "--min-rate", "0.3")
    assert (code, err.splitlines()[-1]) == (
        0, "nothing to propose: 0 waive(s) proposed at a flake rate of at least 30% over at least 5 run(s); "
        "1 already waived, 0 flaky below the rate, 0 with too few runs"
    )  # fmt: skip

    assert run(capsys, "testdb", "check", "--today", "2031-01-31")[0] == 0
    code, _, err = run(capsys, "testdb", "check", "--today", "2031-02-01")
    assert (code, err.splitlines()[0]) == (
        1, f"error: test-db/waives.txt:2:1: expected an unexpired waive, found {FLAKY_ID!r} waived until 2031-01-31 "
        f"(today is 2031-02-01, 1 day later) Hint: run `ci-tool waive verify {FLAKY_ID}` and delete the line once "
        "it passes, or, if the issue is still open, write a later `until` day"
    )  # fmt: skip

    code, out, err = run(capsys, "waive", "verify", FLAKY_ID, "--runs", "3", *CPU_ONLY)
    assert (code, out) == (1, "")  # run 4 fails: the group stops, nothing is proposed
    assert err.splitlines()[-1].startswith(f"{FLAKY_ID}: passed 0 of 3 runs (1 ran); first failure in run ")
    assert err.splitlines()[-1].endswith(
        "AssertionError: planted flake on run <n>: refusing the unwaive, the waive stays"
    )

    Path("cases/case_planted.py").write_text(FIXED)
    code, out, err = run(capsys, "waive", "verify", FLAKY_ID, "--runs", "2", *CPU_ONLY)
    assert (code, err.splitlines()[-1]) == (0, f"{FLAKY_ID}: passed 2 of 2 runs: unwaive proposed")
    assert out.splitlines()[-1] == (
        f"-full:CPU/{FLAKY_ID} SKIP (flaky until 2031-01-31)  # flake rate 33% (1 of 3 runs on CPU), "
        "AssertionError: planted flake on run <n>"
    )
    Path("u.diff").write_text(out)
    subprocess.run(["git", "apply", "u.diff"], check=True)
    assert Path("test-db/waives.txt").read_text() == "# waives\n"

    with HistoryStore(planted / ".ci-tool" / "history.sqlite", read_only=True) as store:
        commands = [r.command for r in reversed(queries.recent_runs(store))]
    assert commands[3:] == [  # every verify run is a recorded run
        f"ci-tool waive verify {FLAKY_ID} (run 1 of 3)",
        f"ci-tool waive verify {FLAKY_ID} (run 1 of 2)",
        f"ci-tool waive verify {FLAKY_ID} (run 2 of 2)",
    ]
