"""`ci-tool testdb render|check|merge-waives`: render one context's test list for a query; validate the
test-db; merge a pull request's waives with the target branch's."""

from __future__ import annotations

import datetime
from pathlib import Path

import click

from ci_tool import sysinfo
from ci_tool.atomic import write_text_atomically
from ci_tool.change.git_read import merged_waives
from ci_tool.commands.clock import resolve_today, today_option
from ci_tool.errors import CiToolError, StageError, TestDbError
from ci_tool.json_file import parse_json
from ci_tool.layout import CATALOG_PATH, TEST_DB_DIR, durations_file_of, waives_file_of
from ci_tool.perf.case_reach import perf_findings
from ci_tool.stages.block_reach import empty_families, unreachable_blocks
from ci_tool.stages.catalog import CheckPolicy
from ci_tool.stages.catalog_load import load_catalog
from ci_tool.stages.catalog_schema import parse_check_policy, read_catalog_spec
from ci_tool.stages.durations import load_durations
from ci_tool.stages.planner import Planner
from ci_tool.testdb.check import duplicate_tests, duplicate_waives, redundant_timeouts, stale_waives
from ci_tool.testdb.load import load_test_db, read_test_db
from ci_tool.testdb.model import TestDb
from ci_tool.testdb.select import normalize_query, render
from ci_tool.testdb.waive_terms import expired_waives, unlinked_waives
from ci_tool.testdb.waives import read_waives
from ci_tool.text_file import read_text

test_db_option = click.option(
    "--test-db",
    "test_db",
    default=TEST_DB_DIR,
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder holding the test-db *.yml files.",
)


@click.group()
def testdb() -> None:
    """Render and check test-db test lists."""


@testdb.command("render")
@click.option("--context", required=True, help="Context to render, e.g. l0_a10.")
@click.option("--match", "match_json", metavar="JSON", help="Query as a JSON object of system and stage facts.")
@click.option(
    "--system-info",
    "system_info",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Query from a JSON file written by `ci-tool sysinfo --json`.",
)
@click.option("--probe", is_flag=True, help="Query from probing this machine.")
@test_db_option
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), help="Write the list here.")
def render_command(
    context: str, match_json: str | None, system_info: Path | None, probe: bool, test_db: Path, output: Path | None
) -> int:
    """Print the tests of CONTEXT whose conditions match the query, annotations kept."""
    sources = [
        name for name, given in (("--match", match_json), ("--system-info", system_info), ("--probe", probe)) if given
    ]
    if len(sources) != 1:
        found = " and ".join(sources) if sources else "none"
        raise click.UsageError(f"expected exactly one of --match, --system-info, --probe; found {found}")
    raw_query = _query_from(match_json, system_info, probe)
    query = normalize_query(raw_query)
    unknown = sorted(key for key, value in query.items() if value == sysinfo.NA)
    if unknown:
        click.echo(
            f"warning: the probe could not read {', '.join(unknown)} (value {sysinfo.NA!r}); "
            "blocks that constrain them will not match",
            err=True,
        )
    db = load_test_db(test_db)
    text = "".join(line.raw + "\n" for line in render(db, context, query))
    if output is None:
        click.echo(text, nl=False)
    else:
        write_text_atomically(output, text, what="the test list")
    return 0


@testdb.command("check")
@test_db_option
@click.option(
    "--waives", type=click.Path(dir_okay=False, path_type=Path), help="Waives file [default: TEST_DB/waives.txt]."
)
@click.option("--collect", is_flag=True, help="Also check every test id collects a real pytest item.")
@click.option(
    "--catalog",
    "catalog_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help=f"Also check the test-db against this stage catalog [default: {CATALOG_PATH} when it exists and "
    f"--test-db is {TEST_DB_DIR}].",
)
@click.option("--require-links", is_flag=True, help="Also fail waives whose reason links no issue.")
@click.option(
    "--checks",
    "checks_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A YAML file holding `checks:` as the catalog writes it (which lints run) [default: the catalog's].",
)
@today_option
def check_command(
    test_db: Path,
    waives: Path | None,
    collect: bool,
    catalog_path: Path | None,
    require_links: bool,
    checks_path: Path | None,
    today: datetime.date | None,
) -> int:
    """Validate the test-db and its waives; print every problem, one per line. With a stage catalog,
    also blocks no stage renders and stages whose context renders nothing. Which lints run (a TIMEOUT
    that repeats the default, stale waives and their exemptions) is the catalog's `checks:` or --checks.
    Waives past their `until YYYY-MM-DD` day always fail; with --require-links, so do waives without an
    issue link."""
    db, db_problems = read_test_db(test_db)
    waive_list, waive_problems = read_waives(waives or waives_file_of(test_db))
    if catalog_path is None and test_db == Path(TEST_DB_DIR) and Path(CATALOG_PATH).is_file():
        catalog_path = Path(CATALOG_PATH)  # the repository's catalog goes with the repository's test-db
    policy = _check_policy(catalog_path) if checks_path is None else _read_policy(checks_path)
    problems: list[CiToolError] = [*db_problems, *waive_problems, *duplicate_tests(db)]
    problems += redundant_timeouts(db) if policy.redundant_timeouts else []
    problems += [*duplicate_waives(waive_list), *stale_waives(db, waive_list, exempt=policy.exempts)]
    problems += expired_waives(waive_list, resolve_today(today))
    if require_links:
        problems += unlinked_waives(waive_list)
    if catalog_path is not None:
        problems += _catalog_findings(catalog_path, test_db, db)
    if collect:
        from ci_tool.testdb.collect import uncollectable_tests

        problems += uncollectable_tests(db)
    for problem in sorted(problems, key=_position):
        click.echo(f"error: {problem}", err=True)
    tests = sum(len(block.entries) for context in db.contexts.values() for block in context.blocks)
    summary = f"{len(db.contexts)} contexts, {tests} test lines, {len(waive_list)} waives"
    if problems:
        click.echo(f"test-db check failed: {len(problems)} problem(s) in {summary}", err=True)
        return 1
    click.echo(f"test-db OK: {summary}")
    return 0


@testdb.command("merge-waives")
@test_db_option
@click.option(
    "--waives", type=click.Path(dir_okay=False, path_type=Path), help="Waives file [default: TEST_DB/waives.txt]."
)
@click.option("--base", required=True, metavar="REF", help="The target branch (e.g. origin/main), as git names it.")
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), help="Write the merged file here.")
def merge_waives_command(test_db: Path, waives: Path | None, base: str, output: Path | None) -> int:
    """Print the waives a pull request runs with: its own, plus the tip of REF's, minus the ones it removed
    (so a stale branch does not fail on tests the target branch has waived since)."""
    merged = merged_waives(waives or waives_file_of(test_db), base=base)
    if output is None:
        click.echo(merged.text, nl=False)
    else:
        write_text_atomically(output, merged.text, what="the merged waives")
    click.echo(merged.summary(base), err=True)
    return 0


def _check_policy(catalog_file: Path | None) -> CheckPolicy:
    """The catalog's `checks:` (the defaults without a catalog, or when the catalog cannot be read: its
    problems are reported with the catalog's findings)."""
    if catalog_file is None:
        return CheckPolicy()
    try:
        spec, _ = read_catalog_spec(read_text(catalog_file, name="the stage catalog", error=StageError),
                                    file=str(catalog_file))  # fmt: skip
    except CiToolError:
        return CheckPolicy()
    return spec.checks


def _read_policy(checks_file: Path) -> CheckPolicy:
    return parse_check_policy(read_text(checks_file, name="the checks file", error=StageError), file=str(checks_file))


def _catalog_findings(catalog_file: Path, test_db: Path, db: TestDb) -> list[CiToolError]:
    """Blocks no catalog stage renders, families that render nothing, perf cases outside a gated stage or
    without their config, perf-gated families without a case (or the catalog's load error)."""
    durations_file = durations_file_of(test_db)
    try:
        durations = load_durations(durations_file) if durations_file.is_file() else {}
        catalog = load_catalog(catalog_file, Planner(db, durations))
    except CiToolError as error:
        return list(error.problems) or [error]  # each problem a line of its own, counted
    # the test-db folder sits at the repository root, where the perf-sanity configs' folder is too
    perf = perf_findings(catalog, db, root=test_db.parent)
    return unreachable_blocks(catalog, db) + empty_families(catalog, db) + perf


def _query_from(match_json: str | None, system_info: Path | None, probe: bool) -> dict[str, object]:
    if match_json is not None:
        hint = 'quote the JSON for your shell: --match \'{"gpu": "A10"}\''
        data = parse_json(match_json, file="--match", error=TestDbError, hint=hint)
        if not isinstance(data, dict):
            raise TestDbError(f"--match: expected a JSON object, found {type(data).__name__}")
        return data
    return sysinfo.load_sysinfo_file(system_info) if system_info is not None else sysinfo.probe()


def _position(problem: CiToolError) -> tuple[str, int, int]:
    where = problem.where
    return (where.file or "", where.line or 0, where.col or 0) if where else ("", 0, 0)
