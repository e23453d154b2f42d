"""Every verb that reads the history answers the same on SQLite and on PostgreSQL: the planted runs (and a
perf result) written through the store into each, then each verb through the real CLI on both; what it
prints and the files it writes are the same, but for the name of the history."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.history.locator import History, PostgresUrl
from ci_tool.history.perf_results import PerfResult, record_perf_results
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import PerfVerdict
from tests.ci_tool.history.planted import A10, DAY_ONE, plant

VERBS = {
    "history": ["history"],
    "history-json": ["history", "--json"],
    "report-latest": ["report", "latest"],
    "report-run": ["report", "r6", "--format", "json"],
    "report-html": ["report", "r6", "--format", "html", "--output", "out/r6.html"],
    "flaky-report": ["flaky", "report", "--today", "2027-01-11"],
    "site": ["site", "--output", "out"],
    "durations-export": ["durations", "export"],
    "perf-baseline-set": ["perf", "baseline", "set", "--gpu", "cpu", "--baselines", "out/baselines"],
    "perf-baseline-diff": ["perf", "baseline", "diff", "--gpu", "cpu", "--baselines", "baselines"],
    "perf-trend": ["perf", "trend", "perf-a-b", "--gpu", "cpu", "--png", "out/t.png"],
    "waive-propose": ["waive", "propose", "--today", "2027-01-11", "--waives", "waives.txt"],
}


def planted(history: History) -> None:
    with HistoryStore(history) as store:
        plant(store)
        result = PerfResult(
            "r6", A10, "perf-a-b", "cpu", "decode_tokens_per_s", 10.0, PerfVerdict.RECORDED, DAY_ONE, post_merge=True,
            branch="main",
        )  # fmt: skip
        record_perf_results(store, [result])


def answer(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, folder: Path, history: History, argv: list[str]
) -> tuple[int, str, str, dict[str, bytes]]:
    """The verb run in its own folder: its exit code, output and the files it wrote, the history's name
    replaced by HISTORY."""
    folder.mkdir()
    (folder / "waives.txt").write_text("")
    monkeypatch.chdir(folder)
    code = main([*argv, "--history", history.url if isinstance(history, PostgresUrl) else str(history)])
    captured = capsys.readouterr()
    shown = str(history)
    written = sorted(path for path in (folder / "out").rglob("*") if path.is_file())
    files = {str(path.relative_to(folder)): path.read_bytes().replace(shown.encode(), b"HISTORY") for path in written}
    return code, captured.out.replace(shown, "HISTORY"), captured.err.replace(shown, "HISTORY"), files


@pytest.mark.parametrize("verb", list(VERBS), ids=list(VERBS))
def test_a_verb_answers_the_same_on_both_backends(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    postgres_url: PostgresUrl,
    verb: str,
) -> None:
    sqlite = tmp_path / "h.sqlite"
    planted(sqlite)
    planted(postgres_url)
    answers = [
        answer(capsys, monkeypatch, tmp_path / name, history, VERBS[verb])
        for name, history in (("sqlite", sqlite), ("postgres", postgres_url))
    ]
    assert answers[0][0] == 0, answers[0]
    assert answers[0] == answers[1]
