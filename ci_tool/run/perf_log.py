"""Perf mode's results log: every numeric property a test records becomes a row of perf_results.csv/.yaml.

A perf test states its numbers with pytest's `record_property("tokens_per_s", 16152.3)`; with `--perf`
they are collected per test and written, in each format `--perf-log-formats` names, to `--perf-log-dir`
(default: beside `--junit-stream`, else the working directory), so a stage's results folder holds them.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from ci_tool.atomic import write_text_atomically

FILE_STEM = "perf_results"


def add_perf_options(group: Any) -> None:
    group.addoption("--perf", action="store_true", help="Perf mode: log each test's numeric recorded properties.")
    group.addoption(
        "--perf-log-formats",
        action="append",
        choices=FORMATS,
        default=[],
        help="Write perf_results.<format> (repeatable; default csv).",
    )
    group.addoption("--perf-log-dir", metavar="DIR", help="Folder of the perf results (default: beside the JUnit).")


def register_perf_log(config: pytest.Config, stage: str | None) -> None:
    if not config.getoption("perf", False):
        return
    directory = config.getoption("perf_log_dir", None)
    if directory is None:
        junit = config.getoption("junit_stream", None)
        directory = str(Path(junit).parent) if junit else "."
    formats = tuple(dict.fromkeys(config.getoption("perf_log_formats", None) or ["csv"]))
    config.pluginmanager.register(PerfLog(Path(directory), formats, stage), "ci_tool_perf_log")


class PerfLog:
    """Collects (test, metric, value, outcome) rows as tests finish and writes them at the end."""

    def __init__(self, directory: Path, formats: tuple[str, ...], stage: str | None) -> None:
        self.directory = directory
        self.formats = formats
        self.stage = stage
        self.rows: list[dict[str, object]] = []
        self.written: list[Path] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call":
            return
        test = f"{self.stage}/{report.nodeid}" if self.stage else report.nodeid
        for name, value in report.user_properties:
            if isinstance(value, int | float) and not isinstance(value, bool):
                self.rows.append({"test": test, "metric": name, "value": value, "outcome": report.outcome})

    def pytest_sessionfinish(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        for fmt in self.formats:
            path = self.directory / f"{FILE_STEM}.{fmt}"
            write_text_atomically(path, _RENDERERS[fmt](self.rows), what="perf results")
            self.written.append(path)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        places = ", ".join(str(path) for path in self.written)
        terminalreporter.write_line(f"ci-tool perf: {len(self.rows)} metric(s) written to {places}")


def _as_csv(rows: list[dict[str, object]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=["test", "metric", "value", "outcome"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def _as_yaml(rows: list[dict[str, object]]) -> str:
    return yaml.safe_dump({"perf_results": rows}, sort_keys=False)


_RENDERERS: dict[str, Callable[[list[dict[str, object]]], str]] = {"csv": _as_csv, "yaml": _as_yaml}  # by suffix
FORMATS = tuple(_RENDERERS)  # --perf-log-formats' choices
