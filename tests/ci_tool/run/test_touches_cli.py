"""Touch records (change-based selection, tier 2), for real: `ci-tool run --record-touches` measures which
test ran which file with coverage.py into the history; a change to a recorded source file then runs the
tests that ran it, and a file with no record runs the full set."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.history.store import HistoryStore
from ci_tool.history.touches import touched_by

pytest.importorskip("coverage")  # the `test` extra installs it; touch recording is the only user

SUITE = Path(__file__).parents[2] / "fixtures" / "failing_suite"
FILES = {
    "pkg/__init__.py": "",
    "pkg/alpha.py": "def double(x):\n    return 2 * x\n",
    "pkg/beta.py": "def triple(x):\n    return 3 * x\n",
    "pkg/gamma.py": "def unused():\n    return 0\n",
    "tests/test_alpha.py": "from pkg.alpha import double\n\n\ndef test_double():\n    assert double(2) == 4\n",
    "tests/test_beta.py": (
        "import pytest\n\nfrom pkg.beta import triple\n\n\n"
        '@pytest.mark.parametrize("x", ["a b", "c"])\ndef test_triple(x):\n    assert triple(x) == x * 3\n'
    ),
    "test-db/l0_x.yml": "version: 0.0.1\nl0_x:\n- tests: [tests]\n",
    "stages.yml": (
        "version: 1\nchange_rules: {tests: [tests/]}\n"
        "families:\n- {name: CPU-Generic, platform: cpu, context: l0_x, splits: 1}\n"
    ),
    "request.json": json.dumps({"command": "run", "flags": {}}),
}
OPTIONS = ("--catalog", "stages.yml", "--system-info", "cpu-only.json")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    shutil.copy(SUITE / "cpu-only.json", tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def changed(root: Path, *paths: str) -> str:
    (root / "changed.txt").write_text("".join(f"{path}\n" for path in paths))
    return "changed.txt"


def test_a_recorded_source_change_runs_the_tests_that_ran_it(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run(capsys, "run", "/bot run", "--record-touches", *OPTIONS)
    assert code == 0
    with HistoryStore(project / ".ci-tool" / "history.sqlite", read_only=True) as store:
        records = touched_by(store, ["pkg/alpha.py", "pkg/beta.py", "pkg/gamma.py"])
    assert records == {
        "pkg/alpha.py": frozenset({"tests/test_alpha.py::test_double"}),
        "pkg/beta.py": frozenset({"tests/test_beta.py::test_triple[a b]", "tests/test_beta.py::test_triple[c]"}),
    }  # gamma.py: no test ran it, so it has no record
    code, out = run(capsys, "run", "/bot run --disable-reuse-test", *OPTIONS, "--changed-files",
                    changed(project, "pkg/beta.py"))  # fmt: skip
    assert code == 0
    assert "pkg/beta.py: touched rule: runs the 1 test(s) that ran it (touch records)\n" in out
    assert "CPU-Generic-1-cbts: passed" in out and "2 passed, 0 failed, 0 skipped" in out


def test_a_source_file_without_a_record_runs_the_full_set(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "run", "/bot run", "--record-touches", *OPTIONS)
    files = changed(project, "pkg/alpha.py", "pkg/gamma.py")
    code, out = run(capsys, "stage", "select", "--request", "request.json", "--catalog", "stages.yml",
                    "--changed-files", files)  # fmt: skip
    assert code == 0
    assert "step 16: pkg/alpha.py: touched rule: runs the 1 test(s) that ran it (touch records)\n" in out
    assert "step 16: pkg/gamma.py: no rule claims it\n" in out
    assert "+ CPU-Generic-1  (step 1: pre-merge set)" in out


def test_a_later_record_of_a_test_replaces_its_earlier_one(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "run", "/bot run", "--record-touches", *OPTIONS)
    (project / "tests" / "test_alpha.py").write_text("def test_double():\n    assert 2 * 2 == 4\n")
    run(capsys, "run", "/bot run --disable-reuse-test", "--record-touches", *OPTIONS)
    with HistoryStore(project / ".ci-tool" / "history.sqlite", read_only=True) as store:
        assert "pkg/alpha.py" not in touched_by(store, ["pkg/alpha.py"])  # test_double no longer runs it
