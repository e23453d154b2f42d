"""The engines a selection runs on, and the request options each cannot honour.

Every option a request gives reaches every engine: the selection options through the one selection,
`--disable-fail-fast` and `--post-merge` through its `fail_fast`, `--detailed-log` through
`ci-tool stage run --detailed-log`. An option an engine cannot honour is refused there with the reason,
never accepted and ignored:

    option            local                       jenkins                     github
    --high-priority   refused: no queue           refused: no priority queue  refused: no priority queue
    --debug           refused: run it yourself    refused: no SSH pause       refused: no SSH pause

Change-based selection narrows a family's list only where the engine runs the narrowed list: locally. The
generated pipelines run each stage's whole shard (`ci-tool stage run NAME`), so there it keeps or drops
whole families, and never drops a test the narrowed list would run.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from ci_tool.errors import CiToolError
from ci_tool.stages.request import SelectionRequest, flag_name


class Engine(enum.StrEnum):
    """Where the selected stages run."""

    LOCAL = "local"  # `ci-tool run` on this machine
    JENKINS = "jenkins"  # the generated jenkins/L0_MergeRequest.groovy
    GITHUB = "github"  # the generated .github/workflows/l0-test.yml


# The engines that run a family's narrowed list (`<family>-<K>-cbts` stages).
LIST_NARROWING_ENGINES = frozenset({Engine.LOCAL})

_NO_PRIORITY = "the generated pipeline has no priority queue to put the run ahead in"
_NO_SSH_PAUSE = "the generated pipeline does not pause a stage for an interactive session"

# engine -> option key -> why that engine cannot honour the option
UNSUPPORTED: Mapping[Engine, Mapping[str, str]] = {
    Engine.LOCAL: {
        "high_priority": "a local run has no queue to jump: it starts at once",
        "debug": "a local run is yours to debug already: run `ci-tool stage run NAME` and attach to it",
    },
    Engine.JENKINS: {"high_priority": _NO_PRIORITY, "debug": _NO_SSH_PAUSE},
    Engine.GITHUB: {"high_priority": _NO_PRIORITY, "debug": _NO_SSH_PAUSE},
}


def refusals(request: SelectionRequest, engine: Engine) -> list[CiToolError]:
    """An error for each option of the request that `engine` cannot honour, at its column when the
    request came from a comment."""
    unsupported = UNSUPPORTED[engine]
    return [
        request.error(
            found.key,
            None,
            f"{found.name}: expected an option the {engine.value} engine honours, found one it cannot: "
            f"{unsupported[found.key]}",
            hint=f"drop {flag_name(found.key)}",
        )
        for found in request.given
        if found.key in unsupported
    ]
