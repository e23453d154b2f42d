"""The one registry of `/bot` sub-commands and flags: the parser, `/bot help` and docs/bot.md read it.

A flag is a row: its key, the kind of argument it takes, one help line and how usage lines show it.
What a `/bot run` flag means (the selection step it feeds, whether it makes a custom run, whether its
items take globs) is its option's, in the option table of stages/selection_request.py: add a run flag by adding
an option there and a row here.  Conflicting pairs sit in one table below.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ci_tool.stages.selection_request import LEGACY_KEYS, Option, OptionKind, Step, flag_name, option


class Arg(enum.Enum):
    """What follows a flag in a comment."""

    SWITCH = "switch"  # nothing; JSON value true
    LIST = "list"  # one double-quoted, comma-separated string; JSON value a list of strings
    OPTIONAL_ID = "optional id"  # an optional pipeline id (digits); JSON value the id, or true
    TEXT = "text"  # one double-quoted string kept whole; JSON value a string


class SubCommand(enum.StrEnum):
    """A `/bot` sub-command, as typed after `/bot`."""

    RUN = "run"
    KILL = "kill"
    SKIP = "skip"
    REUSE_PIPELINE = "reuse-pipeline"
    HELP = "help"


class Permission(enum.StrEnum):
    """What a sub-command needs (bot/authorize.py says who holds it); the value is the allowlist's key."""

    RUN = "run"
    KILL_SKIP = "kill_skip"  # the stronger one: it grants run too


@dataclass(frozen=True)
class Command:
    """A `/bot` sub-command and the permission it needs (None: anyone)."""

    name: SubCommand
    usage: str
    help: str
    permission: Permission | None
    # what `bot handle` reads and reaches to carry it out (pr_bot/)
    reads_pull_request: bool = False  # the pull request is read first (its head, labels and state)
    reaches_jenkins: bool = False  # builds are triggered, stopped or read
    plans_stages: bool = False  # the request's stages are planned, with the pull request's change


_ARGS = {OptionKind.SWITCH: Arg.SWITCH, OptionKind.LIST: Arg.LIST, OptionKind.PIPELINE_ID: Arg.OPTIONAL_ID}


@dataclass(frozen=True)
class Flag:
    """How a comment spells one option of a sub-command. The flag of a `/bot run` option is that option's
    key spelled with dashes; what it means to the selection (step, custom run, globs, choices) is the
    option table's (stages/selection_request.py)."""

    key: str  # the JSON key: "stage_list" is written `--stage-list`
    help: str  # one line, for `/bot help` and the docs
    command: SubCommand = SubCommand.RUN
    text: bool = False  # takes one quoted string kept whole (flags of sub-commands other than run)
    required: bool = False
    metavar: str = ""  # what follows the name in usage lines
    empty_hint: str = ""  # the hint for an empty list value
    empty_ok: bool = False  # an empty list is taken as if the flag were left out (the reference does so)

    @property
    def name(self) -> str:
        """As typed: `--stage-list`."""
        return flag_name(self.key)

    @property
    def aliases(self) -> tuple[str, ...]:
        """Old spellings a comment may still use (stages/selection_request.py LEGACY_KEYS)."""
        return tuple(flag_name(old) for old, key in LEGACY_KEYS.items() if key == self.key)

    @property
    def option(self) -> Option | None:
        """The selection request's option this flag sets (None for flags of other sub-commands)."""
        return option(self.key) if self.command is SubCommand.RUN else None

    @property
    def arg(self) -> Arg:
        """What follows the flag: a run option's kind decides it."""
        if self.option is None:
            return Arg.TEXT if self.text else Arg.SWITCH
        return _ARGS[self.option.kind]

    @property
    def feeds(self) -> Step | None:
        return self.option.step if self.option is not None else None

    @property
    def custom_run(self) -> bool:
        return self.option is not None and self.option.custom_run

    @property
    def globs(self) -> bool:
        return self.option is not None and self.option.globs

    @property
    def choices(self) -> tuple[str, ...]:
        return self.option.choices if self.option is not None else ()

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
        SubCommand.RUN,
        "/bot run [flags]",
        "Start the build and test pipeline; kills any pipeline running for this PR.",
        Permission.RUN,
        reads_pull_request=True,
        reaches_jenkins=True,
        plans_stages=True,
    ),
    Command(
        SubCommand.KILL,
        "/bot kill",
        "Kill every running pipeline of this PR.",
        Permission.KILL_SKIP,
        reaches_jenkins=True,
    ),
    Command(
        SubCommand.SKIP,
        '/bot skip --comment "reason"',
        "Mark the latest commit as validated without testing (dangerous: no test runs).",
        Permission.KILL_SKIP,
        reads_pull_request=True,
    ),
    Command(
        SubCommand.REUSE_PIPELINE,
        "/bot reuse-pipeline",
        "Validate the latest commit with the result of an earlier pipeline; kills running pipelines.",
        Permission.RUN,
        reads_pull_request=True,
        reaches_jenkins=True,
        plans_stages=True,
    ),
    Command(SubCommand.HELP, "/bot help", "Show this help (also `/bot -h`).", None),
)

PR_COMMANDS = frozenset(c.name for c in COMMANDS if c.reads_pull_request)
JENKINS_COMMANDS = frozenset(c.name for c in COMMANDS if c.reaches_jenkins)
PLANNED_COMMANDS = frozenset(c.name for c in COMMANDS if c.plans_stages)

HELP_WORDS = ("help", "-h", "--help")

FLAGS: tuple[Flag, ...] = (
    Flag(
        "reuse_test",
        "Skip the stages that passed, and in failed stages the tests that passed, in the given pipeline or "
        "local run of the same code (default: the newest one); reuse is already the default.",
        metavar="[pipeline-id]",
    ),
    Flag(
        "disable_reuse_test",
        "Rebuild and rerun everything, with no stage or test reuse (use it to repeat a flaky test).",
    ),
    Flag(
        "disable_fail_fast",
        "Keep the other stages running when one fails (holds scarce GPUs: not a habit).",
    ),
    Flag("skip_test", "Run only the build, docs and package-sanity stages."),
    Flag(
        "stage_list",
        'Run only these stages (exact names or `*` globs); overrides the other selection flags (`""`: as if '
        "left out).",
        metavar='"A,B"',
        empty_ok=True,
    ),
    Flag(
        "extra_stage",
        "Run the usual pre-merge stages plus these (exact names or `*` globs).",
        metavar='"A,B"',
    ),
    Flag(
        "gpu_type",
        "Keep only stages whose GPU token (the first `-` part) is listed; exact and case-sensitive.",
        metavar='"A,B"',
    ),
    Flag("test_backend", "Keep stages with a listed backend, plus stages with no backend.", metavar='"a,b"'),
    Flag("add_multi_gpu_test", "Add the multi-GPU stages to the pre-merge set."),
    Flag(
        "only_multi_gpu_test",
        "Run only the multi-GPU stages (the post-merge ones with --post-merge); `--multi-gpu-test` is its old "
        "spelling.",
    ),
    Flag("disable_multi_gpu_test", "Remove the multi-GPU stages, including file-triggered ones."),
    Flag("only_perf_sanity_test", "Keep only the PerfSanity stages of the selection (all of them with --post-merge)."),
    Flag("post_merge", "Run the post-merge set: pre-merge, multi-GPU and all Post-Merge stages."),
    Flag("detailed_log", "Stream all pytest output (`pytest -s`); very large logs."),
    Flag(
        "debug",
        "Run the one stage named in --stage-list and, on Jenkins, keep its agent and workspace a while when it "
        "fails, to look at.",
    ),
    Flag("high_priority", "Queue this pipeline ahead of others where the engine has a queue priority (Jenkins)."),
    Flag(
        "disable_cbts",
        "Run the full set even where the changed files would narrow it (no change-based test selection).",
    ),
    Flag(
        "comment",
        "Why the commit may skip testing; recorded with the status.",
        command=SubCommand.SKIP,
        text=True,
        required=True,
        metavar='"reason"',
    ),
)

_MULTI_GPU = ("--add-multi-gpu-test", "--only-multi-gpu-test", "--disable-multi-gpu-test")
_PERF_SANITY = "--only-perf-sanity-test"

# --stage-list with a flag it makes moot is not a conflict: the selection runs it and notes the other
# flag had no effect, as TensorRT-LLM's bot does (stages/selection_request.py REPLACED_BY_STAGE_LIST).
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
        Conflict("--skip-test", name, f"--skip-test runs no test stages, so {name} would be ignored")
        for name in ("--stage-list", "--gpu-type", "--test-backend", "--post-merge", *_MULTI_GPU, _PERF_SANITY)
    ),
)

DEBUG_FLAG = "--debug"  # needs exactly one exact stage name in --stage-list
DEBUG_NEEDS = "--stage-list"


def command(name: str) -> Command | None:
    """The sub-command spelled exactly `name` (a word of a comment), or None."""
    return next((c for c in COMMANDS if c.name.value == name), None)


def command_of(sub: SubCommand) -> Command:
    """The table's row of a sub-command (every sub-command has one)."""
    return next(c for c in COMMANDS if c.name is sub)


def flags_of(sub: SubCommand) -> tuple[Flag, ...]:
    """The flags of one sub-command, in table order."""
    return tuple(f for f in FLAGS if f.command is sub)


def flag_by_name(name: str) -> Flag | None:
    """The flag spelled exactly `name` (of any sub-command), or None."""
    return next((f for f in FLAGS if f.name == name), None)


def flag_by_key(key: str) -> Flag:
    """The flag whose JSON key is `key`; a KeyError names an unknown key (a bug, not user input)."""
    for flag in FLAGS:
        if flag.key == key:
            return flag
    raise KeyError(key)
