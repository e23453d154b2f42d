"""The PostgreSQL history's deadlines on a real server: libpq's connection parameters (the URL's own values
win), the server's statement and lock timeouts, and ci-tool's deadline on an answer, met through a loopback
proxy that stops forwarding (it takes the bytes, so no TCP timeout would ever fire)."""

from __future__ import annotations

import time
from collections.abc import Generator
from pathlib import Path

import pytest

from ci_tool.errors import HistoryError
from ci_tool.history import postgres_deadlines as deadlines
from ci_tool.history import queries
from ci_tool.history.backend import Writer
from ci_tool.history.locator import PostgresUrl
from ci_tool.history.recorder import RunRecorder
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord, TestRecord
from ci_tool.history.unrecorded import UNRECORDED
from ci_tool.outcomes import RunState
from tests.ci_tool.history.postgres_server import PASSWORD, PostgresServer
from tests.ci_tool.history.stalling_proxy import StallingProxy

SHORT = "connect_timeout=2&options=-c%20statement_timeout%3D1000"  # the deadlines tests wait for: 2 s, 1 s + 2 s
BOUND_SECONDS = 60  # generous: the deadlines above end each wait in 2 to 3 s; the kernel's would take minutes


def _defaults_but(*names: str) -> dict[str, str]:
    return {name: value for name, value in deadlines.CONNECT_DEFAULTS.items() if name not in names}


@pytest.mark.parametrize(
    ("given", "environ", "added"),
    [
        ({}, {}, deadlines.CONNECT_DEFAULTS),
        ({"connect_timeout": "3", "keepalives_idle": "1"}, {}, _defaults_but("connect_timeout", "keepalives_idle")),
        ({}, {"PGCONNECT_TIMEOUT": "4", "PGAPPNAME": "nightly"}, _defaults_but("connect_timeout", "application_name")),
        ({"application_name": "nightly"}, {}, _defaults_but("application_name")),
        (
            {"tcp_user_timeout": "0", "keepalives": "0"},
            {"PGCONNECT_TIMEOUT": ""},
            _defaults_but("tcp_user_timeout", "keepalives"),
        ),
    ],
    ids=["none-given", "url-sets-two", "environment-sets-two", "url-names-the-session", "url-turns-off-and-empty-env"],
)
def test_ci_tool_adds_only_the_connection_deadlines_the_url_and_environment_leave_unset(
    given: dict[str, str], environ: dict[str, str], added: dict[str, str]
) -> None:
    assert deadlines.added_parameters(given, environ) == added


def _settings(url: str, *, busy_timeout_ms: int = 60_000) -> tuple[str, str]:
    with HistoryStore(url, busy_timeout_ms=busy_timeout_ms) as store:
        return store.rows("SELECT current_setting('statement_timeout'), current_setting('lock_timeout')")[0]


@pytest.mark.parametrize(
    ("query", "busy_timeout_ms", "expected"),
    [
        ("", 60_000, ("2min", "1min")),
        ("", 90_000, ("3min", "90s")),
        ("?options=-c%20statement_timeout%3D1500%20-c%20lock_timeout%3D700", 60_000, ("1500ms", "700ms")),
        ("?options=-c%20statement_timeout%3D0", 60_000, ("0", "1min")),
    ],
    ids=["defaults", "a-long-lock-wait-gets-a-longer-statement", "url-options-win", "url-turns-statements-unlimited"],
)
def test_the_server_side_timeouts_are_ci_tools_unless_the_url_sets_them(
    postgres_url: PostgresUrl, query: str, busy_timeout_ms: int, expected: tuple[str, str]
) -> None:
    assert _settings(postgres_url.url + query, busy_timeout_ms=busy_timeout_ms) == expected


@pytest.mark.parametrize(("query", "name"), [("", "ci-tool"), ("?application_name=nightly", "nightly")])
def test_the_session_is_named_ci_tool_unless_the_url_names_it(postgres_url: PostgresUrl, query: str, name: str) -> None:
    with HistoryStore(postgres_url.url + query) as store:
        assert store.rows("SELECT current_setting('application_name')") == [(name,)]


def test_a_databases_own_statement_timeout_is_kept(postgres_server: PostgresServer, postgres_url: PostgresUrl) -> None:
    import psycopg

    database = postgres_url.url.rsplit("/", 1)[1]
    with psycopg.connect(postgres_server.url("postgres"), autocommit=True) as db:
        db.execute(f"ALTER DATABASE \"{database}\" SET statement_timeout = '7s'")
    assert _settings(postgres_url.url) == ("7s", "1min")


def test_a_statement_past_the_statement_timeout_is_a_located_error(postgres_url: PostgresUrl) -> None:
    url = PostgresUrl(postgres_url.url + "?options=-c%20statement_timeout%3D200")
    with HistoryStore(url) as store, pytest.raises(HistoryError) as error:
        store.rows("SELECT pg_sleep(5)")
    assert str(error.value) == (
        f"{url.shown()}: cannot read the history: expected each statement to end within 0.2 s (statement_timeout), "
        "found one the server cancelled Hint: raise it in the URL: "
        "`?options=-c%20statement_timeout%3D600000` (milliseconds; 0: no limit)"
    )


@pytest.fixture
def proxy(postgres_server: PostgresServer) -> Generator[StallingProxy]:
    with StallingProxy(postgres_server.port) as found:
        yield found


@pytest.mark.parametrize("given_by", ["url", "environment"])
def test_a_server_that_never_answers_the_handshake_ends_the_open_at_the_connect_timeout(
    postgres_url: PostgresUrl, proxy: StallingProxy, monkeypatch: pytest.MonkeyPatch, given_by: str
) -> None:
    proxy.stall()
    if given_by == "environment":
        monkeypatch.setenv("PGCONNECT_TIMEOUT", "2")
    url = PostgresUrl(proxy.url(postgres_url.url) + ("?" + SHORT if given_by == "url" else ""))
    begun = time.monotonic()
    with pytest.raises(HistoryError) as error:
        HistoryStore(url)
    assert time.monotonic() - begun < BOUND_SECONDS
    assert str(error.value) == (
        f"{url.shown()}: cannot open the history: expected a PostgreSQL server to answer within 2 s "
        "(connect_timeout), found no answer Hint: start the server or fix the URL; the URL sets the waits: "
        "`?connect_timeout=SECONDS&options=-c%20statement_timeout%3DMS` (an answer may take the two together)"
    )
    assert PASSWORD not in str(error.value)


@pytest.mark.parametrize("doing", ["read", "write"])
def test_a_server_that_stops_answering_mid_session_meets_ci_tools_deadline(
    postgres_url: PostgresUrl, proxy: StallingProxy, doing: str
) -> None:
    url = PostgresUrl(proxy.url(postgres_url.url) + "?" + SHORT)
    with HistoryStore(url) as store:
        store.start_run(RunRecord("r1", "run", RunState.RUNNING, 1.0))
        proxy.stall()
        begun = time.monotonic()
        with pytest.raises(HistoryError) as error:
            if doing == "read":
                queries.recent_runs(store)
            else:
                store.finish_run("r1", state=RunState.PASSED, finished_at=2.0)
        assert time.monotonic() - begun < BOUND_SECONDS
    assert str(error.value) == (
        f"{url.shown()}: cannot {doing} the history: expected the PostgreSQL server to answer within 3 s, found "
        "no answer (a stopped server or a cut network) Hint: check the server and the network; the URL sets the "
        "waits: `?connect_timeout=SECONDS&options=-c%20statement_timeout%3DMS` (an answer may take the two together)"
    )


def test_a_read_inside_a_write_leaves_the_writes_deadline_armed(
    postgres_url: PostgresUrl, proxy: StallingProxy
) -> None:
    url = PostgresUrl(proxy.url(postgres_url.url) + "?" + SHORT)

    def read_then_stall(db: Writer) -> None:
        assert store.rows("SELECT 1") == [(1,)]  # as the migration reads the version inside its transaction
        proxy.stall()
        db.execute("SELECT 1")

    with HistoryStore(url) as store:
        begun = time.monotonic()
        with pytest.raises(HistoryError, match="expected the PostgreSQL server to answer within 3 s, found no answer"):
            store.write(read_then_stall)
        assert time.monotonic() - begun < BOUND_SECONDS


def test_a_run_whose_server_stops_answering_keeps_its_records_and_they_land_by_import(
    postgres_url: PostgresUrl, proxy: StallingProxy, tmp_path: Path
) -> None:
    url = PostgresUrl(proxy.url(postgres_url.url) + "?" + SHORT)
    heard: list[str] = []
    with RunRecorder(url, tmp_path, warn=heard.append) as recorder:
        recorder.start_run(RunRecord("r-stall", "run", RunState.RUNNING, 10.0))
        proxy.stall()
        tests = [TestRecord("tests/a.py::t", "passed", 1.5)]
        recorder.record_stage(StageRecord("r-stall", "CPU-Generic-1", "passed", passed=1), tests, recorded_at=11.0)
        recorder.finish_run("r-stall", state=RunState.PASSED, finished_at=12.0)
        unrecorded = recorder.unrecorded
    assert unrecorded is not None and (tmp_path / UNRECORDED).is_file()
    assert str(unrecorded).startswith(
        f"{tmp_path}: the run is not in the history ({url.shown()}: cannot write the history: expected the "
        "PostgreSQL server to answer within 3 s, found no answer (a stopped server or a cut network)); "
    )
    assert heard == [] and PASSWORD not in str(unrecorded)  # the outage is said once, by the caller, at the end
    from ci_tool.cli import main

    assert main(["history", "import", str(tmp_path), "--history", postgres_url.url]) == 0  # the direct path answers
    with HistoryStore(postgres_url, read_only=True) as store:
        run = queries.get_run(store, "r-stall")
        recorded = [t.test_id for t in queries.stage_tests(store, "r-stall", "CPU-Generic-1")]
    assert (run.state, recorded) == (RunState.PASSED, ["tests/a.py::t"])


def test_a_long_transaction_whose_server_answers_each_statement_meets_no_deadline(postgres_url: PostgresUrl) -> None:
    url = PostgresUrl(postgres_url.url + "?connect_timeout=2&options=-c%20statement_timeout%3D2000")  # answers: 4 s

    def five_seconds(db: Writer) -> None:  # each answer re-arms the deadline
        for _ in range(5):
            db.execute("SELECT pg_sleep(1)")

    with HistoryStore(url) as store:
        store.write(five_seconds)
        assert store.rows("SELECT 1") == [(1,)]
