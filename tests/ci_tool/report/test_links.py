"""The report URL template (report/links.py): the link the public CI report posts, so never one that carries
a credential (url_secrets.py), and never a message that shows it."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tool.errors import ReportError
from ci_tool.report.links import ReportUrl, parse_report_url

HINT = "Hint: publish the reports where the link alone opens them, without a user, token or key in the URL"


@pytest.mark.parametrize(
    ("template", "found"),
    [
        ("https://bot:TOKEN@reports.example.com/{number}/", "a user and password before `@`"),
        ("https://TOKEN@reports.example.com/{number}/", "a user and password before `@`"),
        ("https://bot:pa/ss@reports.example.com/{number}/", "a port that is not a number (a password with an "
         "unencoded `/`?)"),
        ("https://reports.example.com/{number}?token=TOKEN", "a query parameter named `token`"),
        ("{build_url}artifact/r.html?view=1&api_key=TOKEN", "a query parameter named `key`"),
        ("https://b.s3.example.com/{number}.html?X-Amz-Credential=A&X-Amz-Signature=TOKEN",
         "a query parameter named `credential` and a query parameter named `signature`"),
        ("https://a.blob.example.net/r/{number}.html?sv=2024&sig=TOKEN", "a query parameter named `sig`"),
        ("https://reports.example.com/{number}?Private%2DToken=TOKEN", "a query parameter named `token`"),
    ],
    ids=["user-password", "token-as-user", "unencoded-slash", "token", "api-key", "s3-presigned", "azure-sas",
         "encoded-name"],
)  # fmt: skip
def test_a_credential_in_the_report_url_is_refused_without_being_shown(template: str, found: str) -> None:
    with pytest.raises(ReportError) as raised:
        parse_report_url(template, where="--report-url")
    assert str(raised.value) == (
        f"--report-url: expected a URL anyone may read, found one with {found} (not shown: the final CI report "
        f"is posted where everyone reads it) {HINT}"
    )
    assert "TOKEN" not in str(raised.value) and "pa/ss" not in str(raised.value)


@pytest.mark.parametrize(
    "template",
    ["https://reports.example.com:8443/{job}/{number}/?view=full", "{build_url}artifact/report.html",
     "https://reports.example.com/@team/{number}.html", "https://[::1]:8080/{number}", "https://r.example/{number}?keyboard=1"],
)  # fmt: skip
def test_a_report_url_without_credentials_is_taken(template: str) -> None:
    assert parse_report_url(template, where="--report-url") == ReportUrl(template)


_SECRET = "Zq9-secret-Zq9"
_PIECES = st.sampled_from(["https://", "http://", "{build_url}", "{number}", "{job}", "host", ":", "@", "/", "?",
                           "&", "=", "token", "sig", "view", "#", "{", "}", "%2F", _SECRET, "."])  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES, max_size=14).map("".join))
def test_any_template_is_taken_or_our_error_and_a_credential_in_it_is_refused_unshown(template: str) -> None:
    authority = re.match(r"https?://([^/?#\\]*)", template)
    query = template.partition("?")[2].partition("#")[0].split("&")
    carries = bool(authority and "@" in authority.group(1)) or any(
        item.startswith(("token=", "sig=")) for item in query
    )
    try:
        parsed = parse_report_url(template, where="--report-url")
    except ReportError as error:
        assert not carries or (_SECRET not in str(error) and "expected a URL anyone may read" in str(error))
        return
    assert not carries
    assert parsed.template == template
