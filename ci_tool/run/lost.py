"""Which stages of a GitHub Actions run lost their runner, and run again as their next attempt.

A runner that is lost (the machine went away, the job was evicted) ends its job as failed without anything of
ours: the stage job's step writes the exit code of `ci-tool stage run` into results/<stage>/exit-code once
ci-tool ends, and uploads the folder; a stage whose artifact holds no exit code lost its runner, whatever
GitHub says of the job. The generated workflow's `lost` job downloads the artifacts of a phase and asks
`ci-tool stage lost` which stages run again, on fresh runners, as `<stage>-attempt-2` (then -3, ... up to
INFRA_RETRIES):

    exit code 0       passed (or unstable)                     not run again
    exit code != 0    a test failure (1), or ci-tool's own     not run again; with fail-fast, no stage
                      error: a failure                         runs again (fail-fast stops the rest)
    no exit code      lost: its runner, or fail-fast's cancel  runs again as the next attempt
                      of a sibling the infrastructure lost

GitHub's matrix fail-fast cancels a job's siblings on any failure, a lost runner's too; those siblings end
without an exit code as well and run again with it, so only a test failure stops the other stages for good.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ci_tool.errors import StageError
from ci_tool.layout import ACTIONS_RESULTS_ARTIFACT_PREFIX, CI_EXIT_CODE_FILE, INFRA_RETRIES
from ci_tool.stages.names import parse_stage_name


@dataclass(frozen=True)
class StageEnd:
    """How one stage's latest attempt ended: its exit code, None when it left none (its runner was lost)."""

    stage: str  # the name it ran under, `A10-PyTorch-1` or `A10-PyTorch-1-attempt-2`
    exit_code: int | None


@dataclass(frozen=True)
class Retries:
    """The rows of the stages to run again (each a matrix row under its next attempt's name), whether any
    stage failed, and one line per stage for the log."""

    rows: tuple[Mapping[str, object], ...]
    failed: bool
    lines: tuple[str, ...]


def stage_end(results: Path, stage: str) -> StageEnd:
    """How `stage` ended, from its downloaded results artifact: `results/results-<stage>/exit-code`."""
    path = results / f"{ACTIONS_RESULTS_ARTIFACT_PREFIX}{stage}" / CI_EXIT_CODE_FILE
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return StageEnd(stage, None)
    except OSError as error:
        raise StageError(f"cannot read {str(path)!r}: {error.strerror}") from None
    if not text.isdigit():
        raise StageError(f"{path}: expected the exit code of `ci-tool stage run`, found {text!r}")
    return StageEnd(stage, int(text))


def retries(rows: Sequence[Mapping[str, object]], ends: Mapping[str, StageEnd], *, fail_fast: bool) -> Retries:
    """The stages of `rows` (matrix rows, `stage` the name each ran under) to run again, by how they ended."""
    failed = [ends[str(row["stage"])] for row in rows if ends[str(row["stage"])].exit_code not in (None, 0)]
    again: list[Mapping[str, object]] = []
    lines: list[str] = []
    for row in rows:
        end = ends[str(row["stage"])]
        if end.exit_code is not None:
            verdict = "passed" if end.exit_code == 0 else "a failure"
            lines.append(f"{end.stage}: ended with exit code {end.exit_code}, {verdict}: not run again")
            continue
        name = parse_stage_name(end.stage)
        attempt = (name.attempt or 1) + 1
        if fail_fast and failed:
            lines.append(f"{end.stage}: no result (lost, or cancelled by fail-fast): not run again, as fail-fast "
                         f"stops the rest after {failed[0].stage}'s failure")  # fmt: skip
        elif attempt > INFRA_RETRIES + 1:
            lines.append(f"{end.stage}: no result (its runner was lost): not run again, after {attempt - 1} attempts")
        else:
            again_as = parse_stage_name(name.first_attempt).with_attempt(attempt).name
            lines.append(f"{end.stage}: no result (its runner was lost): runs again on a fresh runner as {again_as}")
            again.append({**row, "stage": again_as})
    return Retries(tuple(again), bool(failed), tuple(lines))


def matrix_rows(matrices: object, *, source: str) -> list[Mapping[str, object]]:
    """The rows of a JSON list of matrices (each a list of rows with a `stage`), as the plan job wrote them."""
    if not isinstance(matrices, list) or not all(isinstance(matrix, list) for matrix in matrices):
        raise StageError(f"{source}: expected a JSON list of matrices (lists of rows), found {matrices!r}")
    rows = [row for matrix in matrices for row in matrix]
    for index, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("stage"), str):
            raise StageError(f"{source}: row {index + 1}: expected an object with a stage name, found {row!r}")
    return rows
