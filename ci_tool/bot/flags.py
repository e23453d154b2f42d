"""The one registry of `/bot` sub-commands and flags: the parser, `/bot help` and docs/bot.md read it.

A flag is a row: its name, the kind of argument it takes, one help line, the selection step it feeds
(reference §4.8, None for run options that select nothing) and whether it makes the run a custom run
that may not set the merge gate green (reference §4.9).  Conflicting pairs sit in one table below.
Nothing here is listed anywhere else: add a flag by adding a row.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Arg(enum.Enum):
    """What follows a flag in a comment."""

    SWITCH = "switch"  # nothing; JSON value true
    LIST = "list"  # one double-quoted, comma-separated string; JSON value a list of strings
    OPTIONAL_ID = "optional id"  # an optional pipeline id (digits); JSON value the id, or true
    TEXT = "text"  # one double-quoted string kept whole; JSON value a string


class Step(enum.Enum):
    """A step of the stage selection (reference §4.8) a flag feeds; the value is the step number."""

    POST_MERGE = 4
    SKIP_TEST = 5
    ADD_MULTI_GPU = 6
    ONLY_MULTI_GPU = 7
    DISABLE_MULTI_GPU = 8
    GPU_TYPE = 9
    TEST_BACKEND = 10
    STAGE_LIST = 13
    EXTRA_STAGE = 14
    REUSE = 18


STEP_EFFECTS: dict[Step, str] = {
    Step.POST_MERGE: "adds the multi-GPU and Post-Merge stages",
    Step.SKIP_TEST: "replaces the set with build, docs and package sanity",
    Step.ADD_MULTI_GPU: "adds the multi-GPU stages",
    Step.ONLY_MULTI_GPU: "replaces the set with the multi-GPU stages",
    Step.DISABLE_MULTI_GPU: "removes the multi-GPU stages",
    Step.GPU_TYPE: "keeps stages whose GPU token is listed",
    Step.TEST_BACKEND: "keeps stages with a listed backend or none",
    Step.STAGE_LIST: "replaces the set with the matching stages",
    Step.EXTRA_STAGE: "adds the matching stages",
    Step.REUSE: "stages that passed in the reused pipeline do not run",
}


@dataclass(frozen=True)
class Command:
    """A `/bot` sub-command. `permission` names the allowlist entry it needs (None: anyone)."""

    name: str
    usage: str
    help: str
    permission: str | None


@dataclass(frozen=True)
class Flag:
    """One flag of one sub-command."""

    name: str  # as typed: "--stage-list"
    arg: Arg
    help: str  # one line, for `/bot help` and the docs
    feeds: Step | None = None  # None: a run option that selects no stages
    command: str = "run"
    custom_run: bool = False  # a partial selection: the run may not set the merge gate green
    globs: bool = False  # list items may hold `*`
    choices: tuple[str, ...] = ()  # list items must be one of these (compared in lower case)
    required: bool = False
    metavar: str = ""  # what follows the name in usage lines
    empty_hint: str = ""  # the hint for an empty list value

    @property
    def key(self) -> str:
        """The snake_case JSON key: `--stage-list` -> `stage_list`."""
        return self.name.lstrip("-").replace("-", "_")

    @property
    def usage(self) -> str:
        return f"{self.name} {self.metavar}".rstrip()


@dataclass(frozen=True)
class Conflict:
    """Two flags that may not appear in one comment, and why."""

    first: str
    second: str
    reason: str


COMMANDS: tuple[Command, ...] = (
    Command(
        "run", "/bot run [flags]", "Start the build and test pipeline; kills any pipeline running for this PR.", "run"
    ),
    Command("kill", "/bot kill", "Kill every running pipeline of this PR.", "kill_skip"),
    Command(
        "skip",
        '/bot skip --comment "reason"',
        "Mark the latest commit as validated without testing (dangerous: no test runs).",
        "kill_skip",
    ),
    Command(
        "reuse-pipeline",
        "/bot reuse-pipeline",
        "Validate the latest commit with the result of an earlier pipeline; kills running pipelines.",
        "run",
    ),
    Command("help", "/bot help", "Show this help (also `/bot -h`).", None),
)

HELP_WORDS = ("help", "-h", "--help")

FLAGS: tuple[Flag, ...] = (
    Flag(
        "--reuse-test",
        Arg.OPTIONAL_ID,
        "Reuse the build and skip stages that passed in the given pipeline "
        "(default: the last one); reuse is already the default.",
        Step.REUSE,
        metavar="[pipeline-id]",
    ),
    Flag(
        "--disable-reuse-test",
        Arg.SWITCH,
        "Rebuild and rerun everything, with no stage or test reuse (use it to repeat a flaky test).",
        Step.REUSE,
    ),
    Flag(
        "--disable-fail-fast",
        Arg.SWITCH,
        "Keep the other stages running when one fails (holds scarce GPUs: not a habit).",
    ),
    Flag(
        "--skip-test",
        Arg.SWITCH,
        "Run only the build, docs and package-sanity stages.",
        Step.SKIP_TEST,
        custom_run=True,
    ),
    Flag(
        "--stage-list",
        Arg.LIST,
        "Run only these stages (exact names or `*` globs); overrides the other selection flags.",
        Step.STAGE_LIST,
        custom_run=True,
        globs=True,
        metavar='"A,B"',
        empty_hint="name at least one stage; to run no test stages use --skip-test",
    ),
    Flag(
        "--extra-stage",
        Arg.LIST,
        "Run the usual pre-merge stages plus these (exact names or `*` globs).",
        Step.EXTRA_STAGE,
        globs=True,
        metavar='"A,B"',
    ),
    Flag(
        "--gpu-type",
        Arg.LIST,
        "Keep only stages whose GPU token (the first `-` part) is listed; exact and case-sensitive.",
        Step.GPU_TYPE,
        custom_run=True,
        metavar='"A,B"',
    ),
    Flag(
        "--test-backend",
        Arg.LIST,
        "Keep stages with a listed backend, plus stages with no backend.",
        Step.TEST_BACKEND,
        custom_run=True,
        choices=("pytorch", "cpp", "triton", "fmha"),
        metavar='"a,b"',
    ),
    Flag("--add-multi-gpu-test", Arg.SWITCH, "Add the multi-GPU stages to the pre-merge set.", Step.ADD_MULTI_GPU),
    Flag(
        "--only-multi-gpu-test",
        Arg.SWITCH,
        "Run only the multi-GPU stages (the post-merge ones with --post-merge).",
        Step.ONLY_MULTI_GPU,
        custom_run=True,
    ),
    Flag(
        "--disable-multi-gpu-test",
        Arg.SWITCH,
        "Remove the multi-GPU stages, including file-triggered ones.",
        Step.DISABLE_MULTI_GPU,
        custom_run=True,
    ),
    Flag(
        "--post-merge",
        Arg.SWITCH,
        "Run the post-merge set: pre-merge, multi-GPU and all Post-Merge stages.",
        Step.POST_MERGE,
    ),
    Flag("--detailed-log", Arg.SWITCH, "Stream all pytest output (`pytest -s`); very large logs."),
    Flag(
        "--debug",
        Arg.SWITCH,
        "Pause the one stage named in --stage-list for an interactive SSH session.",
        custom_run=True,
    ),
    Flag("--high-priority", Arg.SWITCH, "Queue this pipeline ahead of others."),
    Flag(
        "--comment",
        Arg.TEXT,
        "Why the commit may skip testing; recorded with the status.",
        command="skip",
        required=True,
        metavar='"reason"',
    ),
)

_MULTI_GPU = ("--add-multi-gpu-test", "--only-multi-gpu-test", "--disable-multi-gpu-test")
_REPLACED_BY_STAGE_LIST = ("--gpu-type", "--test-backend", *_MULTI_GPU)

CONFLICTS: tuple[Conflict, ...] = (
    Conflict("--reuse-test", "--disable-reuse-test", "reuse is either on or off"),
    Conflict(
        "--add-multi-gpu-test", "--only-multi-gpu-test", "--only-multi-gpu-test already runs every multi-GPU stage"
    ),
    Conflict("--add-multi-gpu-test", "--disable-multi-gpu-test", "one adds the multi-GPU stages, one removes them"),
    Conflict(
        "--only-multi-gpu-test", "--disable-multi-gpu-test", "one runs only the multi-GPU stages, one removes them"
    ),
    *(
        Conflict("--stage-list", name, f"--stage-list replaces the selection, so {name} would be ignored")
        for name in _REPLACED_BY_STAGE_LIST
    ),
    *(
        Conflict("--skip-test", name, f"--skip-test runs no test stages, so {name} would be ignored")
        for name in ("--stage-list", "--gpu-type", "--test-backend", "--post-merge", *_MULTI_GPU)
    ),
)

DEBUG_FLAG = "--debug"  # needs exactly one exact stage name in --stage-list
DEBUG_NEEDS = "--stage-list"


def command(name: str) -> Command | None:
    """The sub-command spelled exactly `name`, or None."""
    return next((c for c in COMMANDS if c.name == name), None)


def flags_of(command_name: str) -> tuple[Flag, ...]:
    """The flags of one sub-command, in table order."""
    return tuple(f for f in FLAGS if f.command == command_name)


def flag_by_name(name: str) -> Flag | None:
    """The flag spelled exactly `name` (of any sub-command), or None."""
    return next((f for f in FLAGS if f.name == name), None)


def flag_by_key(key: str) -> Flag:
    """The flag whose JSON key is `key`; a KeyError names an unknown key (a bug, not user input)."""
    for flag in FLAGS:
        if flag.key == key:
            return flag
    raise KeyError(key)
