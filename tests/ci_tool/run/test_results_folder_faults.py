"""A results folder that fills up or turns read-only mid-run, for real: a small tmpfs that a test fills, or
bind-mounts read-only over itself, while its stage runs (root only: mounting needs it). The tests that
finished are in the history, the stage's files in the fallback folder, and one line says where.

Full: the next test's output no longer fits, and pytest dies writing its JUnit. Read-only: the files pytest
holds open stay writable (they belong to the mount below), every new file is refused: pytest's final JUnit,
then ci-tool's. (A tmpfs cannot be remounted read-only while files in it are open for writing.)"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.history import queries
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import TestOutcome
from ci_tool.run import junit, results_folder

STAGE = "CPU-Generic-1"
TMPFS_SIZE = "4m"

FILLING_CASES = """\
import os
import subprocess
from pathlib import Path


def test_before():
    pass


def test_breaks_the_results_folder():
    folder = os.environ["BREAK_FOLDER"]
    if os.environ["BREAK_HOW"] == "read-only":
        subprocess.run(["mount", "--bind", folder, folder], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", folder], check=True)
        return
    fd = os.open(Path(folder) / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\\0" * 65536)
    except OSError:
        pass
    finally:
        os.close(fd)


def test_after_prints():
    print("x" * 20000)  # more than what is left of the JUnit file's last page
"""


# Fills the folder as pytest starts, before ci-tool's plugin writes its first byte.
FILLING_CONFTEST = """\
import os
from pathlib import Path

if os.environ.get("BREAK_HOW") == "full-at-start":
    fd = os.open(Path(os.environ["BREAK_FOLDER"]) / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\\0" * 65536)
    except OSError:
        pass
    finally:
        os.close(fd)
"""


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A fresh tmpfs of TMPFS_SIZE, unmounted after the test."""
    mount_point = tmp_path / "results"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(mount_point)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.strip() or mounted.returncode}")
    yield mount_point
    while subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, check=False).returncode == 0:
        pass  # the read-only bind mount over it, then the tmpfs


@pytest.fixture
def breaking_suite(suite: Path, small_tmpfs: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (suite / "cases" / "case_break.py").write_text(FILLING_CASES)
    (suite / "test-db" / "l0_break.yml").write_text(
        "version: 0.0.1\nl0_break:\n- condition: {}\n  tests: [cases/case_break.py]\n"
    )
    (suite / "break.yml").write_text(
        "version: 1\nfamilies:\n- {name: CPU-Generic, platform: cpu, context: l0_break, splits: 1}\n"
    )
    (suite / "conftest.py").write_text(FILLING_CONFTEST)
    monkeypatch.chdir(suite)
    monkeypatch.setenv("BREAK_FOLDER", str(small_tmpfs))
    monkeypatch.setenv("XDG_STATE_HOME", str(suite / "state"))
    return suite


BEFORE = ("cases/case_break.py::test_before", TestOutcome.PASSED, "")
BREAKS = ("cases/case_break.py::test_breaks_the_results_folder", TestOutcome.PASSED, "")
AFTER = ("cases/case_break.py::test_after_prints", TestOutcome.PASSED, "")


@pytest.mark.parametrize(
    ("how", "why", "expected"),
    [
        (
            "full", "No space left on device",
            [BEFORE, BREAKS, (AFTER[0], TestOutcome.SKIPPED, "not recorded: the results folder refused its result "
                                                              "(No space left on device)")],
        ),
        ("read-only", "Read-only file system", [BEFORE, BREAKS, AFTER]),
        ("full-at-start", "No space left on device", []),
    ],
    ids=["full", "read-only", "full-as-pytest-starts"],
)  # fmt: skip
def test_a_results_folder_that_breaks_mid_run_keeps_the_finished_tests(
    breaking_suite: Path, small_tmpfs: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    how: str, why: str, expected: list[tuple[str, TestOutcome, str]],
) -> None:  # fmt: skip
    monkeypatch.setenv("BREAK_HOW", how)
    code = main(["stage", "run", STAGE, "--catalog", "break.yml", "--results-dir", str(small_tmpfs),
                 "--history", "h.sqlite"])  # fmt: skip
    out = capsys.readouterr().out
    [run_dir] = [path for path in small_tmpfs.iterdir() if path.is_dir()]
    kept = breaking_suite / "state" / "ci-tool" / "results" / run_dir.name
    line = f"results folder {run_dir / STAGE} is not writable ({why}); results kept in {kept / STAGE}"
    assert code == 1
    counts = {"passed": sum(t[1] == "passed" for t in expected), "failed": 0}
    counts["skipped"] = len(expected) - counts["passed"]
    shown = ", ".join(f"{n} {k}" for k, n in counts.items())
    assert f"{STAGE}: failed in " in out and f"({shown}): {line}\n" in out
    assert f"warning: results folder {run_dir} is not writable ({why}); the CI report kept in {kept}\n" in out
    assert f"{STAGE}: failed; JUnit in {kept / STAGE / 'junit.xml'}\n" in out

    with HistoryStore("h.sqlite", read_only=True) as store:
        [run] = queries.recent_runs(store)
        [stage] = queries.run_stages(store, run.run_id)
        tests = [(t.test_id, t.outcome, t.message) for t in queries.stage_tests(store, run.run_id, STAGE)]
    assert (run.state, stage.state, stage.reason) == ("failed", "failed", line)
    assert tests == expected

    result = json.loads((kept / STAGE / "result.json").read_text())
    cases = junit.parse_junit(kept / STAGE / "junit.xml").cases
    assert (result["state"], result["reason"], result["counts"]) == ("failed", line, counts)
    assert [(c.nodeid, c.outcome, c.message) for c in cases] == expected
    assert (kept / "report.md").read_text().startswith("#")


def test_a_results_folder_full_before_the_stage_starts_fails_it_with_nothing_run(
    breaking_suite: Path, small_tmpfs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fd = os.open(small_tmpfs / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(OSError, match="No space left on device"):
            while True:
                os.write(fd, b"\0" * 65536)
    finally:
        os.close(fd)
    code = main(["stage", "run", STAGE, "--catalog", "break.yml", "--results-dir", str(small_tmpfs),
                 "--history", "h.sqlite"])  # fmt: skip
    out = capsys.readouterr().out
    [run_dir] = [path for path in small_tmpfs.iterdir() if path.is_dir()]
    kept = breaking_suite / "state" / "ci-tool" / "results" / run_dir.name / STAGE
    line = f"results folder {run_dir / STAGE} is not writable (No space left on device); results kept in {kept}"
    assert code == 1
    assert f"(0 passed, 0 failed, 0 skipped): {line}\n" in out
    assert json.loads((kept / "result.json").read_text())["reason"] == line
    with HistoryStore("h.sqlite", read_only=True) as store:
        [run] = queries.recent_runs(store)
        assert [(s.state, s.reason) for s in queries.run_stages(store, run.run_id)] == [("failed", line)]


def test_a_probe_finds_a_read_only_folder(small_tmpfs: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], check=True)
    assert results_folder.refusal(small_tmpfs) == "Read-only file system"
    assert results_folder.refusal(small_tmpfs.parent) is None
    assert os.listdir(small_tmpfs.parent) == ["results"]  # the probe leaves nothing behind


TEMP = Path(tempfile.gettempdir()) / "ci-tool-results"


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"XDG_STATE_HOME": "/state", "HOME": "/home/u"}, [Path("/state/ci-tool/results"), TEMP]),
        ({"HOME": "/home/u"}, [Path("/home/u/.local/state/ci-tool/results"), TEMP]),
        ({"XDG_STATE_HOME": "relative", "HOME": "/home/u"}, [Path("/home/u/.local/state/ci-tool/results"), TEMP]),
        ({}, [TEMP]),
    ],
    ids=["xdg-state-home", "home", "relative-xdg-is-ignored", "no-home"],
)
def test_the_fallback_folders(environ: dict[str, str], expected: list[Path]) -> None:
    assert results_folder.fallback_roots(environ) == expected
