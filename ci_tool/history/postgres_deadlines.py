"""How long ci-tool waits for a PostgreSQL server, so that a cut network or a frozen server never holds a
run for the kernel's TCP timeouts (minutes to hours); a deadline that passes is an outage like a server
that is down (the recorder keeps the run in its folder for `ci-tool history import`).

    connecting     libpq's `connect_timeout` (10 s): the handshake and the login
    a cut network  libpq's `tcp_user_timeout` (30 s of data the peer never acknowledged) and TCP keepalives
                   (probes after 10 s idle, every 5 s, 3 lost: 25 s) end a connection whose packets go nowhere
    a statement    the server's `statement_timeout` (120 s, and at least twice the lock wait): the slowest
                   read of a history of 1M test rows takes under a second (docs/PERF.md), so only a
                   statement gone wrong meets it
    an answer      ci-tool's own: a round trip the server has not answered within its statement_timeout plus
                   connect_timeout means a server that cannot answer at all (stopped, frozen, or behind a
                   path that acknowledges packets and forwards none, where no TCP timeout fires): the
                   connection's socket is shut, and the call fails as if the server went away

Each is libpq's own parameter, so a URL that sets one keeps its value, as libpq users expect:
`?connect_timeout=3&tcp_user_timeout=5000&keepalives_idle=2&options=-c%20statement_timeout%3D1000`
($PGCONNECT_TIMEOUT and $PGOPTIONS too; a role's or a database's own `statement_timeout` and `lock_timeout`
are kept as well). A statement_timeout of 0 is no limit on statements and no deadline on answers.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator, Mapping

CONNECT_TIMEOUT_SECONDS = 10
STATEMENT_TIMEOUT_MS = 120_000
CONNECT_DEFAULTS = {
    "application_name": "ci-tool",  # how pg_stat_activity names ci-tool's sessions (not a deadline: a default too)
    "connect_timeout": str(CONNECT_TIMEOUT_SECONDS),
    "tcp_user_timeout": "30000",  # milliseconds
    "keepalives": "1",
    "keepalives_idle": "10",
    "keepalives_interval": "5",
    "keepalives_count": "3",
}
_ENVIRONMENT = {"application_name": "PGAPPNAME", "connect_timeout": "PGCONNECT_TIMEOUT"}  # what libpq also reads


def added_parameters(given: Mapping[str, object], environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """ci-tool's connection defaults that neither the URL's parameters (`given`) nor the environment set
    (a keyword handed to the driver would replace the URL's own value)."""
    return {
        name: value
        for name, value in CONNECT_DEFAULTS.items()
        if name not in given and not environ.get(_ENVIRONMENT.get(name, ""))
    }


def default_statement_timeout_ms(lock_timeout_ms: int) -> int:
    """ci-tool's statement_timeout: a writer that waits its whole lock wait still ends by its own error."""
    return max(STATEMENT_TIMEOUT_MS, 2 * lock_timeout_ms)


# The server's values of both, from the URL's `options`, $PGOPTIONS, the role or the database where those set
# them, else ci-tool's (the parameters): one round trip that sets and reads them back, in milliseconds.
SESSION_TIMEOUTS = (
    "SELECT name, value, set_config(name, value, false) FROM (SELECT s.name, CASE WHEN s.source IN "
    "('client', 'user', 'database', 'database user') THEN s.setting ELSE d.value END AS value "
    "FROM pg_settings s JOIN (VALUES ('statement_timeout', %s), ('lock_timeout', %s)) AS d (name, value) "
    "ON d.name = s.name) AS chosen"
)


class AnswerWatch:
    """ci-tool's deadline on answers (see the module docstring): `waiting(socket, seconds)` around a call
    that waits for the server; `progress()` when an answer came, so a transaction of many statements is
    timed per statement. A watcher thread shuts the socket at the deadline; `expired` tells it happened."""

    def __init__(self) -> None:
        self.expired = False
        self._changed = threading.Condition()
        self._armed: tuple[int, float, float] | None = None  # (socket, seconds, deadline on the monotonic clock)
        self._closed = False
        self._watcher: threading.Thread | None = None

    @contextlib.contextmanager
    def waiting(self, fileno: int, seconds: float | None) -> Iterator[None]:
        if seconds is None:
            yield
            return
        with self._changed:
            outer = self._armed  # a read inside a write (the migration reads the version): the write's again after
            self._armed = (fileno, seconds, time.monotonic() + seconds)
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._watch, name="ci-tool history deadline", daemon=True)
                self._watcher.start()
            self._changed.notify()
        try:
            yield
        finally:
            with self._changed:
                self._armed = None if outer is None else (outer[0], outer[1], time.monotonic() + outer[1])
                self._changed.notify()

    def progress(self) -> None:
        """An answer came: the next one has the whole deadline again."""
        with self._changed:
            if self._armed is not None:
                fileno, seconds, _ = self._armed
                self._armed = (fileno, seconds, time.monotonic() + seconds)

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify()

    def _watch(self) -> None:
        with self._changed:
            while not self._closed:
                if self._armed is None:
                    self._changed.wait()
                    continue
                fileno, _, deadline = self._armed
                left = deadline - time.monotonic()
                if left > 0:
                    self._changed.wait(left)
                    continue
                self.expired = True
                self._armed = None
                _shut(fileno)


def _shut(fileno: int) -> None:
    """End the connection under the driver's feet: its wait wakes, reads the end, and fails (the socket is
    the connection's own, still open while the call waits; a copy of the descriptor is what is closed)."""
    with contextlib.suppress(OSError):
        copy = socket.socket(fileno=os.dup(fileno))
        with copy:
            copy.shutdown(socket.SHUT_RDWR)
