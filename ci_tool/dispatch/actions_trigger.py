"""One /bot comment -> at most one run of the generated workflow on GitHub Actions, followed to its end; a
pull request's runs cancelled. Built on dispatch/actions.py and the ledger (history/ledger.py), as
dispatch/trigger.py is for Jenkins, with the same Pace, Started and claim.

    resume           the ledger's run, else a run of the workflow whose name (run_name.py) holds this comment
                     and this request: found, it is followed, never dispatched again; a ledger row saying
                     the dispatch was sent (`queued`) is looked for until the queue timeout
    resume_or_claim  resume, else the comment's claim (the bot's reaction): won, this handling dispatches;
                     lost, the winner's run is looked for until Pace.claim_wait_seconds passed
    dispatch_run     ledger `triggering`, one POST, ledger `queued`, the run looked for until it is listed
                     (GitHub's answer names none), ledger `started` with its id. A lost answer is looked for
                     for Pace.lost_answer_grace_seconds before any retry.
    cancel_pull_request   cancel the pull request's runs that have not ended
    wait_for_end     the run until it completed (or Pace.wait_timeout_seconds passed: an error)

The ledger's key is (the API's repository URL, the workflow file, the comment, the request), its
build_number the run id; queue ids are never set (GitHub has no queue item).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ci_tool.dispatch.actions import ActionsClient, DispatchLost, RunNotFound
from ci_tool.dispatch.github import Claim
from ci_tool.dispatch.model import Build
from ci_tool.dispatch.run_name import request_digest
from ci_tool.dispatch.trigger import Pace, QueueWait, Started, wait_for_claim_holder
from ci_tool.errors import DispatchError
from ci_tool.history.ledger import DispatchKey, DispatchRecord, find_dispatch, record_dispatch
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import DispatchState

Echo = Callable[[str], None]


@dataclass(frozen=True)
class ActionsDispatch:
    """What is dispatched, for whom: the ledger key, the pull request, the ref whose workflow file runs (the
    default branch: trusted) and the workflow's inputs."""

    key: DispatchKey
    repository: str
    pull_request: int
    head_sha: str
    ref: str
    inputs: Mapping[str, str]

    @property
    def digest(self) -> str:
        return request_digest(self.key.request_json)

    def matches(self, run: Build) -> bool:
        """Whether a run is this dispatch's: its name holds the comment and the request's digest."""
        found = run.parameters
        return found.get("COMMENT_ID") == str(self.key.comment_id) and found.get("REQUEST_DIGEST") == self.digest

    def record(self, state: DispatchState, *, at: float, run_id: int | None = None) -> DispatchRecord:
        return DispatchRecord(self.key, self.repository, self.pull_request, self.head_sha, state, updated_at=at,
                              build_number=run_id)  # fmt: skip


def find_run(client: ActionsClient, dispatch: ActionsDispatch) -> Build | None:
    return next((run for run in client.runs(dispatch.repository, branch=dispatch.ref) if dispatch.matches(run)), None)


def look_until(client: ActionsClient, dispatch: ActionsDispatch, pace: Pace, seconds: float) -> Build | None:
    """The dispatch's run, looked for every poll until `seconds` passed."""
    deadline = pace.clock() + seconds
    while True:
        found = find_run(client, dispatch)
        if found is not None or pace.clock() >= deadline:
            return found
        pace.sleep(pace.poll_seconds)


def resume(
    client: ActionsClient, store: HistoryStore, dispatch: ActionsDispatch, pace: Pace, *, echo: Echo,
    wall: Callable[[], float],
) -> Started | None:  # fmt: skip
    """The dispatch's run when the ledger or GitHub knows it; None when it was never dispatched."""
    comment = dispatch.key.comment_id
    known = find_dispatch(store, dispatch.key)
    if known is not None and known.build_number is not None:
        with contextlib.suppress(RunNotFound):  # gone from GitHub: look there as if the ledger had no row
            run = client.run(dispatch.repository, known.build_number)
            echo(f"already dispatched by comment {comment}: not dispatching again")
            return Started(None, run, already=True)
    found = find_run(client, dispatch)
    if found is None and known is not None and known.state is DispatchState.QUEUED:  # sent here, not listed yet
        echo(f"already dispatched by comment {comment}: looking for its run")
        found = _listed(client, dispatch, pace)
    if found is None:
        return None
    echo(f"already dispatched by comment {comment}: not dispatching again")
    record_dispatch(store, dispatch.record(DispatchState.STARTED, at=wall(), run_id=found.number))
    return Started(None, found, already=True)


def resume_or_claim(
    client: ActionsClient, store: HistoryStore, dispatch: ActionsDispatch, pace: Pace, *, echo: Echo,
    wall: Callable[[], float], claim: Callable[[], Claim | None],
) -> Started | Claim | None:  # fmt: skip
    """The comment's run when the ledger or GitHub knows it, or once the handling holding its claim started it;
    else the claim this handling won (None: GitHub could not be asked, or the winner started nothing): dispatch."""
    started = resume(client, store, dispatch, pace, echo=echo, wall=wall)
    if started is None:
        claimed = claim()
        if claimed is None or claimed.won:
            return claimed
        started = wait_for_claim_holder(
            lambda: resume(client, store, dispatch, pace, echo=echo, wall=wall),
            dispatch.key.comment_id, pace, echo=echo, what="run", action="dispatching",
        )  # fmt: skip
        if started is None:
            return None
    assert started.build is not None  # a run, found
    echo(f"already dispatched: run {started.build.number} {started.build.url}")
    return started


def dispatch_run(
    client: ActionsClient, store: HistoryStore, dispatch: ActionsDispatch, pace: Pace, *, echo: Echo,
    wall: Callable[[], float],
) -> Started:  # fmt: skip
    """Dispatch (after `resume` found nothing) and find the run it started."""
    record_dispatch(store, dispatch.record(DispatchState.TRIGGERING, at=wall()))
    attempts = client.github.retry.attempts
    for attempt in range(1, attempts + 1):
        try:
            client.dispatch(dispatch.repository, dispatch.ref, dispatch.inputs)
        except DispatchLost as lost:
            echo(f"warning: {lost}; looking for the run on GitHub before dispatching again")
            found = look_until(client, dispatch, pace, pace.lost_answer_grace_seconds)
            if found is not None:
                record_dispatch(store, dispatch.record(DispatchState.STARTED, at=wall(), run_id=found.number))
                return Started(None, found)
            if attempt == attempts:
                raise DispatchError(
                    f"dispatch {client.workflow}: expected GitHub to answer, found no answer in {attempts} attempts "
                    "and no run of the comment",
                    hint="GitHub is failing; comment again once it answers",
                ) from None
            pace.sleep(client.github.retry.delay(attempt))
        else:
            record_dispatch(store, dispatch.record(DispatchState.QUEUED, at=wall()))
            found = _listed(client, dispatch, pace)
            record_dispatch(store, dispatch.record(DispatchState.STARTED, at=wall(), run_id=found.number))
            return Started(None, found)
    raise AssertionError("unreachable")  # the loop returns or raises


def _listed(client: ActionsClient, dispatch: ActionsDispatch, pace: Pace) -> Build:
    """The run of a dispatch GitHub accepted, once it lists it (within the queue timeout)."""
    found = look_until(client, dispatch, pace, pace.queue_timeout_seconds)
    if found is None:
        raise QueueWait(
            f"dispatch {client.workflow}: expected GitHub to list the run of comment {dispatch.key.comment_id} "
            f"within {pace.queue_timeout_seconds:g} s, found none",
            queue_url=client.workflow_url(dispatch.repository),
            hint="handling the comment again looks for the same run; it never dispatches a second one",
        )
    return found


def cancel_pull_request(client: ActionsClient, repository: str, ref: str, pull_request: int) -> tuple[Build, ...]:
    """Cancel the pull request's runs that have not ended; the ones GitHub cancelled."""
    number = str(pull_request)
    running = [r for r in client.runs(repository, branch=ref) if r.building and r.parameters.get("PR_NUMBER") == number]
    return tuple(run for run in running if client.cancel(repository, run.number))


def wait_for_end(client: ActionsClient, repository: str, run: Build, pace: Pace) -> Build:
    """Follow a run until it completed."""
    deadline = pace.clock() + pace.wait_timeout_seconds
    while run.building:
        if pace.clock() >= deadline:
            raise DispatchError(
                f"run {run.number} of {repository}: expected it to complete within {pace.wait_timeout_seconds:g} s, "
                "found it still running",
                hint="its status stays pending; `/bot kill` cancels it",
            )
        pace.sleep(pace.poll_seconds)
        run = client.run(repository, run.number)
    return run
