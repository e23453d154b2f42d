"""`ci-tool run`'s plan: the reuse of the newest run of this code and request, and the selection made for the
change on this checkout, with the stages it runs here (the reused ones among them, so the run records them)."""

from __future__ import annotations

from dataclasses import dataclass

from ci_tool import gitinfo
from ci_tool.change.value import ChangeSet
from ci_tool.gitinfo import CodeVersion
from ci_tool.run.reuse_choice import ReusePlan, plan_reuse
from ci_tool.run.session import PlannedStage, RunIdentity, catalog_stages
from ci_tool.run.setup import LocalSetup
from ci_tool.run.stage_inputs import catalog_inputs
from ci_tool.stages.engines import Engine
from ci_tool.stages.select import Selection, select_for_change
from ci_tool.stages.selection_request import SelectionRequest


@dataclass(frozen=True)
class MainRun:
    code: CodeVersion | None
    scope: str
    reuse: ReusePlan
    selection: Selection

    @property
    def reused(self) -> dict[str, str]:
        """The stages that passed in the reused run, each with the run it passed in."""
        return {verdict.stage: self.reuse.passed_stages[verdict.stage] for verdict in self.selection.reused}

    @property
    def identity(self) -> RunIdentity:
        return RunIdentity(self.code, self.scope, self.reused)

    def stages(self, setup: LocalSetup) -> list[PlannedStage]:
        """The selected and reused stages, planned for this machine (no label is needed here)."""
        chosen = {stage.name.name for stage in self.selection.selected} | set(self.reused)
        return catalog_stages(
            [stage for stage in self.selection.candidates if stage.name.name in chosen],
            planner=setup.planner,
            reused_tests=self.reuse.passed_tests,
        )


def plan_main_run(
    setup: LocalSetup, wanted: SelectionRequest, *, changes: ChangeSet | None, labels: tuple[str, ...]
) -> MainRun:
    """The reuse plan and the selection of `wanted` for `changes` on this checkout."""
    code = gitinfo.code_version(setup.config.rootdir)
    inputs_of = catalog_inputs(setup.loaded, setup.waives_file)  # as catalog_stages' PlannedStage.inputs
    reuse = plan_reuse(
        setup.config.history,
        code=code,
        scope=wanted.scope,
        inputs_of=inputs_of,
        disabled=wanted.disable_reuse_test,
        named=wanted.reuse_test if isinstance(wanted.reuse_test, str) else None,
    )
    selection = select_for_change(
        setup.loaded, wanted, engine=Engine.LOCAL, changes=changes, labels=labels, passed_stages=reuse.passed_stages
    )
    return MainRun(code, wanted.scope, reuse, selection)
