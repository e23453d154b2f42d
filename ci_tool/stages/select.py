"""Stage selection (reference §4.8): a catalog, a `/bot run` request, the changed files and the PR labels in;
the ordered stages out, with the step that put each stage in or took it out. Pure.

    step  effect                                                  runs when
    1     start: every stage but Post-Merge, multi-GPU, OnDemand   always
    2     + the pre-merge multi-GPU stages                         a changed file matches multi_gpu_paths
                                                                   (not with --disable-multi-gpu-test)
    3     + the stages carrying a token (not OnDemand)             a changed file matches a tag trigger
    4-10  the flag steps (bot/flags.py STEP_EFFECTS)               a flag that feeds the step is given
    11    keep only a file group's stages                          every changed file is in that group
                                                                   (not with --test-backend)
    12    - OnDemand stages                                        always
    13    = the stages --stage-list matches (full catalog)         --stage-list
    14    + the stages --extra-stage matches (full catalog)        --extra-stage
    18    - stages that passed in the reused pipeline              unless --disable-reuse-test

The order is the step numbers'; which flag feeds which step is the flag table's (`Flag.feeds`), so a new
flag joins its step without a change here, and a new step fails `test_every_flag_step_has_a_rule`.
Name validation (step 15) happens in steps 9, 13 and 14: an exact name that is no stage, a glob that
matches none, or a GPU token no stage has is an error naming the closest catalog names (pointing at the
comment's column when the request came from a comment). Selected stages keep the catalog's order.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field

from ci_tool.bot.approvals import MissingApproval, missing_approvals
from ci_tool.bot.flags import FLAGS, STEP_EFFECTS, Flag, Step
from ci_tool.bot.request import BotRequest
from ci_tool.errors import CiToolError, StageError, closest
from ci_tool.stages.catalog import Catalog, Stage, carries, path_matches, stage_glob_matches
from ci_tool.stages.names import LEGACY_POST_MERGE, POST_MERGE


@dataclass(frozen=True)
class Verdict:
    """Whether a stage runs, and the step (and why) that decided it last."""

    stage: str
    selected: bool
    step: int
    reason: str


@dataclass(frozen=True)
class Selection:
    request: BotRequest
    stages: tuple[Stage, ...]  # selected, in catalog order
    verdicts: tuple[Verdict, ...]  # one per catalog stage, in catalog order
    errors: tuple[CiToolError, ...] = ()
    missing: tuple[MissingApproval, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(stage.name.name for stage in self.stages)

    @property
    def excluded(self) -> tuple[Verdict, ...]:
        return tuple(verdict for verdict in self.verdicts if not verdict.selected)

    @property
    def reused(self) -> tuple[Verdict, ...]:
        """Stages not run because they passed in the reused pipeline (they count as passed)."""
        return tuple(v for v in self.excluded if v.step == Step.REUSE.value)

    @property
    def custom_run(self) -> bool:
        """A partial selection (reference §4.9): the run may not set the merge gate green."""
        return self.request.is_custom_run

    @property
    def merge_gate(self) -> bool:
        """Whether a green run of this selection may turn the merge gate green."""
        return not self.custom_run and not self.errors


@dataclass(frozen=True)
class _Inputs:
    catalog: Catalog
    request: BotRequest
    changed_files: tuple[str, ...]
    passed_stages: frozenset[str]


@dataclass
class _State:
    """The verdict of every stage so far; steps put stages in and take them out."""

    catalog: Catalog
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    errors: list[CiToolError] = field(default_factory=list)

    def selected(self) -> list[Stage]:
        return [stage for stage in self.catalog.stages if self.verdicts[stage.name.name].selected]

    def put(self, stages: Iterable[Stage], step: int, reason: str) -> None:
        for stage in stages:
            self.verdicts[stage.name.name] = Verdict(stage.name.name, True, step, reason)

    def drop(self, stages: Iterable[Stage], step: int, reason: str) -> None:
        for stage in stages:
            self.verdicts[stage.name.name] = Verdict(stage.name.name, False, step, reason)

    def keep(self, keep: Callable[[Stage], bool], step: int, reason: str) -> None:
        self.drop([stage for stage in self.selected() if not keep(stage)], step, reason)

    def replace(self, stages: Sequence[Stage], step: int, chosen: str, others: str) -> None:
        names = {stage.name.name for stage in stages}
        self.drop([stage for stage in self.catalog.stages if stage.name.name not in names], step, others)
        self.put(stages, step, chosen)


RuleFn = Callable[[_State, _Inputs, tuple[Flag, ...]], None]


@dataclass(frozen=True)
class Rule:
    """One step of the selection. A rule fed by flags runs when one of them is given (or `always`)."""

    step: int
    run: RuleFn
    feeds: Step | None = None
    always: bool = False


def select_stages(
    catalog: Catalog,
    request: BotRequest,
    *,
    changed_files: Collection[str] = (),
    labels: Collection[str] = (),
    passed_stages: Collection[str] = (),
) -> Selection:
    """Resolve a `/bot run` request against the catalog (see the module docstring for the steps)."""
    if request.command != "run":
        raise StageError(f"expected a /bot run request to select stages, found /bot {request.command}")
    inputs = _Inputs(catalog, request, tuple(changed_files), frozenset(passed_stages))
    state = _State(catalog)
    for rule in RULES:
        present = tuple(f for f in FLAGS if rule.feeds is not None and f.feeds is rule.feeds and request.has(f.key))
        if rule.feeds is None or rule.always or present:
            rule.run(state, inputs, present)
    stages = tuple(state.selected())
    names = [stage.name.name for stage in stages]
    return Selection(
        request=request,
        stages=stages,
        verdicts=tuple(state.verdicts[stage.name.name] for stage in catalog.stages),
        errors=tuple(state.errors),
        missing=missing_approvals(request, labels, names),
    )


# ---------------------------------------------------------------- the steps, in order


def _default_set(state: _State, inputs: _Inputs, _: tuple[Flag, ...]) -> None:
    for stage in inputs.catalog.stages:
        if stage.on_demand:
            state.drop([stage], 1, "OnDemand stage: runs only when named in --stage-list or --extra-stage")
        elif stage.post_merge:
            state.drop([stage], 1, "Post-Merge stage: not in the pre-merge set")
        elif stage.multi_gpu:
            state.drop([stage], 1, "multi-GPU stage: not in the pre-merge set")
        else:
            state.put([stage], 1, "pre-merge set")


def _multi_gpu_paths(state: _State, inputs: _Inputs, _: tuple[Flag, ...]) -> None:
    if inputs.request.has("disable_multi_gpu_test"):
        return
    hit = _first_hit(inputs.changed_files, inputs.catalog.multi_gpu_paths)
    if hit is not None:
        path, rule = hit
        stages = [s for s in inputs.catalog.stages if s.multi_gpu and not s.post_merge and not s.on_demand]
        state.put(stages, 2, f"{path} changed (multi-GPU path {rule!r})")


def _tag_triggers(state: _State, inputs: _Inputs, _: tuple[Flag, ...]) -> None:
    for trigger in inputs.catalog.tag_triggers:
        hit = _first_hit(inputs.changed_files, (trigger.path,))
        if hit is not None:
            stages = [s for s in inputs.catalog.stages if carries(s.name, trigger.token) and not s.on_demand]
            state.put(stages, 3, f"{hit[0]} changed (adds {trigger.token} stages)")


def _post_merge(state: _State, inputs: _Inputs, flags: tuple[Flag, ...]) -> None:
    stages = [s for s in inputs.catalog.stages if (s.post_merge or s.multi_gpu) and not s.on_demand]
    state.put(stages, Step.POST_MERGE.value, _effect(flags))


def _skip_test(state: _State, inputs: _Inputs, flags: tuple[Flag, ...]) -> None:
    stages = [s for s in inputs.catalog.stages if not s.name.is_test]
    state.replace(stages, Step.SKIP_TEST.value, _effect(flags), f"{flags[0].name} runs no test stages")


def _add_multi_gpu(state: _State, inputs: _Inputs, flags: tuple[Flag, ...]) -> None:
    stages = [s for s in inputs.catalog.stages if s.multi_gpu and not s.post_merge and not s.on_demand]
    state.put(stages, Step.ADD_MULTI_GPU.value, _effect(flags))


def _only_multi_gpu(state: _State, inputs: _Inputs, flags: tuple[Flag, ...]) -> None:
    post_merge = inputs.request.has("post_merge")
    stages = [s for s in inputs.catalog.stages if s.multi_gpu and not s.on_demand and (post_merge or not s.post_merge)]
    state.replace(stages, Step.ONLY_MULTI_GPU.value, _effect(flags), f"{flags[0].name} runs only multi-GPU stages")


def _disable_multi_gpu(state: _State, inputs: _Inputs, flags: tuple[Flag, ...]) -> None:
    state.keep(lambda s: not s.multi_gpu, Step.DISABLE_MULTI_GPU.value, _effect(flags))


def _gpu_type(state: _State, inputs: _Inputs, flags: tuple[Flag, ...]) -> None:
    flag = flags[0]
    wanted = inputs.request.items(flag.key)
    known = sorted({s.name.gpu for s in inputs.catalog.stages if s.name.gpu is not None})
    for index, token in enumerate(wanted):
        if token not in known:
            message = f"{flag.name}: expected a GPU token of the catalog ({', '.join(known)}), found {token!r}"
            state.errors.append(_error(inputs.request, flag.key, index, message, _near(token, known)))
    reason = f"{flag.name} keeps GPU {', '.join(wanted)}"
    state.keep(lambda s: s.name.gpu in wanted, Step.GPU_TYPE.value, reason)


def _test_backend(state: _State, inputs: _Inputs, flags: tuple[Flag, ...]) -> None:
    flag = flags[0]
    wanted = {item.lower() for item in inputs.request.items(flag.key)}
    counted = set(flag.choices)  # only these backend tokens count; other stages have "no backend"
    reason = f"{flag.name} keeps backend {', '.join(sorted(wanted))} and stages of no listed backend kind"
    state.keep(lambda s: s.name.backend not in counted or s.name.backend in wanted, Step.TEST_BACKEND.value, reason)


def _file_groups(state: _State, inputs: _Inputs, _: tuple[Flag, ...]) -> None:
    if inputs.request.has("test_backend") or not inputs.changed_files:
        return
    group = next((g for g in inputs.catalog.file_groups if all(map(g.covers, inputs.changed_files))), None)
    if group is not None:
        reason = f"only {group.name} files changed: runs {', '.join(group.stages)}"
        state.keep(lambda s: any(stage_glob_matches(p, s.name.name) for p in group.stages), 11, reason)


def _drop_on_demand(state: _State, inputs: _Inputs, _: tuple[Flag, ...]) -> None:
    state.keep(lambda s: not s.on_demand, 12, "OnDemand stage: runs only when named")


def _stage_list(state: _State, inputs: _Inputs, flags: tuple[Flag, ...]) -> None:
    flag = flags[0]
    matched = _matches(state, inputs, flag)
    chosen = [s for s in inputs.catalog.stages if s.name.name in matched]
    for stage in chosen:
        state.put([stage], Step.STAGE_LIST.value, f"{flag.name} {matched[stage.name.name]}")
    names = set(matched)
    others = [s for s in inputs.catalog.stages if s.name.name not in names]
    state.drop(others, Step.STAGE_LIST.value, f"not in {flag.name}")


def _extra_stage(state: _State, inputs: _Inputs, flags: tuple[Flag, ...]) -> None:
    flag = flags[0]
    matched = _matches(state, inputs, flag)
    for stage in inputs.catalog.stages:
        if stage.name.name in matched and not state.verdicts[stage.name.name].selected:
            state.put([stage], Step.EXTRA_STAGE.value, f"{flag.name} {matched[stage.name.name]}")


def _reuse(state: _State, inputs: _Inputs, flags: tuple[Flag, ...]) -> None:
    if inputs.request.has("disable_reuse_test"):
        return
    reason = "passed in the reused pipeline: not run again"
    state.keep(lambda s: s.name.name not in inputs.passed_stages, Step.REUSE.value, reason)


RULES: tuple[Rule, ...] = tuple(
    sorted(
        (
            Rule(1, _default_set),
            Rule(2, _multi_gpu_paths),
            Rule(3, _tag_triggers),
            Rule(Step.POST_MERGE.value, _post_merge, Step.POST_MERGE),
            Rule(Step.SKIP_TEST.value, _skip_test, Step.SKIP_TEST),
            Rule(Step.ADD_MULTI_GPU.value, _add_multi_gpu, Step.ADD_MULTI_GPU),
            Rule(Step.ONLY_MULTI_GPU.value, _only_multi_gpu, Step.ONLY_MULTI_GPU),
            Rule(Step.DISABLE_MULTI_GPU.value, _disable_multi_gpu, Step.DISABLE_MULTI_GPU),
            Rule(Step.GPU_TYPE.value, _gpu_type, Step.GPU_TYPE),
            Rule(Step.TEST_BACKEND.value, _test_backend, Step.TEST_BACKEND),
            Rule(11, _file_groups),
            Rule(12, _drop_on_demand),
            Rule(Step.STAGE_LIST.value, _stage_list, Step.STAGE_LIST),
            Rule(Step.EXTRA_STAGE.value, _extra_stage, Step.EXTRA_STAGE),
            Rule(Step.REUSE.value, _reuse, Step.REUSE, always=True),  # reuse is the default
        ),
        key=lambda rule: rule.step,
    )
)


# ---------------------------------------------------------------- helpers


def _effect(flags: tuple[Flag, ...]) -> str:
    step = flags[0].feeds
    assert step is not None  # only flag rules call this
    return f"{' '.join(flag.name for flag in flags)} {STEP_EFFECTS[step]}"


def _first_hit(paths: Sequence[str], rules: Sequence[str]) -> tuple[str, str] | None:
    """The first changed path that a rule matches, and the rule."""
    for path in paths:
        for rule in rules:
            if path_matches(rule, path):
                return path, rule
    return None


def _matches(state: _State, inputs: _Inputs, flag: Flag) -> dict[str, str]:
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
            state.errors.append(_error(inputs.request, flag.key, index, message, hint))
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
    return "`ci-tool stages list` prints every stage"


def _near(name: str, choices: Sequence[str]) -> str:
    near = closest(name, choices)
    if near:
        return "did you mean " + " or ".join(repr(n) for n in near) + "?"
    return "`ci-tool stages list` prints every stage"


def _error(request: BotRequest, key: str, index: int, message: str, hint: str) -> CiToolError:
    """An error at the item's column when the request came from a comment, else a plain StageError."""
    if key in dict(request.columns):
        return request.error_at(key, index, message, hint)
    return StageError(message, hint=hint)


def rule_for(step: Step) -> Rule | None:
    """The rule a flag step runs (None: the step has no rule, a bug the tests catch)."""
    return next((rule for rule in RULES if rule.feeds is step), None)


def flag_steps() -> tuple[Step, ...]:
    """The steps the flag table feeds."""
    return tuple(dict.fromkeys(flag.feeds for flag in FLAGS if flag.feeds is not None))
