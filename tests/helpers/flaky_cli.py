"""`ci-tool flaky ...` through the CLI, its exit code and output (test_flaky_cli.py, test_flaky_lifecycle.py)."""

from __future__ import annotations

import pytest

from ci_tool.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err
