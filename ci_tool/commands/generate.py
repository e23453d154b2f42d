"""`ci-tool generate [--check]`: write the Jenkins pipelines and GitHub workflows from the stage catalog and
docs/bot.md from the bot's flag table, or check that the committed ones are what they produce today. A file
that was there and differs (a hand edit, an older catalog) is named with the diff of what was replaced."""

from __future__ import annotations

from pathlib import Path

import click

from ci_tool.atomic import write_text_atomically
from ci_tool.build.spec import project_build
from ci_tool.commands.catalog_inputs import catalog_options, load
from ci_tool.errors import GenerateError
from ci_tool.generate.context import generate_input
from ci_tool.generate.freshness import stale_files
from ci_tool.generate.targets import TARGETS, generate_files


@click.command()
@click.option("--check", is_flag=True, help="Regenerate in memory; exit 1 with a unified diff per stale file.")
@catalog_options
def generate(check: bool, catalog_path: Path, test_db: Path, durations_path: Path | None) -> int:
    """Write the generated CI files (paths relative to the current directory, the repository root)."""
    catalog = load(catalog_path, test_db, durations_path).catalog
    files = generate_files(generate_input(catalog, project_build(Path())), TARGETS)
    committed = {path: _read(Path(path)) for path in files}
    if check:
        stale = stale_files(files, committed)
        for item in stale:
            state = "missing" if item.missing else "stale"
            click.echo(f"error: {item.path} is {state}; run `ci-tool generate`", err=True)
            click.echo(item.diff, nl=False)
        if stale:
            return 1
        click.echo(f"{len(files)} generated files are up to date")
        return 0
    stale = stale_files(files, committed)
    for item in stale:
        try:
            Path(item.path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise GenerateError(f"cannot create the folder of {item.path!r}: {error.strerror}") from None
        write_text_atomically(item.path, files[item.path], what=f"the generated {item.path}")
        if item.missing:
            click.echo(f"wrote {item.path}")
            continue
        removed, added = item.changed_lines  # a hand edit of the file is among the removed lines
        click.echo(f"wrote {item.path}, replacing {removed} of its lines with {added} (diff: - was there, + is new)")
        click.echo(item.diff, nl=False)
    click.echo(written_summary(written=len(stale), total=len(files)))
    return 0


def written_summary(*, written: int, total: int) -> str:
    """The closing line of a generate: how many files it wrote, how many were up to date already."""
    if not written:
        return f"{total} generated files are up to date"
    kept = total - written
    wrote = f"wrote {written} of {total} generated files"
    return wrote + (f"; the other {kept} {'was' if kept == 1 else 'were'} up to date" if kept else "")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
