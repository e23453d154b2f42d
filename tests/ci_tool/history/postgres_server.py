"""A real, throw-away PostgreSQL cluster from Debian's packages, for the tests that run the history on it.

The server refuses to run as root, so as root its commands run as the `postgres` user the package makes
(subprocess switches user and group itself: no `runuser` on PATH needed); as anyone else they run as that
user. It listens on 127.0.0.1 at a free port with its socket in its own folder (no system service is
involved), and takes password (scram-sha-256) logins as `ci`.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any

USER = "ci"
PASSWORD = "s3cret-Pw-4-tests"  # what no output may show


def binaries() -> Path | None:
    """The newest installed PostgreSQL's server binaries (initdb, pg_ctl), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name))
    return Path(found[-1]).parent if found else None


def why_not() -> str | None:
    """Why no cluster can start here (None: it can)."""
    if binaries() is None:
        return "needs PostgreSQL's server binaries (apt-get install postgresql; .ci/run installs them)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "runs the server as the `postgres` user, which this machine lacks"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def children_of(pid: int) -> list[int]:
    """The processes whose parent is `pid` (Linux's /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # after the command, which may hold blanks
        except OSError:
            continue  # it ended meanwhile
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


class PostgresServer:
    def __init__(self) -> None:
        self.bin = binaries()
        assert self.bin is not None
        self.root = Path(tempfile.mkdtemp(prefix="ci-tool-pg-"))
        self.root.chmod(0o755)
        self.data = self.root / "data"
        self.port = _free_port()
        self.as_postgres = os.geteuid() == 0
        self.as_user: dict[str, Any] = (
            {"user": "postgres", "group": "postgres", "extra_groups": []} if self.as_postgres else {}
        )
        if self.as_postgres:
            shutil.chown(self.root, "postgres")
        password_file = self.root / "pw"
        password_file.write_text(PASSWORD + "\n")
        if self.as_postgres:
            shutil.chown(password_file, "postgres")
        self._run("initdb", "-D", str(self.data), "-U", USER, "--auth=scram-sha-256", f"--pwfile={password_file}",
                  "-E", "UTF8", "--no-sync")  # fmt: skip
        password_file.unlink()
        self.start()

    def _run(self, tool: str, *args: str) -> None:
        assert self.bin is not None
        subprocess.run([str(self.bin / tool), *args], check=True, capture_output=True, timeout=120, **self.as_user)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-t", "120", "-o", options, "start"
        )

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "120", "stop")

    def url(self, database: str, *, password: str | None = PASSWORD) -> str:
        secret = f":{password}" if password is not None else ""
        return f"postgresql://{USER}{secret}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as db:
            db.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as db:
            db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def running(self) -> bool:
        assert self.bin is not None
        status = [str(self.bin / "pg_ctl"), "-D", str(self.data), "status"]
        return subprocess.run(status, capture_output=True, timeout=120, **self.as_user).returncode == 0

    def postmaster(self) -> int:
        """The server's first process, whose children are its backends and workers."""
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def processes(self) -> list[int]:
        """The postmaster and its children, as /proc lists them now."""
        postmaster = self.postmaster()
        return [postmaster, *children_of(postmaster)]

    def freeze(self) -> None:
        """Stop every process of the server (SIGSTOP): its kernel still takes connections and bytes, and
        nothing answers, as a frozen host or a path that black-holes packets does."""
        self._signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self._signal(signal.SIGCONT)

    def _signal(self, signal_number: int) -> None:
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):  # a backend that ended since /proc listed it
                os.kill(pid, signal_number)

    def close(self) -> None:
        try:
            with contextlib.suppress(OSError, ValueError):  # a test that froze it may end before it thaws it
                self.thaw()
            if self.running():  # a test that stops it may end before it starts it again
                self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
