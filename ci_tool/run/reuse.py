"""Which earlier run a local run reuses (history/reuse.py says what a source spares), and why, in one line:

    --disable-reuse-test            nothing: every stage and test runs
    not a git checkout              nothing: the code a run tested cannot be told apart
    --reuse-test RUN                RUN, when it tested this code (else nothing: the code changed)
    otherwise (reuse is the default) the newest finished run of this code and request scope, if any

`ci-tool stage run` (one stage, as CI runs it on an agent) reuses over every run of this code instead
(`plan_stage_reuse`): the stage does not run when it passed in one, else the tests its newest run passed
skip. A history that cannot be read spares nothing either: the run goes on and says why.

`/bot reuse-pipeline` runs nothing (`check_revalidation`): it passes by reuse alone, when every stage a bare
`/bot run` selects that this machine serves passed in the run it reuses.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ci_tool import gitinfo
from ci_tool.change.git_read import merged_waives
from ci_tool.errors import HistoryError, RunError, Where
from ci_tool.gitinfo import CodeVersion
from ci_tool.history import queries
from ci_tool.history.locator import History
from ci_tool.history.reuse import (
    InputsOf,
    ReusedTests,
    ReuseSource,
    StageReuse,
    latest_run_of,
    passed_on_code,
    reuse_source,
    same_code,
    stage_reuse,
)
from ci_tool.history.store import HistoryStore
from ci_tool.run.pipeline import runner_mismatch
from ci_tool.run.stage_inputs import catalog_inputs
from ci_tool.stages.catalog_load import LoadedCatalog
from ci_tool.stages.query import QueryValue
from ci_tool.stages.request import SelectionRequest
from ci_tool.stages.select import Selection

_NOT_A_CHECKOUT = "reuse: off (not a git checkout: the code a run tests cannot be told apart)"


@dataclass(frozen=True)
class ReusePlan:
    """The run to reuse (None: none) and why."""

    source: ReuseSource | None
    note: str

    @property
    def passed_stages(self) -> Mapping[str, str]:
        return self.source.passed_stages if self.source is not None else {}

    @property
    def passed_tests(self) -> Mapping[str, ReusedTests]:
        return self.source.passed_tests if self.source is not None else {}


def plan_reuse(
    request: SelectionRequest, *, code: CodeVersion | None, history: History, scope: str, inputs_of: InputsOf
) -> ReusePlan:
    """What this run reuses (see the module docstring)."""
    if request.disable_reuse_test:
        return ReusePlan(None, "reuse: off (--disable-reuse-test): every stage runs")
    if code is None:
        return ReusePlan(None, _NOT_A_CHECKOUT)
    named = request.reuse_test if isinstance(request.reuse_test, str) else None
    if isinstance(history, Path) and not history.is_file():  # a database URL is looked up
        if named is not None:
            raise HistoryError(
                f"expected a recorded run id, found {named!r}",
                where=Where(str(history)),
                hint="there is no history yet: `ci-tool run` records one",
            )
        return ReusePlan(None, f"reuse: none (no history yet at {history})")
    try:
        with HistoryStore(history, read_only=True) as store:
            return _plan(store, named, code, scope, inputs_of)
    except HistoryError as error:
        if named is not None:
            raise
        return ReusePlan(None, f"reuse: none (the history cannot be read: {error})")


def _plan(store: HistoryStore, named: str | None, code: CodeVersion, scope: str, inputs_of: InputsOf) -> ReusePlan:
    if named is not None:
        run = queries.get_run(store, named)
        if not same_code(run, commit=code.commit, diff_hash=code.diff_hash):
            tested = CodeVersion(run.code_commit, run.code_diff).describe() if run.code_commit else "unrecorded code"
            return ReusePlan(
                None, f"reuse: none (--reuse-test {named} tested {tested}; this is {code.describe()}: the code changed)"
            )
    else:
        found = latest_run_of(store, commit=code.commit, diff_hash=code.diff_hash, scope=scope)
        if found is None:
            return ReusePlan(None, f"reuse: none (no earlier run of {code.describe()} with this request)")
        run = found
    source = reuse_source(store, run, inputs_of=inputs_of)
    what = f"{_count(len(source.passed_stages), 'passed stage')}, {_count(source.test_count, 'passed test')} of others"
    return ReusePlan(source, f"reuse: run {run.run_id} ({code.describe()}, {run.state.words()}): {what}")


def _count(count: int, what: str) -> str:
    return f"{count} {what}{'s' if count != 1 else ''}"


@dataclass(frozen=True)
class StageReusePlan:
    """What a `ci-tool stage run` reuses, and why."""

    reuse: StageReuse
    note: str


def plan_stage_reuse(
    stage: str, *, code: CodeVersion | None, history: History, disabled: bool, inputs: str
) -> StageReusePlan:
    """What the earlier runs of this code with these `inputs` (the digest of the stage's list, waives and
    catalog entry) spare `stage` (see the module docstring)."""
    if disabled:
        return StageReusePlan(StageReuse(), "reuse: off (--disable-reuse-test): the stage runs")
    if code is None:
        return StageReusePlan(StageReuse(), _NOT_A_CHECKOUT)
    if isinstance(history, Path) and not history.is_file():
        return StageReusePlan(StageReuse(), f"reuse: none (no history yet at {history})")
    try:
        with HistoryStore(history, read_only=True) as store:
            found = stage_reuse(store, commit=code.commit, diff_hash=code.diff_hash, stage=stage, inputs=inputs)
    except HistoryError as error:
        return StageReusePlan(StageReuse(), f"reuse: none (the history cannot be read: {error})")
    if found.passed_in is not None:
        return StageReusePlan(
            found,
            f"reuse: {stage} passed on {code.describe()} in run {found.passed_in}: it does not run again "
            "(--disable-reuse-test runs it)",
        )
    if found.tests is not None:
        runs = ", ".join(sorted(set(found.tests.passed.values())))
        return StageReusePlan(
            found,
            f"reuse: {_count(len(found.tests.passed), 'test')} of {stage} passed on {code.describe()} (run {runs}): "
            "they skip, the others run",
        )
    return StageReusePlan(
        found, f"reuse: none (no earlier run of {stage} on {code.describe()} with its list, waives and catalog entry)"
    )


def passed_on_selection(
    history: History,
    *,
    root: Path,
    request: SelectionRequest,
    loaded: LoadedCatalog,
    waives: Path | None,
    base: str | None,
    head: str | None,
) -> dict[str, str]:
    """`passed_on` for a selection made at `root` (the plan job of a pipeline): for the commit `head` names (the
    checkout's code without it), with each stage's inputs as its `ci-tool stage run` will have them (the
    `waives` file merged with the tip of `base`'s, with `base`)."""
    if head is None:
        code = gitinfo.code_version(root)
    else:
        commit = gitinfo.commit_of(root, head)
        code = CodeVersion(commit) if commit else None
    with tempfile.TemporaryDirectory() as folder:
        waives_file = str(waives) if waives is not None and waives.is_file() else None
        if base is not None and waives is not None and not request.disable_reuse_test and code is not None:
            merged = Path(folder) / "waives.txt"
            merged.write_text(merged_waives(waives, base=base, root=root).text, encoding="utf-8")
            waives_file = str(merged)
        inputs_of = catalog_inputs(loaded, waives_file)
        return passed_on(history, code=code, request=request, inputs_of=inputs_of)


def passed_on(
    history: History, *, code: CodeVersion | None, request: SelectionRequest, inputs_of: InputsOf
) -> dict[str, str]:
    """Stage -> the run it passed in with the inputs `inputs_of` gives it, over every run of `code` (the
    selection's reuse step in CI, where each stage is a run of its own; the bot's reply reads it for the pull
    request's head); none with
    --disable-reuse-test, outside a checkout, or where the history cannot be read (the stages run: reuse
    only ever spares work)."""
    if request.disable_reuse_test or code is None or (isinstance(history, Path) and not history.is_file()):
        return {}
    try:
        with HistoryStore(history, read_only=True) as store:
            return passed_on_code(store, commit=code.commit, diff_hash=code.diff_hash, inputs_of=inputs_of)
    except HistoryError:
        return {}


def check_revalidation(selection: Selection, reuse: ReusePlan, facts: Mapping[str, QueryValue]) -> None:
    """`/bot reuse-pipeline` runs nothing: every stage of a bare `/bot run` this machine serves must have
    passed in the reused run."""
    if reuse.source is None:
        raise RunError(
            f"expected an earlier run of this code that passed, found none ({reuse.note})",
            hint="`ci-tool run` runs the stages; `/bot reuse-pipeline` only validates code that passed already",
        )
    unproven = [stage.name.name for stage in selection.stages if runner_mismatch(stage.name, facts) is None]
    if unproven:
        raise RunError(
            f"expected run {reuse.source.run.run_id} to have passed every stage this machine serves, found "
            f"{', '.join(unproven)} not passed there",
            hint="`ci-tool run` runs them (and reuses the rest)",
        )
