"""One /bot comment -> at most one Jenkins build, followed from the queue to its end; a pull request's
builds stopped. Built on dispatch/jenkins.py and the ledger (history/ledger.py); no HTTP of its own.

    resume(...)    the ledger, then Jenkins (queued items, then the newest builds) for a build whose
                   COMMENT_ID and REQUEST are this dispatch's: found, it is followed, never triggered again;
                   a ledger row with a queue item (another handler on this machine) is followed too
    resume_or_claim  resume, else the comment's claim (the bot's reaction, dispatch/github.py): won, this
                   handling triggers; lost, the winner's item or build is looked for until
                   Pace.claim_wait_seconds passed (then the winner is taken for dead and this one triggers)
    trigger(...)   ledger `triggering`, one POST, ledger `queued`. A lost answer (a dropped connection, a
                   read timeout after the POST) is looked for in Jenkins, again and again for
                   Pace.lost_answer_grace_seconds (a slow Jenkins queues it late), before any retry; a 5xx
                   or 429 is looked for once, then retried after the retry policy's short pause.
    follow_queue   the queue item until it names its build (never a guess from nextBuildNumber), or was
                   cancelled (an outcome), or QUEUE_TIMEOUT_SECONDS passed (an error; the ledger keeps it)
    stop_pull_request   cancel the PR's queued items, then stop its running builds
    wait_for_end   the build's console (progressive text) and state until it has a result

Poll intervals, timeouts, the clock and sleep are a Pace, so tests drive every loop without waiting.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ci_tool.dispatch.github import Claim
from ci_tool.dispatch.jenkins import JenkinsClient, NotFound, TriggerLost
from ci_tool.dispatch.model import Build, Console, QueueItem
from ci_tool.errors import DispatchError
from ci_tool.history.ledger import DispatchKey, DispatchRecord, find_dispatch, record_dispatch
from ci_tool.history.store import HistoryStore
from ci_tool.layout import (
    DISPATCH_POLL_SECONDS,
    LOST_ANSWER_GRACE_SECONDS,
    PIPELINE_TIMEOUT_HOURS,
    QUEUE_TIMEOUT_SECONDS,
    TRIGGER_TIMEOUT_SECONDS,
)
from ci_tool.outcomes import DispatchState

Echo = Callable[[str], None]


@dataclass(frozen=True)
class Pace:
    poll_seconds: float = DISPATCH_POLL_SECONDS
    queue_timeout_seconds: float = QUEUE_TIMEOUT_SECONDS
    wait_timeout_seconds: float = (PIPELINE_TIMEOUT_HOURS + 1) * 3600  # the pipeline's own limit, and some
    lost_answer_grace_seconds: float = LOST_ANSWER_GRACE_SECONDS
    claim_wait_seconds: float = TRIGGER_TIMEOUT_SECONDS + LOST_ANSWER_GRACE_SECONDS  # the winner's trigger, and some
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)


class QueueWait(DispatchError):
    """A queue item that named no build within the queue timeout (the ledger keeps it)."""

    def __init__(self, message: str, *, queue_url: str, hint: str) -> None:
        super().__init__(message, hint=hint)
        self.queue_url = queue_url


@dataclass(frozen=True)
class Started:
    """Where a dispatch stands: its build, or cancelled in the queue; `already`: an earlier handling of the
    comment triggered it (nothing new was started)."""

    queue_id: int | None
    build: Build | None
    cancelled: bool = False
    already: bool = False


@dataclass(frozen=True)
class Dispatch:
    """What is triggered, for whom: the ledger key, the pull request and the build parameters."""

    key: DispatchKey
    repository: str
    pull_request: int
    head_sha: str
    parameters: Mapping[str, str]

    def matches(self, parameters: Mapping[str, str]) -> bool:
        """Whether a queued item or build with these parameters is this dispatch."""
        return parameters.get("COMMENT_ID") == str(self.key.comment_id) and _same_json(
            parameters.get("REQUEST", ""), self.key.request_json
        )

    def record(self, state: DispatchState, *, at: float, **ids: int | None) -> DispatchRecord:
        return DispatchRecord(
            self.key, self.repository, self.pull_request, self.head_sha, state, updated_at=at, **ids  # type: ignore[arg-type]
        )


def _same_json(found: str, expected: str) -> bool:
    try:
        return bool(json.loads(found) == json.loads(expected))
    except ValueError:
        return found == expected


@dataclass(frozen=True)
class Seen:
    """A job's queued items and newest builds, read once for the look-up and the stop that follows it."""

    queued: tuple[QueueItem, ...]
    builds: tuple[Build, ...]


def look(client: JenkinsClient, job: str) -> Seen:
    return Seen(tuple(client.queued(job)), tuple(client.builds(job)))


def find_in_jenkins(client: JenkinsClient, dispatch: Dispatch, seen: Seen | None = None) -> QueueItem | Build | None:
    """A queued item or one of the newest builds that is this dispatch."""
    seen = seen or look(client, dispatch.key.job)
    candidates: list[QueueItem | Build] = [*seen.queued, *seen.builds]
    return next((found for found in candidates if dispatch.matches(found.parameters)), None)


def resume(
    client: JenkinsClient,
    store: HistoryStore,
    dispatch: Dispatch,
    pace: Pace,
    *,
    echo: Echo,
    wall: Callable[[], float],
    seen: Seen | None = None,
) -> Started | None:
    """The dispatch's build when the ledger or Jenkins knows it (followed from the queue if need be); None when
    it was never triggered."""
    job = dispatch.key.job
    known = find_dispatch(store, dispatch.key)
    if known is not None and known.state is DispatchState.CANCELLED:
        return Started(known.queue_id, None, cancelled=True, already=True)
    if known is not None and known.build_number is not None:
        with contextlib.suppress(NotFound):  # gone from Jenkins: look there as if the ledger had no row
            echo(f"already triggered by comment {dispatch.key.comment_id}: not triggering again")
            return Started(known.queue_id, client.build(job, known.build_number), already=True)
    found = find_in_jenkins(client, dispatch, seen)
    if found is not None:
        echo(f"already triggered by comment {dispatch.key.comment_id}: not triggering again")
        return _continue(client, store, dispatch, found, pace, wall=wall, already=True)
    if known is not None and known.queue_id is not None:  # triggered here (maybe by a handler running now)
        echo(f"already triggered by comment {dispatch.key.comment_id}: following queue item {known.queue_id}")
        started = follow_queue(client, store, dispatch, known.queue_id, pace, wall=wall)
        return Started(started.queue_id, started.build, started.cancelled, already=True)
    return None


def look_until(client: JenkinsClient, dispatch: Dispatch, pace: Pace, seconds: float) -> QueueItem | Build | None:
    """The dispatch's item or build in Jenkins, looked for every poll until `seconds` passed."""
    deadline = pace.clock() + seconds
    while True:
        found = find_in_jenkins(client, dispatch)
        if found is not None or pace.clock() >= deadline:
            return found
        pace.sleep(pace.poll_seconds)


@dataclass(frozen=True)
class Claimed:
    """This handling won the comment's claim (or could not ask for it: None) and is to trigger."""

    claim: Claim | None


def wait_for_claim_holder(
    look: Callable[[], Started | None], comment: int, pace: Pace, *, echo: Echo, what: str, action: str
) -> Started | None:
    """What the handling holding the comment's claim started (`look`, every poll until the claim wait ends), or
    None when it started nothing in time: this handling goes on `action` (its engine's word for starting)."""
    echo(f"comment {comment} is being handled elsewhere: waiting for its {what}")
    deadline = pace.clock() + pace.claim_wait_seconds
    started = None
    while started is None and pace.clock() < deadline:
        pace.sleep(pace.poll_seconds)
        started = look()
    if started is None:
        echo(f"warning: the handling holding comment {comment} started nothing: {action} here")
    return started


def resume_or_claim(
    client: JenkinsClient,
    store: HistoryStore,
    dispatch: Dispatch,
    pace: Pace,
    *,
    echo: Echo,
    wall: Callable[[], float],
    claim: Callable[[], Claim | None],
) -> Started | Claimed:
    """The comment's build when the ledger or Jenkins knows it, or once the handling holding its claim starts it;
    Claimed when this handling is to trigger."""
    started = resume(client, store, dispatch, pace, echo=echo, wall=wall)
    if started is None:
        claimed = claim()
        if claimed is None or claimed.won:
            return Claimed(claimed)
        started = wait_for_claim_holder(
            lambda: resume(client, store, dispatch, pace, echo=echo, wall=wall),
            dispatch.key.comment_id, pace, echo=echo, what="build", action="triggering",
        )  # fmt: skip
        if started is None:
            return Claimed(None)
    if started.build is not None:
        echo(f"already triggered: build {started.build.number} {started.build.url}")
    else:
        echo(f"already handled: queue item {started.queue_id} was cancelled before it started a build")
    return started


def trigger(
    client: JenkinsClient, store: HistoryStore, dispatch: Dispatch, pace: Pace, *, echo: Echo, wall: Callable[[], float]
) -> Started:
    """Trigger the dispatch (after `resume` found nothing) and follow its queue item to the build."""
    job = dispatch.key.job
    record_dispatch(store, dispatch.record(DispatchState.TRIGGERING, at=wall()))
    attempts = client.retry.attempts
    for attempt in range(1, attempts + 1):
        try:
            queue_id = client.trigger(job, dispatch.parameters)
        except TriggerLost as lost:
            echo(f"warning: {lost}; looking for the build in Jenkins before triggering again")
            # A server error said Jenkins did not take it: one look (idempotence) then a quick retry. Only an
            # answer that never came may hide a build Jenkins queues late: that one is looked for a while.
            grace = 0.0 if lost.server_error else pace.lost_answer_grace_seconds
            found = look_until(client, dispatch, pace, grace)
            if found is not None:
                return _continue(client, store, dispatch, found, pace, wall=wall, already=False)
            if attempt == attempts:
                raise DispatchError(
                    f"trigger {job}: expected an answer naming the queue item, found none in {attempts} attempts "
                    "and no build in Jenkins",
                    hint="Jenkins or a proxy in front of it is failing; comment again once it answers",
                ) from None
            pace.sleep(client.retry.delay(attempt))
        else:
            record_dispatch(store, dispatch.record(DispatchState.QUEUED, at=wall(), queue_id=queue_id))
            return follow_queue(client, store, dispatch, queue_id, pace, wall=wall)
    raise AssertionError("unreachable")  # the loop returns or raises


def _continue(
    client: JenkinsClient,
    store: HistoryStore,
    dispatch: Dispatch,
    found: QueueItem | Build,
    pace: Pace,
    *,
    wall: Callable[[], float],
    already: bool,
) -> Started:
    if isinstance(found, Build):
        record_dispatch(store, dispatch.record(DispatchState.STARTED, at=wall(), build_number=found.number))
        return Started(None, found, already=already)
    record_dispatch(store, dispatch.record(DispatchState.QUEUED, at=wall(), queue_id=found.id))
    started = follow_queue(client, store, dispatch, found.id, pace, wall=wall)
    return Started(started.queue_id, started.build, started.cancelled, already=already)


def follow_queue(
    client: JenkinsClient,
    store: HistoryStore,
    dispatch: Dispatch,
    queue_id: int,
    pace: Pace,
    *,
    wall: Callable[[], float],
) -> Started:
    """Follow a queue item until it names its build or is cancelled."""
    job = dispatch.key.job
    deadline = pace.clock() + pace.queue_timeout_seconds
    while True:
        item = client.queue_item(queue_id)
        if item is None:  # Jenkins forgets an item minutes after it left the queue: its build has our ids
            found = next((b for b in client.builds(job) if dispatch.matches(b.parameters)), None)
            if found is None:
                raise DispatchError(
                    f"queue item {queue_id} of {job}: expected it to name its build, found neither the item nor a "
                    f"build with COMMENT_ID {dispatch.key.comment_id}"
                )
            item = QueueItem(queue_id, "", build_number=found.number, build_url=found.url)
        if item.cancelled:
            record_dispatch(store, dispatch.record(DispatchState.CANCELLED, at=wall(), queue_id=queue_id))
            return Started(queue_id, None, cancelled=True)
        if item.build_number is not None:
            build = Build(job, item.build_number, item.build_url, building=True, result=None,
                          parameters=dict(dispatch.parameters))  # fmt: skip
            record_dispatch(
                store, dispatch.record(DispatchState.STARTED, at=wall(), queue_id=queue_id, build_number=build.number)
            )
            return Started(queue_id, build)
        if pace.clock() >= deadline:
            raise QueueWait(
                f"queue item {queue_id} of {job}: expected a build within {pace.queue_timeout_seconds:g} s, found it "
                f"still waiting ({item.why or 'no reason given'})",
                queue_url=item.url,
                hint="handling the comment again follows the same item; it never triggers a second build",
            )
        pace.sleep(pace.poll_seconds)


@dataclass(frozen=True)
class Stopped:
    """What stopping a pull request's runs did."""

    cancelled: tuple[QueueItem, ...]
    stopped: tuple[Build, ...]


def stop_pull_request(client: JenkinsClient, job: str, pull_request: int, seen: Seen | None = None) -> Stopped:
    """Cancel the pull request's queued items first (so none starts), then stop its running builds."""
    seen = seen or look(client, job)
    number = str(pull_request)
    runs = Stopped(
        tuple(item for item in seen.queued if item.parameters.get("PR_NUMBER") == number),
        tuple(b for b in seen.builds if b.building and b.parameters.get("PR_NUMBER") == number),
    )
    for item in runs.cancelled:
        client.cancel(item.id)
    for build in runs.stopped:
        try:
            client.stop(job, build.number)
        except NotFound:  # it ended and was deleted meanwhile: nothing left to stop
            continue
    return runs


def wait_for_end(
    client: JenkinsClient, build: Build, pace: Pace, *, echo: Echo, unread: list[str] | None = None
) -> Build:
    """Follow a build to its result, echoing its console text as it grows. With `unread`, a console Jenkins
    cannot serve is noted there and the build's state is followed without it."""
    deadline = pace.clock() + pace.wait_timeout_seconds
    start = 0
    log_lost = False
    while True:
        try:
            if log_lost:
                console = Console("", start, more=False)
            else:
                try:
                    console = client.console(build.job, build.number, start)
                except DispatchError as error:
                    if unread is None:
                        raise
                    unread.append(f"the console log of build {build.number} ({error})")
                    log_lost, console = True, Console("", start, more=False)
            found = client.build(build.job, build.number)
        except NotFound:
            raise DispatchError(
                f"build {build.number} of {build.job}: expected to follow it to its end, found it gone (HTTP 404)",
                hint="someone deleted it in Jenkins; comment `/bot run` again for a new build",
            ) from None
        if console.text:
            echo(console.text.rstrip("\n"))
        start = console.next_start
        if not found.building and found.result is not None and not console.more:
            return found
        if pace.clock() >= deadline:
            raise DispatchError(
                f"build {build.number} of {build.job}: expected a result within {pace.wait_timeout_seconds:g} s, "
                "found it still running",
                hint="handling the comment again with --wait follows the same build",
            )
        pace.sleep(pace.poll_seconds)
