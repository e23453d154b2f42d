"""The two renderers of a run's report on a report value built here (report/model.py's CiReport, every field
given): markdown and HTML say the same of each section, the HTML from its templates with every value
escaped. The real runs' pages and report.md are tested in test_html.py, test_browser.py and
tests/ci_tool/run/test_report.py."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

from ci_tool.history.perf_results import PerfResult
from ci_tool.history.records import RunRecord, StageRecord
from ci_tool.history.reuse_sources import REUSED_FROM
from ci_tool.history.stage_details import Rerun, Uncollected
from ci_tool.outcomes import PerfVerdict, RunState, StageState, TestOutcome
from ci_tool.report.html import render_html
from ci_tool.report.model import CiReport, FailedTest, FailureGroup, report_json
from ci_tool.report.page import environment, render
from ci_tool.report.report_markdown import render_markdown
from tests.helpers.html_pages import parsed

ROOT = Path(__file__).resolve().parents[3]
STAGE = StageRecord("r9", "CPU-Generic-1", StageState.UNSTABLE, duration_seconds=4.0, passed=2, failed=0)
WAITING = StageRecord("r9", "A10-PyTorch-1", StageState.WAITING)  # no reason recorded
REUSED = StageRecord("r9", "CPU-Generic-2", StageState.REUSED, details={REUSED_FROM: "r8"})
REUSED_NO_ORIGIN = StageRecord("r9", "CPU-Generic-3", StageState.REUSED)  # nor a reason
CASE = "cpu-gemma_like-small-decode"
PERF = PerfResult(
    "r9", "CPU-Generic-1", CASE, "cpu", "tokens_per_second", 90.0, PerfVerdict.PASSED, 10.0, baseline=100.0
)


def report_value(**fields: object) -> CiReport:
    """A report value with a section of each kind; `fields` replace the defaults."""
    values: dict[str, object] = {
        "run": RunRecord("r9", "ci-tool run <b>", RunState.UNSTABLE, 0.0, 12.5, "box"),
        "stages": (STAGE, WAITING, REUSED, REUSED_NO_ORIGIN),
        "failures": (
            FailureGroup(
                "E: <boom>", (FailedTest("CPU-Generic-1", "t.py::test_a", TestOutcome.ERROR, "E", "<boom>", ""),)
            ),
        ),
        "reruns": (Rerun("CPU-Generic-1", "t.py::test_oom", "cuda-oom", TestOutcome.PASSED),),
        "waives": (("https://bugs.example/2", ("t.py::test_w",)),),
        "uncollected": (Uncollected("CPU-Generic-1", "gone.py", "no such file or folder", 3, "l0_a.yml"),),
        "perf": (PERF,),
        "perf_trends": {(CASE, "cpu", "tokens_per_second"): (100.0, 95.0, 90.0)},
    }
    return CiReport(**{**values, **fields})  # type: ignore[arg-type]


def page(report: CiReport) -> str:
    return render_html(report, stage_href=lambda stage: f"runs/{stage.name}", run_href=lambda run: f"{run}.html")


def test_the_html_says_each_section_of_the_value() -> None:
    html = page(report_value())
    assert "<tr><td><code>t.py::test_oom</code></td><td>CPU-Generic-1</td><td><code>cuda-oom</code></td>" in html
    assert "<li><code>gone.py</code> in CPU-Generic-1: no such file or folder</li>" in html
    assert '<li><code>CPU-Generic-2</code>: passed in run <a href="r8.html"><code>r8</code></a></li>' in html
    assert "<code>t.py::test_a</code> in CPU-Generic-1 (error)</li>" in html
    assert "<code>ci-tool run &lt;b&gt;</code>" in html and "<b>" not in html
    # the reruns column of the stage that ran them counts them
    assert '<td class="number">0</td><td class="number">0</td><td class="number">1</td></tr>' in html


def test_the_html_draws_the_values_perf_trend() -> None:
    html = page(report_value())
    assert 'aria-label="tokens_per_second of cpu-gemma_like-small-decode on cpu over 3 results, baseline 100"' in html
    assert "one result" not in html


def test_a_perf_metric_without_a_trend_says_so() -> None:
    """A report without trends (the run's history could not be read) says it has none, not `one result`."""
    assert '<td><span class="muted">no trend</span></td>' in page(report_value(perf_trends={}))
    one = page(report_value(perf_trends={(CASE, "cpu", "tokens_per_second"): (90.0,)}))
    assert '<td><span class="muted">one result</span></td>' in one


def test_a_stage_without_a_reason_ends_its_line_without_a_colon() -> None:
    html = page(report_value())
    assert '<li><code>A10-PyTorch-1</code>: <span class="state waiting">waiting for a runner</span></li>' in html
    assert "<li><code>CPU-Generic-3</code></li>" in html


def test_an_uncollected_entry_without_a_reason_ends_without_a_colon() -> None:
    html = page(report_value(uncollected=(Uncollected("CPU-Generic-1", "gone.py", ""),)))
    assert "<li><code>gone.py</code> in CPU-Generic-1</li>" in html


def test_the_markdown_says_the_same_reruns_and_uncollected_entries() -> None:
    markdown = render_markdown(report_value())
    assert "- `t.py::test_oom` in `CPU-Generic-1`: `cuda-oom`, passed on rerun (unstable, not green)" in markdown
    assert "- `gone.py` in `CPU-Generic-1`: `no such file or folder`" in markdown
    again = render_markdown(report_value(reruns=(Rerun("CPU-Generic-1", "t.py::x", "oom", TestOutcome.FAILED),)))
    assert "- `t.py::x` in `CPU-Generic-1`: `oom`, failed again" in again


def test_the_json_spells_reruns_and_uncollected_entries_as_the_history_holds_them() -> None:
    data = report_json(report_value())
    assert data["reruns"] == [
        {"stage": "CPU-Generic-1", "test_id": "t.py::test_oom", "signature": "cuda-oom", "rerun": "passed"}
    ]
    assert data["uncollected"] == [
        {"stage": "CPU-Generic-1", "id": "gone.py", "reason": "no such file or folder", "line": 3, "list": "l0_a.yml"}
    ]


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ('<script>"x"</script>', "&lt;script&gt;&quot;x&quot;&lt;/script&gt;"),
        ("it's & more", "it&#x27;s &amp; more"),
        ("bytes \udcff not UTF-8", "bytes \\xff not UTF-8"),
    ],
    ids=["markup", "quote and ampersand", "a byte no UTF-8 holds"],
)
def test_the_templates_escape_every_value(value: str, shown: str) -> None:
    html = page(report_value(run=RunRecord("r9", value, RunState.PASSED, 0.0, 1.0)))
    assert f"<p><code>{shown}</code>" in html
    html.encode("utf-8")
    assert environment().autoescape is True


def test_a_page_of_the_value_has_no_script_and_parses() -> None:
    elements = parsed(page(report_value()))
    assert [tag for tag, _ in elements.tags if tag in {"script", "link", "img", "iframe"}] == []
    assert render("page.html.j2", {"title": "t", "nav": (), "body": [], "script": ""}).endswith("</html>\n")


def test_the_wheel_carries_the_templates() -> None:
    """pyproject's package data names every template, so an installed ci-tool renders its pages."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["*"]
    templates = sorted((ROOT / "ci_tool" / "report" / "templates").iterdir())
    assert templates and [t.name for t in templates if not any(fnmatch(t.name, p) for p in patterns)] == []


def test_a_verb_that_renders_no_page_does_not_import_jinja2() -> None:
    """`ci-tool stage parse` loads the stage group, which attaches `stage run`: rendering stays lazy."""
    code = "import sys, ci_tool.commands.stage, ci_tool.report.html; print('jinja2' in sys.modules)"
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert ran.stdout.strip() == "False"
