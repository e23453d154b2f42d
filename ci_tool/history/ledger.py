"""The bot's dispatch ledger: which /bot comment (and request) started which Jenkins queue item and build.

A row is written before the trigger's POST (`triggering`), then when Jenkins names a queue item (`queued`),
its build (`started`) or cancels it (`cancelled`). Jenkins itself is the other half of the record: the
build carries COMMENT_ID and REQUEST, so a machine without this file finds the build there (dispatch/trigger.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ci_tool.history import rows
from ci_tool.history.backend import Writer, upsert
from ci_tool.history.store import HistoryStore
from ci_tool.outcomes import DispatchState


@dataclass(frozen=True)
class DispatchKey:
    """One dispatch: the same comment asking for the same request of the same Jenkins job."""

    jenkins_url: str
    job: str
    comment_id: int
    request_json: str


@dataclass(frozen=True)
class DispatchRecord:
    key: DispatchKey
    repository: str
    pull_request: int
    head_sha: str
    state: DispatchState
    updated_at: float
    queue_id: int | None = None
    build_number: int | None = None


_COLUMNS = (
    "jenkins_url, job, comment_id, request_json, repository, pull_request, head_sha, state, queue_id, "
    "build_number, updated_at"
)
_UPSERT = upsert(
    "dispatches", [c.strip() for c in _COLUMNS.split(",")], ("jenkins_url", "job", "comment_id", "request_json")
)


def record_dispatch(store: HistoryStore, record: DispatchRecord) -> None:
    """Write (or move on) the ledger row of a dispatch."""
    key = record.key
    values = (
        key.jenkins_url, key.job, key.comment_id, key.request_json, record.repository, record.pull_request,
        record.head_sha, record.state, record.queue_id, record.build_number, record.updated_at,
    )  # fmt: skip

    def write(db: Writer) -> None:
        db.execute(_UPSERT, values)

    store.write(write)


def find_dispatch(store: HistoryStore, key: DispatchKey) -> DispatchRecord | None:
    """The ledger row of a dispatch, or None when this history never triggered it."""
    row = store.row(
        f"SELECT {_COLUMNS} FROM dispatches WHERE jenkins_url = ? AND job = ? AND comment_id = ? AND request_json = ?",
        (key.jenkins_url, key.job, key.comment_id, key.request_json),
    )
    if row is None:
        return None
    r = rows.view(store, "dispatches", _COLUMNS, row).keyed(f"job {key.job!r}", f"comment {key.comment_id}")
    return DispatchRecord(  # a bad row is an error: whether to trigger again must not be guessed
        DispatchKey(r.key_text("jenkins_url"), r.key_text("job"), r.count("comment_id"), r.text("request_json")),
        repository=r.text("repository"),
        pull_request=r.count("pull_request"),
        head_sha=r.text("head_sha"),
        state=r.vocabulary("state", DispatchState),
        queue_id=None if r.raw("queue_id") is None else r.count("queue_id"),
        build_number=None if r.raw("build_number") is None else r.count("build_number"),
        updated_at=r.timestamp("updated_at"),
    )
