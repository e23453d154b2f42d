"""Touch records for real, end to end: a git repository with src/a.py (two functions) and a test of each;
`ci-tool run --record-touches` records which test ran which function on the CPU stage; a pull request that
changes one function then runs, per stage, only the tests that ran it, and the plan says why. The A10 stage
has no A10 records: it runs the test files that can load the changed file."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.history.store import HistoryStore
from ci_tool.history.touch_table import rows_of_files

pytest.importorskip("coverage")  # the `test` extra installs it; touch recording needs it

A = "def double(x):\n    return 2 * x\n\n\ndef triple(x):\n    return 3 * x\n"
FILES = {
    ".gitignore": ".ci-tool/\nchanged.txt\n",
    "src/a.py": A,
    "tests/test_double.py": "from src.a import double\n\n\ndef test_double():\n    assert double(2) == 4\n",
    "tests/test_triple.py": (
        "import pytest\n\nfrom src.a import triple\n\n\n"
        '@pytest.mark.parametrize("x", [1, 2])\ndef test_triple(x):\n    assert triple(x) == 3 * x\n'
    ),
    "tests/test_words.py": "def test_words():\n    assert 'triple' != 'double'\n",  # names, loads nothing
    "test-db/l0_x.yml": "version: 0.0.1\nl0_x:\n- tests: [tests]\n",
    "stages.yml": (
        "version: 1\nchange_rules: {tests: [tests/]}\nfamilies:\n"
        "- {name: CPU-Generic, platform: cpu, context: l0_x, splits: 1}\n"
        "- {name: A10-PyTorch, platform: a10, context: l0_x, splits: 1}\n"
    ),
    "request.json": json.dumps({"command": "run", "flags": {}}),
    "cpu-only.json": json.dumps({"gpu": None, "system_gpu_count": 0}),
}
RUN = ("--catalog", "stages.yml", "--system-info", "cpu-only.json")


def git(root: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=ci", "-c", "user.email=ci@example.invalid", "-c", "init.defaultBranch=main"]
    return subprocess.run([*command, *args], cwd=root, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """The repository committed on `main`, its CPU stage's touch records made there, and a pull-request
    branch `pr` checked out."""
    root = tmp_path / "repo"
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    monkeypatch.chdir(root)
    code = main(["run", '/bot run --stage-list "CPU-Generic-1"', "--record-touches", *RUN])
    assert code == 0, capsys.readouterr()
    capsys.readouterr()
    git(root, "checkout", "-q", "-b", "pr")
    return root


def commit(root: Path, text: str) -> str:
    (root / "src" / "a.py").write_text(text)
    git(root, "commit", "-q", "-am", "change src/a.py")
    return git(root, "rev-parse", "main").strip()


def select(capsys: pytest.CaptureFixture[str], request: str = "request.json") -> str:
    code = main(["stage", "select", "--request", request, "--catalog", "stages.yml", "--base", "main"])
    assert code == 0
    return capsys.readouterr().out


def test_a_change_to_one_function_runs_the_tests_that_ran_it_and_says_why(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = commit(recorded, A.replace("3 * x", "x * 3"))
    out = select(capsys)
    assert (
        f"step 16: src/a.py:triple: touched rule: runs the 1 test(s) that ran it on CPU records from {base[:12]}\n"
    ) in out
    assert "+ CPU-Generic-1-cbts  (step 16: change-based selection: 1 line(s) of the family, 1 shard(s); " in out


def test_a_gpu_stage_without_records_of_its_gpu_type_runs_the_test_files_that_can_load_the_file(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No A10 record says which A10 test ran triple; a test file that cannot import src/a.py cannot run it."""
    commit(recorded, A.replace("3 * x", "x * 3"))
    out = select(capsys)
    assert "step 16: src/a.py:triple: touched rule: no A10 records: runs the 2 test path(s) that can load it\n" in out
    assert "+ A10-PyTorch-1-cbts  (step 16: change-based selection: 2 line(s) of the family, 1 shard(s); " in out


def test_a_gpu_stage_without_records_runs_its_full_set_when_every_test_loads_the_file(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A conftest.py at the rootdir imports src/a.py: every test of every stage may run what changed."""
    (recorded / "conftest.py").write_text("import src.a  # noqa: F401\n")
    git(recorded, "add", "conftest.py")
    commit(recorded, A.replace("3 * x", "x * 3"))
    out = select(capsys)
    assert (
        "step 16: src/a.py:triple: touched rule: A10 stages run their full set (no A10 records, and every test "
        "loads it (the conftest.py at the rootdir does))\n"
    ) in out
    assert "+ A10-PyTorch-1  (step 16: change-based selection: its full set (no A10 records, and every test" in out


def test_the_narrowed_stage_runs_only_those_tests(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    commit(recorded, A.replace("3 * x", "x * 3"))
    code = main(["run", "/bot run --disable-reuse-test", "--base", "main", *RUN])
    out = capsys.readouterr().out
    assert (code, "CPU-Generic-1-cbts: passed" in out) == (0, True)
    assert out.splitlines()[-1] == "2 passed, 0 failed, 0 skipped; 1 stage waiting for a runner"  # A10 waits


def test_a_new_function_only_its_edited_caller_reaches_runs_that_callers_tests(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No code at the base names `scaled`: it runs only through triple, which the change edits."""
    commit(recorded, A.replace("3 * x", "scaled(x, 3)") + "\n\n# a helper\ndef scaled(x, k):\n    return k * x\n")
    out = select(capsys)
    assert "step 16: src/a.py:scaled, triple: touched rule: runs the 1 test(s) that ran them on CPU records" in out


def test_a_module_level_change_runs_the_tests_that_ran_the_file_and_those_that_import_it(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The new top-level call runs at import, while pytest collects: no record can see which test reads what
    it made, so every test that ran src/a.py runs, and every test file that imports it."""
    commit(recorded, "print('imported')\n\n\n" + A)
    out = select(capsys)
    assert (
        "step 16: src/a.py:<module>: touched rule: runs the 2 test(s) that ran a unit of it (it changes code that "
        "runs at import) on CPU records from "
    ) in out
    assert "and the 2 test path(s) that can load it\n" in out
    assert "+ CPU-Generic-1-cbts" in out


def test_a_new_module_only_the_changed_file_imports_runs_through_that_files_tests(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """src/b.py is new and src/a.py, which the change edits, alone imports it: the new import runs at import, so
    a.py's tests and importers run, and b.py adds none of its own (no test at the base can reach it)."""
    (recorded / "src" / "b.py").write_text("def scale(x, k):\n    return k * x\n")
    git(recorded, "add", "src/b.py")
    commit(recorded, "from src.b import scale\n\n\n" + A.replace("3 * x", "scale(x, 3)"))
    out = select(capsys)
    assert (
        "step 16: src/b.py: touched rule: a new file that only files this change edits load (src/a.py): their "
        "records select what reaches it\n"
    ) in out
    assert "+ CPU-Generic-1-cbts" in out and "the full set runs" not in out


def test_a_private_constant_runs_the_tests_of_the_functions_that_read_it(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`_FACTOR = 3` only binds a name at import; triple reads it, and only triple's test ran triple."""
    commit(recorded, "_FACTOR = 3\n\n\n" + A.replace("3 * x", "_FACTOR * x"))
    out = select(capsys)
    assert "step 16: src/a.py:triple: touched rule: runs the 1 test(s) that ran it on CPU records" in out


def test_a_public_constant_a_test_reads_at_import_runs_that_test_file(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A test file reads FACTOR in its parameter list, at collection: no record can see that, so the test file
    that reads it runs whole, beside the tests of triple (which reads it too)."""
    test = recorded / "tests" / "test_triple.py"
    triple = FILES["tests/test_triple.py"].replace("import triple", "import FACTOR, triple")
    test.write_text(triple.replace("[1, 2]", "[1, FACTOR]"))
    commit(recorded, "FACTOR = 3\n\n\n" + A.replace("3 * x", "FACTOR * x"))
    out = select(capsys)
    assert "step 16: src/a.py:triple: touched rule: runs the 1 test(s) that ran it on CPU records" in out
    assert (
        "step 16: tests/test_triple.py:<module>, test_triple: touched rule: runs the 1 test(s) that ran a unit of it "
        "(it changes code that runs at import) on CPU records from "
    ) in out
    assert "and the 1 test path(s) that can load it (it reads what src/a.py change(s))\n" in out


def test_a_public_constant_another_file_reads_runs_the_tests_of_its_readers_there(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """test_double reads a.FACTOR in its body: it runs beside triple's test, and the plan says why."""
    test = recorded / "tests" / "test_double.py"
    test.write_text("from src import a\n\n\ndef test_double():\n    assert a.double(2) == 4 < a.FACTOR + 2\n")
    commit(recorded, "FACTOR = 3\n\n\n" + A.replace("3 * x", "FACTOR * x"))
    out = select(capsys)
    assert "step 16: src/a.py:triple: touched rule: runs the 1 test(s) that ran it on CPU records" in out
    assert (
        "step 16: tests/test_double.py:test_double: touched rule: runs the 1 test(s) that ran it on CPU records from "
    ) in out
    assert "(it reads what src/a.py change(s))" in out


def test_a_removed_public_name_another_file_imports_runs_the_full_set(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """main's src/a.py binds FACTOR; the change drops it while src/b.py still imports it: every importer of
    src/b.py now fails to import, which no record of src/a.py can see."""
    (recorded / "src" / "b.py").write_text("from src.a import FACTOR\n")
    git(recorded, "add", "src/b.py")
    commit(recorded, "FACTOR = 3\n\n\n" + A)
    git(recorded, "checkout", "-q", "main")
    git(recorded, "merge", "-q", "pr")
    git(recorded, "checkout", "-q", "-b", "pr3")
    commit(recorded, A)
    out = select(capsys)
    assert "src/a.py: touched rule: cannot narrow (it removes `FACTOR`, which src/b.py still names)" in out


def test_a_record_goes_stale_once_its_file_changes_on_the_base(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """main moves on with a change of src/a.py after the records were made: they no longer count, and the test
    files that can load src/a.py stand in for them."""
    git(recorded, "checkout", "-q", "main")
    commit(recorded, A.replace("2 * x", "x * 2"))
    git(recorded, "checkout", "-q", "-b", "pr2")
    commit(recorded, A.replace("2 * x", "x * 2").replace("3 * x", "x * 3"))
    out = select(capsys)
    recorded_at = git(recorded, "rev-parse", "main~1").strip()  # where the fixture made the records
    assert (
        "step 16: src/a.py:triple: touched rule: its CPU records are stale: src/a.py changed since "
        f"{recorded_at[:12]}: runs the 2 test path(s) that can load it\n"
    ) in out


def test_a_post_merge_request_runs_everything(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    commit(recorded, A.replace("3 * x", "x * 3"))
    request = recorded.parent / "post-merge.json"
    request.write_text(json.dumps({"command": "run", "flags": {"post_merge": True}}))
    out = select(capsys, str(request))
    assert "step 16: src/a.py: no rule claims it\n" in out and "+ CPU-Generic-1  (step 1: pre-merge set)" in out


def test_a_stage_run_records_its_stage_gpu_type_and_commit(recorded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As a post-merge CI stage runs (`--record-touches` from the selection's stage_run_args)."""
    commit(recorded, A.replace("3 * x", "x * 3"))
    head = git(recorded, "rev-parse", "HEAD").strip()
    code = main(["stage", "run", "CPU-Generic-1", "--record-touches", "--output-dir", str(recorded.parent / "out"),
                 "--catalog", "stages.yml", "--disable-reuse-test"])  # fmt: skip
    capsys.readouterr()
    with HistoryStore(recorded / ".ci-tool" / "history.sqlite", read_only=True) as store:
        rows, _ = rows_of_files(store, ["src/a.py"])
    assert (code, sorted((r.unit, r.test_id, r.gpu_type, r.stage, r.commit) for r in rows if r.commit == head)) == (
        0,
        [
            ("<module>", "<outside tests>", "CPU", "CPU-Generic-1", head),
            ("double", "tests/test_double.py::test_double", "CPU", "CPU-Generic-1", head),
            ("triple", "tests/test_triple.py::test_triple[1]", "CPU", "CPU-Generic-1", head),
            ("triple", "tests/test_triple.py::test_triple[2]", "CPU", "CPU-Generic-1", head),
        ],
    )


def test_a_deleted_test_loses_its_records_when_its_stage_records_again(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git(recorded, "rm", "-q", "tests/test_double.py")
    git(recorded, "commit", "-q", "-m", "drop test_double")
    code = main(["stage", "run", "CPU-Generic-1", "--record-touches", "--output-dir", str(recorded.parent / "out"),
                 "--catalog", "stages.yml", "--disable-reuse-test"])  # fmt: skip
    capsys.readouterr()
    with HistoryStore(recorded / ".ci-tool" / "history.sqlite", read_only=True) as store:
        rows, _ = rows_of_files(store, ["src/a.py"])
    assert (code, sorted({r.test_id for r in rows})) == (
        0, ["<outside tests>", "tests/test_triple.py::test_triple[1]", "tests/test_triple.py::test_triple[2]"],
    )  # fmt: skip


def test_a_file_nested_too_deeply_for_the_parser_runs_the_full_set_and_says_why(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Python cannot import such a file either: no record can speak for it, and no guess is made."""
    commit(recorded, A + "\n_D = " + "-" * 100_000 + "1\n")
    out = select(capsys)
    assert (
        "src/a.py: touched rule: cannot narrow (it nests expressions too deeply for Python's parser at the head)"
    ) in out
    assert "+ CPU-Generic-1  (step 1: pre-merge set)\n" in out


TRIPLE_1 = "tests/test_triple.py::test_triple[1]"
DAMAGE = {  # what a `sqlite3` session can leave in a touch row, and how its warning names it
    "nul-in-commit": (
        f"UPDATE touch_records SET commit_sha = commit_sha || char(0) WHERE test_id = '{TRIPLE_1}'",
        "column commit_sha: expected a commit (4 to 64 lowercase hex digits) or '' (an uncommitted edit), "
        "found '{}\\x00'",
    ),
    "units-not-utf-8": (
        f"UPDATE touch_records SET units = CAST(x'74726970ff6c65' AS TEXT) WHERE test_id = '{TRIPLE_1}'",
        "column units: expected a text, found b'trip\\xffle'",
    ),
}


@pytest.mark.parametrize(("damage", "message"), list(DAMAGE.values()), ids=list(DAMAGE))
def test_a_damaged_touch_row_is_a_located_warning_and_its_file_runs_the_full_set(
    recorded: Path, capsys: pytest.CaptureFixture[str], damage: str, message: str
) -> None:
    """The rest of the history still answers: the damaged row's file is taken as unrecorded."""
    history = recorded / ".ci-tool" / "history.sqlite"
    made = git(recorded, "rev-parse", "main").strip()
    db = sqlite3.connect(history, isolation_level=None)
    db.execute(damage)
    db.close()
    commit(recorded, A.replace("3 * x", "x * 3"))
    code = main(["stage", "select", "--request", "request.json", "--catalog", "stages.yml", "--base", "main"])
    out, err = capsys.readouterr()
    assert code == 0, err
    where = f"warning: .ci-tool/history.sqlite: table touch_records, file 'src/a.py', test '{TRIPLE_1}', "
    assert f"{where}{message.format(made)} Hint: the history was changed outside ci-tool" in err
    assert "src/a.py: touched rule: cannot narrow (a record of it is damaged)" in out
    assert "unexpected" not in out + err
