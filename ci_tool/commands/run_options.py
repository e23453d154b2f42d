"""What `ci-tool run` and `ci-tool stage run` share: their options as one typed value (the executor among
them; run/setup.py builds the run's set-up from it), `--no-reorder`, and the closing line and exit code of a
run."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO, TypeVar

import click

from ci_tool import output_files
from ci_tool.commands import number_types
from ci_tool.commands.catalog_inputs import catalog_options, with_decorators
from ci_tool.commands.history_options import history_option
from ci_tool.layout import RESULTS_ROOT, TEST_TIMEOUT_SECONDS
from ci_tool.report.run_page import write_html_report
from ci_tool.run.progress import LOG_ENVIRONMENT, PROGRESS_ENV, Progress, ProgressStyle
from ci_tool.run.session import SessionResult
from ci_tool.run.setup import RunOptions
from ci_tool.stages.executors import Executor
from ci_tool.stages.priority import RECENT_FAILURE_DAYS

F = TypeVar("F", bound=Callable[..., object])


_OPTION_KEYS = (
    "catalog_path", "test_db", "durations_path", "history_file", "waives_path", "system_info", "results_dir",
    "test_timeout_seconds", "slurm_partition", "html_report", "record_touches", "progress",
)  # fmt: skip


_RUN_OPTIONS = (
    catalog_options,
    history_option,
    click.option(
        "--waives",
        "waives_path",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        help="Waives file [default: TEST_DB/waives.txt when it exists].",
    ),
    click.option(
        "--system-info",
        "system_info",
        type=click.Path(dir_okay=False, path_type=Path),
        help="This machine's facts from a file (`ci-tool sysinfo --json`) instead of probing.",
    ),
    click.option(
        "--results-dir",
        default=RESULTS_ROOT,
        show_default=True,
        type=click.Path(file_okay=False, path_type=Path),
        help="Where each run gets its folder <run id>/<stage>/.",
    ),
    click.option(
        "--test-timeout",
        "test_timeout_seconds",
        default=TEST_TIMEOUT_SECONDS,
        show_default=True,
        type=number_types.count(number_types.MAX_TIMEOUT_SECONDS),
        help="Seconds a test may take unless its list line or marker says otherwise.",
    ),
    click.option("--no-rerun", is_flag=True, help="Do not rerun failures that match a known flaky signature."),
    click.option(
        "--executor",
        type=click.Choice([e.value for e in Executor]),
        default=Executor.LOCAL.value,
        show_default=True,
        help="Where stages run: this machine, or one Slurm batch job per stage on the cluster SLURM_CONF names.",
    ),
    click.option(
        "--slurm-partition",
        metavar="PARTITION",
        help="Submit every stage to PARTITION [default: each stage's platform, auto:<pool> as <pool>].",
    ),
    click.option(
        "--html-report",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Also write the run's HTML report to this file, its log links relative to it "
        "(as `ci-tool report RUN --format html --output FILE`).",
    ),
    click.option(
        "--record-touches",
        is_flag=True,
        help="Record which test ran which file into the history (coverage.py; slower): change-based "
        "selection then runs only the tests that ran a changed source file.",
    ),
    click.option(
        "--progress",
        type=click.Choice([style.value for style in ProgressStyle]),
        default=ProgressStyle.AUTO.value,
        show_default=True,
        envvar=PROGRESS_ENV,
        callback=lambda _context, _parameter, value: ProgressStyle(value),
        help="A redrawn bar, or plain lines with a progress line a minute; auto: the bar on a terminal, "
        f"lines where CI runs ({', '.join(LOG_ENVIRONMENT)} set), with TERM=dumb or into a file "
        f"[env: {PROGRESS_ENV}].",
    ),
)


def progress_of(options: RunOptions, stream: TextIO) -> Progress:
    """The run's progress on `stream`, in the style --progress and the environment say."""
    return Progress.for_stream(stream, options.progress, environ=os.environ)


reorder_option = click.option(
    "--no-reorder",
    is_flag=True,
    help="Run each stage's tests in its list's order [default: the tests that failed in the last "
    f"{RECENT_FAILURE_DAYS} days of the history first, then those whose touch records ran a changed file].",
)


def run_options(command: F) -> F:
    """Add the options `ci-tool run` and `ci-tool stage run` share; the command receives them as one
    keyword argument, `options: RunOptions`."""

    @functools.wraps(command)
    def with_options(*args: Any, no_rerun: bool, executor: str, **kwargs: Any) -> object:
        values = {key: kwargs.pop(key) for key in _OPTION_KEYS}
        kind = Executor(executor)
        if values["slurm_partition"] is not None and kind is not Executor.SLURM:
            raise click.UsageError("--slurm-partition needs --executor slurm")
        return command(*args, options=RunOptions(**values, rerun_flaky=not no_rerun, executor=kind), **kwargs)

    wrapped: F = with_options  # type: ignore[assignment]  # click sees the options' keyword arguments
    return with_decorators(wrapped, _RUN_OPTIONS)


def finish(result: SessionResult, options: RunOptions) -> int:
    """The closing line, one warning line when the history could not take the run (where its records wait),
    the HTML report when asked for, and the exit code of the run's state: its tests' verdict, whatever the
    history did. What the run wrote is output, never code (ci_tool/output_files.py)."""
    folders = {result.results_dir, *(stage.files_dir for stage in result.results)}
    for folder in sorted(folders):
        if not any(other in folder.parents for other in folders):  # a stage's folder inside the run's
            output_files.record_tree(folder)
    click.echo(result.closing_line)
    if result.unrecorded is not None:
        click.echo(f"warning: {result.unrecorded}", err=True)
    if options.html_report is not None:  # the report report.md renders, as a page
        write_html_report(result.report, options.html_report)
        click.echo(f"HTML report: {options.html_report}")
    return result.state.exit_code
