"""The history tests' backends: `history_at` is a fresh history on each backend in turn, a SQLite file and a
database on one real PostgreSQL server per session (postgres_server.py), `module_history_at` the same once a
module; `postgres_server` is that server, `own_postgres_server` one for a single test."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from ci_tool.history.locator import History, PostgresUrl
from ci_tool.history.store import HistoryStore
from tests.ci_tool.history.postgres_server import PostgresServer, why_not

_names: Iterator[int] = itertools.count(1)


def _started_server() -> Generator[PostgresServer]:
    """A new server, closed after; a skip with the reason where none can start."""
    reason = why_not()
    if reason is not None:
        pytest.skip(reason)
    server = PostgresServer()
    yield server
    server.close()


@pytest.fixture(scope="session")
def postgres_server() -> Generator[PostgresServer]:
    yield from _started_server()


@pytest.fixture
def own_postgres_server() -> Generator[PostgresServer]:
    """A server of the test's own, for a test that stops or freezes it."""
    yield from _started_server()


@contextlib.contextmanager
def _new_database(server: PostgresServer) -> Iterator[PostgresUrl]:
    """A new, empty database on `server`, dropped after."""
    name = f"history_{next(_names)}"
    yield PostgresUrl(server.create_database(name))
    server.drop_database(name)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Generator[PostgresUrl]:
    """A new, empty database on the session's server."""
    with _new_database(postgres_server) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def history_at(request: pytest.FixtureRequest, tmp_path: Path) -> History:
    """A new history on each backend in turn."""
    if request.param == "sqlite":
        return tmp_path / "h.sqlite"
    url: PostgresUrl = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def module_history_at(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Generator[History]:
    """history_at for a module's tests that only read what they share: one history a module on each backend."""
    if request.param == "sqlite":
        yield tmp_path_factory.mktemp("history") / "h.sqlite"
        return
    with _new_database(request.getfixturevalue("postgres_server")) as url:
        yield url


@pytest.fixture
def planted_store(history_at: History) -> Generator[HistoryStore]:
    """planted.py's runs (a flaky test among others) in a new history on each backend in turn (the suite's
    fixture of the same name, on SQLite only, serves the tests outside this folder)."""
    from tests.ci_tool.history.planted import plant

    with HistoryStore(history_at) as store:
        plant(store)
        yield store
