"""What a `/bot run` asks of the stage selection, typed: the selection request and the table of its options.

A request reaches the selection from a PR comment (the bot's grammar), from CI's JSON payload
(`{"command": "run", "flags": {...}}`, the dispatcher's `REQUEST`: typed_json reads it as RequestJson, and
its flags against the option table) or from `ci-tool run`; each source turns into one SelectionRequest and
every consumer reads that. The option table says, per option, what
it means to the selection; the bot's flag table (bot/flags.py) adds only how a comment spells it.

    option                   value     step  custom run  also reaches the stage runner as
    reuse_test               id|true   18
    disable_reuse_test       switch    18
    disable_fail_fast        switch    -                 (the selection's fail_fast)
    skip_test                switch    5     yes
    stage_list               list      13    yes
    extra_stage              list      14
    gpu_type                 list      9     yes
    test_backend             list      10    yes
    add_multi_gpu_test       switch    6
    only_multi_gpu_test      switch    7     yes          (`--multi-gpu-test`, the old spelling, too)
    disable_multi_gpu_test   switch    8     yes
    only_perf_sanity_test    switch    15    yes
    post_merge               switch    4                 `ci-tool stage run --record-touches` (CI's touch
                                                             records), and the selection's fail_fast
    detailed_log             switch    -                 `ci-tool stage run --detailed-log`
    debug                    switch    -     yes
    high_priority            switch    -
    disable_cbts             switch    16

A request also has a run mode, set by the job that sends it (a nightly or release job), never by a comment:
`full` (the default), `nightly_release` (the package-sanity stages only, step 17) or `release_check` (the
non-test stages only: docs and package sanity, step 17); any mode but full is a custom run.

A custom run is a partial selection: it may not turn the merge gate green. An option's
flag is its key spelled with dashes (`stage_list` -> `--stage-list`), the one spelling rule of both.
Change-based selection (step 16) narrows only a bare `/bot run` or `/bot run --post-merge`: any option of
another selection step, or --disable-cbts, turns it off (`SelectionRequest.narrowing_off`).
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ci_tool import typed_json
from ci_tool.errors import ColumnError, StageError, Where, did_you_mean
from ci_tool.stages.names import SELECTABLE_BACKENDS

# A local run's id (run/session.py new_run_id): its UTC start and four random hex digits.
RUN_ID = re.compile(r"[0-9]{8}-[0-9]{6}-[0-9a-f]{4}")


class Step(enum.IntEnum):
    """A step of the stage selection; the value is the step number."""

    DEFAULT_SET = 1
    MULTI_GPU_PATHS = 2
    TAG_TRIGGERS = 3
    POST_MERGE = 4
    SKIP_TEST = 5
    ADD_MULTI_GPU = 6
    ONLY_MULTI_GPU = 7
    DISABLE_MULTI_GPU = 8
    GPU_TYPE = 9
    TEST_BACKEND = 10
    FILE_GROUPS = 11
    DROP_ON_DEMAND = 12
    STAGE_LIST = 13
    EXTRA_STAGE = 14
    ONLY_PERF_SANITY = 15  # not the reference's (which validates here): it keeps what the steps before chose
    CBTS = 16
    RUN_MODE = 17
    REUSE = 18


# What each step an option feeds does, for plans, `/bot help` and docs/bot.md.
STEP_EFFECTS: Mapping[Step, str] = {
    Step.POST_MERGE: "adds the multi-GPU and Post-Merge stages",
    Step.SKIP_TEST: "replaces the set with build, docs and package sanity",
    Step.ADD_MULTI_GPU: "adds the multi-GPU stages",
    Step.ONLY_MULTI_GPU: "replaces the set with the multi-GPU stages",
    Step.DISABLE_MULTI_GPU: "removes the multi-GPU stages",
    Step.GPU_TYPE: "keeps stages whose GPU token is listed",
    Step.TEST_BACKEND: "keeps stages with a listed backend or none",
    Step.STAGE_LIST: "replaces the set with the matching stages",
    Step.EXTRA_STAGE: "adds the matching stages",
    Step.ONLY_PERF_SANITY: "keeps only the PerfSanity stages (the post-merge ones too with --post-merge)",
    Step.CBTS: "turns change-based selection off: the full set runs",
    Step.REUSE: "stages that passed in the reused run of the same code do not run",
}


class OptionKind(enum.Enum):
    """The value an option takes; the value is how the JSON payload holds it."""

    SWITCH = "true"
    LIST = "a list of strings"
    PIPELINE_ID = "true, a pipeline id (digits) or a run id (20261130-054838-3f2a)"


@dataclass(frozen=True)
class Option:
    """One option of a `/bot run` request, as the selection and the runners understand it."""

    key: str  # the JSON key and the SelectionRequest field
    kind: OptionKind
    step: Step | None = None  # the selection step it feeds; None: a run option that selects no stages
    custom_run: bool = False
    globs: bool = False  # list items may hold `*`
    choices: tuple[str, ...] = ()  # list items must be one of these (compared in lower case)
    stage_run_option: str | None = None  # the `ci-tool stage run` option that carries it to each stage

    @property
    def name(self) -> str:
        return flag_name(self.key)


def flag_name(key: str) -> str:
    """How an option is written as a flag: `stage_list` -> `--stage-list`."""
    return "--" + key.replace("_", "-")


OPTIONS: tuple[Option, ...] = (
    Option("reuse_test", OptionKind.PIPELINE_ID, Step.REUSE),
    Option("disable_reuse_test", OptionKind.SWITCH, Step.REUSE, stage_run_option="--disable-reuse-test"),
    Option("disable_fail_fast", OptionKind.SWITCH),
    Option("skip_test", OptionKind.SWITCH, Step.SKIP_TEST, custom_run=True),
    Option("stage_list", OptionKind.LIST, Step.STAGE_LIST, custom_run=True, globs=True),
    Option("extra_stage", OptionKind.LIST, Step.EXTRA_STAGE, globs=True),
    Option("gpu_type", OptionKind.LIST, Step.GPU_TYPE, custom_run=True),
    Option("test_backend", OptionKind.LIST, Step.TEST_BACKEND, custom_run=True, choices=SELECTABLE_BACKENDS),
    Option("add_multi_gpu_test", OptionKind.SWITCH, Step.ADD_MULTI_GPU),
    Option("only_multi_gpu_test", OptionKind.SWITCH, Step.ONLY_MULTI_GPU, custom_run=True),
    Option("disable_multi_gpu_test", OptionKind.SWITCH, Step.DISABLE_MULTI_GPU, custom_run=True),
    Option("only_perf_sanity_test", OptionKind.SWITCH, Step.ONLY_PERF_SANITY, custom_run=True),
    # A post-merge run runs everything: its stages record which test ran which code (change-based selection's
    # touched rule narrows pre-merge runs by those records).
    Option("post_merge", OptionKind.SWITCH, Step.POST_MERGE, stage_run_option="--record-touches"),
    Option("detailed_log", OptionKind.SWITCH, stage_run_option="--detailed-log"),
    Option("debug", OptionKind.SWITCH, custom_run=True),
    Option("high_priority", OptionKind.SWITCH),
    Option("disable_cbts", OptionKind.SWITCH, Step.CBTS),
)
# The steps whose options leave change-based selection on: post-merge (narrowed like pre-merge), reuse.
NARROWABLE_STEPS = (Step.POST_MERGE, Step.CBTS, Step.REUSE)

# Options that --stage-list makes moot: it replaces the set they shape (TensorRT-LLM's bot accepts them).
REPLACED_BY_STAGE_LIST = ("gpu_type", "test_backend", "add_multi_gpu_test", "only_multi_gpu_test",
                          "disable_multi_gpu_test")  # fmt: skip


# Old spellings the reference's users still type, each the key of the option it now is: a comment's flag
# (`--multi-gpu-test`) and CI's JSON key (`multi_gpu_test`) alike. The selection notes the current one.
LEGACY_KEYS: Mapping[str, str] = {"multi_gpu_test": "only_multi_gpu_test"}


class RunMode(enum.StrEnum):
    """Which of its runs a project's CI sends: a pull request's or a post-merge run (full), a nightly release
    validation, or a release branch's check. Set by the job, never by a comment."""

    FULL = "full"
    NIGHTLY_RELEASE = "nightly_release"  # the package-sanity stages only
    RELEASE_CHECK = "release_check"  # the non-test stages only (docs and package sanity)


def option(key: str) -> Option:
    """The option whose key is `key`; a KeyError names an unknown key (a bug, not user input)."""
    for found in OPTIONS:
        if found.key == key:
            return found
    raise KeyError(key)


@dataclass(frozen=True)
class RequestSource:
    """Where a request was written, so checks made after parsing can point at it: the comment's command
    line and, per option key, the column of its flag followed by the column of each list item."""

    line: str
    columns: Mapping[str, tuple[int, ...]]

    def error_at(self, key: str, index: int | None, message: str, hint: str | None = None) -> ColumnError:
        cols = self.columns[key]
        return ColumnError(message, line=self.line, col=cols[0] if index is None else cols[1 + index], hint=hint)


@dataclass(frozen=True)
class SelectionRequest:
    """A `/bot run` request: one field per option (see the module docstring); defaults mean "not given"."""

    reuse_test: bool | str = False  # True: the latest pipeline; digits or a run id: that pipeline or run
    disable_reuse_test: bool = False
    disable_fail_fast: bool = False
    skip_test: bool = False
    stage_list: tuple[str, ...] = ()
    extra_stage: tuple[str, ...] = ()
    gpu_type: tuple[str, ...] = ()
    test_backend: tuple[str, ...] = ()
    add_multi_gpu_test: bool = False
    only_multi_gpu_test: bool = False
    disable_multi_gpu_test: bool = False
    only_perf_sanity_test: bool = False
    post_merge: bool = False
    detailed_log: bool = False
    debug: bool = False
    high_priority: bool = False
    disable_cbts: bool = False
    run_mode: RunMode = RunMode.FULL
    source: RequestSource | None = field(default=None, compare=False)

    def has(self, key: str) -> bool:
        """Whether the request gives the option `key`."""
        return bool(getattr(self, key))

    def items(self, key: str) -> tuple[str, ...]:
        """The items of a list option, () when absent."""
        value = getattr(self, key)
        return value if isinstance(value, tuple) else ()

    @property
    def given(self) -> tuple[Option, ...]:
        """The options the request gives, in table order."""
        return tuple(found for found in OPTIONS if self.has(found.key))

    @property
    def custom_run(self) -> bool:
        """A partial selection: the run may not set the merge gate green."""
        return any(found.custom_run for found in self.given) or self.run_mode is not RunMode.FULL

    @property
    def fail_fast(self) -> bool:
        """Whether the first failed stage stops the others: off with --disable-fail-fast and in post-merge
        runs (TensorRT-LLM's `enableFailFast`). The one place this rule lives."""
        return not (self.disable_fail_fast or self.post_merge)

    @property
    def narrowing_off(self) -> str | None:
        """Why change-based selection does not narrow this request (None: it may): a selection option of
        another step, or --disable-cbts (selection step 16)."""
        if self.disable_cbts:
            return f"{flag_name('disable_cbts')} asks for the full set"
        chosen = [found.name for found in self.given if found.step is not None and found.step not in NARROWABLE_STEPS]
        return f"{', '.join(chosen)} chose the stages" if chosen else None

    @property
    def scope(self) -> str:
        """What the request asks the selection for, as one canonical text: the options that feed a selection
        step other than reuse (`/bot run` is `{}`). Runs of one scope on one code select the same stages,
        so reuse matches on it; run options (fail-fast, logs, reuse itself) do not change it."""
        flags = {
            found.key: _json_value(getattr(self, found.key))
            for found in self.given
            if found.step is not None and found.step is not Step.REUSE
        }
        if self.run_mode is not RunMode.FULL:
            flags["run_mode"] = self.run_mode.value
        return json.dumps(flags, sort_keys=True)

    @property
    def stage_run_args(self) -> tuple[str, ...]:
        """The `ci-tool stage run` options every stage of this request runs with (`--detailed-log`)."""
        return tuple(found.stage_run_option for found in self.given if found.stage_run_option)

    def error(self, key: str, index: int | None, message: str, hint: str | None = None) -> StageError | ColumnError:
        """An error about an option: at its column when the request came from a comment."""
        if self.source is not None and key in self.source.columns:
            return self.source.error_at(key, index, message, hint)
        return StageError(message, hint=hint)

    def to_json(self) -> dict[str, object]:
        """CI's `REQUEST` payload, `{"command": "run", "flags": {...}}` (request_from_json reads it back):
        the given options only, lists as lists."""
        flags = {found.key: _json_value(getattr(self, found.key)) for found in self.given}
        mode = {"run_mode": self.run_mode.value} if self.run_mode is not RunMode.FULL else {}
        return {"command": "run", "flags": flags, **mode}

    def spelled(self, key: str) -> str:
        """How the comment spelled an option's flag (its name, or an old spelling: LEGACY_KEYS)."""
        if self.source is None or key not in self.source.columns:
            return flag_name(key)
        start = self.source.columns[key][0] - 1
        return self.source.line[start:].split(maxsplit=1)[0].partition("=")[0]


def request_notes(request: SelectionRequest) -> list[str]:
    """What the selection says of how a comment was written: an old flag spelling it took, an empty
    `--stage-list` it took as left out."""
    notes = [
        f"{request.spelled(found.key)} is the old spelling of {found.name}: it ran as that"
        for found in request.given
        if request.spelled(found.key) != found.name
    ]
    if request.source is not None and "stage_list" in request.source.columns and not request.stage_list:
        notes.append(f'{flag_name("stage_list")} "" names no stage: the usual selection runs, as if it were left out')
    return notes


def _json_value(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class RequestJson:
    """CI's `REQUEST` payload as SelectionRequest.to_json writes it (typed_json reads it); its flags are read
    against the option table (request_from_flags), which knows their old spellings and values."""

    command: str  # "run": the one command that selects stages (compared once, where the payload is read)
    flags: Mapping[str, object] = field(default_factory=dict)
    run_mode: RunMode = RunMode.FULL


def request_from_json(data: object, *, source: str = "the request") -> SelectionRequest:
    """A SelectionRequest from `{"command": "run", "flags": {...}}`, CI's `REQUEST` payload; a StageError
    says where it is not one (`REQUEST (flags.stage_list): expected ...`)."""
    payload = typed_json.structure(data, RequestJson, file=source, error=StageError)
    if payload.command != "run":
        raise StageError(
            f"expected a /bot run request to select stages, found /bot {payload.command}",
            where=Where(source, yaml_path="command"),
            hint='write {"command": "run", "flags": {...}}',
        )
    return replace(request_from_flags(payload.flags, source=source), run_mode=payload.run_mode)


def request_from_flags(flags: Mapping[str, object], *, source: str) -> SelectionRequest:
    """A SelectionRequest from the payload's `flags` object (SelectionRequest.to_json's shape), validated."""
    known = {found.key: found for found in OPTIONS}
    values: dict[str, object] = {}
    for written, value in flags.items():
        where = Where(source, yaml_path=f"flags.{written}")
        key = LEGACY_KEYS.get(written, written)
        found = known.get(key)
        if found is None:
            hint = did_you_mean(key, known) or f"the flags of /bot run are {', '.join(known)}"
            raise StageError(f"expected a flag of /bot run, found {key!r}", where=where, hint=hint)
        if key in values:
            raise StageError(
                f"expected {key!r} once, found it also as {written!r}", where=where, hint=f"drop {written!r}"
            )
        values[key] = _value(found, value, where)
    return SelectionRequest(**values)  # type: ignore[arg-type]  # keys and types checked above


def _value(found: Option, value: object, where: Where) -> object:
    if found.kind is OptionKind.SWITCH and value is True:
        return True
    if found.kind is OptionKind.LIST and isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    if found.kind is OptionKind.PIPELINE_ID and (value is True or (isinstance(value, str) and is_pipeline_id(value))):
        return value
    raise StageError(f"expected {found.kind.value}, found {value!r}", where=where)


def is_pipeline_id(text: str) -> bool:
    """A CI pipeline id (digits) or a local run id (`ci-tool history` lists them)."""
    return (text.isascii() and text.isdigit()) or RUN_ID.fullmatch(text) is not None
