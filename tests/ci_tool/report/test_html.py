"""The HTML report of one run: pure rendering (history rows in, HTML out) against a golden file, text from
PR code rendered as text, nothing fetched from anywhere, and `ci-tool report --format html` linking the
stage folders and logs relative to where it writes the page."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ci_tool.cli import main
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord, TestRecord
from ci_tool.outcomes import RunState, StageState, TestOutcome
from ci_tool.report.html import render_html
from ci_tool.report.model import build_report, load_report
from tests.helpers.html_pages import parsed
from tests.helpers.report_history import HOSTILE

if TYPE_CHECKING:
    from tests.helpers.golden import Golden

GOLDENS = Path(__file__).parent / "goldens"






def report_page(history: Path, run_id: str) -> str:
    with HistoryStore(history, read_only=True) as store:
        return render_html(load_report(store, run_id), stage_href=lambda stage: f"stages/{stage.name}")


def test_the_report_of_a_failed_run(history: Path, golden: Golden) -> None:
    golden(GOLDENS / "r2.html", report_page(history, "r2"))


def test_the_report_of_a_passed_run(history: Path, golden: Golden) -> None:
    golden(GOLDENS / "r1.html", report_page(history, "r1"))


def test_names_messages_output_and_reasons_from_pr_code_render_as_text(history: Path) -> None:
    page = report_page(history, "r2")
    elements = parsed(page)
    assert [tag for tag, _ in elements.tags if tag == "script"] == []
    text = "".join(elements.text)
    # the test id, the signature, the excerpt, the command and the waiting stage's reason, each as text
    assert text.count(HOSTILE) >= 5, text
    assert all(not name.startswith("on") for _, attributes in elements.tags for name in attributes)
    page.encode("utf-8")  # a page that can be written


def test_the_page_is_self_contained(history: Path) -> None:
    elements = parsed(report_page(history, "r2"))
    fetched = [(tag, a) for tag, a in elements.tags if tag in {"link", "img", "iframe", "script", "object"}]
    links = [a.get("href") or "" for tag, a in elements.tags if tag == "a"]
    assert fetched == []
    # the one page off the site it links: the issue its waive names (a link to follow, nothing it loads)
    assert [href for href in links if href.startswith(("http:", "https:", "//"))] == ["https://bugs.example/1"]


WAIVE_REASONS = {  # a waive's reason -> its HTML: only http(s) links become links, everything escaped
    "a link": ("https://bugs.example/1", '<a href="https://bugs.example/1">https://bugs.example/1</a>'),
    "a link with its expiry": (
        "https://github.com/o/r/issues/7 until 2027-01-31",
        '<a href="https://github.com/o/r/issues/7">https://github.com/o/r/issues/7</a> until 2027-01-31',
    ),
    "text then a link and a full stop": (
        "Flaky, see http://nvbugs/5346443.",
        'Flaky, see <a href="http://nvbugs/5346443">http://nvbugs/5346443</a>.',
    ),
    "no link": ("Disable for Blackwell", "Disable for Blackwell"),
    "another scheme": ("javascript:alert(1)", "javascript:alert(1)"),
    "markup after a link": (
        'https://x.example/"><script>1</script>',
        '<a href="https://x.example/&quot;&gt;&lt;script&gt;1&lt;/script&gt;">'
        "https://x.example/&quot;&gt;&lt;script&gt;1&lt;/script&gt;</a>",
    ),
}


@pytest.mark.parametrize(("reason", "shown"), WAIVE_REASONS.values(), ids=WAIVE_REASONS.keys())
def test_a_waive_row_links_its_issue(reason: str, shown: str) -> None:
    waived = TestRecord("t.py::test_w", TestOutcome.SKIPPED, 0.0, waive_reason=reason)
    stage = StageRecord("r", "CPU-Generic-1", StageState.PASSED, skipped=1)
    report = build_report(RunRecord("r", "ci-tool run", RunState.PASSED, 0.0, 1.0), [stage], {stage.name: [waived]})
    assert f"<li>{shown}: <code>t.py::test_w</code></li>" in render_html(report, stage_href=lambda _: None)


def test_a_run_page_shows_every_stage_and_its_state(history: Path) -> None:
    text = "".join(parsed(report_page(history, "r2")).text)
    assert "CPU-Generic-1" in text and "A10-PyTorch-1" in text
    assert "waiting for a runner" in text and "Failures: 2 tests, 2 signatures" in text


@pytest.mark.parametrize("where", ["out/report.html", "report.html"])
def test_report_format_html_links_the_log_relative_to_the_page(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    output = tmp_path / where
    code = main(["report", "r2", "--history", str(history), "--format", "html", "--output", str(output)])
    assert (code, capsys.readouterr().err) == (0, "")
    hrefs = [a["href"] for tag, a in parsed(output.read_text()).tags if tag == "a" and a.get("href")]
    logs = [href for href in hrefs if href and href.endswith(".log")]
    assert logs and all((output.parent / str(href)).read_text().startswith("the log of") for href in logs)
    assert all(not str(href).startswith("/") for href in hrefs)
