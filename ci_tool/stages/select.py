"""Stage selection: a catalog, a `/bot run` request, the changed files and the PR labels in;
the ordered stages out, with the step that put each stage in or took it out. Pure.

    step  effect                                                  runs when
    1     start: every stage but Post-Merge, multi-GPU, OnDemand   always
    2     + the pre-merge multi-GPU stages                         a changed file matches multi_gpu_paths
                                                                   (not with --disable-multi-gpu-test)
    3     + the stages carrying a token (not OnDemand)             a changed file matches a tag trigger
    4-10  the option steps (selection_request.py STEP_EFFECTS)     an option that feeds the step is given
    11    keep only a file group's stages                          every changed file is in that group
                                                                   (not with --test-backend)
    12    - OnDemand stages                                        always
    13    = the stages --stage-list matches (full catalog)         --stage-list
    14    + the stages --extra-stage matches (full catalog)        --extra-stage
    16    narrow to what the change affects (cbts.py): a family     a bare /bot run or /bot run --post-merge
          that keeps tests runs `<family>-<K>-cbts` stages (every   with changed files (not with
          engine runs them: engines.py), the others drop out;       --disable-cbts)
          the docs stage runs for a docs change
    18    - stages that passed in the reused run (same code)       unless --disable-reuse-test

The order is the step numbers'; which option feeds which step is the option table's (`Option.step`), so a
new option joins its step without a change here, and a new step fails `test_every_option_step_has_a_rule`.
Name validation (step 15) happens in steps 9, 13 and 14: an exact name that is no stage, a glob that
matches none, or a GPU token no stage has is an error naming the closest catalog names (pointing at the
comment's column when the request came from a comment). Selected stages keep the catalog's order.

Then the selection is checked against the engine it runs on (engines.py: options it cannot honour are
errors) and the PR's labels (approvals.py: a selected stage whose label is missing is blocked).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ci_tool.change.value import ChangeSet
from ci_tool.errors import CiToolError, closest, did_you_mean
from ci_tool.stages.approvals import (
    POST_MERGE_APPROVED,
    BlockedStage,
    MissingApproval,
    blocked_stages,
    missing_approvals,
)
from ci_tool.stages.catalog import STAGES_LIST_HINT, Catalog, Stage, carries, path_matches, stage_glob_matches
from ci_tool.stages.catalog_load import LoadedCatalog
from ci_tool.stages.cbts import Narrowing, narrow, narrowed_stages
from ci_tool.stages.engines import (
    LIST_NARROWING_ENGINES,
    Engine,
    debug_hold_minutes,
    option_notes,
    queue_priority,
    refusals,
)
from ci_tool.stages.modes import TestMode
from ci_tool.stages.names import LEGACY_POST_MERGE, POST_MERGE, StageKind
from ci_tool.stages.selection_request import (
    OPTIONS,
    REPLACED_BY_STAGE_LIST,
    STEP_EFFECTS,
    Option,
    RunMode,
    SelectionRequest,
    Step,
    flag_name,
    request_notes,
)

# The steps that select by the change's paths alone, never by what the request says.
CHANGE_STEPS = frozenset({Step.MULTI_GPU_PATHS, Step.TAG_TRIGGERS, Step.CBTS})


@dataclass(frozen=True)
class StageVerdict:
    """Whether a stage runs, and the step (and why) that decided it last."""

    stage: str
    selected: bool
    step: Step
    reason: str


@dataclass(frozen=True)
class Selection:
    """Everything a consumer needs to act on a request: the stages to run, the ones that wait for an
    approval label, every stage's verdict, errors, notes, and what the run may do (fail-fast, merge gate).
    The bot's reply, `ci-tool run`, `ci-tool stage select` and the generated pipelines all read this."""

    request: SelectionRequest
    engine: Engine
    selected: tuple[Stage, ...]  # chosen by the steps, in catalog order
    verdicts: tuple[StageVerdict, ...]  # one per catalog stage, in catalog order
    unknown_names: tuple[CiToolError, ...] = ()  # names, globs and GPU tokens the catalog lacks
    refused: tuple[CiToolError, ...] = ()  # options the engine cannot honour
    blocked: tuple[BlockedStage, ...] = ()  # selected stages whose approval label the PR lacks
    missing: tuple[MissingApproval, ...] = ()  # the labels the blocked stages wait for, and why
    notes: tuple[str, ...] = ()  # options that had no effect, and why
    narrowing: Narrowing | None = None  # what change-based selection made of the changed files
    candidates: tuple[Stage, ...] = ()  # every stage with a verdict, in verdict order (narrowed ones too)

    @property
    def errors(self) -> tuple[CiToolError, ...]:
        """Why the request cannot run as written (nothing runs when there is one)."""
        return (*self.refused, *self.unknown_names)

    @property
    def stages(self) -> tuple[Stage, ...]:
        """The stages to run: the selected ones that are not blocked."""
        waiting = {blocked.stage.name.name for blocked in self.blocked}
        return tuple(stage for stage in self.selected if stage.name.name not in waiting)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(stage.name.name for stage in self.stages)

    @property
    def asked_blocked(self) -> tuple[BlockedStage, ...]:
        """The blocked stages the request itself asks for (a flag, a stage name or glob, a full --post-merge),
        as against those that only the change's paths add (a multi-GPU path, a tag trigger): a run that asks
        for what it may not run is refused whole, while one whose change adds it runs the other stages."""
        steps = {verdict.stage: verdict.step for verdict in self.verdicts}
        return tuple(
            blocked
            for blocked in self.blocked
            if blocked.label == POST_MERGE_APPROVED or steps[blocked.stage.name.name] not in CHANGE_STEPS
        )

    @property
    def excluded(self) -> tuple[StageVerdict, ...]:
        return tuple(verdict for verdict in self.verdicts if not verdict.selected)

    @property
    def reused(self) -> tuple[StageVerdict, ...]:
        """Stages not run because they passed in the reused pipeline (they count as passed)."""
        return tuple(v for v in self.excluded if v.step == Step.REUSE)

    @property
    def fail_fast(self) -> bool:
        return self.request.fail_fast

    @property
    def custom_run(self) -> bool:
        """A partial selection: the run may not set the merge gate green."""
        return self.request.custom_run

    @property
    def queue_priority(self) -> int:
        """The queue priority of the run's builds (Jenkins' PRIORITY parameter; lower runs first)."""
        return queue_priority(self.request, self.engine)

    @property
    def debug_hold_minutes(self) -> int:
        """How long a failed stage keeps its agent and workspace (`--debug` on Jenkins; 0: not at all)."""
        return debug_hold_minutes(self.request, self.engine)

    @property
    def merge_gate(self) -> bool:
        """Whether a green run of this selection may turn the merge gate green."""
        return not self.custom_run and not self.errors and not self.blocked

    def to_json(self) -> dict[str, object]:
        """The `ci-tool stage select --json` object: what CI reads to know what to start and how."""
        return {
            "stages": list(self.names),
            "blocked": [blocked.to_json() for blocked in self.blocked],
            "excluded": [{"stage": v.stage, "step": v.step.value, "reason": v.reason} for v in self.excluded],
            "missing_approvals": [{"label": m.label, "reasons": list(m.reasons)} for m in self.missing],
            "fail_fast": self.fail_fast,
            "stage_run_args": list(self.request.stage_run_args),
            "queue_priority": self.queue_priority,
            "debug_hold_minutes": self.debug_hold_minutes,
            "custom_run": self.custom_run,
            "merge_gate": self.merge_gate,
            "notes": list(self.notes),
            "errors": [str(error) for error in self.errors],
            "cbts": self.narrowing.to_json() if self.narrowing is not None else None,
        }


@dataclass(frozen=True)
class _Inputs:
    catalog: Catalog
    request: SelectionRequest
    changed_files: tuple[str, ...]
    passed_stages: Mapping[str, str]  # stage -> the run it passed in
    narrowing: Narrowing | None
    engine: Engine


@dataclass
class _State:
    """The verdict of every stage so far; steps put stages in and take them out."""

    catalog: Catalog
    verdicts: dict[str, StageVerdict] = field(default_factory=dict)
    errors: list[CiToolError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    narrowed: dict[str, list[Stage]] = field(default_factory=dict)  # family -> its `-cbts` stages

    def stages(self) -> list[Stage]:
        """Every stage with a verdict: the catalog's, each family's narrowed stages after its own."""
        found: list[Stage] = []
        for family in self.catalog.families:
            found += [*self.catalog.stages_of(family), *self.narrowed.get(family.name.name, ())]
        return found

    def selected(self) -> list[Stage]:
        return [stage for stage in self.stages() if self.verdicts[stage.name.name].selected]

    def put(self, stages: Iterable[Stage], step: Step, reason: str) -> None:
        for stage in stages:
            self.verdicts[stage.name.name] = StageVerdict(stage.name.name, True, step, reason)

    def drop(self, stages: Iterable[Stage], step: Step, reason: str) -> None:
        for stage in stages:
            self.verdicts[stage.name.name] = StageVerdict(stage.name.name, False, step, reason)

    def keep(self, keep: Callable[[Stage], bool], step: Step, reason: str) -> None:
        self.drop([stage for stage in self.selected() if not keep(stage)], step, reason)

    def replace(self, stages: Sequence[Stage], step: Step, chosen: str, others: str) -> None:
        names = {stage.name.name for stage in stages}
        self.drop([stage for stage in self.catalog.stages if stage.name.name not in names], step, others)
        self.put(stages, step, chosen)


RuleFn = Callable[[_State, _Inputs, tuple[Option, ...]], None]


@dataclass(frozen=True)
class Rule:
    """One step of the selection. A rule fed by options runs when one of them is given (or `always`)."""

    step: Step
    run: RuleFn
    fed: bool = False  # runs when an option feeding its step is given
    always: bool = False


def select_stages(
    catalog: Catalog,
    request: SelectionRequest,
    *,
    engine: Engine,
    changed_files: Collection[str] = (),
    labels: Collection[str] = (),
    passed_stages: Mapping[str, str] | None = None,
    narrowing: Narrowing | None = None,
) -> Selection:
    """Resolve a `/bot run` request against the catalog for `engine` (see the module docstring).
    `passed_stages`: the stages the reused run passed, each with the run it passed in (history/reuse_sources.py
    finds them);
    `narrowing`: what change-based selection makes of the changed files (cbts.narrow)."""
    inputs = _Inputs(catalog, request, tuple(changed_files), dict(passed_stages or {}), narrowing, engine)
    state = _State(catalog)
    for rule in RULES:
        present = tuple(o for o in OPTIONS if rule.fed and o.step is rule.step and request.has(o.key))
        if not rule.fed or rule.always or present:
            rule.run(state, inputs, present)
    selected = tuple(state.selected())
    blocked = blocked_stages(request, selected, labels, catalog=catalog.stages)
    return Selection(
        request=request,
        engine=engine,
        selected=selected,
        verdicts=tuple(state.verdicts[stage.name.name] for stage in state.stages()),
        unknown_names=tuple(state.errors),
        refused=tuple(refusals(request, engine)),
        blocked=blocked,
        missing=missing_approvals(request, blocked, catalog=catalog.stages),
        notes=(*state.notes, *request_notes(request), *option_notes(request, engine)),
        narrowing=narrowing,
        candidates=tuple(state.stages()),
    )


def select_for_change(
    loaded: LoadedCatalog,
    request: SelectionRequest,
    *,
    engine: Engine,
    changes: ChangeSet | None,
    labels: Collection[str] = (),
    passed_stages: Mapping[str, str] | None = None,
) -> Selection:
    """The selection of `request` for a change: steps 2, 3 and 11 read its paths, step 16 its narrowing
    (cbts.narrow, by the catalog's planner)."""
    catalog = loaded.catalog
    return select_stages(
        catalog,
        request,
        engine=engine,
        changed_files=changes.files if changes is not None else (),
        labels=labels,
        passed_stages=passed_stages,
        narrowing=narrow(catalog, loaded.planner, request, changes),
    )


# ---------------------------------------------------------------- the steps, in order


def _default_set(state: _State, inputs: _Inputs, _: tuple[Option, ...]) -> None:
    for stage in inputs.catalog.stages:
        if stage.on_demand:
            state.drop(
                [stage], Step.DEFAULT_SET, "OnDemand stage: runs only when named in --stage-list or --extra-stage"
            )
        elif stage.post_merge:
            state.drop([stage], Step.DEFAULT_SET, "Post-Merge stage: not in the pre-merge set")
        elif stage.multi_gpu:
            state.drop([stage], Step.DEFAULT_SET, "multi-GPU stage: not in the pre-merge set")
        else:
            state.put([stage], Step.DEFAULT_SET, "pre-merge set")


def _multi_gpu_paths(state: _State, inputs: _Inputs, _: tuple[Option, ...]) -> None:
    if inputs.request.disable_multi_gpu_test:
        return
    hit = _first_hit(inputs.changed_files, inputs.catalog.multi_gpu_paths)
    if hit is not None:
        path, rule = hit
        stages = [s for s in inputs.catalog.stages if s.multi_gpu and not s.post_merge and not s.on_demand]
        state.put(stages, Step.MULTI_GPU_PATHS, f"{path} changed (multi-GPU path {rule!r})")


def _tag_triggers(state: _State, inputs: _Inputs, _: tuple[Option, ...]) -> None:
    for trigger in inputs.catalog.tag_triggers:
        hit = _first_hit(inputs.changed_files, (trigger.path,))
        if hit is not None:
            stages = [s for s in inputs.catalog.stages if carries(s.name, trigger.token) and not s.on_demand]
            state.put(stages, Step.TAG_TRIGGERS, f"{hit[0]} changed (adds {trigger.token} stages)")


def _post_merge(state: _State, inputs: _Inputs, flags: tuple[Option, ...]) -> None:
    stages = [s for s in inputs.catalog.stages if (s.post_merge or s.multi_gpu) and not s.on_demand]
    state.put(stages, Step.POST_MERGE, _effect(flags))


def _skip_test(state: _State, inputs: _Inputs, flags: tuple[Option, ...]) -> None:
    stages = [s for s in inputs.catalog.stages if not s.name.is_test]
    state.replace(stages, Step.SKIP_TEST, _effect(flags), f"{flags[0].name} runs no test stages")


def _add_multi_gpu(state: _State, inputs: _Inputs, flags: tuple[Option, ...]) -> None:
    stages = [s for s in inputs.catalog.stages if s.multi_gpu and not s.post_merge and not s.on_demand]
    state.put(stages, Step.ADD_MULTI_GPU, _effect(flags))


def _only_multi_gpu(state: _State, inputs: _Inputs, flags: tuple[Option, ...]) -> None:
    post_merge = inputs.request.post_merge
    stages = [s for s in inputs.catalog.stages if s.multi_gpu and not s.on_demand and (post_merge or not s.post_merge)]
    state.replace(stages, Step.ONLY_MULTI_GPU, _effect(flags), f"{flags[0].name} runs only multi-GPU stages")


def _disable_multi_gpu(state: _State, inputs: _Inputs, flags: tuple[Option, ...]) -> None:
    state.keep(lambda s: not s.multi_gpu, Step.DISABLE_MULTI_GPU, _effect(flags))


def _gpu_type(state: _State, inputs: _Inputs, flags: tuple[Option, ...]) -> None:
    flag = flags[0]
    wanted = inputs.request.items(flag.key)
    known = sorted({s.name.gpu for s in inputs.catalog.stages if s.name.gpu is not None})
    for index, token in enumerate(wanted):
        if token not in known:
            message = f"{flag.name}: expected a GPU token of the catalog ({', '.join(known)}), found {token!r}"
            state.errors.append(inputs.request.error(flag.key, index, message, _near(token, known)))
    reason = f"{flag.name} keeps GPU {', '.join(wanted)}"
    state.keep(lambda s: s.name.gpu in wanted, Step.GPU_TYPE, reason)


def _test_backend(state: _State, inputs: _Inputs, flags: tuple[Option, ...]) -> None:
    flag = flags[0]
    wanted = {item.lower() for item in inputs.request.items(flag.key)}
    counted = set(flag.choices)  # only these backend tokens count; other stages have "no backend"
    reason = f"{flag.name} keeps backend {', '.join(sorted(wanted))} and stages of no listed backend kind"
    state.keep(lambda s: s.name.backend not in counted or s.name.backend in wanted, Step.TEST_BACKEND, reason)


def _file_groups(state: _State, inputs: _Inputs, _: tuple[Option, ...]) -> None:
    if inputs.request.test_backend or not inputs.changed_files:
        return
    group = next((g for g in inputs.catalog.file_groups if all(map(g.covers, inputs.changed_files))), None)
    if group is not None:
        reason = f"only {group.name} files changed: runs {', '.join(group.stages)}"
        state.keep(lambda s: any(stage_glob_matches(p, s.name.name) for p in group.stages), Step.FILE_GROUPS, reason)


def _drop_on_demand(state: _State, inputs: _Inputs, _: tuple[Option, ...]) -> None:
    state.keep(lambda s: not s.on_demand, Step.DROP_ON_DEMAND, "OnDemand stage: runs only when named")


def _stage_list(state: _State, inputs: _Inputs, flags: tuple[Option, ...]) -> None:
    flag = flags[0]
    matched = _matches(state, inputs, flag)
    chosen = [s for s in inputs.catalog.stages if s.name.name in matched]
    for stage in chosen:
        state.put([stage], Step.STAGE_LIST, f"{flag.name} {matched[stage.name.name]}")
    names = set(matched)
    others = [s for s in inputs.catalog.stages if s.name.name not in names]
    state.drop(others, Step.STAGE_LIST, f"not in {flag.name}")
    moot = [flag_name(key) for key in REPLACED_BY_STAGE_LIST if inputs.request.has(key)]
    state.notes += [f"{name} had no effect: {flag.name} replaces the selection" for name in moot]


def _extra_stage(state: _State, inputs: _Inputs, flags: tuple[Option, ...]) -> None:
    flag = flags[0]
    matched = _matches(state, inputs, flag)
    for stage in inputs.catalog.stages:
        if stage.name.name in matched and not state.verdicts[stage.name.name].selected:
            state.put([stage], Step.EXTRA_STAGE, f"{flag.name} {matched[stage.name.name]}")


def _only_perf_sanity(state: _State, inputs: _Inputs, flags: tuple[Option, ...]) -> None:
    state.keep(lambda s: s.mode is TestMode.PERF_SANITY, Step.ONLY_PERF_SANITY, f"{flags[0].name}: not PerfSanity")


def _run_mode(state: _State, inputs: _Inputs, _: tuple[Option, ...]) -> None:
    mode = inputs.request.run_mode
    if mode is RunMode.NIGHTLY_RELEASE:
        state.keep(lambda s: s.name.kind is StageKind.PACKAGE_SANITY, Step.RUN_MODE, f"run mode {mode}: sanity only")
    elif mode is RunMode.RELEASE_CHECK:
        state.keep(lambda s: not s.name.is_test, Step.RUN_MODE, f"run mode {mode}: no test stages")


def _cbts(state: _State, inputs: _Inputs, flags: tuple[Option, ...]) -> None:
    narrowing = inputs.narrowing
    if narrowing is None or not narrowing.narrows:
        return
    for stage in state.selected():
        kept = narrowing.families.get(stage.family.name.name)
        if stage.name.kind is StageKind.BUILD_DOCS:
            if not narrowing.docs:
                state.drop([stage], Step.CBTS, "change-based selection: no docs change")
        elif kept is None:
            state.drop([stage], Step.CBTS, "change-based selection: the change touches none of its tests")
        elif kept.full:
            state.put([stage], Step.CBTS, f"change-based selection: its full set ({kept.full})")
        elif not stage.name.is_test:
            state.put([stage], Step.CBTS, f"change-based selection: the change touches its {kept.lines} line(s)")
        elif inputs.engine not in LIST_NARROWING_ENGINES:
            reason = f"change-based selection: the change touches its tests ({inputs.engine} runs whole shards)"
            state.put([stage], Step.CBTS, reason)
        else:
            narrowed = state.narrowed.setdefault(
                stage.family.name.name, narrowed_stages(stage.family, kept.shards, kept.line_filter)
            )
            names = ", ".join(found.name.name for found in narrowed)
            state.drop([stage], Step.CBTS, f"change-based selection: runs as {names}")
            reason = f"change-based selection: {kept.lines} line(s) of the family, {kept.shards} shard(s)"
            state.put(narrowed, Step.CBTS, "; ".join([reason, *kept.touched]))


def _reuse(state: _State, inputs: _Inputs, flags: tuple[Option, ...]) -> None:
    if inputs.request.disable_reuse_test:
        return
    for stage in state.selected():
        run = inputs.passed_stages.get(stage.name.name)
        if run is not None:
            state.drop([stage], Step.REUSE, reused_reason(run))


RULES: tuple[Rule, ...] = tuple(
    sorted(
        (
            Rule(Step.DEFAULT_SET, _default_set),
            Rule(Step.MULTI_GPU_PATHS, _multi_gpu_paths),
            Rule(Step.TAG_TRIGGERS, _tag_triggers),
            Rule(Step.POST_MERGE, _post_merge, fed=True),
            Rule(Step.SKIP_TEST, _skip_test, fed=True),
            Rule(Step.ADD_MULTI_GPU, _add_multi_gpu, fed=True),
            Rule(Step.ONLY_MULTI_GPU, _only_multi_gpu, fed=True),
            Rule(Step.DISABLE_MULTI_GPU, _disable_multi_gpu, fed=True),
            Rule(Step.GPU_TYPE, _gpu_type, fed=True),
            Rule(Step.TEST_BACKEND, _test_backend, fed=True),
            Rule(Step.FILE_GROUPS, _file_groups),
            Rule(Step.DROP_ON_DEMAND, _drop_on_demand),
            Rule(Step.STAGE_LIST, _stage_list, fed=True),
            Rule(Step.EXTRA_STAGE, _extra_stage, fed=True),
            Rule(Step.ONLY_PERF_SANITY, _only_perf_sanity, fed=True),
            Rule(Step.CBTS, _cbts, fed=True, always=True),  # narrowing is the default; cbts.py turns it off
            Rule(Step.RUN_MODE, _run_mode),
            Rule(Step.REUSE, _reuse, fed=True, always=True),  # reuse is the default
        ),
        key=lambda rule: rule.step,
    )
)


# ---------------------------------------------------------------- helpers


def reused_reason(run: str) -> str:
    """Why a reused stage does not run: the plan, the report and the history say it alike."""
    return f"reused from run {run}"


def _effect(flags: tuple[Option, ...]) -> str:
    step = flags[0].step
    assert step is not None  # only option rules call this
    return f"{' '.join(flag.name for flag in flags)} {STEP_EFFECTS[step]}"


def _first_hit(paths: Sequence[str], rules: Sequence[str]) -> tuple[str, str] | None:
    """The first changed path that a rule matches, and the rule."""
    for path in paths:
        for rule in rules:
            if path_matches(rule, path):
                return path, rule
    return None


def _matches(state: _State, inputs: _Inputs, flag: Option) -> dict[str, str]:
    """Stage name -> why it matched, for each item of a --stage-list/--extra-stage; errors for items
    that match nothing."""
    names = inputs.catalog.names
    matched: dict[str, str] = {}
    for index, item in enumerate(inputs.request.items(flag.key)):
        pattern = item.replace(LEGACY_POST_MERGE, POST_MERGE)
        hits = [name for name in names if stage_glob_matches(pattern, name)]
        if not hits:
            if "*" in item:
                message = f"{flag.name}: expected the glob {item!r} to match a stage of the catalog, found none"
            else:
                message = f"{flag.name}: expected a stage of the catalog, found {item!r}"
            hint = _glob_hint(item, inputs.catalog) if "*" in item else _near(item, names)
            state.errors.append(inputs.request.error(flag.key, index, message, hint))
        for name in hits:
            matched.setdefault(name, f"matches {item!r}" if "*" in item else "names it")
    return matched


def _glob_hint(pattern: str, catalog: Catalog) -> str:
    """For a glob that matches nothing: the catalog word closest to one of its literal pieces."""
    words = sorted({s.name.gpu or "" for s in catalog.stages} | {f.name.name for f in catalog.families} - {""})
    for piece in (p.strip("-") for p in pattern.split("*")):
        near = closest(piece, words, limit=1) if piece else []
        if near and near[0] != piece:
            return f"no stage name holds {piece!r}; did you mean {near[0]!r}?"
    return STAGES_LIST_HINT


def _near(name: str, choices: Sequence[str]) -> str:
    return did_you_mean(name, choices) or STAGES_LIST_HINT


def rule_for(step: Step) -> Rule | None:
    """The rule an option's step runs (None: the step has no rule, a bug the tests catch)."""
    return next((rule for rule in RULES if rule.fed and rule.step is step), None)


def option_steps() -> tuple[Step, ...]:
    """The steps the option table feeds."""
    return tuple(dict.fromkeys(found.step for found in OPTIONS if found.step is not None))
