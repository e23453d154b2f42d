"""The loopback GitHub pages a pull request's comments as GitHub does (fake_github_pages.py): 30 a page unless
asked, at most 100, and a Link header naming the pages around this one that PyGithub follows to the end."""

from __future__ import annotations

import re

import pytest
import requests
from github import Auth, Github

from tests.helpers.bot_handle import PR, REPOSITORY
from tests.helpers.fake_github import FakeGitHub


def comments_page(github: FakeGitHub, **query: int) -> tuple[list[int], dict[str, dict[str, str]]]:
    """The ids a GET of the comments answers, and its Link header as {rel: its URL's query}."""
    answer = requests.get(f"{github.api_url}/repos/{REPOSITORY}/issues/{PR}/comments", params=query,
                          headers={"Authorization": f"token {github.token}"}, timeout=30)  # fmt: skip
    answer.raise_for_status()
    links = {}
    for url, rel in re.findall(r'<([^>]+)>; rel="(\w+)"', answer.headers.get("Link", "")):
        assert url.startswith(f"{github.api_url}/repos/{REPOSITORY}/issues/{PR}/comments?"), url
        links[rel] = dict(part.split("=") for part in url.split("?", 1)[1].split("&"))
    return [comment["id"] for comment in answer.json()], links


def pages(per_page: int, **numbers: int) -> dict[str, dict[str, str]]:
    return {rel: {"per_page": str(per_page), "page": str(number)} for rel, number in numbers.items()}


@pytest.mark.parametrize(
    ("count", "query", "ids", "links"),
    [
        (5, {}, range(5), {}),
        (30, {}, range(30), {}),
        (31, {}, range(30), pages(30, next=2, last=2)),
        (250, {"per_page": 100, "page": 2}, range(100, 200), pages(100, prev=1, next=3, last=3, first=1)),
        (250, {"per_page": 500}, range(100), pages(100, next=2, last=3)),
        (75, {"page": 3}, range(60, 75), pages(30, prev=2, first=1)),
        (75, {"page": 4}, range(0), pages(30, prev=3, first=1)),
    ],
    ids=["one page", "a full page", "one more", "a middle page", "per_page past 100", "the last page", "past it"],
)
def test_comments_page_as_githubs_rest_api_pages_them(
    github: FakeGitHub, count: int, query: dict[str, int], ids: range, links: dict[str, dict[str, str]]
) -> None:
    first = github.next_comment_id
    for k in range(count):
        github.add_comment(REPOSITORY, PR, f"remark {k}")
    github.add_comment(REPOSITORY, PR + 1, "on another pull request")
    assert comments_page(github, **query) == ([first + k for k in ids], links)


def test_pygithub_reads_every_page_oldest_first(github: FakeGitHub) -> None:
    for k in range(75):
        github.add_comment(REPOSITORY, PR, f"remark {k}")
    client = Github(auth=Auth.Token(github.token), base_url=github.api_url, retry=None, lazy=True)
    bodies = [comment.body for comment in client.get_repo(REPOSITORY).get_issue(PR).get_comments()]
    assert bodies == [f"remark {k}" for k in range(75)]
    assert [r.query.get("page", "1") for r in github.requests if r.path.endswith("/comments")] == ["1", "2", "3"]
