"""What the dispatch tests share about `ci-tool bot handle` against the loopback fakes: the bot fixtures' catalog
and allowlist, the pull request the comments are on, the variables ci-tool reads, and the types of the `event` and
`bot` fixtures (tests/ci_tool/dispatch/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BOT_FIXTURES = Path(__file__).resolve().parents[1] / "ci_tool" / "bot" / "fixtures"
CATALOG = ("--catalog", str(BOT_FIXTURES / "stages.yml"), "--test-db", str(BOT_FIXTURES / "test-db"))
ALLOWLIST = str(BOT_FIXTURES / "allowlist.yml")
REPOSITORY = "example/ci-tool"
PR = 123
COMMENTED = "2026-06-01T12:00:00Z"  # when the test comments were written (the fakes' commits are older)
# Every variable ci-tool reads: the tests set the ones they mean, and no value of the machine leaks in.
VARIABLES = ("CI_TOOL_JENKINS_URL", "CI_TOOL_JENKINS_JOB", "JENKINS_USER", "JENKINS_API_TOKEN", "GITHUB_API_URL",
             "GITHUB_TOKEN", "CI_TOOL_HISTORY", "JENKINS_API_EXTRA_HEADERS", "PYTHONHTTPSVERIFY", "HTTP_PROXY",
             "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy", "CI_TOOL_BOT_ENGINES")  # fmt: skip

MakeEvent = Callable[..., Path]


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


Bot = Callable[..., Result]
