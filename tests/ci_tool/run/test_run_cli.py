"""`ci-tool run` and `ci-tool stage run` through the real entry point, in a copy of the failing suite."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from ci_tool.cli import main
from ci_tool.history import queries
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import TestOutcome
from ci_tool.run import junit
from tests.helpers.planner_calls import PlannerCalls

# The suite's facts of a machine without a GPU: what these tests expect, whatever machine runs them.
CPU_ONLY = ("--system-info", "cpu-only.json")
PROCESS_TIMEOUT_SECONDS = 300  # a safety net for a busy machine, not a measure


@pytest.fixture
def in_suite(suite: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(suite)
    return suite


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def recorded_runs(root: Path) -> list[tuple[str, str, list[str]]]:
    with HistoryStore(root / ".ci-tool" / "history.sqlite") as store:
        return [
            (r.command, r.state, [s.name for s in queries.run_stages(store, r.run_id)])
            for r in reversed(queries.recent_runs(store))
        ]


def recorded_stage_reason(root: Path, stage: str) -> str:
    with HistoryStore(root / ".ci-tool" / "history.sqlite") as store:
        (run,) = queries.recent_runs(store)
        return next(s.reason for s in queries.run_stages(store, run.run_id) if s.name == stage)


def recorded_tests(root: Path, stage: str) -> list[tuple[str, str, str]]:
    """(test id, outcome, message) of each test of `stage` in the one recorded run."""
    with HistoryStore(root / ".ci-tool" / "history.sqlite") as store:
        (run,) = queries.recent_runs(store)
        return [(t.test_id, t.outcome, t.message) for t in queries.stage_tests(store, run.run_id, stage)]


def test_run_serves_cpu_stages_and_reports_gpu_stages_waiting(
    in_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        capsys,
        "run",
        '/bot run --stage-list "CPU-Generic-Post-Merge-1, A10-PyTorch-1"',
        "--catalog",
        "stages.yml",
        *CPU_ONLY,
    )
    assert (code, out.splitlines()[-1]) == (0, "1 passed, 0 failed, 0 skipped; 1 stage waiting for a runner")
    assert "A10-PyTorch-1: waiting for a runner: needs 1 A10 GPU; this machine has no GPU" in out
    assert "## ci-tool run `" in out and ": **passed here, 1 stage waiting for a runner**" in out
    assert recorded_runs(in_suite) == [
        (
            '/bot run --stage-list "CPU-Generic-Post-Merge-1, A10-PyTorch-1"',
            "pending",
            ["A10-PyTorch-1", "CPU-Generic-Post-Merge-1"],
        )
    ]


def test_a_run_of_a_sharded_family_renders_and_splits_it_once(
    in_suite: Path, capsys: pytest.CaptureFixture[str], planner_calls: PlannerCalls
) -> None:
    """Loading the catalog, planning each shard as it starts and each shard's inputs digest (what reuse
    matches) share one render and one split of the family."""
    catalog = (in_suite / "stages.yml").read_text()
    sharded = catalog.replace("context: l0_fixture\n  splits: 1", "context: l0_green\n  splits: 2", 1)
    (in_suite / "stages.yml").write_text(sharded)
    code, out, _ = run(capsys, "run", '/bot run --stage-list "CPU-Generic-1, CPU-Generic-2"', "--catalog", "stages.yml",
                       *CPU_ONLY)  # fmt: skip
    assert (code, out.splitlines()[-1]) == (0, "4 passed, 0 failed, 0 skipped")
    assert set(planner_calls.renders.values()) == {1}  # each context once for each query, l0_green's among them
    assert (planner_calls.rendered("l0_green"), list(planner_calls.splits.values())) == (2, [1])  # + Post-Merge


def test_run_takes_flags_alone(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "run", "--catalog", "stages.yml", *CPU_ONLY, "--", '--stage-list "CPU-Generic-Post-Merge-1"'
    )
    assert (code, out.splitlines()[-1]) == (0, "1 passed, 0 failed, 0 skipped")


def test_run_refuses_unknown_stages(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "run", '/bot run --stage-list "CPU-Generik-1"', "--catalog", "stages.yml", *CPU_ONLY)
    assert code == 1
    assert err.startswith("error: ") and "CPU-Generik-1" in err and "CPU-Generic-1" in err
    assert not (in_suite / ".ci-tool").exists()


def test_run_shows_the_first_errors_in_full_and_counts_the_rest(
    in_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    names = ", ".join(f"CPU-Generik-{k}" for k in range(1, 9))
    code, _, err = run(capsys, "run", f'/bot run --stage-list "{names}"', "--catalog", "stages.yml", *CPU_ONLY)
    lines = err.splitlines()  # each error: the message, the comment, the caret
    assert (code, sum(line.startswith("error: ") for line in lines), len(lines)) == (1, 5, 5 * 3 + 1)
    assert lines[-1] == "and 3 more errors, not shown"


def test_run_needs_a_run_command(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "run", "/bot kill", "--catalog", "stages.yml", *CPU_ONLY)
    assert (code, err) == (
        1,
        "error: expected a `/bot run` or `/bot reuse-pipeline` command, found '/bot kill' "
        'Hint: e.g. ci-tool run "/bot run --stage-list CPU-Generic-1"\n',
    )


def test_stage_run_writes_the_output_dir_and_history(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "stage",
        "run",
        "CPU-Generic-Post-Merge-1",
        "--catalog",
        "stages.yml",
        *CPU_ONLY,
        "--output-dir",
        "results/x",
    )
    cases = junit.parse_junit(in_suite / "results" / "x" / "junit.xml").cases
    assert (code, out.splitlines()[-1]) == (0, "1 passed, 0 failed, 0 skipped")
    assert [(c.nodeid, c.outcome, c.stage) for c in cases] == [
        ("cases/case_basic.py::test_marked_gpu4", TestOutcome.PASSED, "CPU-Generic-Post-Merge-1")
    ]
    assert recorded_runs(in_suite) == [
        ("ci-tool stage run CPU-Generic-Post-Merge-1", "passed", ["CPU-Generic-Post-Merge-1"])
    ]


def test_stage_run_of_a_failing_stage_exits_1(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (in_suite / "test-db" / "l0_fixture.yml").write_text(
        "version: 0.0.1\nl0_fixture:\n- condition: {}\n  tests: [cases/case_basic.py::test_assert_fails]\n"
        "l0_green:\n- condition: {}\n  tests: [cases/case_basic.py::test_pass]\n"
    )
    code, out, _ = run(capsys, "stage", "run", "CPU-Generic", "--shard", "1", "--catalog", "stages.yml", *CPU_ONLY)
    assert (code, out.splitlines()[-1]) == (1, "0 passed, 1 failed, 0 skipped")


def test_stage_run_writes_its_html_report_beside_its_results_with_working_log_links(
    in_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_suite / "test-db" / "l0_fixture.yml").write_text(
        "version: 0.0.1\nl0_fixture:\n- condition: {}\n  tests: [cases/case_basic.py::test_assert_fails]\n"
        "l0_green:\n- condition: {}\n  tests: [cases/case_basic.py::test_pass]\n"
    )
    argv = ["stage", "run", "CPU-Generic-1", "--catalog", "stages.yml", *CPU_ONLY, "--output-dir", "results/x"]
    code, out, _ = run(capsys, *argv, "--html-report", "results/x/report.html")
    page = in_suite / "results" / "x" / "report.html"
    assert (code, out.splitlines()[-1]) == (1, "HTML report: results/x/report.html")
    text = page.read_text()
    assert "CPU-Generic-1" in text and "test_assert_fails" in text
    logs = re.findall(r'href="([^"#]+\.log)"', text)
    assert logs and all((page.parent / urllib.parse.unquote(href)).is_file() for href in logs)
    # the page of the run's own report value is the page its history gives: one report, built once
    again = ["report", "latest", "--format", "html", "--output", "results/x/from-history.html"]
    assert run(capsys, *again)[0] == 0
    assert (page.parent / "from-history.html").read_text() == text


def test_dry_run_prints_lists_and_commands_and_runs_nothing(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "stage", "run", "CPU-Generic-1", "--catalog", "stages.yml", *CPU_ONLY, "--dry-run")
    lines = out.splitlines()
    assert code == 0
    assert lines[0] == "stage CPU-Generic-1: context l0_fixture, not sharded, 8 of 8 rendered lines, 1 isolated"
    assert "  cases/case_isolated.py ISOLATION" in lines
    assert sum(" -m pytest -p ci_tool.run.plugin " in line for line in lines) == 2
    assert not (in_suite / ".ci-tool").exists()


def test_a_malformed_waives_file_is_a_located_error_before_anything_runs(
    in_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    waives = in_suite / "test-db" / "waives.txt"
    waives.write_text(waives.read_text() + "cases/case_basic.py::test_pass TIMEOUT (5)\n")
    code, out, err = run(capsys, "stage", "run", "CPU-Generic-Post-Merge-1", "--catalog", "stages.yml", *CPU_ONLY)
    assert (code, out) == (1, "")
    assert err == (
        f"error: {Path('test-db') / 'waives.txt'}:3:1: expected `<test id> SKIP (<reason>)`, found "
        "'cases/case_basic.py::test_pass TIMEOUT (5)' Hint: a waive skips a test: end the line with SKIP "
        "(https://your-tracker/123)\n"
    )
    assert not (in_suite / ".ci-tool").exists()  # no run started, none recorded


def test_a_stage_whose_tests_all_skip_fails_and_says_so(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A GPU stage on a runner whose CUDA is broken skips every test: that is no green stage."""
    (in_suite / "test-db" / "l0_fixture.yml").write_text(
        "version: 0.0.1\nl0_fixture:\n- condition: {}\n  tests: [cases/case_waived.py::test_waived_everywhere]\n"
        "l0_green:\n- condition: {}\n  tests: [cases/case_basic.py::test_pass]\n"
    )
    code, out, _ = run(capsys, "stage", "run", "CPU-Generic-1", "--catalog", "stages.yml", *CPU_ONLY)
    assert (code, out.splitlines()[-1]) == (1, "0 passed, 0 failed, 1 skipped")
    assert recorded_stage_reason(in_suite, "CPU-Generic-1") == (
        "no test ran: all 1 skipped (the first: waived: https://bugs.example/1)"
    )


BOT_FLAG_ARGS = [
    ("flags in one argument", ('--stage-list "CPU-Generic-Post-Merge-1"',)),
    ("a list the shell unquoted", ("--stage-list", "CPU-Generic-Post-Merge-1")),
    ("after --", ("--", '--stage-list "CPU-Generic-Post-Merge-1"')),
]


@pytest.mark.parametrize("args", [a[1] for a in BOT_FLAG_ARGS], ids=[a[0] for a in BOT_FLAG_ARGS])
def test_bot_flags_given_as_arguments_are_the_comment(
    in_suite: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    code, _, err = run(capsys, "run", "--catalog", "stages.yml", *CPU_ONLY, *args)  # `--` ends the options
    assert (code, err) == (0, "")
    assert recorded_runs(in_suite) == [
        ('/bot run --stage-list "CPU-Generic-Post-Merge-1"', "passed", ["CPU-Generic-Post-Merge-1"])
    ]


SLURM_CATALOG = """\
version: 1
families:
- {name: GB200-8_GPUs-2_Nodes-PyTorch, platform: 'auto:gb200-flex', context: l0_green, splits: 1, timeout_minutes: 90,
   executor: slurm}
"""


def test_a_slurm_dry_run_prints_the_sbatch_line_and_the_srun_launch(
    in_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_suite / "slurm.yml").write_text(SLURM_CATALOG)
    name = "GB200-8_GPUs-2_Nodes-PyTorch-1"
    code, out, err = run(capsys, "stage", "run", name, "--catalog", "slurm.yml", "--executor", "slurm", "--dry-run")
    lines = out.splitlines()
    folder = in_suite / ".ci-tool" / "runs" / "<run-id>" / name / "slurm"
    assert (code, err) == (0, "")  # no warning: the cluster, not this machine, runs it
    assert lines[1] == (
        'query: {"auto_trigger": "others", "backend": "pytorch", "gpu": "GB200", "orchestrator": "mpi", '
        '"stage": "pre_merge", "system_gpu_count": "8"}'
    )  # stage-name keys only, as the reference's sbatch stages render
    assert lines[3] == "slurm job: " + shlex.join(
        [
            "sbatch", "--parsable", f"--job-name={name}", f"--chdir={in_suite}", f"--output={folder}/%j.out",
            f"--error={folder}/%j.err", "--nodes=2", "--ntasks-per-node=1", "--no-requeue", "--partition=gb200-flex",
            "--gres=gpu:4", "--time=90", "--comment=ci-tool run <run-id>", f"{folder}/job.sh",
        ]
    )  # fmt: skip
    launches = [line for line in lines if " -m pytest " in line]
    assert launches and all(" srun --nodes=2 --ntasks=2 --ntasks-per-node=1 " in line for line in launches)
    assert not (in_suite / ".ci-tool").exists()


SLURM_PERF_CATALOG = SLURM_CATALOG.replace("GB200-8_GPUs-2_Nodes-PyTorch,", "GB200-8_GPUs-2_Nodes-PyTorch-PerfSanity,")


@pytest.mark.parametrize(
    ("catalog", "name", "alone"),
    [
        pytest.param(SLURM_PERF_CATALOG, "GB200-8_GPUs-2_Nodes-PyTorch-PerfSanity-1", True, id="perf-sanity"),
        pytest.param(SLURM_CATALOG, "GB200-8_GPUs-2_Nodes-PyTorch-1", False, id="functional"),
    ],
)
def test_a_perf_stage_on_slurm_has_its_nodes_to_itself(
    in_suite: Path, capsys: pytest.CaptureFixture[str], catalog: str, name: str, alone: bool
) -> None:
    (in_suite / "slurm.yml").write_text(catalog)
    code, out, err = run(capsys, "stage", "run", name, "--catalog", "slurm.yml", "--executor", "slurm", "--dry-run")
    [job] = [line for line in out.splitlines() if line.startswith("slurm job: ")]
    host = [line for line in out.splitlines() if line.startswith("host: ")]
    assert (code, err, "--exclusive" in shlex.split(job)) == (0, "", alone)
    assert host == (["host: runs alone (perf_sanity mode: no other stage shares it; the Slurm job is --exclusive)"]
                    if alone else [])  # fmt: skip


def test_a_slurm_partition_needs_the_slurm_executor(in_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "stage", "run", "CPU-Generic-1", "--catalog", "stages.yml", "--slurm-partition", "x")
    assert (code, err.splitlines()[-1]) == (2, "Error: --slurm-partition needs --executor slurm")


def test_stage_run_warns_on_a_machine_that_is_no_runner_for_it(
    in_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "stage", "run", "A10-PyTorch-1", "--catalog", "stages.yml", *CPU_ONLY, "--dry-run")
    assert (code, err) == (
        0,
        "warning: this machine is not a runner for A10-PyTorch-1 (needs 1 A10 GPU; this machine has no GPU); "
        "running anyway\n",
    )


# The command line of each verb, run in the slow suite, and the command the history records for it.
INTERRUPTED_RUNS = {
    "stage run": (
        ["stage", "run", "CPU-Generic-1", "--output-dir", "out"],
        "ci-tool stage run CPU-Generic-1",
    ),
    "run": (["run", '/bot run --stage-list "CPU-Generic-1"'], '/bot run --stage-list "CPU-Generic-1"'),
}


def interrupted_run(verb: str) -> tuple[list[str], str]:
    """The ci-tool process of `verb` on the slow catalog and a machine without a GPU; the recorded command."""
    argv, recorded_command = INTERRUPTED_RUNS[verb]
    return [sys.executable, "-m", "ci_tool", *argv, "--catalog", "slow.yml", *CPU_ONLY], recorded_command


@pytest.mark.parametrize(
    ("verb", "signum", "cause"),
    [
        ("stage run", signal.SIGINT, "Ctrl-C"),
        ("stage run", signal.SIGTERM, "SIGTERM"),
        ("run", signal.SIGINT, "Ctrl-C"),
        ("run", signal.SIGTERM, "SIGTERM"),
        ("run", signal.SIGHUP, "SIGHUP"),
    ],
    ids=["stage run, Ctrl-C", "stage run, SIGTERM", "run, Ctrl-C", "run, SIGTERM", "run, SIGHUP"],
)
def test_an_interrupt_stops_pytest_and_keeps_the_finished_tests(
    slow_suite: Any, verb: str, signum: int, cause: str
) -> None:
    command, recorded_command = interrupted_run(verb)
    slow_suite.start(command)
    slow_suite.wait_for_slow_test()
    out, err = slow_suite.interrupt(signum)
    assert (slow_suite.process.returncode, out.splitlines()[-1]) == (130, "1 passed, 0 failed, 1 skipped"), err
    assert_stopped_and_recorded(slow_suite, recorded_command, cause)


def test_sigterm_stops_pytest_with_sigint_even_when_the_caller_ignores_sigint(slow_suite: Any) -> None:
    command, recorded_command = interrupted_run("run")
    slow_suite.start(command, ignore_sigint=True)
    slow_suite.wait_for_slow_test()
    slow_suite.interrupt(signal.SIGTERM)
    assert slow_suite.process.returncode == 130
    assert_stopped_and_recorded(slow_suite, recorded_command, "SIGTERM")


def test_a_hang_up_of_the_terminal_stops_pytest_and_keeps_the_finished_tests(slow_suite: Any) -> None:
    command, recorded_command = interrupted_run("run")
    leader, follower = os.openpty()
    slow_suite.start(command, terminal=follower)
    os.close(follower)
    slow_suite.wait_for_slow_test()
    os.close(leader)  # the terminal goes away: its session leader, ci-tool, gets SIGHUP and cannot write there
    assert slow_suite.process.wait(timeout=PROCESS_TIMEOUT_SECONDS) == 130
    assert_stopped_and_recorded(slow_suite, recorded_command, "SIGHUP")


def assert_stopped_and_recorded(slow_suite: Any, recorded_command: str, cause: str) -> None:
    """pytest ended by ci-tool's SIGINT (exit code 2: it wrote its reports), none of its processes left;
    the history holds the interrupted run, its stage and the tests that finished."""
    assert (slow_suite.pytest_exit_codes(), slow_suite.pytest_alive()) == ([2], False)
    assert recorded_runs(slow_suite.root) == [(recorded_command, "interrupted", ["CPU-Generic-1"])]
    assert recorded_stage_reason(slow_suite.root, "CPU-Generic-1") == f"interrupted ({cause})"
    assert recorded_tests(slow_suite.root, "CPU-Generic-1") == [
        ("cases/case_slow.py::test_quick", TestOutcome.PASSED, ""),
        ("cases/case_slow.py::test_slow", TestOutcome.SKIPPED, f"interrupted ({cause}) before the test finished"),
    ]


def test_parallel_stage_runs_share_one_history(suite: Path) -> None:
    def start(output: str) -> subprocess.Popen[str]:
        command = [
            sys.executable,
            "-m",
            "ci_tool",
            "stage",
            "run",
            "CPU-Generic-Post-Merge-1",
            "--catalog",
            "stages.yml",
            *CPU_ONLY,
        ]
        return subprocess.Popen([*command, "--output-dir", output], cwd=suite, stdout=subprocess.PIPE, text=True)

    runners = [start(f"out/{n}") for n in range(3)]
    assert [r.wait(timeout=300) for r in runners] == [0, 0, 0]  # a safety net on a busy machine
    assert [state for _, state, _ in recorded_runs(suite)] == ["passed"] * 3


def test_a_later_attempt_runs_its_stage_under_the_attempts_name_and_its_pass_is_unstable(
    in_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name = "CPU-Generic-Post-Merge-1-attempt-2"
    argv = ["stage", "run", name, "--catalog", "stages.yml", *CPU_ONLY, "--output-dir", f"results/{name}"]
    code, out, _ = run(capsys, *argv)
    cases = junit.parse_junit(in_suite / "results" / name / "junit.xml").cases
    assert (code, out.splitlines()[-1]) == (0, "1 passed, 0 failed, 0 skipped")  # unstable is no failure
    assert [(c.nodeid, c.outcome, c.stage) for c in cases] == [
        ("cases/case_basic.py::test_marked_gpu4", TestOutcome.PASSED, name)
    ]
    assert recorded_runs(in_suite) == [(f"ci-tool stage run {name}", "unstable", [name])]
    assert recorded_stage_reason(in_suite, name) == (
        "passed on attempt 2: the infrastructure lost attempt 1 (its agent or runner)"
    )


def test_a_later_attempt_with_a_failing_test_fails_and_exits_1(
    in_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_suite / "test-db" / "l0_fixture.yml").write_text(
        "version: 0.0.1\nl0_fixture:\n- condition: {}\n  tests: [cases/case_basic.py::test_assert_fails]\n"
        "l0_green:\n- condition: {}\n  tests: [cases/case_basic.py::test_pass]\n"
    )
    code, out, _ = run(capsys, "stage", "run", "CPU-Generic-1-attempt-2", "--catalog", "stages.yml", *CPU_ONLY)
    assert (code, out.splitlines()[-1]) == (1, "0 passed, 1 failed, 0 skipped")
    assert recorded_runs(in_suite)[0][1:] == ("failed", ["CPU-Generic-1-attempt-2"])


def test_an_attempt_of_a_stage_the_catalog_lacks_names_the_closest_stage(
    in_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "stage", "run", "CPU-Generic-9-attempt-2", "--catalog", "stages.yml", *CPU_ONLY)
    assert code == 1
    assert "found no stage 'CPU-Generic-9'" in err
