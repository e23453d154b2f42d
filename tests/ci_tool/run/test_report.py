"""The CI report from real runs: the failing suite (golden markdown) and this repository's own tests."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ci_tool.bot.reply import open_fence
from ci_tool.history import queries
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord, TestRecord
from ci_tool.outcomes import RunState, StageState, TestOutcome
from ci_tool.report.model import build_report, load_report, report_json
from ci_tool.report.report_markdown import render_markdown
from ci_tool.run.progress import Progress
from ci_tool.run.session import PlannedStage, run_session
from ci_tool.stages.names import parse_stage_name
from ci_tool.stages.planner import Planner
from ci_tool.testdb.load import load_test_db

if TYPE_CHECKING:
    from tests.helpers.golden import Golden

GOLDEN = Path(__file__).parent / "goldens" / "fixture_report.md"
REPOSITORY = Path(__file__).parents[3]


def _stable(markdown: str, run_id: str) -> str:
    """The report with what differs between runs (run id, durations, temporary paths) replaced."""
    text = markdown.replace(run_id, "<run-id>")
    text = re.sub(r"\d+(\.\d+)? s\b|\d+ min \d+ s", "<secs>", text)
    text = re.sub(r"\| \d+\.\d\d \|$", "| <ratio> |", text, flags=re.MULTILINE)  # actual / predicted
    text = re.sub(r'File "[^"]*/cases/', 'File "<suite>/cases/', text)
    return re.sub(r"^  File \"[^\"]*site-packages.*\n.*\n", "", text, flags=re.MULTILINE)


def test_markdown_report_of_the_failing_suite(fixture_run: Any, golden: Golden) -> None:
    with HistoryStore(fixture_run.history) as store:
        markdown = render_markdown(load_report(store, fixture_run.session.run_id))
    golden(GOLDEN, _stable(markdown, fixture_run.session.run_id))


def test_report_is_written_to_the_run_folder(fixture_run: Any) -> None:
    assert (fixture_run.session.results_dir / "report.md").read_text() == fixture_run.session.report_markdown


def test_json_report_groups_failures_by_signature(fixture_run: Any) -> None:
    with HistoryStore(fixture_run.history) as store:
        data = report_json(load_report(store, fixture_run.session.run_id))
    groups = {group["signature"]: [t["test_id"] for t in group["tests"]] for group in data["failures"]}
    assert (data["state"], data["totals"]) == ("failed", {"passed": 14, "failed": 6, "skipped": 1})
    assert groups["IndexError: block <n> at <hex> is out of range for pool <tmp>"] == [
        "cases/case_basic.py::test_block_out_of_range[17]",
        "cases/case_basic.py::test_block_out_of_range[4242]",
    ]
    assert [(s["name"], s["state"]) for s in data["stages"]] == [
        ("CPU-Generic-1", "failed"),
        ("A10-PyTorch-1", "waiting"),
        ("CPU-Generic-Post-Merge-1", "passed"),
    ]
    assert data["reruns"] == [
        {
            "stage": "CPU-Generic-1",
            "test_id": "cases/case_flaky.py::test_flaky_oom",
            "signature": "cuda-oom",
            "rerun": "passed",
        }
    ]
    assert data["waives"] == [
        {"reason": "https://bugs.example/1", "tests": ["cases/case_waived.py::test_waived_everywhere"]}
    ]


def test_report_of_this_repositorys_own_tests(tmp_path: Path, make_config: Callable[..., Any]) -> None:
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "l0_self.yml").write_text(
        "version: 0.0.1\nl0_self:\n- condition: {}\n  tests:\n"
        "  - tests/ci_tool/run/test_run_selection.py\n  - tests/ci_tool/run/test_signatures.py -k normalize\n"
    )
    config = make_config(REPOSITORY, results_root=tmp_path / "runs", history=tmp_path / "history.sqlite")
    db = load_test_db(tmp_path / "db")
    stage = PlannedStage(
        parse_stage_name("CPU-Generic-1"),
        lambda: Planner(db, {}).stage_of_list(parse_stage_name("CPU-Generic-1"), "l0_self"),
    )
    session = run_session("ci-tool stage run", [stage], config=config, fail_fast=True, progress=Progress(io.StringIO()))
    with HistoryStore(config.history) as store:
        data = report_json(load_report(store, session.run_id))
    assert (session.state, session.closing_line) == ("passed", "26 passed, 0 failed, 0 skipped")
    assert (data["stages"][0]["passed"], data["failures"]) == (26, [])


def test_the_run_records_what_its_processes_cost_beyond_their_tests(fixture_run: Any) -> None:
    """Real processes: the isolated entry's own process, and the green post-merge stage's; the main process
    of CPU-Generic-1 was resumed after a crash, so it teaches nothing."""
    with HistoryStore(fixture_run.history, read_only=True) as store:
        costs = queries.export_process_costs(store)
    assert set(costs) == {"cases/case_isolated.py", "cases/case_basic.py::test_marked_gpu4"}
    assert all(cost > 0 for cost in costs.values())  # an interpreter never starts in no time


def test_the_report_sets_predicted_beside_actual_and_each_familys_shard_spread() -> None:
    run = RunRecord("r1", "/bot run", RunState.PASSED, 0.0, finished_at=70.0)
    stages = [
        StageRecord("r1", "CPU-Generic-1", StageState.PASSED, duration_seconds=25.0, details={"predicted_seconds": 26}),
        StageRecord("r1", "CPU-Generic-2", StageState.PASSED, duration_seconds=41.0, details={"predicted_seconds": 26}),
        StageRecord("r1", "A10-PyTorch-1", StageState.WAITING, details={"predicted_seconds": 5}),
    ]
    markdown = render_markdown(build_report(run, stages, {}))
    assert (
        "### Shards: predicted and actual\n\n"
        "| Stage | Predicted | Actual | Actual / predicted |\n|---|---:|---:|---:|\n"
        "| `CPU-Generic-1` | 26.0 s | 25.0 s | 0.96 |\n| `CPU-Generic-2` | 26.0 s | 41.0 s | 1.58 |\n\n"
        "- `CPU-Generic`: slowest shard 41.0 s, fastest 25.0 s (1.64x)\n"
    ) in markdown


def test_the_report_says_a_perf_stage_ran_alone() -> None:
    run = RunRecord("r1", "/bot run", RunState.PASSED, 0.0, finished_at=70.0)
    stages = [
        StageRecord("r1", "DGX_H200-PyTorch-PerfSanity-1", StageState.PASSED, duration_seconds=25.0, passed=4),
        StageRecord("r1", "DGX_H200-PyTorch-Perf-1", StageState.FAILED, duration_seconds=9.0, failed=1),
        StageRecord("r1", "A10-PyTorch-1", StageState.PASSED, duration_seconds=5.0, passed=1),
        StageRecord("r1", "a stage from elsewhere", StageState.PASSED, duration_seconds=5.0, passed=1),
    ]
    rows = [line for line in render_markdown(build_report(run, stages, {})).splitlines() if line.startswith("| ")]
    assert rows[1:] == [
        "| `DGX_H200-PyTorch-PerfSanity-1` | **passed**, ran alone | 25.0 s | 4 | 0 | 0 |",
        "| `DGX_H200-PyTorch-Perf-1` | **failed**, ran alone | 9.0 s | 0 | 1 | 0 |",
        "| `A10-PyTorch-1` | **passed** | 5.0 s | 1 | 0 | 0 |",
        "| `a stage from elsewhere` | **passed** | 5.0 s | 1 | 0 | 0 |",
    ]


def test_backticks_fences_and_bars_from_pr_code_stay_inside_their_markdown() -> None:
    """A test id with backticks, output with a ``` line and a reason with `|` (all from PR code) cannot
    close their code span, fence or table cell early."""
    test_id = "t.py::test_x[a`b``c]"
    output = "E   before\n```\nE   after the fence"
    run = RunRecord("r1", "/bot run", RunState.FAILED, 1.0, 2.0)
    stages = [
        StageRecord("r1", "CPU-Generic-1", StageState.FAILED, reason="exit 1 | see log", failed=1),
        StageRecord("r1", "A10-PyTorch-1", StageState.WAITING, reason="needs | a runner"),
    ]
    tests = {"CPU-Generic-1": [TestRecord(test_id, TestOutcome.FAILED, 0.1, kind="E", message="m", signature="E: m",
                                          output_head=output)]}  # fmt: skip
    text = render_markdown(build_report(run, stages, tests))
    assert f"- ``` {test_id} ``` in `CPU-Generic-1`" in text
    assert "\n````text\nE   before\n```\nE   after the fence\n````\n" in text
    assert "| `CPU-Generic-1` | **failed** (`exit 1 \\| see log`) |" in text
    assert "| `A10-PyTorch-1` | waiting |" in text


def test_a_shortened_reply_closes_the_fence_it_cut_inside() -> None:
    assert open_fence(["text", "````text", "```", "inside"]) == "````"
    assert open_fence(["```text", "x", "```"]) == ""
    assert open_fence(["````text", "x", "````", "```text", "y"]) == "```"
