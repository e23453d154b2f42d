"""Text from the PR's files in the CI report stays inside code: a hostile waives.txt through a real run, and
hostile test ids, messages, stage reasons and perf names in the report the bot posts. Outside code spans
and blocks the markdown holds no mention, image, autolink, HTML tag or stray table cell."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from ci_tool.history.perf_results import PerfResult
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord, TestRecord
from ci_tool.outcomes import PerfVerdict, RunState, StageState, TestOutcome
from ci_tool.report.model import build_report, load_report
from ci_tool.report.report_markdown import render_markdown
from ci_tool.run.progress import Progress
from ci_tool.run.session import run_session
from tests.helpers.failing_suite import planned, session_config

# each would do something outside code: notify a team, load an image, link, render HTML, end a code span
# or a table cell early
HOSTILE = (
    "@NVIDIA/trt-llm-ci-approvers ![x](https://evil.example/x.png) https://evil.example/a www.evil.example "
    "<https://evil.example/b> <img src=x onerror=alert(1)> <b>bold</b> `tick``s | pipe *em* _u_ [l](http://e.x)"
)
MULTI_LINE = f"first line\n# heading\n{HOSTILE}\n| a | b |\n```\nafter a fence"
_FENCE = re.compile(r"^(`{3,})")
_SPAN = re.compile(r"(?<!`)(`+)(?!`).*?(?<!`)\1(?!`)")
_SIGNS = {"mention": "@", "image": "![", "link": "http", "www link": "www.", "html": "<", "emphasis": "*em*"}


def outside_code(markdown: str) -> list[str]:
    """The lines of `markdown` with code blocks left out and code spans taken out (CommonMark's rules)."""
    kept, fence = [], ""
    for line in markdown.split("\n"):
        if fence:
            fence = "" if re.fullmatch(rf"{fence}`*\s*", line) else fence
            continue
        opened = _FENCE.match(line)
        if opened:
            fence = opened.group(1)
            continue
        kept.append(_SPAN.sub("", line))
    return kept


def assert_nothing_outside_code(markdown: str) -> None:
    lines = outside_code(markdown)
    found = {name: line for name, sign in _SIGNS.items() for line in lines if sign in line}
    assert found == {}
    for line in lines:  # a table row keeps its columns: every `|` left is a cell border
        if line.startswith("|"):
            assert line.count("|") == len(re.findall(r"(?<!\\)\|", line)), line


def test_a_hostile_waive_reason_stays_in_code_through_a_real_run(suite: Path) -> None:
    (suite / "test-db" / "waives.txt").write_text(f"cases/case_basic.py::test_marked_gpu4 SKIP ({HOSTILE})\n")
    config = session_config(suite)
    session = run_session(
        "/bot run --post-merge",
        planned(suite, ("CPU-Generic-Post-Merge-1",)),
        config=config,
        fail_fast=False,
        progress=Progress(io.StringIO()),
    )
    with HistoryStore(config.history) as store:
        markdown = render_markdown(load_report(store, session.run_id))
    assert f"- ``` {HOSTILE} ```: `cases/case_basic.py::test_marked_gpu4`" in markdown
    assert_nothing_outside_code(markdown)


def test_hostile_ids_messages_reasons_and_perf_names_stay_in_code() -> None:
    run = RunRecord("r1", "/bot run", RunState.FAILED, 1.0, 2.0)
    stages = [
        StageRecord("r1", "CPU-Generic-1", StageState.FAILED, reason=MULTI_LINE, failed=1,
                    details={"uncollected": [{"id": HOSTILE, "reason": MULTI_LINE}],
                             "reruns": [{"test_id": HOSTILE, "signature": HOSTILE, "rerun": "failed"}]}),
        StageRecord("r1", "CPU-Generic-2", StageState.REUSED, reason=MULTI_LINE),
        StageRecord("r1", "A10-PyTorch-1", StageState.WAITING, reason=MULTI_LINE),
    ]  # fmt: skip
    failed = TestRecord(f"t.py::test[{HOSTILE}]", TestOutcome.FAILED, 0.1, kind="E", message=MULTI_LINE,
                        signature=MULTI_LINE, output_head=MULTI_LINE)  # fmt: skip
    waived = TestRecord(f"t.py::waived[{HOSTILE}]", TestOutcome.SKIPPED, 0.0, waive_reason=MULTI_LINE)
    perf = [
        PerfResult("r1", "CPU-Generic-1", HOSTILE, HOSTILE, HOSTILE, 1.0, PerfVerdict.WARNED, 1.0, note=MULTI_LINE),
        PerfResult("r1", "CPU-Generic-1", HOSTILE, "cpu", "m", 1.0, PerfVerdict.REGRESSED, 1.0, 2.0, note=HOSTILE),
    ]
    markdown = render_markdown(build_report(run, stages, {"CPU-Generic-1": [failed, waived]}, perf=perf))
    assert_nothing_outside_code(markdown)


@pytest.mark.parametrize(
    ("markdown", "left"),
    [
        ("a `@x` b", ["a  b"]),
        ("a ``x ` y`` b @z", ["a  b @z"]),
        ("```text\n@x\n```\nafter", ["after"]),
        ("````text\n```\n@x\n````\n<b>", ["<b>"]),
    ],
    ids=["span", "span with a backtick", "block", "longer fence"],
)
def test_the_oracle_leaves_out_exactly_the_code(markdown: str, left: list[str]) -> None:
    assert outside_code(markdown) == left
