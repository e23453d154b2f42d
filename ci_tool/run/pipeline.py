"""Run a selected pipeline: the stages the executor can serve, in order, with fail-fast.

The runner (a session over an executor, executor.py) starts stages while it has room: the local executor
runs as many side by side as the host holds (`--jobs`, run/resources.py; one at a time with `--jobs 1`),
the Slurm executor starts every stage at once. Stages start in order; while the next one has no room,
later ones that have start beside the running ones. Outcomes keep the stages' order.

Which stages this machine serves (`runner_mismatch`):
    CPU stages                        always (every machine has a CPU)
    GPU stages                        when sysinfo's GPU is the stage's GPU family and it has at least the
                                      stage's GPU count; one node only
    non-test stages                   the docs and package-sanity stages (JOB_KINDS) always; the others
                                      need CI's build images
The others wait for a runner. A GPU family matches when the GPU token (without a `DGX_` prefix) equals
the GPU name's leading words joined (`H100_PCIe` ~ `H100 PCIE`, `DGX_H100` ~ `H100 80GB HBM3`,
`RTXPro6000D` ~ `RTX PRO 6000D`), so `A10` never matches an `A100`.

Fail-fast: after a stage fails, the stages not yet started are skipped (those that would wait for a
runner too: CI would not dispatch them) and the ones still running are cancelled (as Jenkins' parallel
failFast aborts its other branches; on this machine they finish and keep their results), unless fail-fast
is off (`--disable-fail-fast`, or any post-merge run, as in TensorRT-LLM's CI). Unstable stages do not stop it.
A reused stage (it passed in an earlier run of the same code) is recorded as reused and counts as passed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from ci_tool.outcomes import RunState, StageState
from ci_tool.stages.names import StageKind, StageName
from ci_tool.stages.query import QueryValue
from ci_tool.stages.select import reused_reason

_WORDS = re.compile(r"[^A-Za-z0-9]+")


class NamedStage(Protocol):
    """What the pipeline reads of a stage: its parsed name (catalog stages and planned stages have one)."""

    @property
    def name(self) -> StageName: ...


S = TypeVar("S", bound=NamedStage)
S_contra = TypeVar("S_contra", bound=NamedStage, contravariant=True)


@dataclass(frozen=True)
class StageOutcome:
    """A stage's part in a pipeline run. `ran` is False for waiting and skipped stages."""

    name: str
    state: StageState
    reason: str = ""
    ran: bool = False


@dataclass(frozen=True)
class PipelineResult:
    stages: tuple[StageOutcome, ...]

    @property
    def state(self) -> RunState:
        """interrupted > failed > pending (stages wait for a runner) > unstable > passed."""
        states = {stage.state for stage in self.stages}
        if StageState.INTERRUPTED in states:
            return RunState.INTERRUPTED
        if StageState.FAILED in states:
            return RunState.FAILED
        if StageState.WAITING in states:
            return RunState.PENDING
        return RunState.UNSTABLE if StageState.UNSTABLE in states else RunState.PASSED

    @property
    def waiting(self) -> int:
        """How many stages wait for a runner."""
        return sum(1 for stage in self.stages if stage.state is StageState.WAITING)


NOT_STARTED_INTERRUPTED = "not started: the run was interrupted"
# The non-test stages this machine runs (run/jobs.py holds their jobs); the others need a CI runner.
JOB_KINDS = frozenset({StageKind.BUILD_DOCS, StageKind.PACKAGE_SANITY})


def _words(text: str) -> list[str]:
    return [word.lower() for word in _WORDS.split(text) if word]


def gpu_family_matches(gpu_token: str, gpu_name: str) -> bool:
    """Whether a machine whose GPU is `gpu_name` (sysinfo) serves stages of `gpu_token` (see module doc)."""
    token = "".join(_words(gpu_token.removeprefix("DGX_")))
    words = _words(gpu_name)
    return any("".join(words[:count]) == token for count in range(1, len(words) + 1))


def runner_mismatch(stage: StageName, sysinfo: Mapping[str, QueryValue]) -> str | None:
    """Why this machine cannot serve `stage`, or None when it can."""
    if not stage.is_test and stage.kind not in JOB_KINDS:
        return f"{stage.kind.value.replace('_', ' ')} stages run only on CI runners"
    if stage.node_count > 1:
        return f"needs {stage.node_count} nodes"
    if stage.is_cpu:
        return None
    gpu = sysinfo.get("gpu")
    count = sysinfo.get("system_gpu_count")
    have = count if isinstance(count, int) else 0
    if isinstance(count, str) and count.isascii() and count.isdigit() and len(count) <= 6:  # not '²', not 5000 digits
        have = int(count)
    needs = f"needs {stage.gpu_count} {stage.gpu} GPU" + ("s" if stage.gpu_count != 1 else "")
    if not gpu or have == 0:
        return f"{needs}; this machine has no GPU"
    if stage.gpu is None or not gpu_family_matches(stage.gpu, str(gpu)):
        return f"{needs}; this machine has {gpu}"
    if have < stage.gpu_count:
        return f"{needs}; this machine has {have}"
    return None


class StageRunner(Protocol[S_contra]):
    """What the pipeline drives (the session's runner over an executor; executor.py)."""

    def can_start(self, name: StageName) -> bool: ...  # room for this stage now (always, when none runs)

    def start(self, stage: S_contra) -> None: ...

    def running(self) -> int: ...  # started, not reported yet

    def next_finished(self) -> StageOutcome: ...  # waits for the next stage to end

    def cancel(self, reason: str) -> None: ...  # the started stages end skipped, with `reason`


def run_pipeline(
    stages: Sequence[S],
    *,
    mismatch: Callable[[StageName], str | None],
    fail_fast: bool,
    runner: StageRunner[S],
    not_run: Callable[[StageOutcome], None],
    reused: Mapping[str, str] | None = None,
) -> PipelineResult:
    """Start the servable stages in order; `not_run` hears about each waiting, skipped or reused stage
    (`reused`: stage -> the run it passed in)."""
    outcomes: dict[str, StageOutcome] = {}
    stopped: list[str] = []  # why the stages not started yet will not start

    def collect() -> None:
        outcome = runner.next_finished()
        outcomes[outcome.name] = outcome
        if stopped:
            return
        if outcome.state is StageState.INTERRUPTED:
            stopped.append(NOT_STARTED_INTERRUPTED)
        elif outcome.state is StageState.FAILED and fail_fast:
            stopped.append(f"fail-fast: {outcome.name} failed")
            runner.cancel(f"cancelled by fail-fast: {outcome.name} failed")

    def decided(stage: S) -> StageOutcome | None:
        """The stage's outcome when it does not run here (reused, skipped, waiting), else None."""
        name = stage.name.name
        why = mismatch(stage.name)
        if reused and name in reused:
            return StageOutcome(name, StageState.REUSED, reused_reason(reused[name]))
        if stopped:
            return StageOutcome(name, StageState.SKIPPED, stopped[0])
        return None if why is None else StageOutcome(name, StageState.WAITING, why)

    pending = list(stages)
    while pending:
        head = pending[0]
        if runner.running() and not runner.can_start(head.name):
            # no room for the next stage: later ones that have room start beside the running ones meanwhile
            # (and those the runner would not wait for but will not run are reported: waiting, reused)
            for later in pending[1:]:
                if not runner.can_start(later.name):
                    continue
                pending.remove(later)
                outcome = decided(later)
                if outcome is None:
                    runner.start(later)
                else:
                    outcomes[outcome.name] = outcome
                    not_run(outcome)
            collect()
            continue
        pending.pop(0)
        outcome = decided(head)
        if outcome is None:
            runner.start(head)
            continue
        outcomes[outcome.name] = outcome
        not_run(outcome)
    while runner.running():
        collect()
    return PipelineResult(tuple(outcomes[stage.name.name] for stage in stages))
