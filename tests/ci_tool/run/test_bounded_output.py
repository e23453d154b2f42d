"""What tests write is read and kept within bounds (ci_tool/run/output_bounds.py): a test printing 200 MB leaves
ci-tool's memory where it was, 2 MB failure messages leave the history small, and every cut says so."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ci_tool.history import queries
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import TestOutcome
from ci_tool.run import junit, output_bounds
from ci_tool.run.jobs import run_command
from ci_tool.run.progress import Progress
from ci_tool.run.session import PlannedStage, SessionConfig, run_session
from ci_tool.stages.names import parse_stage_name
from ci_tool.stages.planner import Planner
from ci_tool.testdb.load import load_test_db

PROCESS_TIMEOUT_SECONDS = 300  # a safety net for a busy machine, not a measure
PRINTED_MB = 200
# ci-tool's own peak while a test prints PRINTED_MB: the interpreter, its imports and bounded texts. Reading
# the output whole (what it did) costs at least PRINTED_MB more.
MAX_RSS_MB = 120

LOUD_CASES = f"""\
import os
import signal
import sys

CHUNK = ("x" * 1023 + "\\n") * 1024  # 1 MiB


def _print_a_lot():
    for _ in range({PRINTED_MB}):
        sys.stdout.write(CHUNK)
    sys.stdout.flush()


def test_prints_and_passes():
    _print_a_lot()


def test_prints_and_crashes():
    _print_a_lot()
    os.kill(os.getpid(), signal.SIGKILL)
"""

# Runs one stage in a fresh process and prints its state, the first test's text sizes and its own peak RSS:
# VmHWM, this process's own memory since its exec (not ru_maxrss, which keeps the high-water mark of the
# process it was forked from: a test session that has grown to 500 MB would count as this process's).
RUN_LOUD = """\
import json, sys
from pathlib import Path
from ci_tool.run.invocation import RunSettings
from ci_tool.run.stage_runner import run_stage
from ci_tool.stages.names import parse_stage_name
from ci_tool.stages.planner import Planner
from ci_tool.testdb.load import load_test_db

context, detailed = sys.argv[1], sys.argv[2] == "detailed"
plan = Planner(load_test_db("test-db"), {}).stage_of_list(parse_stage_name("CPU-Generic-1"), context)
result = run_stage(plan, RunSettings(Path("."), Path("out"), "r1", detailed_log=detailed))
case = result.tests[0].first
status = Path("/proc/self/status").read_text()
peak_kib = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")))
print(json.dumps({"outcome": case.outcome, "kind": case.kind, "chars": len(case.stdout) + len(case.text),
                  "rss_mb": peak_kib // 1024}))
"""


@pytest.fixture
def loud_suite(suite: Path) -> Path:
    (suite / "cases" / "case_loud.py").write_text(LOUD_CASES)
    for name in ("passes", "crashes"):
        test = f"cases/case_loud.py::test_prints_and_{name}"
        (suite / "test-db" / f"l0_loud_{name}.yml").write_text(
            f"version: 0.0.1\nl0_loud_{name}:\n- condition: {{}}\n  tests: [{test}]\n"
        )
    return suite


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads a process's peak memory from /proc (Linux)")
@pytest.mark.parametrize(
    ("context", "log", "outcome", "kind"),
    [
        ("l0_loud_passes", "captured", TestOutcome.PASSED, ""),
        ("l0_loud_crashes", "detailed", TestOutcome.ERROR, junit.CRASH_KIND),
    ],
    ids=["captured-output-of-a-pass", "detailed-log-of-a-crash"],
)
def test_a_test_printing_200_mb_leaves_ci_tools_memory_bounded(
    loud_suite: Path, context: str, log: str, outcome: TestOutcome, kind: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", RUN_LOUD, context, log], cwd=loud_suite, capture_output=True, text=True,
        timeout=PROCESS_TIMEOUT_SECONDS, check=False,
    )  # fmt: skip
    shutil.rmtree(loud_suite / "out")  # the detailed log holds all 200 MB
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert (found["outcome"], found["kind"]) == (outcome, kind)
    assert found["chars"] <= 2 * output_bounds.MAX_TEXT_CHARS + 200
    assert found["rss_mb"] < MAX_RSS_MB, f"ci-tool's peak RSS was {found['rss_mb']} MB"


BIG_FAILURES = """\
import pytest


@pytest.mark.parametrize("number", range(20))
def test_fails_with_a_2_mb_message(number):
    raise AssertionError("y" * 2_000_000)
"""


def test_twenty_failures_with_2_mb_messages_make_a_small_history(suite: Path, make_config: object) -> None:
    (suite / "cases" / "case_big_failures.py").write_text(BIG_FAILURES)
    (suite / "test-db" / "l0_big.yml").write_text(
        "version: 0.0.1\nl0_big:\n- condition: {}\n  tests: [cases/case_big_failures.py]\n"
    )
    name = parse_stage_name("CPU-Generic-1")
    db = load_test_db(suite / "test-db")
    stage = PlannedStage(name, lambda: Planner(db, {}).stage_of_list(name, "l0_big"))
    config: SessionConfig = make_config(suite, rerun_flaky=False)  # type: ignore[operator]
    session = run_session("/bot run", [stage], config=config, fail_fast=False, progress=Progress(io.StringIO()))
    with HistoryStore(config.history, read_only=True) as store:
        tests = queries.stage_tests(store, session.run_id, "CPU-Generic-1")
    assert [t.outcome for t in tests] == [TestOutcome.FAILED] * 20
    assert config.history.stat().st_size < 2 * 1024 * 1024, config.history.stat().st_size
    first = tests[0]
    assert first.message == output_bounds.cut_line("AssertionError: " + "y" * 2_000_000)
    assert "characters; full text in p01-main.log]" in first.output_head
    assert len(first.output_head) <= output_bounds.MAX_EXCERPT_CHARS + 100


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("abcdefgh", 8, "abcdefgh"),
        ("abcdefghij", 8, "ab\n… [cut 2 characters]\nefghij"),
        ("abcdefghij", 4, "a\n… [cut 6 characters]\nhij"),
    ],
    ids=["fits", "cut", "cut-more"],
)
def test_a_cut_text_keeps_head_and_tail_and_says_what_went(text: str, limit: int, expected: str) -> None:
    kept = output_bounds.BoundedText(limit, slack=0)
    for piece in (text[:3], text[3:5], text[5:]):
        kept.add(piece)
    assert (output_bounds.cut_text(text, limit, slack=0), kept.text()) == (expected, expected)


@pytest.mark.parametrize(
    "length", [1000, 1000 + output_bounds.NOTE_ROOM, 1001 + output_bounds.NOTE_ROOM, 5000], ids=str
)
def test_a_text_cut_once_is_never_cut_again(length: int) -> None:
    text = "".join(chr(ord("a") + n % 26) for n in range(length))
    kept = output_bounds.BoundedText(1000)
    kept.add(text)
    once = output_bounds.cut_text(text, 1000)
    assert (kept.text(), output_bounds.cut_text(once, 1000)) == (once, once)
    assert len(once) <= 1000 + output_bounds.NOTE_ROOM


def test_a_cut_text_names_where_the_whole_text_is() -> None:
    assert output_bounds.cut_text("0123456789", 4, full_text_in="p01-main.log", slack=0) == (
        "0\n… [cut 6 characters; full text in p01-main.log]\n789"
    )


@pytest.mark.parametrize(
    ("text", "expected"), [("abcd", "abcd"), ("abcdef", "abcd… [cut 2 characters]")], ids=["fits", "cut"]
)
def test_a_cut_line_keeps_its_head(text: str, expected: str) -> None:
    assert output_bounds.cut_line(text, 4, slack=0) == expected


def test_the_tail_of_a_file_is_read_from_its_end(tmp_path: Path) -> None:
    log = tmp_path / "big.log"
    with log.open("w") as handle:
        for number in range(100_000):
            handle.write(f"line {number}\n")
    assert output_bounds.read_tail(log, 20) == "ne 99998\nline 99999\n"
    assert output_bounds.read_tail(tmp_path / "missing.log") == ""


def test_junit_with_huge_texts_reads_them_cut(tmp_path: Path) -> None:
    huge = junit.CaseResult(
        "tests/a.py::test_loud", TestOutcome.FAILED, message="m" * 10_000, text="t" * 3_000_000,
        stdout="o" * 3_000_000, properties=(("note", "p" * 10_000),),
    )  # fmt: skip
    junit.write_junit(tmp_path / "junit.xml", "S", [huge])
    [case] = junit.parse_junit(tmp_path / "junit.xml").cases
    assert (case.text, case.stdout) == (output_bounds.cut_text(huge.text), output_bounds.cut_text(huge.stdout))
    assert case.message == output_bounds.cut_line(huge.message)
    assert case.properties == (("note", output_bounds.cut_line("p" * 10_000)),)


def test_a_jobs_output_is_read_back_bounded_from_its_end() -> None:
    code = "import sys; sys.stdout.write('a' * 10_000_000 + 'the end'); sys.stderr.write('why'); sys.exit(3)"
    done = run_command([sys.executable, "-c", code], cwd=None)
    cut = 10_000_007 - output_bounds.MAX_TEXT_CHARS
    assert (done.returncode, done.stderr) == (3, "why")
    assert done.stdout == f"… [cut {cut} bytes]\n" + "a" * (output_bounds.MAX_TEXT_CHARS - 7) + "the end"
