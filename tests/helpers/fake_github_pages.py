"""A list the loopback GitHub answers, one page of it, as GitHub's REST API pages lists (fake_github.py's
comments and changed files, fake_github_labels.py's reviews):

    per_page   rows per page: 30 unless asked, at most 100 (more is read as 100)
    page       from 1; past the last page: an empty list
    Link       the pages around this one, each URL keeping the request's other parameters:
               <...&page=1>; rel="prev", <...&page=3>; rel="next", <...&page=5>; rel="last", <...&page=1>; rel="first"
               (prev and first after the first page, next and last before the last); none when one page holds all

PyGithub follows rel="next" until a page has none: a client that read the first page alone would miss every
row past the 30th.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlencode

from tests.helpers.loopback import Answer, Request, json_answer

PER_PAGE_DEFAULT, PER_PAGE_MOST = 30, 100  # GitHub's: a list's rows per page unless asked, and at most


def paged(request: Request, rows: Sequence[object], url: str) -> Answer:
    """The page of `rows` the request asks for, with GitHub's `Link` header; `url`: the list's own address."""
    per_page = min(max(int(request.query.get("per_page") or PER_PAGE_DEFAULT), 1), PER_PAGE_MOST)
    page = max(int(request.query.get("page") or 1), 1)
    last = max(-(-len(rows) // per_page), 1)

    def link(number: int, rel: str) -> str:
        return f'<{url}?{urlencode({**request.query, "per_page": per_page, "page": number})}>; rel="{rel}"'

    links = [link(page - 1, "prev")] if page > 1 else []
    links += [link(page + 1, "next"), link(last, "last")] if page < last else []
    links += [link(1, "first")] if page > 1 else []
    headers = {"Link": ", ".join(links)} if links else {}
    return json_answer(rows[(page - 1) * per_page : page * per_page], headers=headers)
