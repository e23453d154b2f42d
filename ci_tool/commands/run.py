"""`ci-tool run [BOT_COMMAND]`: the main job. Plan the stages a `/bot run ...` comment selects, run here the
ones this machine serves (CPU stages anywhere, GPU stages on a machine with that GPU), report the others
as waiting for a runner, record everything in the SQLite history, and print the CI report."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

from ci_tool import sysinfo
from ci_tool.bot.grammar import parse_comment
from ci_tool.commands.catalog_inputs import catalog_options, echo_errors, load, pull_request_options
from ci_tool.commands.history import history_option
from ci_tool.errors import BotError
from ci_tool.history.store import history_path
from ci_tool.run.flaky import load_flaky_signatures
from ci_tool.run.pipeline import FAILED, INTERRUPTED
from ci_tool.run.progress import Progress
from ci_tool.run.session import SessionConfig, SessionResult, catalog_stages, run_session
from ci_tool.stages.catalog_load import LoadedCatalog
from ci_tool.stages.query import QueryValue
from ci_tool.stages.select import select_stages

F = TypeVar("F", bound=Callable[..., object])
DEFAULT_RESULTS = Path(".ci-tool") / "runs"
DEFAULT_TEST_TIMEOUT_SECONDS = 3600  # the reference's pytest --timeout: 60 minutes a test
EXIT_CODES = {FAILED: 1, INTERRUPTED: 130}  # passed, unstable and pending (stages wait for a runner): 0


def run_options(command: F) -> F:
    """The options `ci-tool run` and `ci-tool stage run` share (plus the catalog's)."""
    decorators = (
        catalog_options,
        history_option,
        click.option(
            "--waives",
            "waives_path",
            type=click.Path(dir_okay=False, path_type=Path),
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
            default=DEFAULT_RESULTS,
            show_default=True,
            type=click.Path(file_okay=False, path_type=Path),
            help="Where each run gets its folder <run id>/<stage>/.",
        ),
        click.option(
            "--test-timeout",
            "test_timeout_seconds",
            default=DEFAULT_TEST_TIMEOUT_SECONDS,
            show_default=True,
            type=click.IntRange(min=1),
            help="Seconds a test may take unless its list line or marker says otherwise.",
        ),
        click.option("--no-rerun", is_flag=True, help="Do not rerun failures that match a known flaky signature."),
    )
    for decorator in reversed(decorators):
        command = decorator(command)
    return command


@dataclass(frozen=True)
class LocalSetup:
    loaded: LoadedCatalog
    facts: dict[str, QueryValue]
    waives_file: str | None
    config: SessionConfig


def local_setup(
    options: dict[str, Any], *, extra_pytest_args: tuple[str, ...] = (), output_dir: Path | None = None
) -> LocalSetup:
    """Load the catalog, test-db and durations; probe (or read) this machine; the session's settings."""
    loaded = load(options["catalog_path"], options["test_db"], options["durations_path"])
    facts = sysinfo.load_sysinfo_file(options["system_info"]) if options["system_info"] else sysinfo.probe()
    waives = options["waives_path"] or options["test_db"] / "waives.txt"
    config = SessionConfig(
        rootdir=Path.cwd(),
        results_root=options["results_dir"],
        history=history_path(options["history_file"]),
        sysinfo=facts,
        flaky_signatures=load_flaky_signatures(),
        test_timeout_seconds=options["test_timeout_seconds"],
        rerun_flaky=not options["no_rerun"],
        extra_pytest_args=extra_pytest_args,
        output_dir=output_dir,
    )
    return LocalSetup(loaded, facts, str(waives) if Path(waives).is_file() else None, config)


def finish(result: SessionResult) -> int:
    """The closing line, and the exit code of the run's state."""
    click.echo(result.closing_line)
    return EXIT_CODES.get(result.state, 0)


@click.command()
@click.argument("bot_command", required=False, default="/bot run")
@run_options
@pull_request_options
def run(bot_command: str, changed_files: tuple[str, ...], labels: tuple[str, ...], **options: Any) -> int:
    """Run the pipeline BOT_COMMAND selects [default: "/bot run"] on this machine; flags alone also work
    after `--`: ci-tool run -- '--stage-list "CPU-Generic-1"'. Prints progress, the CI report and
    `N passed, M failed, K skipped`; exits 1 when a stage failed."""
    text = bot_command if bot_command.lstrip().startswith("/bot") else f"/bot run {bot_command}"
    request = parse_comment(text)
    if request.command != "run":
        raise BotError(
            f"expected a `/bot run` command, found {text.strip()!r}",
            hint='e.g. ci-tool run "/bot run --stage-list CPU-Generic-1"',
        )
    detailed = ("-s",) if request.has("detailed_log") else ()
    setup = local_setup(options, extra_pytest_args=detailed)
    selection = select_stages(setup.loaded.catalog, request, changed_files=changed_files, labels=labels)
    echo_errors(selection.errors)
    if selection.errors:
        return 1
    for missing in selection.missing:
        click.echo(f"note: on CI this run would need the label {missing.label!r}", err=True)
    stages = catalog_stages(
        selection.stages,
        db=setup.loaded.db,
        durations=setup.loaded.durations,
        sysinfo=setup.facts,
        waives_file=setup.waives_file,
    )
    fail_fast = not (request.has("disable_fail_fast") or request.has("post_merge"))
    result = run_session(text.strip(), stages, config=setup.config, fail_fast=fail_fast, progress=Progress(sys.stdout))
    click.echo("")
    click.echo(result.report_markdown, nl=False)
    click.echo(f"\nrun {result.run_id}: {result.state}; results in {result.results_dir}")
    return finish(result)
