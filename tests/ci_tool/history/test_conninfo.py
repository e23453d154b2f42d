"""PostgreSQL connection strings (history/conninfo.py, through locator.locate): read the way libpq reads them
(psycopg's conninfo_to_dict asks libpq itself), named without their password however they are spelled, and
refused, without the password, where libpq would misread them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tool.errors import HistoryError
from ci_tool.history.locator import PostgresUrl, locate

conninfo_to_dict = pytest.importorskip("psycopg.conninfo").conninfo_to_dict


@pytest.mark.parametrize(
    ("given", "shown", "password"),
    [
        ("postgresql://ci:pa?ss@db/h", "postgresql://ci@db/h", "pa?ss"),
        ("postgresql://ci:pa#ss@db/h?sslmode=require", "postgresql://ci@db/h?sslmode=require", "pa#ss"),
        ("postgresql://ci:p%2Fs%40s@db/h", "postgresql://ci@db/h", "p/s@s"),
        ("postgresql://ci@db/h?password=pa%2Fss&application_name=a%20b", "postgresql://ci@db/h?application_name=a%20b",
         "pa/ss"),
        ("POSTGRESQL://ci:pw@db/h", "postgresql://ci@db/h", "pw"),
        ("Postgres://ci:pw@db/h", "postgres://ci@db/h", "pw"),
        ("host=db dbname=h user=ci password=s3cret", "host=db dbname=h user=ci", "s3cret"),
        ("host=db password='p w\\'s' dbname=h", "host=db dbname=h", "p w's"),
        ("dbname = h  password =pw host= db", "dbname=h host=db", "pw"),
    ],
    ids=["question-mark", "hash", "encoded", "password-parameter", "scheme-upper", "scheme-mixed", "keywords",
         "keywords-quoted", "keywords-spaced"],
)  # fmt: skip
def test_libpq_reads_the_password_and_messages_never_show_it(given: str, shown: str, password: str) -> None:
    url = locate(given)
    assert isinstance(url, PostgresUrl)
    assert (url.shown(), str(url), repr(url)) == (shown, shown, f"PostgresUrl({shown!r})")
    assert conninfo_to_dict(url.url)["password"] == password  # libpq takes what ci-tool hands it
    assert password in url.secrets()


def test_an_upper_case_scheme_reaches_libpq_in_lower_case() -> None:
    """libpq takes only `postgresql://` and `postgres://`: it would read POSTGRESQL://... as keywords."""
    with pytest.raises(Exception, match='missing "=" after'):
        conninfo_to_dict("POSTGRESQL://ci@db/h")
    assert locate("POSTGRESQL://ci@db/h") == PostgresUrl("postgresql://ci@db/h")


PERCENT_HINT = (
    "Hint: percent-encode the user and password in the URL (`/` as %2F, `@` as %40, `%` as %25), or leave the "
    "password out of it and set $PGPASSWORD or ~/.pgpass"
)
UNENCODED = (
    "expected a URL whose user and password have `/` and `@` percent-encoded, found an `@` that libpq would read "
    f"as part of the host or the database name {PERCENT_HINT}"
)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("postgresql://ci:pa/ss@db/h", f"postgresql://ci:***@db/h: {UNENCODED}"),
        ("postgresql://ci:p@ss@db/h?sslmode=require", f"postgresql://ci:***@db/h: {UNENCODED}"),
        ("postgres://ci:a/b@c@db:5432/h", f"postgres://ci:***@db:5432/h: {UNENCODED}"),
        ("postgresql://ci:p%zz@db/h", "postgresql://ci@db/h: expected a URL whose user and password are "
         f"percent-encoded, found a `%` not followed by two hex digits (libpq refuses it and shows it) {PERCENT_HINT}"),
        ("postgresql://db/h?p%zz", "postgresql://db/h: expected `key=value` parameters after `?`, found one without "
         f"`=` (libpq refuses it and shows it) {PERCENT_HINT}"),
        ("host=db password=p%zz junk", "host=db: expected libpq's `keyword=value` pairs (keywords such as host, "
         "port, dbname, user), found text that is not one after 2 pair(s) (not shown: it may hold a password) Hint: "
         "write `keyword=value` pairs separated by spaces, a value with spaces in single quotes"),
    ],
    ids=["slash", "at", "slash-and-at", "bad-percent", "parameter-without-value", "keywords-then-junk"],
)  # fmt: skip
def test_a_string_libpq_would_misread_is_refused_without_its_password(given: str, message: str) -> None:
    with pytest.raises(HistoryError) as raised:
        locate(given)
    assert str(raised.value) == message
    assert not {"pa/ss", "p@ss", "a/b@c", "p%zz"} & {part for part in message.split() if part}


def test_a_keyword_string_is_never_a_sqlite_file_name() -> None:
    assert isinstance(locate("host=db dbname=h"), PostgresUrl)
    assert locate("history=1.sqlite") == Path("history=1.sqlite")  # not one of libpq's keywords


_PART = st.lists(st.sampled_from([*"ab1/?@#%:=&' ", "%2F", "%40", "%25"]), min_size=1, max_size=10).map("".join)


@settings(max_examples=400, deadline=None)
@given(user=_PART, password=_PART, host=st.sampled_from(["db", "db:5432", "h1,h2:6"]), rest=_PART)
def test_any_url_is_refused_or_read_as_libpq_reads_it_and_never_shows_its_password(
    user: str, password: str, host: str, rest: str
) -> None:
    given = f"postgresql://{user}:{password}@{host}/{rest}"
    try:
        url = locate(given)
    except HistoryError as error:
        assert f":{password}@" not in str(error)
        return
    assert isinstance(url, PostgresUrl)
    try:
        read = conninfo_to_dict(url.url)
    except Exception:  # libpq refuses it for a reason of its own (a bad port, a bad parameter): not ours to judge
        return
    meant = read.get("password", "")
    if meant:
        assert meant in url.secrets()
        assert read.get("host", "") in url.shown()
        if len(meant) > 2 and meant not in f"postgresql://{user}@{host}/{rest}":  # nowhere else in the URL
            assert meant not in url.shown()
