"""A loopback HTTP server with faults injected per request: what the Jenkins and GitHub fakes answer through
(fake_jenkins.py, fake_github.py). Nothing waits on the clock: the client's requests move the fakes on."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

Answer = tuple[int, dict[str, str], bytes]


@dataclass
class Fault:
    """Answer matching requests with `status` (or drop the connection, before or after the fake acted)."""

    method: str
    path: str  # a regex searched in the path
    status: int | None = None
    body: str = ""
    drop: bool = False  # close the connection without an answer
    after: bool = False  # drop or answer `status` only after the fake acted on the request
    hang: bool = False  # answer only when the test ends (a timeout)
    times: int = 1
    headers: dict[str, str] = field(default_factory=dict)  # with status 200 and a body: an answer of another shape
    slow_seconds: float = 0.0  # with after: the answer (the fake's own, when no status) leaves this much later


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes


class Loopback:
    """A threaded HTTP server on 127.0.0.1 and a free port, routing to `answer`; faults and a request log."""

    def __init__(self) -> None:
        self.faults: list[Fault] = []
        self.requests: list[Request] = []
        self.lock = threading.RLock()
        self.release = threading.Event()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = -1  # headers and body leave in one write (else delayed ACKs add 40 ms an answer)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(
                    self.command,
                    parts.path,
                    {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()},
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length) if length else b"",
                )
                answer = owner.handle(request)
                if answer is None:
                    self.close_connection = True
                    return
                status, headers, body = answer
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_DELETE = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def fail(self, method: str, path: str, **how: Any) -> Fault:
        fault = Fault(method, path, **how)
        self.faults.append(fault)
        return fault

    def _fault_for(self, request: Request) -> Fault | None:
        for fault in self.faults:
            if fault.times > 0 and fault.method == request.method and re.search(fault.path, request.path):
                fault.times -= 1
                return fault
        return None

    def before(self, request: Request) -> None:
        """Called outside the lock before a request is answered (a barrier that lines up concurrent handlers)."""

    def handle(self, request: Request) -> Answer | None:
        self.before(request)
        with self.lock:
            self.requests.append(request)
            fault = self._fault_for(request)
            if fault is not None and fault.hang:
                pass
            elif fault is not None and not fault.after:
                return None if fault.drop else (fault.status or 500, fault.headers, fault.body.encode())
            else:
                answer = self.answer(request)
                if fault is not None and fault.slow_seconds:
                    pass  # answered below, outside the lock
                elif fault is not None:
                    return None if fault.drop else (fault.status or 500, fault.headers, fault.body.encode())
                else:
                    return answer
        if fault is not None and fault.slow_seconds:
            self.release.wait(fault.slow_seconds)
            return answer
        self.release.wait(60)  # a hung answer: the client times out first
        return None

    def answer(self, request: Request) -> Answer:
        raise NotImplementedError

    def route(self, request: Request, not_found: Answer) -> Answer:
        """The answer of the ROUTES entry (method, path regex, handler) that matches the request."""
        for method, pattern, handler in getattr(self, "ROUTES", ()):
            match = re.fullmatch(pattern, request.path)
            if match and method == request.method:
                return handler(self, request, **self.arguments(match.groupdict()))  # type: ignore[no-any-return]
        return not_found

    def arguments(self, groups: dict[str, str]) -> dict[str, str]:
        """The handler's arguments from a route's named groups (a fake rewrites the ones its server spells
        differently in paths)."""
        return groups

    def count(self, method: str, path: str) -> int:
        return sum(1 for r in self.requests if r.method == method and re.search(path, r.path))


def json_answer(value: object, status: int = 200, headers: dict[str, str] | None = None) -> Answer:
    return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(value).encode()


NOT_FOUND: Answer = (404, {"Content-Type": "text/html"}, b"<html>Not Found</html>")


def serve(fake: Loopback) -> Iterator[Loopback]:
    try:
        yield fake
    finally:
        fake.close()
