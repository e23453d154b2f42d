"""What the touch records say of a change (change/touch_evidence.py), in a real git repository with a real SQLite
history: fresh and stale records per GPU type, and the tests whose records went stale."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ci_tool.change.touch_evidence import touch_evidence
from ci_tool.change.touch_records import AddedFile, GpuRecord, GpuRecords, TouchEvidence
from ci_tool.history.store import HistoryStore
from ci_tool.history.touch_table import TouchRow, record_touches

A = "def one():\n    return 1\n\n\ndef two():\n    return 2\n"
T1, T2 = "tests/test_a.py::test_one", "tests/test_b.py::test_b"


def git(root: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"]
    return subprocess.run([*command, *args], cwd=root, check=True, capture_output=True, text=True).stdout


def commit(root: Path, files: dict[str, str]) -> str:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "change")
    return git(root, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    return root


def evidence(repo: Path, rows: list[TouchRow], base: str) -> TouchEvidence:
    """The evidence of the work tree's change since `base` (src/a.py's `one` edited), over `rows`."""
    (repo / "src" / "a.py").write_text(A.replace("return 1", "return 10"))
    with HistoryStore(repo.parent / "h.sqlite") as store:
        record_touches(store, "r1", rows, recorded_at=1.0)
        return touch_evidence(store, repo, base=base, head=None, files=["src/a.py"], deleted=())


def test_a_record_made_where_the_file_was_as_at_the_base_is_fresh(repo: Path) -> None:
    made = commit(repo, {"src/a.py": A, "tests/test_a.py": "x = 1\n"})
    found = evidence(repo, [TouchRow("src/a.py", "one", T1, "CPU", "CPU-Generic-1", made)], made)
    assert (found.files["src/a.py"].change.units, found.files["src/a.py"].records, found.gpu_types) == (
        ("one",),
        {"CPU": GpuRecord({"one": frozenset({T1})}, (made,))},
        {"CPU": GpuRecords((made,))},
    )


STALE = {
    "changed-since": ("made", "src/a.py changed since {made}"),  # the commit before src/a.py's last change
    "not-in-the-clone": ("0" * 40, "its commit 000000000000 is not in this clone"),
    "uncommitted": ("", "made on an uncommitted edit"),
}


@pytest.mark.parametrize(("record_commit", "why"), list(STALE.values()), ids=list(STALE))
def test_a_stale_record_leaves_its_gpu_type_without_one(repo: Path, record_commit: str, why: str) -> None:
    made = commit(repo, {"src/a.py": A.replace("return 2", "return 20")})
    base = commit(repo, {"src/a.py": A})
    at = made if record_commit == "made" else record_commit
    found = evidence(repo, [TouchRow("src/a.py", "one", T1, "A10", "A10-PyTorch-1", at)], base)
    assert (found.files["src/a.py"].records, found.files["src/a.py"].stale) == ({}, {"A10": why.format(made=made[:12])})


def test_a_test_whose_record_holds_a_file_changed_since_reruns_its_file(repo: Path) -> None:
    made = commit(repo, {"src/a.py": A, "src/b.py": "B = 1\n", "tests/test_b.py": "x = 1\n"})
    base = commit(repo, {"src/b.py": "B = 2\n", "tests/test_new.py": "y = 1\n"})
    rows = [
        TouchRow("src/a.py", "two", T1, "CPU", "S-1", made),
        TouchRow("src/b.py", "<module>", T2, "CPU", "S-1", made),
    ]
    found = evidence(repo, rows, base)
    changed = ("src/b.py", "tests/test_new.py")
    unrecorded = ("tests/test_new.py",)  # no record ran it: it runs too
    assert found.gpu_types == {"CPU": GpuRecords((made,), ("tests/test_b.py",), changed, (), unrecorded)}


def test_tests_recorded_unmeasured_and_test_files_no_record_ran_are_listed(repo: Path) -> None:
    timed = "tests/test_perf.py::test_case[gpu]"
    made = commit(
        repo,
        {"src/a.py": A, "tests/test_a.py": "x = 1\n", "tests/test_perf.py": "y = 1\n", "tests/test_c.py": "z = 1\n"},
    )
    rows = [
        TouchRow("src/a.py", "one", T1, "CPU", "CPU-Generic-1", made),
        TouchRow("tests/test_perf.py", "<unmeasured>", timed, "CPU", "CPU-Generic-1", made),
    ]
    records = evidence(repo, rows, made).gpu_types["CPU"]
    assert (records.unmeasured, records.unrecorded_test_files) == ((timed,), ("tests/test_c.py",))


def test_a_method_a_change_adds_narrows_through_the_test_paths_that_import_its_file(repo: Path) -> None:
    """A new def's header runs at import: the change reaches the file's module-level code, so the test paths
    that import the file are looked for, and with them known nothing is left undecided."""
    pool = "class Pool:\n    def take(self):\n        return 1\n"
    made = commit(repo, {"src/pool.py": pool, "tests/test_pool.py": "from pool import Pool\n", "tests/test_x.py": ""})
    (repo / "src" / "pool.py").write_text(pool + "\n    def grow(self):\n        return 2\n")
    rows = [TouchRow("src/pool.py", "Pool.take", "tests/test_pool.py::test_take", "CPU", "CPU-Generic-1", made)]
    with HistoryStore(repo.parent / "h.sqlite") as store:
        record_touches(store, "r1", rows, recorded_at=1.0)
        found = touch_evidence(store, repo, base=made, head=None, files=["src/pool.py"], deleted=()).files
    assert (found["src/pool.py"].change.new, found["src/pool.py"].unrecorded, found["src/pool.py"].importers) == (
        ("Pool.grow",), "", ("tests/test_pool.py",)
    )  # fmt: skip


def test_a_new_file_knows_the_files_that_load_it_and_which_of_those_the_change_leaves_as_they_are(repo: Path) -> None:
    made = commit(repo, {"src/a.py": A, "src/b.py": "B = 1\n", "tests/test_a.py": "x = 1\n"})
    (repo / "src" / "norm.py").write_text("def norm():\n    return 1\n")
    (repo / "src" / "a.py").write_text("from norm import norm\n\n" + A)
    (repo / "tests" / "test_norm.py").write_text("from norm import norm\n")  # a new test file: the tests rule's
    rows = [TouchRow("src/a.py", "one", T1, "CPU", "CPU-Generic-1", made)]
    with HistoryStore(repo.parent / "h.sqlite") as store:
        record_touches(store, "r1", rows, recorded_at=1.0)
        changed = ["src/a.py", "src/norm.py", "tests/test_norm.py"]
        found = touch_evidence(store, repo, base=made, head=None, files=changed, deleted=())
        assert found.added == {"src/norm.py": AddedFile("src/norm.py", ("src/a.py", "tests/test_norm.py"))}
        (repo / "src" / "b.py").write_text("import norm\n\nB = 1\n")  # now a file the change leaves loads it too
        git(repo, "add", "src/b.py")
        git(repo, "commit", "-q", "-m", "b")
        later = touch_evidence(store, repo, base=made, head=None, files=changed, deleted=()).added["src/norm.py"]
    assert (later.unchanged, later.unrecorded) == (
        ("src/b.py",), "it is new, and src/b.py, which the change leaves as it is, load(s) it"
    )  # fmt: skip
