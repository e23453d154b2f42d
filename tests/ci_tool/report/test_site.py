"""`ci-tool site`: the dashboard of the hand-written history against golden pages; deterministic,
incremental (only changed runs' pages are written again), and never over files it did not write."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ci_tool.cli import main
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord, TestRecord
from ci_tool.outcomes import RunState, StageState, TestOutcome
from tests.helpers.report_history import DAY

if TYPE_CHECKING:
    from tests.helpers.golden import Golden

GOLDENS = Path(__file__).parent / "goldens" / "site"


def build(capsys: pytest.CaptureFixture[str], history: Path, output: Path, *options: str) -> tuple[int, str, str]:
    code = main(["site", "--output", str(output), "--history", str(history), *options])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def pages(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_dashboard_pages(capsys: pytest.CaptureFixture[str], history: Path, tmp_path: Path, golden: Golden) -> None:
    code, out, err = build(capsys, history, tmp_path / "site")
    assert (code, err) == (0, "")
    assert out.startswith("site: 4 run pages written, 0 unchanged, 0 removed, 4 of 4 summary pages changed; open ")
    built = pages(tmp_path / "site")
    assert sorted(built) == [
        "ci-tool-site.json", "flaky.html", "index.html", "perf.html",
        "runs/r1.html", "runs/r2.html", "runs/r3.html", "runs/r4.html", "slowest.html",
    ]  # fmt: skip
    for name in ("index.html", "flaky.html", "slowest.html", "perf.html", "runs/r2.html", "runs/r3.html"):
        golden(GOLDENS / name, built[name].decode())


def test_the_flaky_page_names_the_flip_and_the_rerun_with_where_they_were_last_seen(
    capsys: pytest.CaptureFixture[str], history: Path, tmp_path: Path
) -> None:
    build(capsys, history, tmp_path / "site")
    flaky = (tmp_path / "site" / "flaky.html").read_text()
    assert '<code>t.py::test_flip</code></td><td>CPU-Generic</td><td class="number">2</td>' in flaky
    assert '<a href="runs/r3.html"><code>r3</code></a>' in flaky  # test_flip last flipped back in r3
    assert '<a href="runs/r2.html"><code>r2</code></a>' in flaky  # test_oom passed on rerun in r2


def test_a_run_page_links_the_run_its_reused_stage_passed_in_and_draws_its_perf_trend(
    capsys: pytest.CaptureFixture[str], history: Path, tmp_path: Path
) -> None:
    build(capsys, history, tmp_path / "site")
    r3 = (tmp_path / "site" / "runs" / "r3.html").read_text()
    reused = r3[r3.index('id="reused"') :]
    assert '<code>CPU-Generic-1</code>: passed in run <a href="r1.html"><code>r1</code></a>' in reused
    assert 'id="not-run"' not in r3  # a reused stage is not "not run"
    perf = r3[r3.index('id="perf"') : r3.index('id="reused"')]
    assert '<td class="number">85</td><td class="number">100</td><td class="number">-15.0%</td>' in perf
    assert '<span class="failed">regressed: 15% below its baseline &lt;script&gt;' in perf
    trend = re.search(r'<svg class="trend" role="img" aria-label="([^"]*)"', perf)
    assert trend and trend.group(1) == (
        "tokens_per_second of cpu-gemma_like-small-decode on cpu over 2 results, baseline 100"
    )
    assert 'stroke-dasharray="3 2"' in perf  # the baseline, dashed


def test_the_perf_page_shows_each_metric_newest_result_with_its_run(
    capsys: pytest.CaptureFixture[str], history: Path, tmp_path: Path
) -> None:
    build(capsys, history, tmp_path / "site")
    perf = (tmp_path / "site" / "perf.html").read_text()
    assert perf.count("<tr>") == 2  # the header and the one (case, GPU, metric)
    assert '<td class="number">85</td>' in perf and '<a href="runs/r3.html"><code>r3</code></a>' in perf


def test_the_same_history_builds_the_same_bytes(
    capsys: pytest.CaptureFixture[str], history: Path, tmp_path: Path
) -> None:
    build(capsys, history, tmp_path / "one")
    build(capsys, history, tmp_path / "two")
    assert pages(tmp_path / "one") == pages(tmp_path / "two")


def test_a_rebuild_writes_only_the_pages_of_runs_that_changed(
    capsys: pytest.CaptureFixture[str], history: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    build(capsys, history, site)
    stamps = {name: os.stat(site / name).st_mtime_ns for name in pages(site) if name.endswith(".html")}
    assert build(capsys, history, site)[1].startswith("site: 0 run pages written, 4 unchanged, 0 removed, 0 of 4")
    assert {name: os.stat(site / name).st_mtime_ns for name in stamps} == stamps
    with HistoryStore(history) as store:  # r4 finishes; r5 is new
        store.record_stage(StageRecord("r4", "CPU-Generic-1", StageState.PASSED, passed=1),
                           [TestRecord("t.py::test_ok", TestOutcome.PASSED, 1.0)], recorded_at=DAY + 90010)  # fmt: skip
        store.finish_run("r4", state=RunState.PASSED, finished_at=DAY + 90020)
        store.start_run(RunRecord("r5", "ci-tool run", RunState.RUNNING, DAY + 95000))
    code, out, _ = build(capsys, history, site)
    assert (code, out.split(";")[0]) == (
        0,
        "site: 2 run pages written, 3 unchanged, 0 removed, 2 of 4 summary pages changed",
    )
    assert "r5" in (site / "index.html").read_text() and "passed" in (site / "runs" / "r4.html").read_text()
    rewritten = [name for name in stamps if os.stat(site / name).st_mtime_ns != stamps[name]]
    assert rewritten == ["index.html", "runs/r4.html", "slowest.html"]  # r4's test is no flip: flaky.html stays


def test_a_new_renderer_makes_every_run_page_again(
    capsys: pytest.CaptureFixture[str], history: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    build(capsys, history, site)
    manifest = json.loads((site / "ci-tool-site.json").read_text())
    (site / "ci-tool-site.json").write_text(json.dumps({**manifest, "renderer": "an older one"}))
    assert build(capsys, history, site)[1].startswith("site: 4 run pages written, 0 unchanged")


def test_runs_that_leave_the_site_lose_their_page_and_other_files_stay(
    capsys: pytest.CaptureFixture[str], history: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    build(capsys, history, site)
    (site / "runs" / "notes.txt").write_text("mine")
    (site / "CNAME").write_text("ci.example.com")
    code, out, _ = build(capsys, history, site, "--runs", "2")
    assert (code, out.split(";")[0]) == (
        0,
        "site: 0 run pages written, 2 unchanged, 2 removed, 2 of 4 summary pages changed",
    )
    assert sorted(pages(site)) == [
        "CNAME", "ci-tool-site.json", "flaky.html", "index.html", "perf.html", "runs/notes.txt", "runs/r3.html",
        "runs/r4.html", "slowest.html",
    ]  # fmt: skip


def test_a_folder_of_other_files_is_refused(capsys: pytest.CaptureFixture[str], history: Path, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "index.html").write_text("my own page")
    assert build(capsys, history, folder) == (
        1,
        "",
        f"error: {folder}: expected an empty folder or a site ci-tool built, found files and no ci-tool-site.json "
        "Hint: pass --output with a new folder: a site never replaces files it did not write\n",
    )
    assert pages(folder) == {"index.html": b"my own page"}


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ("{not json", "expected JSON, found a syntax error: Expecting property name enclosed in double quotes"),
        ("[1, 2]", "expected the site's manifest (a JSON object), found another JSON value"),
    ],
)
def test_a_damaged_manifest_is_a_located_error(
    capsys: pytest.CaptureFixture[str], history: Path, tmp_path: Path, manifest: str, message: str
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "ci-tool-site.json").write_text(manifest)
    code, out, err = build(capsys, history, site)
    assert (code, out) == (1, "")
    assert err.startswith(f"error: {site / 'ci-tool-site.json'}") and message in err


def test_an_output_that_is_a_file_is_refused(capsys: pytest.CaptureFixture[str], history: Path, tmp_path: Path) -> None:
    (tmp_path / "site").write_text("kept")
    code, _, err = build(capsys, history, tmp_path / "site")
    assert (code, err.splitlines()[-1]) == (
        2,
        f"Error: Invalid value for '--output': Directory '{tmp_path / 'site'}' is a file.",
    )
    assert (tmp_path / "site").read_text() == "kept"


def test_an_empty_history_builds_a_site_that_says_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    HistoryStore(tmp_path / "empty.sqlite").close()
    assert build(capsys, tmp_path / "empty.sqlite", tmp_path / "site")[0] == 0
    assert "No runs recorded yet" in (tmp_path / "site" / "index.html").read_text()
