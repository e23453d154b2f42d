"""Jenkins answers of an unexpected shape: one located line naming the request, the URL, the field, what was
expected and what came; never a KeyError, TypeError or JSONDecodeError. Served by the loopback Jenkins."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ci_tool.dispatch import answers
from ci_tool.dispatch.faults import RetryPolicy
from ci_tool.dispatch.github import GitHubClient
from ci_tool.dispatch.jenkins import JenkinsClient
from ci_tool.errors import DispatchError
from tests.helpers.fake_github import FakeGitHub
from tests.helpers.fake_jenkins import FakeJenkins

JOB = "L0_MergeRequest"
JSON = {"Content-Type": "application/json"}
GOOD_BUILD = {"number": 1, "url": "http://j/job/L0_MergeRequest/1/", "building": False, "result": "SUCCESS"}
SIGN_IN = "<html><head><title>Sign in - Example SSO</title></head><body>...</body></html>"
SSO_HINT = (
    "Hint: a proxy in front of Jenkins (single sign-on) may have answered its sign-in page: point the URL at "
    "Jenkins itself, or let the API token through the proxy"
)


def client(jenkins: FakeJenkins) -> JenkinsClient:
    return JenkinsClient(jenkins.url, user=jenkins.user, token=jenkins.token, retry=RetryPolicy(1, 0.0))


Read = Callable[[JenkinsClient], object]
READS: dict[str, tuple[str, Read]] = {
    "builds": (f"/job/{JOB}/api/json", lambda c: c.builds(JOB)),
    "queue": ("/queue/api/json", lambda c: c.queued(JOB)),
    "queue item": ("/queue/item/40/api/json", lambda c: c.queue_item(40)),
    "build": (f"/job/{JOB}/1/api/json", lambda c: c.build(JOB, 1)),
    "test report": (f"/job/{JOB}/1/testReport/api/json", lambda c: c.test_cases(JOB, 1)),
}
WHAT = {
    "builds": f"read the builds of {JOB}",
    "queue": "read the queue",
    "queue item": "read queue item 40",
    "build": f"read build 1 of {JOB}",
    "test report": f"read the test report of build 1 of {JOB}",
}
TASK = {"url": "http://j/job/L0_MergeRequest/"}


@pytest.mark.parametrize(
    ("read", "answer", "expected"),
    [
        ("builds", {"builds": [{"url": "u", "building": False}]}, "a whole number at builds[0].number, found null"),
        ("builds", {"builds": [{**GOOD_BUILD, "number": "abc"}]}, "a whole number at builds[0].number, found 'abc'"),
        ("builds", {"builds": [{**GOOD_BUILD, "number": True}]}, "a whole number at builds[0].number, found True"),
        ("builds", {"builds": {"0": GOOD_BUILD}}, "a list at builds, found an object"),
        ("builds", [GOOD_BUILD], "an object, found a list"),
        ("builds", {"builds": [[1]]}, "an object at builds[0], found a list"),
        ("builds", {"builds": [{**GOOD_BUILD, "building": "yes"}]}, "true or false at builds[0].building, found 'yes'"),
        ("builds", {"builds": [{**GOOD_BUILD, "result": "GREEN"}]},
         "one of SUCCESS, UNSTABLE, FAILURE, ABORTED, NOT_BUILT at builds[0].result, found 'GREEN'"),
        ("builds", {"builds": [{**GOOD_BUILD, "url": 5}]}, "a string at builds[0].url, found 5"),
        ("queue", {"items": [{"id": "x", "task": TASK}]}, "a whole number at items[0].id, found 'x'"),
        ("queue", {"items": [[]]}, "an object at items[0], found a list"),
        ("queue", {"items": [{"id": 1, "task": []}]}, "an object at items[0].task, found a list"),
        ("queue", "items", "an object, found 'items'"),
        ("queue item", {"id": 40, "executable": [1]}, "an object at executable, found a list"),
        ("queue item", {"id": 40, "executable": {"url": "u"}}, "a whole number at executable.number, found null"),
        ("queue item", {"id": 40, "cancelled": "no"}, "true or false at cancelled, found 'no'"),
        ("build", {**GOOD_BUILD, "number": None}, "a whole number at number, found null"),
        ("build", [], "an object, found a list"),
        ("build", {**GOOD_BUILD, "result": ["SUCCESS"]}, "a string at result, found a list"),
        ("test report", {"suites": "all"}, "a list at suites, found 'all'"),
        ("test report", {"suites": [{"cases": [7]}]}, "an object at suites[0].cases[0], found 7"),
    ],
    ids=lambda value: value if isinstance(value, str) and len(value) < 12 else None,
)  # fmt: skip
def test_an_answer_of_another_shape_is_one_line(jenkins: FakeJenkins, read: str, answer: object, expected: str) -> None:
    path, call = READS[read]
    jenkins.fail("GET", path, status=200, body=json.dumps(answer), headers=JSON, times=9)
    with pytest.raises(answers.AnswerError) as raised:
        call(client(jenkins))
    assert (
        str(raised.value)
        == f"{WHAT[read]}: expected {expected.replace(', found', f' in the answer of {jenkins.url}{path[1:]}, found')}"
    )


@pytest.mark.parametrize("read", list(READS), ids=list(READS))
def test_a_sign_in_page_with_status_200_is_one_line_with_a_hint(jenkins: FakeJenkins, read: str) -> None:
    path, call = READS[read]
    jenkins.fail("GET", path, status=200, body=SIGN_IN, headers={"Content-Type": "text/html;charset=utf-8"})
    with pytest.raises(answers.AnswerError) as raised:
        call(client(jenkins))
    assert str(raised.value) == (
        f"{WHAT[read]}: expected JSON in the answer of {jenkins.url}{path[1:]}, found text/html;charset=utf-8: "
        f"{SIGN_IN[:60]!r}… {SSO_HINT}"
    )


def test_a_proxy_answering_the_crumb_with_a_sign_in_page_is_one_line(jenkins: FakeJenkins) -> None:
    jenkins.fail("GET", "/crumbIssuer/", status=200, body=SIGN_IN, headers={"Content-Type": "text/html"})
    with pytest.raises(answers.AnswerError) as raised:
        client(jenkins).queued(JOB)
    assert str(raised.value) == (
        f"read the queue: expected JSON in the answer of {jenkins.url}crumbIssuer/api/json, found a body that is "
        f"not JSON: {SIGN_IN[:60]!r}… {SSO_HINT}"
    )


@pytest.mark.parametrize(
    ("duration", "seconds"),
    [("abc", 0.0), ("2.5", 2.5), (None, 0.0), (-1, 0.0), ("nan", 0.0), ([1], 0.0), (True, 0.0), (3, 3.0)],
    ids=["text", "numeric text", "null", "negative", "nan", "list", "bool", "int"],
)
def test_a_case_duration_that_is_no_number_counts_as_zero(
    jenkins: FakeJenkins, duration: object, seconds: float
) -> None:
    report = {"suites": [{"cases": [{"className": "S.t", "name": "t", "status": "PASSED", "duration": duration}]}]}
    jenkins.fail("GET", f"/job/{JOB}/1/testReport/api/json", status=200, body=json.dumps(report), headers=JSON)
    (case,) = client(jenkins).test_cases(JOB, 1)
    assert case.duration_seconds == seconds


def test_an_x_text_size_that_is_no_number_is_where_the_piece_ends(jenkins: FakeJenkins) -> None:
    jenkins.add_build(JOB, {})
    jenkins.fail("GET", "/logText/", status=200, body="héllo\n", headers={"X-Text-Size": "abc"})
    console = client(jenkins).console(JOB, 1, 10)
    assert (console.text, console.next_start, console.more) == ("héllo\n", 10 + len("héllo\n".encode()), False)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
FIELDS = st.fixed_dictionaries(
    {},
    optional={
        key: JSON_VALUES
        for key in ("number", "url", "building", "result", "actions", "id", "executable", "cancelled", "why",
                    "task", "builds", "items", "suites", "cases", "duration")
    },
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES | FIELDS | st.fixed_dictionaries({"builds": st.lists(FIELDS, max_size=3)}))
def test_any_json_answer_gives_a_value_or_our_error(value: object) -> None:
    answer = answers.AnswerSource("read it", "http://j/x")
    for read in (
        lambda: answers.builds(answer, JOB, value),
        lambda: answers.build(answer, JOB, value),
        lambda: answers.queue(answer, "http://j/", value, "job/L0_MergeRequest/"),
        lambda: answers.queue_item(answer, "http://j/", value),
        lambda: answers.test_cases(answer, value),
    ):
        with contextlib.suppress(DispatchError):  # our error is a fine answer; any other exception fails
            read()


@pytest.mark.parametrize("crumb", [["c"], {"crumb": "c"}], ids=["a list", "no crumbRequestField"])
def test_a_crumb_of_another_shape_is_one_line(jenkins: FakeJenkins, crumb: object) -> None:
    jenkins.fail("GET", "/crumbIssuer/", status=200, body=json.dumps(crumb), headers=JSON)
    with pytest.raises(answers.AnswerError) as raised:
        client(jenkins).trigger(JOB, {"PR_NUMBER": "1"})
    assert str(raised.value) == (
        f"trigger {JOB}: expected an object with crumb and crumbRequestField in the answer of "
        f"{jenkins.url}crumbIssuer/api/json, found {answers.kind(crumb)}"
    )
    assert jenkins.triggered() == []


def test_a_github_sign_in_page_is_one_line(github: FakeGitHub) -> None:
    github.fail("GET", r"/pulls/123$", status=200, body=SIGN_IN, headers={"Content-Type": "text/html"})
    api = GitHubClient(github.api_url, token=github.token, retry=RetryPolicy(1, 0.0))
    with pytest.raises(DispatchError) as raised:
        api.pull_request("example/ci-tool", 123)
    assert str(raised.value).startswith(
        f"read pull request #123 of example/ci-tool: expected GitHub's JSON answer at {github.api_url}, found one "
        "that could not be read ("
    )
