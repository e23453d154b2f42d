"""The loopback GitHub's routes for a pull request's labels and reviews (fake_github.py appends them to ROUTES):

    POST   repos/O/R/issues/N/labels            labels added, as a list or under `labels` (one there stays once)
    DELETE repos/O/R/issues/N/labels/NAME       a label removed; 404 `Label does not exist` when it is not there
    GET    repos/O/R/pulls/N/reviews            FakePull.reviews, oldest first, paged as GitHub pages them
                                                (fake_github_pages.py: per_page, page, Link)

They read and change FakePull.labels and FakePull.reviews; `label_events` logs (action, label) in order.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import unquote

from tests.helpers.fake_github_pages import paged
from tests.helpers.loopback import Answer, Request, json_answer

NOT_FOUND = {"message": "Not Found"}
FIRST_REVIEW = datetime(2026, 6, 1, 12, tzinfo=UTC)  # submitted_at of the oldest review; one a minute after it


def _labels(names: list[str]) -> list[dict[str, str]]:
    return [{"name": name} for name in names]


def _add_labels(fake: Any, request: Request, repo: str, number: str) -> Answer:
    pull = fake.pulls.get((repo, int(number)))
    if pull is None:
        return json_answer(NOT_FOUND, 404)
    body = json.loads(request.body)  # GitHub takes {"labels": [...]} or the list alone (PyGithub sends that)
    for name in body["labels"] if isinstance(body, dict) else body:
        fake.label_events.append(("added", name))
        if name not in pull.labels:
            pull.labels.append(name)
    return json_answer(_labels(pull.labels))


def _remove_label(fake: Any, request: Request, repo: str, number: str, name: str) -> Answer:
    pull = fake.pulls.get((repo, int(number)))
    if pull is None:
        return json_answer(NOT_FOUND, 404)
    name = unquote(name)
    if name not in pull.labels:
        return json_answer({"message": "Label does not exist"}, 404)
    pull.labels.remove(name)
    fake.label_events.append(("removed", name))
    return json_answer(_labels(pull.labels))


def _reviews(fake: Any, request: Request, repo: str, number: str) -> Answer:
    pull = fake.pulls.get((repo, int(number)))
    if pull is None:
        return json_answer(NOT_FOUND, 404)
    rows = [
        {"id": 700 + index, "user": {"login": login}, "state": state,
         "submitted_at": (FIRST_REVIEW + timedelta(minutes=index)).strftime("%Y-%m-%dT%H:%M:%SZ")}
        for index, (login, state) in enumerate(pull.reviews)
    ]  # fmt: skip
    return paged(request, rows, fake.api_url + request.path)


REPO = r"/repos/(?P<repo>[^/]+/[^/]+)"
LABEL_ROUTES: tuple[tuple[str, str, Callable[..., Answer]], ...] = (
    ("POST", REPO + r"/issues/(?P<number>\d+)/labels", _add_labels),
    ("DELETE", REPO + r"/issues/(?P<number>\d+)/labels/(?P<name>[^/]+)", _remove_label),
    ("GET", REPO + r"/pulls/(?P<number>\d+)/reviews", _reviews),
)
