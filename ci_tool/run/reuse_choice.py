"""Which earlier run a local run reuses (history/reuse_sources.py says what a source spares), and why, in one line:

    --disable-reuse-test            nothing: every stage and test runs
    not a git checkout              nothing: the code a run tested cannot be told apart
    --reuse-test RUN                RUN, when it tested this code (else nothing: the code changed)
    otherwise (reuse is the default) the newest finished run of this code and request scope, if any

`ci-tool stage run` (one stage, as CI runs it on an agent, recorded with the scope `stage NAME`) and the
selection of a pipeline or of the bot's reply reuse over every run of this code instead (no scope: each
stage of CI is a run of its own): a stage does not run when it passed in one, else the tests its newest run
passed skip. A history that cannot be read spares nothing either: the run goes on and says why. All of them
ask `plan_reuse`, which asks history/reuse_sources.py's one lookup, `reuse_of`.

`/bot reuse-pipeline` runs nothing (`check_revalidation`): it passes by reuse alone, when every stage a bare
`/bot run` selects that this machine serves passed in the run it reuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ci_tool.errors import HistoryError, RunError, Where
from ci_tool.gitinfo import CodeVersion
from ci_tool.history import queries
from ci_tool.history.locator import History
from ci_tool.history.reuse_sources import InputsOf, ReusedTests, ReuseKey, ReuseSource, reuse_of, run_reuse, same_code
from ci_tool.history.store import HistoryStore
from ci_tool.run.pipeline import runner_mismatch
from ci_tool.stages.query import QueryValue
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
    history: History,
    *,
    code: CodeVersion | None,
    scope: str | None,
    inputs_of: InputsOf,
    disabled: bool,
    named: str | None = None,
    stage: str | None = None,
    tests: bool = True,
) -> ReusePlan:
    """What a run of `code` whose stages have the inputs `inputs_of` gives them reuses (see the module
    docstring): from run `named` (`--reuse-test RUN`), else from the runs of this code and `scope` (None:
    every run of the code, as CI reuses); only `stage`, when named (`ci-tool stage run`); the passed tests of
    the other stages too, with `tests`."""
    if disabled:
        return ReusePlan(None, f"reuse: off (--disable-reuse-test): {'the' if stage else 'every'} stage runs")
    if code is None:
        return ReusePlan(None, _NOT_A_CHECKOUT)
    if isinstance(history, Path) and not history.is_file():  # a database URL is looked up
        if named is not None:
            raise HistoryError(
                f"expected a recorded run id, found {named!r}",
                where=Where(str(history)),
                hint="there is no history yet: `ci-tool run` records one",
            )
        return ReusePlan(None, f"reuse: none (no history yet at {history})")
    key = ReuseKey(code.commit, code.diff_hash, scope)
    try:
        with HistoryStore(history, read_only=True) as store:
            if named is not None:
                return _named(store, named, code, inputs_of)
            source = reuse_of(store, key, inputs_of=inputs_of, stage=stage, tests=tests)
    except HistoryError as error:
        if named is not None:
            raise
        return ReusePlan(None, f"reuse: none (the history cannot be read: {error})")
    if stage is not None:
        return ReusePlan(source, _stage_note(stage, code, source))
    if source is None:
        return ReusePlan(None, f"reuse: none (no earlier run of {code.describe()} with this request)")
    return ReusePlan(source, _run_note(code, source))


def _named(store: HistoryStore, named: str, code: CodeVersion, inputs_of: InputsOf) -> ReusePlan:
    """`--reuse-test RUN`: that run, when it tested this code."""
    run = queries.get_run(store, named)
    if not same_code(run, commit=code.commit, diff_hash=code.diff_hash):
        tested = CodeVersion(run.code_commit, run.code_diff).describe() if run.code_commit else "unrecorded code"
        return ReusePlan(
            None, f"reuse: none (--reuse-test {named} tested {tested}; this is {code.describe()}: the code changed)"
        )
    source = run_reuse(store, run, inputs_of=inputs_of)
    return ReusePlan(source, _run_note(code, source))


def _run_note(code: CodeVersion, source: ReuseSource) -> str:
    what = f"{_count(len(source.passed_stages), 'passed stage')}, {_count(source.test_count, 'passed test')} of others"
    if source.run is None:
        return f"reuse: the runs of {code.describe()}: {what}"
    return f"reuse: run {source.run.run_id} ({code.describe()}, {source.run.state.words()}): {what}"


def _stage_note(stage: str, code: CodeVersion, source: ReuseSource | None) -> str:
    passed_in = source.passed_stages.get(stage) if source is not None else None
    tests = source.passed_tests.get(stage) if source is not None else None
    if passed_in is not None:
        return (
            f"reuse: {stage} passed on {code.describe()} in run {passed_in}: it does not run again "
            "(--disable-reuse-test runs it)"
        )
    if tests is not None:
        runs = ", ".join(sorted(set(tests.passed.values())))
        return (
            f"reuse: {_count(len(tests.passed), 'test')} of {stage} passed on {code.describe()} (run {runs}): "
            "they skip, the others run"
        )
    return f"reuse: none (no earlier run of {stage} on {code.describe()} with its list, waives and catalog entry)"


def _count(count: int, what: str) -> str:
    return f"{count} {what}{'s' if count != 1 else ''}"


def check_revalidation(selection: Selection, reuse: ReusePlan, facts: Mapping[str, QueryValue]) -> None:
    """`/bot reuse-pipeline` runs nothing: every stage of a bare `/bot run` this machine serves must have
    passed in the reused run."""
    if reuse.source is None or reuse.source.run is None:  # a local run reuses one run of its scope
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
