"""The vocabularies of a run's results: one StrEnum each, stored in the history and JUnit as their values.

    TestOutcome  passed, failed, error, skipped                  a test's attempt (JUnit, history)
    StageState   passed, failed, unstable, interrupted, waiting,  a stage of a run; waiting, skipped and
                 skipped, reused                                  reused stages did not run (a reused one
                                                                  passed in an earlier run of the same code)
    RunState     running, passed, failed, unstable, interrupted,  a whole run; pending: every stage that
                 pending                                          ran is green, others wait for a runner

    BuildResult  SUCCESS, UNSTABLE, FAILURE, ABORTED, NOT_BUILT   a Jenkins build's result (its own words)
    DispatchState triggering, queued, started, cancelled          a ledger row: how far a trigger got

A run's exit code is its state's (RunState.exit_code): 1 when a stage failed, 130 when interrupted,
0 otherwise (a pending run is a healthy local run: the rest waits for CI's runners).
"""

from __future__ import annotations

import enum


class TestOutcome(enum.StrEnum):
    """A test's attempt."""

    __test__ = False  # not a pytest test class despite the name

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"

    @property
    def is_failure(self) -> bool:
        return self in (TestOutcome.FAILED, TestOutcome.ERROR)

    @property
    def counted_as(self) -> TestOutcome:
        """The column of a stage's counts this outcome adds to: errors count as failures."""
        return TestOutcome.FAILED if self is TestOutcome.ERROR else self


COUNTED = (TestOutcome.PASSED, TestOutcome.FAILED, TestOutcome.SKIPPED)  # the columns of a stage's counts


class StageState(enum.StrEnum):
    """A stage of a run."""

    PASSED = "passed"
    FAILED = "failed"
    UNSTABLE = "unstable"  # a known flaky failure passed on rerun, or an UNSTABLE test failed
    INTERRUPTED = "interrupted"
    WAITING = "waiting"  # this machine cannot serve it: it waits for a CI runner
    SKIPPED = "skipped"  # not started: fail-fast, or the run was interrupted
    REUSED = "reused"  # not run: it passed in an earlier run of the same code and request (counts as passed)

    @property
    def ran(self) -> bool:
        return self not in (StageState.WAITING, StageState.SKIPPED, StageState.REUSED)

    @property
    def words(self) -> str:
        """How a stage in this state is shown before its reason."""
        return "waiting for a runner" if self is StageState.WAITING else self.value


class RunState(enum.StrEnum):
    """A whole run."""

    RUNNING = "running"
    PASSED = "passed"
    FAILED = "failed"
    UNSTABLE = "unstable"
    INTERRUPTED = "interrupted"
    PENDING = "pending"

    @property
    def exit_code(self) -> int:
        return {RunState.FAILED: 1, RunState.INTERRUPTED: 130}.get(self, 0)

    def words(self, waiting: int | None = None) -> str:
        """A run's state for people, the same in `ci-tool history`, the report, the site and the closing line:
        a pending run passed here, with `waiting` stages left for CI's runners (None: a count not known)."""
        if self is not RunState.PENDING:
            return self.value
        if waiting is None:
            return "passed here, stages waiting for a runner"
        return f"passed here, {waiting} stage{'s' if waiting != 1 else ''} waiting for a runner"


class BuildResult(enum.StrEnum):
    """A finished Jenkins build, in Jenkins's words."""

    SUCCESS = "SUCCESS"
    UNSTABLE = "UNSTABLE"  # a flaky test passed on rerun, or stages were blocked: not green
    FAILURE = "FAILURE"
    ABORTED = "ABORTED"  # stopped: a newer run, `/bot kill`, or a person in Jenkins
    NOT_BUILT = "NOT_BUILT"

    @property
    def run_state(self) -> RunState:
        return {
            BuildResult.SUCCESS: RunState.PASSED,
            BuildResult.UNSTABLE: RunState.UNSTABLE,
            BuildResult.FAILURE: RunState.FAILED,
        }.get(self, RunState.INTERRUPTED)


class DispatchState(enum.StrEnum):
    """How far the bot's trigger of one comment got (the ledger in the history)."""

    TRIGGERING = "triggering"  # about to POST: after a crash, look in Jenkins before posting again
    QUEUED = "queued"  # Jenkins holds a queue item
    STARTED = "started"  # the queue item named its build
    CANCELLED = "cancelled"  # the queue item was cancelled before it started a build


class PerfVerdict(enum.StrEnum):
    """What the perf gate said about one metric of one perf-sanity case (the history stores the value)."""

    PASSED = "passed"  # within the threshold of its baseline
    REGRESSED = "regressed"  # past the threshold, and the stage's gate fails
    WARNED = "warned"  # past the threshold, and the stage's gate only warns (post-merge, FUNCTIONAL-ONLY)
    SKIPPED = "skipped"  # past the threshold, not gated: the target branch regressed already, or a busy host
    LOST_COVERAGE = "lost_coverage"  # a case that requires CUDA graphs ran steps eager: always fails
    NO_BASELINE = "no_baseline"  # nothing to compare with (a new case, or a GPU without baselines)
    RECORDED = "recorded"  # a metric that is kept, never gated (pool shares, eager step counts)

    @property
    def fails(self) -> bool:
        return self in (PerfVerdict.REGRESSED, PerfVerdict.LOST_COVERAGE)

    @property
    def past_threshold(self) -> bool:
        return self in (PerfVerdict.REGRESSED, PerfVerdict.WARNED, PerfVerdict.SKIPPED)
