"""A local run's set-up, from its options: the catalog, this machine's facts, the waives file (checked before
anything runs, or merged with a pull request's target branch), the session's settings, and what its stages'
tests are ordered by (the history's recent failures, the change's touch records: run/likelihood.py)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass, replace
from pathlib import Path

from ci_tool import sysinfo
from ci_tool.atomic import make_folder, write_text_atomically
from ci_tool.change.git_read import merged_waives
from ci_tool.change.value import ChangeSet
from ci_tool.errors import RunError
from ci_tool.history.store import history_path
from ci_tool.layout import waives_file_of
from ci_tool.run.flaky import load_flaky_signatures
from ci_tool.run.likelihood import read_likelihood
from ci_tool.run.progress import ProgressStyle
from ci_tool.run.resources import host_capacity, stage_cores
from ci_tool.run.session import SessionConfig
from ci_tool.stages.catalog_load import LoadedCatalog, open_catalog
from ci_tool.stages.executors import Executor
from ci_tool.stages.planner import Planner
from ci_tool.stages.priority import Likelihood
from ci_tool.stages.query import QueryValue
from ci_tool.testdb.waives import load_waives


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
    progress: ProgressStyle = ProgressStyle.AUTO  # a bar or log lines (run/progress.py)


@dataclass(frozen=True)
class LocalSetup:
    loaded: LoadedCatalog
    facts: dict[str, QueryValue]
    waives_file: str | None
    config: SessionConfig

    stage_name_facts: bool = False  # render with the stage name's facts only (a dry run without --system-info)
    likelihood: Likelihood | None = None  # None: each stage runs in its list's order

    @property
    def planning_facts(self) -> dict[str, QueryValue] | None:
        """What stages render with: this machine's facts, or stage-name keys only (None) for Slurm jobs,
        whose nodes are not this machine (sbatch stages render the same way), and for a dry run that
        shows what the stage's runner will render."""
        return None if self.config.executor is Executor.SLURM or self.stage_name_facts else self.facts

    @property
    def planner(self) -> Planner:
        """How this run plans its stages: over its catalog's test-db and durations, its planning facts and
        its waives file."""
        return replace(
            self.loaded.planner, sysinfo=self.planning_facts, waives_file=self.waives_file, likelihood=self.likelihood
        )


def local_setup(options: RunOptions, *, detailed_log: bool = False, output_dir: Path | None = None) -> LocalSetup:
    """Load the catalog, test-db and durations; probe (or read) this machine; check the waives file before
    anything runs (a malformed line is a located error here, not a failed pytest later)."""
    loaded = open_catalog(options.catalog_path, options.test_db, options.durations_path)
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
        parallel_families=frozenset(family.name.name for family in loaded.catalog.families if family.parallel_tests),
        stage_cores=stage_cores(host_capacity(facts, cores=sysinfo.usable_cores(), environ=os.environ), jobs=1),
    )
    return LocalSetup(loaded, facts, waives_file, config)


def with_merged_waives(setup: LocalSetup, options: RunOptions, *, base: str) -> tuple[LocalSetup, str]:
    """The set-up running the pull request's effective waives (its own merged with the tip of `base`'s,
    change/git_read.merged_waives), and a line saying what the merge did. The file is named by its
    content in the stage's folder (--output-dir, kept with its results) or the results folder, so runs of the
    same merge share it and none overwrites another's; the folder is made when a fresh checkout lacks it."""
    merged = merged_waives(Path(setup.waives_file or waives_file_of(options.test_db)), base=base)
    digest = hashlib.sha256(merged.text.encode()).hexdigest()[:12]
    folder = setup.config.output_dir or options.results_dir
    make_folder(folder, what="the results folder")
    path = folder / f"waives-merged-{digest}.txt"
    write_text_atomically(path, merged.text, what="the merged waives")
    return replace(setup, waives_file=str(path)), merged.summary(base)


def ordered_by_likelihood(setup: LocalSetup, changes: ChangeSet | None, *, reorder: bool) -> LocalSetup:
    """The set-up whose stages run the tests likeliest to fail first (stages/priority.py): those that failed
    recently in its history, then those touching `changes`; with `reorder` off, each in its list's order."""
    if not reorder:
        return setup
    return replace(setup, likelihood=read_likelihood(setup.config.history, changes, unreadable_ok=True))
