"""What went wrong with one HTTP request, read from the exceptions of requests (which both python-jenkins
and PyGithub use underneath), and the bounded retry loop both clients share."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import requests
import urllib3.exceptions

from ci_tool.errors import DispatchError
from ci_tool.layout import DISPATCH_ATTEMPTS, DISPATCH_RETRY_SECONDS

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = DISPATCH_ATTEMPTS
    first_delay_seconds: float = DISPATCH_RETRY_SECONDS
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def delay(self, attempt: int) -> float:
        """The pause after failed attempt `attempt` (1-based): doubling from the first."""
        return self.first_delay_seconds * 2 ** (attempt - 1)


@dataclass(frozen=True)
class Fault:
    """One failed request: words for messages, the HTTP status if any, whether it reached the server."""

    words: str  # "connection refused", "HTTP 503 Service Unavailable", ...
    status: int | None = None
    sent: bool = True  # False: the request never reached the server, so repeating it is always safe
    crumb: bool = False  # Jenkins refused an expired or missing CSRF crumb
    rate_limit_seconds: float | None = None  # a rate limit that lifts in this many seconds

    @property
    def retryable_when_sent(self) -> bool:
        """A fault a repeat may cure: a server error, rate limiting, or no answer."""
        return self.status is None or self.status >= 500 or self.status == 429


def causes(error: BaseException) -> list[BaseException]:
    """`error` and what it was raised from or during, outermost first."""
    chain: list[BaseException] = []
    found: BaseException | None = error
    while found is not None and len(chain) < 10:
        chain.append(found)
        found = found.__cause__ or found.__context__
    return chain


def classify(error: BaseException, timeout_seconds: float) -> Fault:
    """The fault behind an exception raised through requests."""
    for link in causes(error):
        if isinstance(link, requests.HTTPError) and link.response is not None:
            response = link.response
            crumb = response.status_code == 403 and "crumb" in response.text.lower()
            return Fault(f"HTTP {response.status_code} {response.reason}".rstrip(), response.status_code, crumb=crumb)
        if isinstance(link, requests.ConnectTimeout):
            return Fault(f"no connection within {timeout_seconds:g} s", sent=False)
        if isinstance(link, requests.Timeout):
            return Fault(f"no answer within {timeout_seconds:g} s")
        if isinstance(link, requests.ConnectionError):
            reason = getattr(link.args[0], "reason", None) if link.args else None
            if isinstance(reason, urllib3.exceptions.NewConnectionError):
                return Fault("connection refused", sent=False)
            return Fault("the connection dropped before an answer")
    return Fault(f"an answer that could not be read ({type(error).__name__})")


def retrying(
    work: Callable[[], T],
    *,
    policy: RetryPolicy,
    read_fault: Callable[[Exception], Fault | None],
    judge: Callable[[Fault, int], None],
) -> T:
    """`work()`, tried up to policy.attempts times: `read_fault` turns an exception into a Fault (None: not
    a request's fault, raised as it is); `judge(fault, attempt)` raises when the fault is not to be retried."""
    attempt = 1
    while True:
        try:
            return work()
        except Exception as error:
            fault = read_fault(error)
            if fault is None:
                raise
        judge(fault, attempt)
        policy.sleep(max(policy.delay(attempt), fault.rate_limit_seconds or 0.0))
        attempt += 1


@dataclass(frozen=True)
class AccessHints:
    """What to tell a user whose request a service refused (401, 403): by whether credentials were given."""

    missing: str  # none were given
    invalid: str  # 401: the token is wrong or expired
    forbidden: str  # 403: the account may not do this


def refused_access(
    what: str, fault: Fault, *, service: str, accepting: str, given: bool, hints: AccessHints
) -> DispatchError:
    """The one-line error for a 401 or 403: names the variables holding the credentials, never their values."""
    hint = hints.missing if not given else hints.invalid if fault.status == 401 else hints.forbidden
    return DispatchError(f"{what}: expected {service} to accept {accepting}, found {fault.words}", hint=hint)
