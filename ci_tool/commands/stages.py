"""`ci-tool stages list`: the catalog's stages, one line each or as JSON, optionally filtered."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ci_tool.commands.catalog_inputs import catalog_options, load
from ci_tool.stages.catalog import Stage
from ci_tool.stages.modes import TestMode

COLUMNS = ("STAGE", "PLATFORM", "CONTEXT", "SHARD", "GPUS", "MODE", "MERGE", "TIMEOUT")


@click.group()
def stages() -> None:
    """List the stages of the catalog (jenkins/stages.yml)."""


@stages.command("list")
@catalog_options
@click.option("--mode", "modes", multiple=True, type=click.Choice([m.value for m in TestMode]), help="Only this mode.")
@click.option("--gpu", "gpus", multiple=True, metavar="TOKEN", help="Only stages whose GPU token is exactly TOKEN.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of stage objects.")
def list_command(
    catalog_path: Path,
    test_db: Path,
    durations_path: Path | None,
    modes: tuple[str, ...],
    gpus: tuple[str, ...],
    as_json: bool,
) -> int:
    """Print every stage of the catalog in catalog order: where it runs, what it renders, its shard."""
    catalog = load(catalog_path, test_db, durations_path).catalog
    chosen = [
        stage
        for stage in catalog.stages
        if (not modes or stage.mode.value in modes) and (not gpus or stage.name.gpu in gpus)
    ]
    if as_json:
        click.echo(json.dumps([stage.to_json() for stage in chosen], indent=2))
        return 0
    rows = [COLUMNS, *(_row(stage) for stage in chosen)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    return 0


def _row(stage: Stage) -> tuple[str, ...]:
    timeout = f"{stage.timeout_minutes} min" + (" (derived)" if stage.family.timeout_derived else "")
    flags = ["post" if stage.post_merge else "pre"] + (["on-demand"] if stage.on_demand else [])
    return (
        stage.name.name,
        stage.platform,
        stage.context,
        f"{stage.shard}/{stage.splits}",
        str(stage.gpu_count),
        stage.mode.value,
        ",".join(flags),
        timeout,
    )
