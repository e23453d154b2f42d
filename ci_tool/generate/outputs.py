"""The GitHub Actions outputs of `ci-tool stage select --github-output`: what the generated stage workflow
reads from the selection (each matrix job's rows from context.github_matrices, the architectures to build,
fail-fast, the run options and the blocked stages). Pure."""

from __future__ import annotations

import json

from ci_tool.generate.context import github_builds, github_matrices
from ci_tool.stages.catalog import Catalog
from ci_tool.stages.select import Selection


def github_outputs(catalog: Catalog, selection: Selection) -> str:
    """`name=value` lines for $GITHUB_OUTPUT: each matrix job's rows, fail-fast, the stage run options and
    the blocked stages (JSON, and one line for people)."""
    values: dict[str, object] = {
        **github_matrices(catalog.stages, selection.stages),
        "builds": github_builds(selection.stages),  # the build job's matrix: one per architecture
        "fail_fast": "true" if selection.fail_fast else "false",
        "stage_run_args": " ".join(selection.request.stage_run_args),
        "blocked": [blocked.to_json() for blocked in selection.blocked],
        "blocked_message": "; ".join(
            f"{missing.label!r} is missing: blocked "
            + ", ".join(b.stage.name.name for b in selection.blocked if b.label == missing.label)
            for missing in selection.missing
        ),
    }
    return "".join(f"{key}={value if isinstance(value, str) else json.dumps(value)}\n" for key, value in values.items())
