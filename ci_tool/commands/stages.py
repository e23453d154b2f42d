"""`ci-tool stages list`: the catalog's stages, one line each or as JSON, optionally filtered;
`ci-tool stages import`: TensorRT-LLM's stage table as a catalog."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ci_tool.atomic import write_text_atomically
from ci_tool.commands.catalog_inputs import catalog_options, load
from ci_tool.errors import StageError
from ci_tool.stages.catalog import Stage, TimeoutRule
from ci_tool.stages.modes import TestMode
from ci_tool.stages.reference_import import import_stage_table
from ci_tool.text_file import read_text

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
    rows = [COLUMNS, *(_row(stage, catalog.timeouts) for stage in chosen)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    return 0


def _row(stage: Stage, timeouts: TimeoutRule) -> tuple[str, ...]:
    derived = stage.family.timeout_derived
    capped = derived and stage.timeout_minutes == timeouts.maximum_minutes
    timeout = f"{stage.timeout_minutes} min" + (" (derived, capped)" if capped else " (derived)" if derived else "")
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


@stages.command("import")
@click.argument("table", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the catalog here (never over an existing file) [default: standard output].",
)
def import_command(table: Path, output: Path | None) -> int:
    """Turn TABLE, TensorRT-LLM's stage table, into a catalog: its family JSON (`{"configs": [...]}`) or its
    shard rows (`"Name-K": [platform, context, K, N, ...]`). What has no catalog field is said per family,
    on standard error and as a comment in the catalog. Load it with `ci-tool stages list --catalog FILE`."""
    imported = import_stage_table(read_text(table, name="the stage table", error=StageError), source=str(table))
    if output is not None and output.exists():
        raise StageError(
            f"expected a new file for the catalog, found {str(output)!r} already there",
            hint="choose another --output, or move the file away first: import never overwrites",
        )
    for note in imported.notes:
        click.echo(f"note: {note}", err=True)
    if output is None:
        click.echo(imported.yaml(), nl=False)
    else:
        write_text_atomically(output, imported.yaml(), what="the catalog")
    stages = sum(family.splits for family in imported.families)
    click.echo(f"imported {len(imported.families)} families ({stages} stages), {len(imported.notes)} note(s)", err=True)
    return 0
