"""The report tests' history: tests/helpers/report_history.py writes it (four runs of two days, fixed times)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.report_history import write_history


@pytest.fixture
def history(tmp_path: Path) -> Path:
    """The history above at tmp_path/history.sqlite; the stage folders under tmp_path/runs."""
    return write_history(tmp_path / "history.sqlite", tmp_path / "runs")
