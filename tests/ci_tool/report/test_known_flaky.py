"""The CI report of a run over a history with a planted flaky test: its failure is marked known flaky with
the rate measured before the run, a new failure is not (markdown, JSON, HTML)."""

from __future__ import annotations

import pytest

from ci_tool.history.store import HistoryStore, TestRecord
from ci_tool.report.html import render_html
from ci_tool.report.model import load_report, report_json
from ci_tool.report.report_markdown import render_markdown
from tests.ci_tool.history.planted import (
    A10,
    DAY_ONE,
    HOUR,
    PASSED,
    PLANTED,
    PLANTED_SIGNATURE,
    failed,
    record_run,
)


@pytest.fixture
def store(planted_store: HistoryStore) -> HistoryStore:
    """The planted history and r7: the planted flake and a new test fail."""
    tests = [
        failed(PLANTED, PLANTED_SIGNATURE),
        failed("a.py::test_new", "KeyError: 'x'"),
        TestRecord("a.py::test_stable", PASSED, 1.0),
    ]
    record_run(planted_store, "r7", DAY_ONE + 6 * HOUR, {A10: (600.0, tests)})
    return planted_store


def test_markdown_sets_the_known_flaky_failure_apart(store: HistoryStore) -> None:
    markdown = render_markdown(load_report(store, "r7"))
    assert markdown.endswith(
        "### New failures: 1 test, 1 signature\n\n"
        "#### `KeyError: 'x'` (1 test)\n\n"
        "- `a.py::test_new` in `A10-PyTorch-1`\n\n"
        "### Failures of known flaky tests: 1 test\n\n"
        "_flaky on the same GPU type before this run: likely not caused by this change._\n\n"
        f"- `{PLANTED}` in `A10-PyTorch-1`: flake rate 33% (2 of 6 runs on A10), `{PLANTED_SIGNATURE}`\n"
    )


def test_json_gives_the_known_rate(store: HistoryStore) -> None:
    data = report_json(load_report(store, "r7"))
    assert [t["test_id"] for group in data["failures"] for t in group["tests"]] == ["a.py::test_new"]
    (known,) = data["known_flaky"]
    assert (known["test_id"], known["known_flaky"]) == (
        PLANTED,
        {"rate": 0.3333, "flaky_runs": 2, "runs": 6, "gpu": "A10"},
    )


def test_html_has_its_own_section(store: HistoryStore) -> None:
    page = render_html(load_report(store, "r7"), stage_href=lambda stage: None)
    assert '<h2 id="failures">New failures: 1 test, 1 signature</h2>' in page
    assert '<h2 id="known-flaky">Failures of known flaky tests: 1 test</h2>' in page
    assert f"<li><code>{PLANTED}</code> in A10-PyTorch-1: flake rate 33% (2 of 6 runs on A10), <code>" in page


def test_the_first_run_of_a_flake_is_a_new_failure(store: HistoryStore) -> None:
    report = load_report(store, "r3")  # nothing known before its own failure
    assert report.known_flaky == () and "### Failures: " in render_markdown(report)
