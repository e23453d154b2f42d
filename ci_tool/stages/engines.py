"""The engines a selection runs on, and what each does with the request options that select no stages.

Every option a request gives reaches every engine: the selection options through the one selection,
`--disable-fail-fast` and `--post-merge` through its `fail_fast`, `--detailed-log` through
`ci-tool stage run --detailed-log`. The others are this table's: an engine honours the option (its
selection says how, and the reply says so), accepts it with a line saying what it changed there, or
refuses it with the reason. None is accepted and ignored:

    option               local                       jenkins                       github
    --high-priority      noted: no queue             PRIORITY 1 (queue priority)   noted: no queue priority
    --debug              noted: the folder stays     a failed stage keeps its      refused: a runner ends
                                                     agent DEBUG_HOLD_MINUTES      with its job
    --reuse-test         honoured (the history)      noted: no passed stages       noted: no passed stages
    --reuse-test N       honoured (the history)      refused: no history           refused: no history

Change-based selection narrows a family's list on every engine, to the `<family>-<K>-cbts` stages:

    engine    runs a narrowed stage as                         the narrowing it runs
    local     `ci-tool run`, in the process that selected      the selection's own
    jenkins   L0_Test: `ci-tool stage run NAME --selection`    L0_MergeRequest's run record (SELECTION)
    github    a matrix job: `ci-tool stage run NAME            the plan job's run record (the
              --selection`                                     ci-tool-selection artifact)

The stage jobs never narrow again: the record carries each narrowed family's filter and shard count, so
every stage of a run runs what its plan decided, whatever the history's touch records say by then.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from ci_tool.errors import CiToolError
from ci_tool.layout import DEBUG_HOLD_MINUTES, QUEUE_PRIORITY_DEFAULT, QUEUE_PRIORITY_HIGH
from ci_tool.stages.selection_request import SelectionRequest, flag_name


class Engine(enum.StrEnum):
    """Where the selected stages run."""

    LOCAL = "local"  # `ci-tool run` on this machine
    JENKINS = "jenkins"  # the generated jenkins/L0_MergeRequest.groovy
    GITHUB = "github"  # the generated .github/workflows/l0-test.yml


# The engines that run a family's narrowed list (`<family>-<K>-cbts` stages); an engine left out would run
# the family's own stages, whole shards, where the change touches its tests.
LIST_NARROWING_ENGINES = frozenset(Engine)
# The engines with a queue priority (Jenkins' Priority Sorter reads the PRIORITY parameter).
PRIORITY_ENGINES = frozenset({Engine.JENKINS})
# The engines that keep a failed stage's agent and workspace for `--debug` (L0_Test's DEBUG_HOLD_MINUTES).
DEBUG_HOLD_ENGINES = frozenset({Engine.JENKINS})


class Support(enum.Enum):
    """What an engine does with an option."""

    HONOURED = "honoured"  # it does what the flag asks; the line says how
    NOTED = "noted"  # it runs; the line says what the flag changed there
    REFUSED = "refused"  # the run is refused; the line says why


@dataclass(frozen=True)
class Handling:
    support: Support
    line: str


# A row's key: the option's key, or `reuse_test=ID` for --reuse-test given a pipeline id.
REUSE_ID = "reuse_test=ID"
_SHARED_REUSE = (
    "is the default: the stages that passed on this commit in the shared history (CI_TOOL_HISTORY, see "
    "docs/runners-and-history.md) are reused, and in the others the tests that passed skip; without a shared "
    "history every selected stage runs"
)
_NO_HISTORY = (
    "names one pipeline, and the stages of a generated pipeline are runs of their own in the shared history: "
    "reuse goes by the commit instead (a bare --reuse-test)"
)

# engine -> row key -> what that engine does with the option
HANDLING: Mapping[Engine, Mapping[str, Handling]] = {
    Engine.LOCAL: {
        "high_priority": Handling(
            Support.NOTED,
            "changes nothing here: a local run starts at once, and the Slurm jobs it submits (--executor slurm) "
            "queue at the cluster's usual priority",
        ),
        "debug": Handling(
            Support.NOTED,
            "changes nothing here: a local run keeps every stage's folder and runs where you can attach to it",
        ),
    },
    Engine.JENKINS: {
        "high_priority": Handling(
            Support.HONOURED,
            f"the build and its L0_Test builds queue with PRIORITY {QUEUE_PRIORITY_HIGH} instead of "
            f"{QUEUE_PRIORITY_DEFAULT} (the Priority Sorter plugin orders Jenkins' queue by it)",
        ),
        "debug": Handling(
            Support.HONOURED,
            f"a stage that fails keeps its agent and workspace for {DEBUG_HOLD_MINUTES} minutes; its log names "
            "the agent and the folder",
        ),
        "reuse_test": Handling(Support.NOTED, _SHARED_REUSE),
        REUSE_ID: Handling(Support.REFUSED, _NO_HISTORY),
    },
    Engine.GITHUB: {
        "high_priority": Handling(
            Support.NOTED, "changes nothing here: GitHub Actions has no queue priority; the jobs queue as usual"
        ),
        "debug": Handling(
            Support.REFUSED, "a GitHub Actions runner ends with its job: no stage can be kept to look at"
        ),
        "reuse_test": Handling(Support.NOTED, _SHARED_REUSE),
        REUSE_ID: Handling(Support.REFUSED, _NO_HISTORY),
    },
}


def _row_key(request: SelectionRequest, key: str) -> str:
    return REUSE_ID if key == "reuse_test" and isinstance(request.reuse_test, str) else key


def _handled(request: SelectionRequest, engine: Engine) -> list[tuple[str, Handling]]:
    table = HANDLING[engine]
    rows = ((found.key, table.get(_row_key(request, found.key))) for found in request.given)
    return [(key, handling) for key, handling in rows if handling is not None]


def refusals(request: SelectionRequest, engine: Engine) -> list[CiToolError]:
    """An error for each option of the request that `engine` cannot honour, at its column when the
    request came from a comment."""
    return [
        request.error(
            key,
            None,
            f"{flag_name(key)}: expected an option the {engine.value} engine honours, found one it cannot: "
            f"{handling.line}",
            hint=f"drop {flag_name(key)}",
        )
        for key, handling in _handled(request, engine)
        if handling.support is Support.REFUSED
    ]


def option_notes(request: SelectionRequest, engine: Engine) -> list[str]:
    """One line for each option of the request `engine` honours or notes: what it does there."""
    return [
        f"{flag_name(key)}: {handling.line}"
        for key, handling in _handled(request, engine)
        if handling.support is not Support.REFUSED
    ]


def queue_priority(request: SelectionRequest, engine: Engine) -> int:
    """The queue priority the run's builds get (Jenkins' PRIORITY parameter; lower runs first)."""
    return QUEUE_PRIORITY_HIGH if request.high_priority and engine in PRIORITY_ENGINES else QUEUE_PRIORITY_DEFAULT


def debug_hold_minutes(request: SelectionRequest, engine: Engine) -> int:
    """How long a failed stage keeps its agent and workspace (0: not at all)."""
    return DEBUG_HOLD_MINUTES if request.debug and engine in DEBUG_HOLD_ENGINES else 0
