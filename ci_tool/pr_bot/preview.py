"""The third step of answering a comment: the plan its reply previews. `bot handle` plans a request on the
pull request's head, as the build will select it there: the catalog with the test-db lists as the head has
them, and the stages that passed on the head already (the build's selection reuses them from the same
history); the plan settles the decision (settle.py). `bot plan` plans a comment for the change
its options describe, with no pull request to read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ci_tool.bot.event import Decision
from ci_tool.bot.flags import SubCommand
from ci_tool.bot.run_plan import RunPlan, plan_run
from ci_tool.change.build import GitRange, read_change
from ci_tool.change.value import ChangeSet
from ci_tool.dispatch.model import PullRequest
from ci_tool.errors import TestDbError
from ci_tool.gitinfo import CodeVersion
from ci_tool.history.store import history_path
from ci_tool.layout import waives_file_of
from ci_tool.perf.baselines import BASELINE_DIR
from ci_tool.perf.blind_gate import throughput_baselined
from ci_tool.pr_bot.read import Reached
from ci_tool.pr_bot.settle import settle
from ci_tool.run.reuse_choice import plan_reuse
from ci_tool.run.stage_inputs import catalog_inputs
from ci_tool.stages.catalog_load import LoadedCatalog, open_catalog
from ci_tool.stages.selection_request import SelectionRequest


@dataclass(frozen=True)
class CatalogFiles:
    """This checkout's catalog, test-db and durations (the options of `bot handle` and `bot plan`)."""

    catalog_path: Path
    test_db: Path
    durations_path: Path | None


@dataclass(frozen=True)
class HeadInputs:
    """What the preview reads: this checkout's catalog, test-db and durations, the history, and the pull
    request's change, labels and head commit (None without a pull request)."""

    catalog_path: Path
    test_db: Path
    durations_path: Path | None
    history_option: Path | None  # --history (None: $CI_TOOL_HISTORY, else the default file)
    changes: ChangeSet | None
    labels: tuple[str, ...]
    head: CodeVersion | None


def plan_at_head(inputs: HeadInputs, request: SelectionRequest) -> RunPlan:
    """The request's plan on the pull request's head."""
    loaded = load_at_head(inputs.catalog_path, inputs.test_db, inputs.durations_path, inputs.changes)
    waives = waives_file_of(inputs.test_db)
    inputs_of = catalog_inputs(loaded, str(waives) if waives.is_file() else None)
    passed = plan_reuse(  # over every run of the head's code, as each stage of its build will reuse
        history_path(inputs.history_option),
        code=inputs.head,
        scope=None,
        inputs_of=inputs_of,
        disabled=request.disable_reuse_test,
        tests=False,
    ).passed_stages
    return plan_run(request, loaded=loaded,
                    labels=inputs.labels, changes=inputs.changes, passed_stages=passed,
                    perf_baselined=throughput_baselined(BASELINE_DIR))  # fmt: skip


def load_at_head(
    catalog_path: Path, test_db: Path, durations_path: Path | None, changes: ChangeSet | None
) -> LoadedCatalog:
    """The catalog with the test-db lists as the pull request's head has them (this checkout is the default
    branch's). Lists the head breaks load as this checkout has them: the test-db rule then says it cannot
    decide, and the build's own selection reports the error."""
    if changes is not None and changes.head_lists():
        try:
            return open_catalog(catalog_path, test_db, durations_path, test_db_texts=changes.head_lists())
        except TestDbError:
            pass
    return open_catalog(catalog_path, test_db, durations_path)


@dataclass(frozen=True)
class Preview:
    """What the reply previews: the decision settled against the plan, the pull request, the plan of a
    /bot run, and where it was planned (reuse-pipeline plans the request a build archived the same way)."""

    decision: Decision
    pr: PullRequest | None
    plan: RunPlan | None
    head: HeadInputs
    may_skip: bool = False  # the commenter holds kill_skip (reuse-pipeline of a build of other code)


def preview(reached: Reached, files: CatalogFiles, history_option: Path | None, *, may_skip: bool) -> Preview:
    """The plan of a /bot run on the pull request's head (the event's labels without a pull request), and the
    decision it settles."""
    decision, pr = reached.decision, reached.pr
    labels = pr.labels if pr is not None else decision.event.labels
    head = HeadInputs(files.catalog_path, files.test_db, files.durations_path, history_option, reached.changes,
                      labels, CodeVersion(pr.head_sha) if pr is not None else None)  # fmt: skip
    plan: RunPlan | None = None
    if reached.command is SubCommand.RUN and decision.request is not None:
        plan = plan_at_head(head, decision.request.selection_request())
        decision = settle(decision, plan)
    return Preview(decision, pr, plan, head, may_skip)


@dataclass(frozen=True)
class LocalChange:
    """What `bot plan`'s options say of a pull request: the base and head to read its change from git (no base:
    no change), and its labels."""

    base: str | None
    head: str | None
    labels: tuple[str, ...]


def plan_comment(request: SelectionRequest, files: CatalogFiles, change: LocalChange, history_option: Path | None
                 ) -> RunPlan:  # fmt: skip
    """`bot plan`: the request's plan in this checkout, for the change the options describe."""
    loaded = open_catalog(files.catalog_path, files.test_db, files.durations_path)
    source = GitRange(change.base, change.head) if change.base else None
    changes = read_change(source, test_db=files.test_db, history=history_path(history_option)) if source else None
    return plan_run(request, loaded=loaded, labels=change.labels,
                    changes=changes, perf_baselined=throughput_baselined(BASELINE_DIR))  # fmt: skip
