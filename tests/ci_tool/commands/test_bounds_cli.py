"""Every number option of the CLI is bounded: a value click would accept but SQLite, `int()` or the
arithmetic cannot hold is a usage error (exit 2) with click's usual message, never an "unexpected" crash."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from ci_tool.cli import COMMANDS, main
from ci_tool.commands.number_types import FiniteFloatRange
from ci_tool.history.store import HistoryStore

HUGE = "100000000000000000000"  # 10**20: more than SQLite's 64-bit integers hold


def all_options() -> Iterator[tuple[str, click.Parameter]]:
    """(command path, parameter) of every verb and sub-verb."""
    for verb, target in COMMANDS.items():
        module, attribute = target.split(":")
        pending: list[tuple[str, click.Command]] = [(verb, getattr(importlib.import_module(module), attribute))]
        while pending:
            path, command = pending.pop()
            yield from ((path, param) for param in command.params)
            if isinstance(command, click.Group):
                pending += [(f"{path} {name}", sub) for name, sub in command.commands.items()]


def test_every_number_option_has_an_upper_bound_and_refuses_nan() -> None:
    numbers = [
        (path, param.name, param.type)
        for path, param in all_options()
        if isinstance(param.type, click.types._NumberParamTypeBase)
    ]
    unbounded = [
        (path, name)
        for path, name, kind in numbers
        if getattr(kind, "max", None) is None
        or (isinstance(kind, click.FloatRange) and not isinstance(kind, FiniteFloatRange))
    ]
    assert len(numbers) >= 6 and unbounded == []


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CI_TOOL_HISTORY", raising=False)
    HistoryStore(tmp_path / "h.sqlite").close()
    (tmp_path / "list.txt").write_text("a.py::t\nb.py::t\n")
    (tmp_path / "d.json").write_text(json.dumps({"a.py::t": 1, "b.py::t": 2}))
    return tmp_path


SHARD = ["shard", "--durations", "d.json", "list.txt"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["history", "--limit", HUGE], f"Invalid value for '--limit': {HUGE} is not in the range 1<=x<=1000000."),
        (["history", "--window", HUGE], f"Invalid value for '--window': {HUGE} is not in the range 1<=x<=1000000."),
        (["history", "--limit", "1e20"], "Invalid value for '--limit': '1e20' is not a valid integer range."),
        (
            ["durations", "export", "--window", HUGE],
            f"Invalid value for '--window': {HUGE} is not in the range 1<=x<=1000000.",
        ),
        (
            [*SHARD, "--splits", "auto", "--budget-minutes", "nan"],
            "Invalid value for '--budget-minutes': nan is not in the range 0<x<=10080.",
        ),
        (
            [*SHARD, "--splits", "auto", "--budget-minutes", "inf"],
            "Invalid value for '--budget-minutes': inf is not in the range 0<x<=10080.",
        ),
        (
            [*SHARD, "--splits", "auto", "--budget-minutes", "1e400"],
            "Invalid value for '--budget-minutes': inf is not in the range 0<x<=10080.",
        ),
        ([*SHARD, "--splits", HUGE], f"Invalid value for '--splits': {HUGE} is not in the range 1<=x<=1000."),
        (
            [*SHARD, "--splits", "1" * 5000],
            f"Invalid value for '--splits': {'1' * 30!r}... (5000 characters) is not in the range 1<=x<=1000.",
        ),
        (
            [*SHARD, "--splits", "²"],
            "Invalid value for '--splits': expected a positive whole number or 'auto', found '²'",
        ),
        (
            ["stage", "run", "CPU-Generic", "--shard", HUGE],
            f"Invalid value for '--shard': {HUGE} is not in the range 1<=x<=1000.",
        ),
        (
            ["run", "--test-timeout", HUGE],
            f"Invalid value for '--test-timeout': {HUGE} is not in the range 1<=x<=604800.",
        ),
        (
            ["stage", "run", "CPU-Generic-1", "--test-timeout", HUGE],
            f"Invalid value for '--test-timeout': {HUGE} is not in the range 1<=x<=604800.",
        ),
    ],
    ids=[
        "history-limit-huge",
        "history-window-huge",
        "history-limit-float-text",
        "durations-window-huge",
        "budget-nan",
        "budget-inf",
        "budget-overflows-to-inf",
        "splits-huge",
        "splits-5000-digits",
        "splits-superscript-digit",
        "stage-run-shard-huge",
        "run-test-timeout-huge",
        "stage-run-test-timeout-huge",
    ],
)
def test_numbers_out_of_bounds_are_usage_errors(
    workdir: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    history = ["--history", str(workdir / "h.sqlite")] if argv[0] in ("history", "durations", "run", "stage") else []
    code = main([*argv, *history])
    err = capsys.readouterr().err
    assert (code, "unexpected" in err) == (2, False)
    assert err.splitlines()[-1] == f"Error: {message}"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["history", "--limit", "1000000", "--window", "1000000"], 0),
        ([*SHARD, "--splits", "auto", "--budget-minutes", "10080"], 0),
        ([*SHARD, "--splits", "0002"], 0),
    ],
    ids=["history-at-the-bounds", "budget-at-the-bound", "splits-leading-zeros"],
)
def test_numbers_at_the_bounds_are_accepted(
    workdir: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: int
) -> None:
    history = ["--history", str(workdir / "h.sqlite")] if argv[0] == "history" else []
    assert (main([*argv, *history]), capsys.readouterr().err) == (expected, "")
