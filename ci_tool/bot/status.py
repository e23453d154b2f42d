"""The commit statuses the bot sets on a pull request's head. Pure.

    context               set by
    Jenkins Full Build    a `/bot run` that is no custom run (SelectionRequest.custom_run), `/bot skip`,
                          `/bot reuse-pipeline` (carried from the build it reuses)
    Custom Jenkins build  any other `/bot run` (--stage-list, --gpu-type, ...): never the merge gate
    L0 Test Full Run      the same as the two above, for a run of GitHub Actions' l0-test.yml (a project
    Custom L0 Test run    running both engines gets both pairs, so neither engine's result hides the other's)

    when                  state    description
    triggered             pending  "build N started" (the link: the build)
    ended                 success  "N passed, M failed, K skipped"        SUCCESS
                          failure  "N passed, M failed, K skipped"        FAILURE
                          failure  "unstable: N passed, ..."              UNSTABLE (flaky reruns, blocked stages)
                          error    "aborted: N passed, ..."               ABORTED, NOT_BUILT
    stopped by a newer    error    "killed by a newer pipeline run"       (the link: the newer build)
    stopped by /bot kill  error    "killed by /bot kill"
    cancelled in queue    error    "cancelled in the Jenkins queue before it started"
    not started           error    "could not start the build: ..." (Jenkins down, refused, answered oddly)
    ended, nothing found  error    "no L0_Test build found ..." / "no test report found ..." (never success)
"""

from __future__ import annotations

from collections.abc import Mapping

from ci_tool.dispatch.model import STATUS_DESCRIPTION_LIMIT, Build, Status, StatusState
from ci_tool.outcomes import COUNTED, BuildResult, TestOutcome
from ci_tool.stages.selection_request import SelectionRequest

FULL_BUILD_CONTEXT = "Jenkins Full Build"
CUSTOM_BUILD_CONTEXT = "Custom Jenkins build"
ACTIONS_FULL_CONTEXT = "L0 Test Full Run"
ACTIONS_CUSTOM_CONTEXT = "Custom L0 Test run"
KILLED_BY_NEWER = "killed by a newer pipeline run"
KILLED_BY_KILL = "killed by /bot kill"


def context_for(request: SelectionRequest) -> str:
    """The context a run posts on: a custom run never posts on the full build's (and so never turns it green)."""
    return CUSTOM_BUILD_CONTEXT if request.custom_run else FULL_BUILD_CONTEXT


def actions_context_for(request: SelectionRequest) -> str:
    """context_for, for a GitHub Actions run."""
    return ACTIONS_CUSTOM_CONTEXT if request.custom_run else ACTIONS_FULL_CONTEXT


def counts(totals: Mapping[TestOutcome, int]) -> str:
    """ "N passed, M failed, K skipped" """
    return ", ".join(f"{totals.get(outcome, 0)} {outcome.value}" for outcome in COUNTED)


def pending(context: str, build: Build) -> Status:
    return Status(context, StatusState.PENDING, f"build {build.number} started", build.url)


def final(context: str, build: Build, totals: Mapping[TestOutcome, int], *, unread: bool = False) -> Status:
    """The status a finished build leaves on its context (`unread`: some of its results could not be read,
    so the counts are partial; the state is still the build's)."""
    text = counts(totals) + ("; some results unreadable" if unread else "")
    if build.result is BuildResult.SUCCESS:
        return Status(context, StatusState.SUCCESS, text, build.url)
    if build.result is BuildResult.FAILURE:
        return Status(context, StatusState.FAILURE, text, build.url)
    if build.result is BuildResult.UNSTABLE:
        return Status(context, StatusState.FAILURE, f"unstable: {text}", build.url)
    return Status(context, StatusState.ERROR, f"aborted: {text}", build.url)


def unfollowed(context: str, build: Build) -> Status:
    """The status of a build the bot could not follow to its end (gone, or no result in time)."""
    return Status(context, StatusState.ERROR, f"build {build.number}: could not be followed to its end", build.url)


def killed(context: str, by: Build | None) -> Status:
    """The status of a build stopped by a newer run (`by`, linked) or by `/bot kill` (None)."""
    if by is None:
        return Status(context, StatusState.ERROR, KILLED_BY_KILL)
    return Status(context, StatusState.ERROR, f"{KILLED_BY_NEWER} (build {by.number})", by.url)


def cancelled(context: str, queue_url: str) -> Status:
    return Status(context, StatusState.ERROR, "cancelled in the Jenkins queue before it started", queue_url)


def skipped(comment: str, context: str = FULL_BUILD_CONTEXT) -> Status:
    """`/bot skip --comment "..."`: the full build's context green, the comment as description."""
    return Status(context, StatusState.SUCCESS, _fit(f"skipped: {comment}"))


def carried(status: Status, build: Build) -> Status:
    """A status of a reused build, carried to a new head."""
    return Status(status.context, status.state, _fit(f"reused build {build.number}: {status.description}"), build.url)


def _fit(text: str) -> str:
    return text if len(text) <= STATUS_DESCRIPTION_LIMIT else text[: STATUS_DESCRIPTION_LIMIT - 1] + "…"


def not_started(context: str, error: str) -> Status:
    return Status(context, StatusState.ERROR, _fit(f"could not start the build: {error}"))


def untested(context: str, build: Build, missing: str) -> Status:
    """A build that ended well without any test result to show for it: never success."""
    return Status(context, StatusState.ERROR, _fit(f"{missing} found for build {build.number}: nothing was tested"),
                  build.url)  # fmt: skip
