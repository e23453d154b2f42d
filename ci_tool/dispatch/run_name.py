"""The name a dispatched L0 Test run carries (its workflow's `run-name:`), by which the bot finds the run a
comment started. GitHub answers a workflow dispatch with 204 and no run id, and lists a run with its name but
not its inputs, so the name holds what the bot matches on. Pure.

    /bot run #123 a1b2c3d4e5f60718293a4b5c6d7e8f9012345678 comment 987654321 request 0123abcd4567ef89
              PR   the head commit tested                          the comment       the request's digest

The generated workflow spells the name from its inputs (RUN_NAME_EXPRESSION, the one place the format is
written for both); `parse_run_name` reads it back; any other name ('L0 Test': a run nobody dispatched
through the bot) is None.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

RUN_NAME_EXPRESSION = (
    "inputs.comment_id != '' && format('/bot run #{0} {1} comment {2} request {3}', inputs.pr_number, "
    "inputs.head_sha, inputs.comment_id, inputs.request_digest) || 'L0 Test'"
)
# The inputs only the bot gives (besides request, labels, base_ref and head_sha): name -> description.
BOT_DISPATCH_INPUTS = {
    "pr_number": "The pull request a /bot run tests (the run's name; empty when not dispatched by the bot)",
    "comment_id": "The /bot comment that dispatched the run, by which the bot finds the run (its name)",
    "request_digest": "The request's digest, by which the bot tells a comment's edited request apart (its name)",
}
_RUN_NAME = re.compile(
    r"/bot run #(?P<pr>\d+) (?P<sha>[0-9a-f]{40}) comment (?P<comment>\d+) request (?P<digest>[0-9a-f]{16})"
)


@dataclass(frozen=True)
class RunName:
    pull_request: int
    head_sha: str
    comment_id: int
    request_digest: str

    @property
    def text(self) -> str:
        return f"/bot run #{self.pull_request} {self.head_sha} comment {self.comment_id} request {self.request_digest}"


def request_digest(request_json: str) -> str:
    """16 hex digits naming a request whatever its JSON's spacing or key order (an edited comment asking for
    another request is another dispatch)."""
    try:
        canonical = json.dumps(json.loads(request_json), sort_keys=True, separators=(",", ":"))
    except ValueError:
        canonical = request_json
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def parse_run_name(name: str) -> RunName | None:
    found = _RUN_NAME.fullmatch(name.strip())
    if found is None:
        return None
    return RunName(int(found["pr"]), found["sha"], int(found["comment"]), found["digest"])
