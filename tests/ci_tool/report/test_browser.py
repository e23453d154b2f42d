"""The report and the dashboard in a real headless Chromium (Debian's `chromium`, driven by Playwright's
Python package with the system browser as its executable; Playwright's own browsers are never used).
Each test saves screenshots under its tmp_path/screenshots. Skipped, with the reason, where Playwright
or Chromium is missing (.ci/run installs both)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ci_tool.cli import main

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM_ENV = "CI_TOOL_CHROMIUM"  # a Chromium elsewhere than on PATH
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking"]

HOSTILE_NAME = "<script>window.__pwned = 1</script> \"double\" 'single'"
HOSTILE_SUITE = {
    "stages.yml": "version: 1\nfamilies:\n- {name: CPU-Generic, platform: cpu, context: l0_hostile, splits: 1}\n",
    "test-db/l0_hostile.yml": "version: 0.0.1\nl0_hostile:\n- condition: {}\n  tests: [cases/test_hostile.py]\n",
    "cases/test_hostile.py": f"""\
import sys

import pytest


@pytest.mark.parametrize("name", [{HOSTILE_NAME!r}])
def test_hostile(name):
    sys.stdout.buffer.write(b"bytes \\xff\\xfe that are not UTF-8 <b>bold</b>\\n")
    sys.stdout.flush()
    raise AssertionError('<img src=x onerror="window.__pwned = 2"> ' + name)
""",
}


def _chromium() -> str | None:
    found = os.environ.get(CHROMIUM_ENV) or next(filter(None, map(shutil.which, CHROMIUM_NAMES)), None)
    return found if found and os.access(found, os.X_OK) else None


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright's Python package is not installed")
    executable = _chromium()
    if executable is None:
        pytest.skip(f"no Chromium: none of {', '.join(CHROMIUM_NAMES)} on PATH and no ${CHROMIUM_ENV}")
    with sync_api.sync_playwright() as playwright:
        try:
            launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        except sync_api.Error as error:
            pytest.skip(f"{executable} does not start headless: {str(error).splitlines()[0]}")
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser, tmp_path: Path) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(60_000)  # a loaded 2-core machine, not a measure
    yield opened
    context.close()


def screenshot(page: Page, tmp_path: Path, name: str) -> None:
    folder = tmp_path / "screenshots"
    folder.mkdir(exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def html_report(run_id: str, history: Path, output: Path) -> Path:
    code = main(["report", run_id, "--history", str(history), "--format", "html", "--output", str(output)])
    assert code == 0
    return output


def test_the_report_of_a_run_with_a_planted_failure(page: Page, fixture_run: Any, tmp_path: Path) -> None:
    report = html_report(fixture_run.session.run_id, fixture_run.history, tmp_path / "out" / "report.html")
    page.goto(report.as_uri())
    screenshot(page, tmp_path, "report")
    stages = page.get_by_role("table", name="Every stage of the run, in order")
    names = ("CPU-Generic-1", "A10-PyTorch-1", "CPU-Generic-Post-Merge-1")
    assert {name: stages.get_by_role("row").filter(has_text=name).count() for name in names} == dict.fromkeys(names, 1)
    failure = page.locator("details.failure").filter(has_text="arithmetic is broken")
    excerpt = failure.locator("pre")
    assert not excerpt.is_visible()
    failure.locator("summary").click()
    excerpt.wait_for(state="visible")
    assert "assert (1 + 1) == 3" in excerpt.inner_text()
    screenshot(page, tmp_path, "failure-expanded")
    failure.get_by_role("link", name="log").click()
    page.wait_for_url("**/*.log")
    assert "cases/case_basic.py" in page.content()
    screenshot(page, tmp_path, "log")


def test_a_failure_opens_from_the_keyboard(page: Page, fixture_run: Any, tmp_path: Path) -> None:
    report = html_report(fixture_run.session.run_id, fixture_run.history, tmp_path / "report.html")
    page.goto(report.as_uri())
    summary = page.locator("details.failure summary").first
    summary.focus()
    page.keyboard.press("Enter")
    page.locator("details.failure pre").first.wait_for(state="visible")
    assert page.locator("details.failure").first.get_attribute("open") is not None


def test_text_from_pr_code_shows_as_text_and_never_runs(page: Page, tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    for name, text in HOSTILE_SUITE.items():
        (suite / name).parent.mkdir(parents=True, exist_ok=True)
        (suite / name).write_text(text)
    history = suite / "history.sqlite"
    command = [sys.executable, "-m", "ci_tool", "stage", "run", "CPU-Generic-1", "--catalog", "stages.yml",
               "--test-db", "test-db", "--history", str(history), "--no-rerun"]  # fmt: skip
    ran = subprocess.run(command, cwd=suite, capture_output=True, text=True, check=False, timeout=300)
    assert ran.returncode == 1, ran.stdout + ran.stderr  # the stage failed: its one test did
    report = html_report("latest", history, suite / "report.html")
    page.goto(report.as_uri())
    page.locator("details.failure summary").first.click()
    screenshot(page, tmp_path, "hostile")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img").count() == 0 and page.locator("b").count() == 0
    shown = page.locator("main").inner_text()
    assert HOSTILE_NAME in shown and '<img src=x onerror="window.__pwned = 2">' in shown


def test_the_run_list_filters_by_text_and_result(page: Page, history: Path, tmp_path: Path) -> None:
    assert main(["site", "--output", str(tmp_path / "site"), "--history", str(history)]) == 0
    page.goto((tmp_path / "site" / "index.html").as_uri())
    rows = page.locator("#runs tbody tr")
    search = page.get_by_role("searchbox", name="Filter runs")
    assert (rows.count(), page.locator("#run-filter-count").inner_text()) == (4, "4 of 4 runs shown")
    search.fill("cpu-generic-1")  # words of the command, any case
    assert [row.locator("td").first.inner_text() for row in rows.locator("visible=true").all()] == ["r4"]
    search.fill("")
    page.get_by_role("combobox", name="Result").select_option("passed")
    assert page.locator("#run-filter-count").inner_text() == "2 of 4 runs shown"
    screenshot(page, tmp_path, "filtered")
    rows.locator("visible=true").first.get_by_role("link").click()
    page.wait_for_url("**/runs/r3.html")
    assert page.get_by_role("heading", level=1).inner_text() == "ci-tool run r3: passed"


def test_the_run_list_works_without_javascript(browser: Browser, history: Path, tmp_path: Path) -> None:
    assert main(["site", "--output", str(tmp_path / "site"), "--history", str(history)]) == 0
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto((tmp_path / "site" / "index.html").as_uri())
    assert page.locator("#runs tbody tr").locator("visible=true").count() == 4
    assert not page.locator("#run-filter").is_visible()  # the filter needs the script: hidden without it
    page.get_by_role("link", name="Flaky tests").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Flaky tests"
    context.close()


LONG_IDS = [  # ids as long as a parametrized TensorRT-LLM test's, with no blank to break at
    f"tests/integration/defs/accuracy/test_llm_api_pytorch.py::TestLlama3_1_8BInstruct::test_fp8_kv_cache_{n}"
    f"[{'-'.join(f'tp{n}_pp2_attention_dp_cuda_graph_overlap_scheduler_torch_compile_mtp_nextn' for _ in range(3))}]"
    for n in range(3)
]


def test_the_slowest_tests_fit_a_1280_px_screen_however_long_their_ids(browser: Browser, tmp_path: Path) -> None:
    from ci_tool.history.store import HistoryStore, RunRecord, StageRecord, TestRecord
    from ci_tool.outcomes import RunState, StageState, TestOutcome

    history = tmp_path / "history.sqlite"
    with HistoryStore(history) as store:
        tests = [TestRecord(test_id, TestOutcome.PASSED, 30.0 + n) for n, test_id in enumerate(LONG_IDS)]
        stage = StageRecord("r1", "CPU-Generic-1", StageState.PASSED, passed=len(tests), duration_seconds=93.0)
        store.record_run(RunRecord("r1", "/bot run", RunState.PASSED, 1_790_000_000.0, 1_790_000_100.0),
                         [(stage, tests, 1_790_000_060.0)])  # fmt: skip
    assert main(["site", "--output", str(tmp_path / "site"), "--history", str(history)]) == 0
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.goto((tmp_path / "site" / "slowest.html").as_uri())
    screenshot(page, tmp_path, "slowest-1280")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    headers = ("Median", "Latest", "Results", "Trend (oldest to newest)")
    boxes = [page.get_by_role("columnheader", name=header).bounding_box() for header in headers]
    assert [box is not None and box["x"] + box["width"] <= 1280 for box in boxes] == [True] * len(headers)
    assert page.get_by_role("cell", name=LONG_IDS[0]).inner_text() == LONG_IDS[0]  # wrapped, not cut
    context.close()
