"""The history on a real PostgreSQL server: where it is named (the URL, shown without its password), what a
missing driver, a wrong password and a server that is away say, many writers at once, and a run made while
the server is stopped, recorded by `ci-tool history import` once it is back."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.errors import HistoryError
from ci_tool.history import queries
from ci_tool.history.locator import PostgresUrl, history_location, locate
from ci_tool.history.recorder import RunRecorder
from ci_tool.history.store import SCHEMA_VERSION, HistoryStore, RunRecord, StageRecord, TestRecord
from ci_tool.history.unrecorded import UNRECORDED
from ci_tool.outcomes import RunState
from tests.ci_tool.history.postgres_server import PASSWORD, PostgresServer

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("postgresql://ci:pw@db:5432/history", "postgresql://ci@db:5432/history"),
        ("postgres://ci@db/history", "postgres://ci@db/history"),
        ("postgresql://ci:p%40ss@db/h?sslmode=require&password=x", "postgresql://ci@db/h?sslmode=require"),
        ("postgresql:///history", "postgresql:///history"),
        ("postgresql://db/h?sslpassword=key-pw&sslmode=verify-full", "postgresql://db/h?sslmode=verify-full"),
    ],
    ids=["password-in-user", "no-password", "password-parameter", "socket", "ssl-key-password"],
)
def test_a_url_is_shown_without_its_password(given: str, shown: str) -> None:
    url = locate(given)
    assert isinstance(url, PostgresUrl)
    assert (url.shown(), str(url), repr(url)) == (shown, shown, f"PostgresUrl({shown!r})")


@pytest.mark.parametrize(
    ("option", "environ", "expected"),
    [
        (None, {"CI_TOOL_HISTORY": "postgresql://ci@db/h"}, PostgresUrl("postgresql://ci@db/h")),
        ("POSTGRESQL://ci@db/h", {}, PostgresUrl("postgresql://ci@db/h")),  # libpq takes only lowercase
        ("h/postgresql.sqlite", {}, Path("h/postgresql.sqlite")),
    ],
    ids=["environment", "scheme-any-case", "a-path"],
)
def test_history_location(option: str | None, environ: dict[str, str], expected: object) -> None:
    assert history_location(option, environ) == expected


def _history(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_url_without_the_driver_names_the_extra(tmp_path: Path) -> None:
    script = "import sys; sys.modules['psycopg'] = None; from ci_tool.cli import main; sys.exit(main(sys.argv[1:]))"
    url = f"postgresql://ci:{PASSWORD}@127.0.0.1:1/h"
    done = subprocess.run(
        [sys.executable, "-c", script, "history", "--history", url], capture_output=True, text=True, cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}, timeout=120,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        "error: postgresql://ci@127.0.0.1:1/h: cannot open the history: expected the PostgreSQL driver (psycopg), "
        "found it not installed Hint: `pip install 'ci-tool[postgres]'`, or pass --history PATH for a SQLite file\n",
    )


def test_a_wrong_password_is_a_located_error_without_the_password(
    postgres_server: PostgresServer, postgres_url: PostgresUrl, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = postgres_url.url.replace(PASSWORD, "not-the-Pw-42")
    code, out, err = _history(["history", "--history", wrong], capsys)
    shown = PostgresUrl(wrong).shown()
    assert (code, out) == (1, "")
    assert err == (
        f"error: {shown}: cannot open the history: expected a PostgreSQL server that takes this connection, found "
        f'\'connection failed: connection to server at "127.0.0.1", port {postgres_server.port} failed: FATAL:  '
        'password authentication failed for user "ci"\' Hint: start the server or fix the URL; the password comes '
        "from the URL, $PGPASSWORD or ~/.pgpass\n"
    )
    assert "not-the-Pw-42" not in err and PASSWORD not in err


def test_the_password_can_come_from_pgpassword(
    postgres_url: PostgresUrl, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    code, out, err = _history(["history", "--json", "--history", postgres_url.shown()], capsys)
    assert (code, json.loads(out)["runs"], err) == (0, [], "")


def _record(url: str, writer: int, tests: int) -> None:
    """One runner: a run of its own, and one stage of `tests` tests."""
    with HistoryStore(url) as store:
        run_id = f"run-{writer:02d}"
        store.start_run(RunRecord(run_id, "stage run", RunState.RUNNING, 100.0 + writer))
        results = [TestRecord(f"tests/t.py::test_{i}", "passed", 0.01) for i in range(tests)]
        store.record_stage(StageRecord(run_id, "CPU-Generic-1", "passed", passed=tests), results, recorded_at=200.0)
        store.finish_run(run_id, state=RunState.PASSED, finished_at=300.0)


def _record_shared_stage(url: str, attempt: int) -> None:
    """A retried agent: the same stage of the same run, recorded again (its tests differ by attempt)."""
    with HistoryStore(url) as store:
        results = [TestRecord(f"tests/s.py::test_{i}_{attempt % 2}", "passed", 0.01) for i in range(200)]
        store.record_stage(StageRecord("the-run", "CPU-Generic-2", "passed"), results, recorded_at=float(attempt))


def test_eight_writers_at_once_lose_nothing_and_a_stage_recorded_twice_is_one_record(
    postgres_url: PostgresUrl,
) -> None:
    with HistoryStore(postgres_url) as store:
        store.start_run(RunRecord("the-run", "run", RunState.RUNNING, 1.0))
    with ProcessPoolExecutor(8) as pool:
        writes = [pool.submit(_record, postgres_url.url, writer, 500) for writer in range(8)]
        writes += [pool.submit(_record_shared_stage, postgres_url.url, attempt) for attempt in range(8)]
        for write in writes:
            write.result(timeout=300)
    with HistoryStore(postgres_url, read_only=True) as store:
        runs = store.rows("SELECT state, count(*) FROM runs GROUP BY state ORDER BY state")
        tests = store.rows("SELECT run_id, count(*) FROM test_results GROUP BY run_id ORDER BY run_id")
        stages = store.rows("SELECT count(*) FROM stages WHERE run_id = 'the-run'")
    assert runs == [("passed", 8), ("running", 1)]
    assert tests == [*[(f"run-{w:02d}", 500) for w in range(8)], ("the-run", 200)]
    assert stages == [(1,)]


def test_a_run_id_recorded_twice_is_refused(postgres_url: PostgresUrl) -> None:
    with HistoryStore(postgres_url) as store:
        store.start_run(RunRecord("r1", "run", RunState.RUNNING, 1.0))
        with pytest.raises(HistoryError, match="cannot write the history: duplicate key value"):
            store.start_run(RunRecord("r1", "run", RunState.RUNNING, 2.0))


def test_a_run_made_while_the_server_is_stopped_is_imported_after_the_restart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], own_postgres_server: PostgresServer
) -> None:
    server = own_postgres_server  # its own: this test stops it
    url = PostgresUrl(server.create_database("history"))
    heard: list[str] = []
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with RunRecorder(url, run_dir, warn=heard.append) as recorder:
        recorder.start_run(RunRecord("r-outage", "run", RunState.RUNNING, 10.0))
        server.stop()  # the network cut, the server gone mid-run
        tests = [TestRecord("tests/a.py::t", "passed", 1.5)]
        recorder.record_stage(StageRecord("r-outage", "CPU-Generic-1", "passed", passed=1), tests, recorded_at=11.0)
        recorder.finish_run("r-outage", state=RunState.PASSED, finished_at=12.0)
        unrecorded = recorder.unrecorded
    assert (run_dir / UNRECORDED).is_file()
    assert unrecorded is not None
    assert str(unrecorded).startswith(
        f"{run_dir}: the run is not in the history ({url.shown()}: cannot write the history: "
    )
    assert str(unrecorded).endswith(
        f"Hint: `ci-tool history import {run_dir}` records them once the history can take them"
    )
    assert all(PASSWORD not in line for line in [*heard, str(unrecorded)])
    server.start()
    code, out, err = _history(["history", "import", str(run_dir), "--history", url.url], capsys)
    assert (code, PASSWORD in out + err) == (0, False)
    with HistoryStore(url, read_only=True) as store:
        run = queries.get_run(store, "r-outage")
        stage_tests = queries.stage_tests(store, "r-outage", "CPU-Generic-1")
    assert (run.state, run.finished_at, [t.test_id for t in stage_tests]) == (
        RunState.PASSED, 12.0, ["tests/a.py::t"],
    )  # fmt: skip


def test_a_run_whose_server_comes_back_before_it_ends_is_recorded_whole_by_the_run(
    tmp_path: Path, own_postgres_server: PostgresServer
) -> None:
    """The history took the run as `running`, then the server went: the run's end records it whole, so no
    `running` row waits three days for another host's sweep and nothing waits in its folder."""
    server = own_postgres_server  # its own: this test stops it
    url = PostgresUrl(server.create_database("history"))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with RunRecorder(url, run_dir) as recorder:
        recorder.start_run(RunRecord("r-back", "run", RunState.RUNNING, 10.0, host="another-host"))
        server.stop()
        tests = [TestRecord("tests/a.py::t", "passed", 1.5)]
        recorder.record_stage(StageRecord("r-back", "CPU-Generic-1", "passed", passed=1), tests, recorded_at=11.0)
        assert (run_dir / UNRECORDED).is_file()
        server.start()
        recorder.finish_run("r-back", state=RunState.PASSED, finished_at=12.0)
        unrecorded = recorder.unrecorded
    assert (unrecorded, (run_dir / UNRECORDED).exists()) == (None, False)
    with HistoryStore(url, read_only=True) as store:
        run = queries.get_run(store, "r-back")
        stage_tests = queries.stage_tests(store, "r-back", "CPU-Generic-1")
    assert (run.state, run.finished_at, [t.test_id for t in stage_tests]) == (
        RunState.PASSED, 12.0, ["tests/a.py::t"],
    )  # fmt: skip


def _execute(url: PostgresUrl, *statements: str) -> None:
    import psycopg

    with psycopg.connect(url.url, autocommit=True) as db:
        for statement in statements:
            db.execute(statement)


def test_a_database_of_someone_elses_is_refused_and_left_as_it_is(postgres_url: PostgresUrl) -> None:
    _execute(postgres_url, "CREATE TABLE users (id BIGINT)")
    with pytest.raises(HistoryError) as error:
        HistoryStore(postgres_url)
    assert str(error.value) == (
        f"{postgres_url.shown()}: expected a ci-tool history (tables runs, stages, test_results), found a PostgreSQL "
        "database with other tables ('users') Hint: pass the history database ci-tool writes (--history URL); this "
        "one is left as it is"
    )


def test_a_database_of_a_newer_ci_tool_is_refused(postgres_url: PostgresUrl) -> None:
    HistoryStore(postgres_url).close()
    _execute(postgres_url, "UPDATE schema_version SET version = 99")
    with pytest.raises(HistoryError) as error:
        HistoryStore(postgres_url, read_only=True)
    assert str(error.value) == (
        f"{postgres_url.shown()}: expected history schema version {SCHEMA_VERSION} or older, found 99 Hint: a newer "
        "ci-tool wrote this database; upgrade ci-tool or pass another --history"
    )


def test_an_unknown_database_is_a_located_error(postgres_server: PostgresServer) -> None:
    url = PostgresUrl(postgres_server.url("no_such_history"))
    with pytest.raises(HistoryError) as error:
        HistoryStore(url)
    assert str(error.value) == (
        f"{url.shown()}: cannot open the history: expected a PostgreSQL server that takes this connection, found "
        f'\'connection failed: connection to server at "127.0.0.1", port {postgres_server.port} failed: FATAL:  '
        'database "no_such_history" does not exist\' Hint: start the server or fix the URL; the password comes from '
        "the URL, $PGPASSWORD or ~/.pgpass"
    )


def test_a_stage_another_session_holds_is_a_located_error_after_the_busy_timeout(postgres_url: PostgresUrl) -> None:
    import psycopg

    HistoryStore(postgres_url).close()
    stage = StageRecord("r1", "CPU-Generic-1", "passed")
    with psycopg.connect(postgres_url.url) as holder:  # a transaction left open on that stage
        holder.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", ("stage 'r1' 'CPU-Generic-1'",))
        with HistoryStore(postgres_url, busy_timeout_ms=200) as store, pytest.raises(HistoryError) as error:
            store.record_stage(stage, recorded_at=1.0)
    assert str(error.value) == (
        f"{postgres_url.shown()}: the history is locked: expected to write it within 1 try of 0.2 s, found another "
        "session holding its lock Hint: let the other ci-tool finish, or pass another --history"
    )


def _open_once(url: str) -> None:
    HistoryStore(url).close()


@pytest.mark.parametrize("round_", range(3), ids=lambda r: f"round-{r}")
def test_runners_opening_one_new_database_at_once_migrate_it_once(postgres_url: PostgresUrl, round_: int) -> None:
    with ProcessPoolExecutor(8) as pool:
        for opened in [pool.submit(_open_once, postgres_url.url) for _ in range(8)]:
            opened.result(timeout=300)
    with HistoryStore(postgres_url, read_only=True) as store:
        assert store.rows("SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]


def test_a_sqlite_history_never_loads_the_postgresql_driver(tmp_path: Path) -> None:
    """The core install stays light: psycopg is the `postgres` extra, loaded only for a database URL."""
    script = (
        "import sys; from ci_tool.cli import main; from ci_tool.history.store import HistoryStore; "
        "HistoryStore('h.sqlite').close(); code = main(['history', '--history', 'h.sqlite']); "
        "print(code, sorted(m for m in sys.modules if m.startswith(('psycopg', 'ci_tool.history.postgres'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)}, timeout=120,
    )  # fmt: skip
    assert (done.returncode, done.stdout.splitlines()[-1], done.stderr) == (0, "0 []", "")


def test_the_passwords_a_url_carries_are_known_as_written_and_as_meant() -> None:
    url = PostgresUrl("postgresql://ci:p%40ss@db/h?sslpassword=key")
    assert url.secrets() == ("p%40ss", "p@ss", "key")


def test_a_password_libpq_would_misread_is_refused_and_never_shown(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _history(["history", "--history", "postgresql://ci:pa/ss@127.0.0.1:1/ci"], capsys)
    assert (code, out) == (1, "")
    assert err == (
        "error: postgresql://ci:***@127.0.0.1:1/ci: expected a URL whose user and password have `/` and `@` "
        "percent-encoded, found an `@` that libpq would read as part of the host or the database name Hint: "
        "percent-encode the user and password in the URL (`/` as %2F, `@` as %40, `%` as %25), or leave the "
        "password out of it and set $PGPASSWORD or ~/.pgpass\n"
    )
    assert "pa/ss" not in err and "pa%2Fss" not in err and ":pa" not in err


def test_a_keyword_connection_string_is_a_postgresql_history_never_a_sqlite_file(
    postgres_url: PostgresUrl, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    keywords = make_conninfo(**conninfo_to_dict(postgres_url.url))  # the form psql takes: host=... password=...
    assert keywords.startswith(("host=", "user=", "dbname=", "password=", "port="))
    code, out, err = _history(["history", "--json", "--history", keywords], capsys)
    assert (code, json.loads(out)["runs"], err) == (0, [], "")
    assert list(tmp_path.iterdir()) == []
    wrong = keywords.replace(PASSWORD, "not-the-Pw-42")
    code, out, err = _history(["history", "--history", wrong], capsys)
    assert (code, "password authentication failed" in err, "not-the-Pw-42" in err) == (1, True, False)
    assert err.startswith(f"error: {PostgresUrl(wrong).shown()}: cannot open the history")
