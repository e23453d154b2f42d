"""The plan `bot handle` previews for a request on a pull request's head, as the build will select it there:
the catalog with the test-db lists as the head has them, and the stages that passed on the head already (the
build's selection reuses them from the same history)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ci_tool.bot.plan import RunPlan, plan_run
from ci_tool.errors import TestDbError
from ci_tool.gitinfo import CodeVersion
from ci_tool.history.store import history_path
from ci_tool.layout import waives_file_of
from ci_tool.perf.baselines import BASELINE_DIR
from ci_tool.perf.blind_gate import throughput_baselined
from ci_tool.run.reuse import passed_on
from ci_tool.run.stage_inputs import catalog_inputs
from ci_tool.stages.catalog_load import LoadedCatalog, open_catalog
from ci_tool.stages.changes import ChangeSet
from ci_tool.stages.request import SelectionRequest


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
    passed = passed_on(history_path(inputs.history_option), code=inputs.head, request=request, inputs_of=inputs_of)
    return plan_run(request, loaded=loaded, labels=inputs.labels, changes=inputs.changes, passed_stages=passed,
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
