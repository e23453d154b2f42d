"""`ci-tool report` through the real entry point, on the history of a real run of the failing suite."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ci_tool.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_markdown_is_the_default(capsys: pytest.CaptureFixture[str], fixture_run: Any) -> None:
    code, out, _ = run(capsys, "report", fixture_run.session.run_id, "--history", str(fixture_run.history))
    assert (code, out) == (0, fixture_run.session.report_markdown)


def test_json_of_the_latest_run(capsys: pytest.CaptureFixture[str], fixture_run: Any) -> None:
    code, out, _ = run(capsys, "report", "latest", "--format", "json", "--history", str(fixture_run.history))
    data = json.loads(out)
    assert (code, data["run_id"], data["state"]) == (0, fixture_run.session.run_id, "failed")


def test_unknown_run_id(capsys: pytest.CaptureFixture[str], fixture_run: Any) -> None:
    code, _, err = run(capsys, "report", "nope", "--history", str(fixture_run.history))
    assert code == 1
    assert err.startswith(f"error: {fixture_run.history}: expected a recorded run id, found 'nope'")
