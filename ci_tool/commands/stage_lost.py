"""`ci-tool stage lost --matrices JSON --results DIR`: which stages of a GitHub Actions phase lost their runner
and run again, on fresh runners, as their next attempt (ci_tool/run/lost.py); the generated workflow's `lost`
jobs ask it."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ci_tool.atomic import append_text
from ci_tool.errors import StageError
from ci_tool.run.lost import matrix_rows, retries, stage_end


@click.command("lost")
@click.option(
    "--matrices", required=True, help="The phase's matrices as the plan job wrote them: a JSON list of lists of rows."
)
@click.option(
    "--results",
    "results_dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The folder holding the stages' downloaded results artifacts, one folder each.",
)
@click.option("--fail-fast", type=click.BOOL, required=True, help="The selection's fail-fast (true or false).")
@click.option(
    "--github-output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Append `matrix` (the rows to run again) and `failed` (true or false) to this file ($GITHUB_OUTPUT).",
)
def lost_command(matrices: str, results_dir: Path, fail_fast: bool, github_output: Path | None) -> int:
    """Say how each stage of the matrices ended; those whose runner was lost run again as their next attempt
    (`<stage>-attempt-2`), unless a failure with fail-fast stops the rest."""
    try:
        parsed = json.loads(matrices)
    except ValueError as error:
        raise StageError(f"--matrices: expected JSON, found {matrices[:80]!r} ({error})") from None
    rows = matrix_rows(parsed, source="--matrices")
    ends = {str(row["stage"]): stage_end(results_dir, str(row["stage"])) for row in rows}
    found = retries(rows, ends, fail_fast=fail_fast)
    for line in found.lines:
        click.echo(line)
    if github_output is not None:
        outputs = f"matrix={json.dumps(list(found.rows))}\nfailed={'true' if found.failed else 'false'}\n"
        append_text(github_output, outputs, what="the GitHub outputs")
    return 0
