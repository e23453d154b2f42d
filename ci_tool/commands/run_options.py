"""What `ci-tool run` and `ci-tool stage run` share: their options as one typed value (the executor among
them), and the set-up they build from it (catalog, this machine's facts, waives, session settings)."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import click

from ci_tool import sysinfo
from ci_tool.atomic import make_folder, write_text_atomically
from ci_tool.commands import bounds
from ci_tool.commands.catalog_inputs import catalog_options, load, with_decorators
from ci_tool.commands.changes import merged_waives
from ci_tool.commands.history import history_option
from ci_tool.commands.report import write_html_report
from ci_tool.errors import RunError
from ci_tool.history.store import history_path
from ci_tool.layout import RESULTS_ROOT, TEST_TIMEOUT_SECONDS, waives_file_of
from ci_tool.run.flaky import load_flaky_signatures
from ci_tool.run.session import SessionConfig, SessionResult
from ci_tool.stages.catalog_load import LoadedCatalog
from ci_tool.stages.executors import Executor
from ci_tool.stages.query import QueryValue
from ci_tool.testdb.waives import load_waives

F = TypeVar("F", bound=Callable[..., object])


@dataclass(frozen=True)
class RunOptions:
    """The options of a local run, as the command line gave them."""

    catalog_path: Path
    test_db: Path
    durations_path: Path | None
    history_file: Path | None
    waives_path: Path | None  # None: TEST_DB/waives.txt when it exists
    system_info: Path | None  # None: probe this machine
    results_dir: Path
    test_timeout_seconds: int
    rerun_flaky: bool
    executor: Executor = Executor.LOCAL
    slurm_partition: str | None = None  # every Slurm job's partition instead of its platform's pool
    html_report: Path | None = None  # where the run's HTML report goes once it is recorded
    record_touches: bool = False


_OPTION_KEYS = (
    "catalog_path", "test_db", "durations_path", "history_file", "waives_path", "system_info", "results_dir",
    "test_timeout_seconds", "slurm_partition", "html_report", "record_touches",
)  # fmt: skip


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

    decorators = (
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
            type=bounds.count(bounds.MAX_TIMEOUT_SECONDS),
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
    )
    wrapped: F = with_options  # type: ignore[assignment]  # click sees the options' keyword arguments
    return with_decorators(wrapped, decorators)


@dataclass(frozen=True)
class LocalSetup:
    loaded: LoadedCatalog
    facts: dict[str, QueryValue]
    waives_file: str | None
    config: SessionConfig

    stage_name_facts: bool = False  # render with the stage name's facts only (a dry run without --system-info)

    @property
    def planning_facts(self) -> dict[str, QueryValue] | None:
        """What stages render with: this machine's facts, or stage-name keys only (None) for Slurm jobs,
        whose nodes are not this machine (sbatch stages render the same way), and for a dry run that
        shows what the stage's runner will render."""
        return None if self.config.executor is Executor.SLURM or self.stage_name_facts else self.facts


def local_setup(options: RunOptions, *, detailed_log: bool = False, output_dir: Path | None = None) -> LocalSetup:
    """Load the catalog, test-db and durations; probe (or read) this machine; check the waives file before
    anything runs (a malformed line is a located error here, not a failed pytest later)."""
    loaded = load(options.catalog_path, options.test_db, options.durations_path)
    facts = sysinfo.load_sysinfo_file(options.system_info) if options.system_info else sysinfo.probe()
    waives = options.waives_path or waives_file_of(options.test_db)
    waives_file = str(waives) if options.waives_path is not None or waives.is_file() else None
    if waives_file is not None:
        load_waives(waives_file)
    if options.record_touches and importlib.util.find_spec("coverage") is None:
        raise RunError("--record-touches needs coverage.py, found none", hint="pip install coverage")
    config = SessionConfig(
        rootdir=Path.cwd(),
        results_root=options.results_dir,
        history=history_path(options.history_file),
        sysinfo=facts,
        flaky_signatures=load_flaky_signatures(),
        test_timeout_seconds=options.test_timeout_seconds,
        rerun_flaky=options.rerun_flaky,
        detailed_log=detailed_log,
        output_dir=output_dir,
        executor=options.executor,
        slurm_partition=options.slurm_partition,
        record_touches=options.record_touches,
    )
    return LocalSetup(loaded, facts, waives_file, config)


def finish(result: SessionResult, options: RunOptions) -> int:
    """The closing line, the HTML report when asked for, and the exit code of the run's state (1 when the
    history could not take the run)."""
    click.echo(result.closing_line)
    if result.unrecorded is not None:
        raise result.unrecorded
    if options.html_report is not None:
        write_html_report(history_path(options.history_file), result.run_id, options.html_report)
        click.echo(f"HTML report: {options.html_report}")
    return result.state.exit_code


def with_merged_waives(setup: LocalSetup, options: RunOptions, *, base: str) -> tuple[LocalSetup, str]:
    """The set-up running the pull request's effective waives (its own merged with the tip of `base`'s,
    commands/changes.merged_waives), and a line saying what the merge did. The file is named by its
    content in the stage's folder (--output-dir, kept with its results) or the results folder, so runs of the
    same merge share it and none overwrites another's; the folder is made when a fresh checkout lacks it."""
    merged = merged_waives(Path(setup.waives_file or waives_file_of(options.test_db)), base=base)
    digest = hashlib.sha256(merged.text.encode()).hexdigest()[:12]
    folder = setup.config.output_dir or options.results_dir
    make_folder(folder, what="the results folder")
    path = folder / f"waives-merged-{digest}.txt"
    write_text_atomically(path, merged.text, what="the merged waives")
    return replace(setup, waives_file=str(path)), merged.summary(base)
