"""Jenkins' JSON answers -> the values of dispatch/model.py, checked field by field. Pure (no HTTP).

Every answer the client reads passes through here, so an answer of an unexpected shape (a proxy's HTML
sign-in page with status 200, a build without `number`, `"number": "abc"`, a list where an object belongs)
is one AnswerError line naming the request, the URL (as shown: no credentials), the field, what was
expected and what came, never a KeyError or JSONDecodeError three calls later.

    strict     the fields a decision rests on: ids, build numbers, `building`, `result`, `cancelled`, URLs
    lenient    `actions` (a heterogeneous list in Jenkins: entries of other kinds are skipped), a test
               case's duration and texts (a report detail never costs the final status: "abc" -> 0.0)

These stay field by field rather than typed_json: an answer is Jenkins' (or GitHub's) shape, not a class of
ours, where absent and null mean a default and the lenient fields degrade instead of failing, and an error
names the request and its URL rather than a file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

from ci_tool.dispatch.model import Build, JenkinsCase, QueueItem
from ci_tool.dispatch.urls import shown
from ci_tool.errors import DispatchError
from ci_tool.outcomes import BuildResult, TestOutcome

_CASE_OUTCOMES = {
    "PASSED": TestOutcome.PASSED,
    "FIXED": TestOutcome.PASSED,
    "FAILED": TestOutcome.FAILED,
    "REGRESSION": TestOutcome.FAILED,
    "SKIPPED": TestOutcome.SKIPPED,
}
_SHOWN_CHARACTERS = 60  # of an unexpected text, in a message


class AnswerError(DispatchError):
    """A service answered, with something of another shape than the request asks for."""


def kind(value: object) -> str:
    """What a JSON value is, for messages: a short repr for scalars, the kind for containers."""
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    if isinstance(value, str) and len(value) > _SHOWN_CHARACTERS:
        return repr(value[:_SHOWN_CHARACTERS]) + "…"
    return repr(value)


@dataclass(frozen=True)
class AnswerSource:
    """Which answer is read (the request in words and its URL as shown), for the messages."""

    what: str
    url: str

    def error(self, path: str, expected: str, found: object) -> AnswerError:
        where = f" at {path}" if path else ""
        return AnswerError(f"{self.what}: expected {expected}{where} in the answer of {self.url}, found {kind(found)}")

    def parse(self, text: str, content_type: str = "") -> object:
        """The JSON in an answer's body; an HTML page (a sign-in proxy, an error page) is one error line."""
        try:
            return json.loads(text)
        except ValueError:
            page = "html" in content_type.lower() or text.lstrip()[:1] == "<"
            found = f"{content_type or 'a body that is not JSON'}: {kind(text.strip())}"
            hint = (
                "a proxy in front of Jenkins (single sign-on) may have answered its sign-in page: point the URL at "
                "Jenkins itself, or let the API token through the proxy"
                if page
                else None
            )
            raise AnswerError(
                f"{self.what}: expected JSON in the answer of {self.url}, found {found}", hint=hint
            ) from None

    def obj(self, value: object, path: str = "") -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.error(path, "an object", value)
        return value

    def items(self, data: Mapping[str, Any], key: str, path: str = "") -> list[Any]:
        """A list field; absent or null is empty."""
        value = data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(_join(path, key), "a list", value)
        return value

    def integer(self, data: Mapping[str, Any], key: str, path: str = "") -> int:
        value = data.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.error(_join(path, key), "a whole number", value)
        return value

    def text(self, data: Mapping[str, Any], key: str, path: str = "") -> str:
        """A string field; absent or null is ""."""
        value = data.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.error(_join(path, key), "a string", value)
        return value

    def flag(self, data: Mapping[str, Any], key: str, path: str = "") -> bool:
        """A true/false field; absent or null is False."""
        value = data.get(key)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self.error(_join(path, key), "true or false", value)
        return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def parameters(actions: object) -> dict[str, str]:
    """The build parameters among a build's or queue item's `actions` (other actions are skipped)."""
    values: dict[str, str] = {}
    for action in actions if isinstance(actions, list) else []:
        found = action.get("parameters") if isinstance(action, Mapping) else None
        for parameter in found if isinstance(found, list) else []:
            if isinstance(parameter, Mapping) and isinstance(parameter.get("name"), str):
                value = parameter.get("value")
                text = "" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
                values[parameter["name"]] = text
    return values


def build(answer: AnswerSource, job: str, value: object, path: str = "") -> Build:
    data = answer.obj(value, path)
    result = answer.text(data, "result", path)
    if result and result not in BuildResult.__members__:
        raise answer.error(_join(path, "result"), "one of " + ", ".join(BuildResult.__members__), result)
    return Build(
        job=job,
        number=answer.integer(data, "number", path),
        url=shown(answer.text(data, "url", path)),
        building=answer.flag(data, "building", path),
        result=BuildResult(result) if result else None,
        parameters=parameters(data.get("actions")),
    )


def builds(answer: AnswerSource, job: str, value: object) -> list[tuple[Build, Mapping[str, Any]]]:
    """A job's `builds`, each with its raw object (for the fields only some callers read: causes)."""
    data = answer.obj(value)
    return [(build(answer, job, found, f"builds[{k}]"), found) for k, found in enumerate(answer.items(data, "builds"))]


def upstream_causes(build_data: Mapping[str, Any]) -> list[tuple[object, object]]:
    """(upstreamProject, upstreamBuild) of each cause of a build (others skipped)."""
    causes = [c for a in parameters_lists(build_data.get("actions"), "causes") for c in a]
    return [(c.get("upstreamProject"), c.get("upstreamBuild")) for c in causes if isinstance(c, Mapping)]


def parameters_lists(actions: object, key: str) -> list[list[Any]]:
    return [
        a[key]
        for a in (actions if isinstance(actions, list) else [])
        if isinstance(a, Mapping) and isinstance(a.get(key), list)
    ]


def queue_item(answer: AnswerSource, jenkins_url: str, value: object, path: str = "") -> QueueItem:
    data = answer.obj(value, path)
    item_id = answer.integer(data, "id", path)
    executable = data.get("executable")
    number, build_url = None, ""
    if executable is not None:
        executable = answer.obj(executable, _join(path, "executable"))
        number = answer.integer(executable, "number", _join(path, "executable"))
        build_url = shown(answer.text(executable, "url", _join(path, "executable")))
    return QueueItem(
        id=item_id,
        url=urljoin(jenkins_url, f"queue/item/{item_id}/"),
        build_number=number,
        build_url=build_url,
        cancelled=answer.flag(data, "cancelled", path),
        why=answer.text(data, "why", path),
        parameters=parameters(data.get("actions")),
    )


def queue(answer: AnswerSource, jenkins_url: str, value: object, job_url_suffix: str) -> list[QueueItem]:
    """The queue's items of one job (its task URL ends in `job_url_suffix`)."""
    data = answer.obj(value)
    found = []
    for k, item in enumerate(answer.items(data, "items")):
        path = f"items[{k}]"
        task = answer.obj(answer.obj(item, path).get("task", {}), f"{path}.task")
        if answer.text(task, "url", f"{path}.task").endswith(job_url_suffix):
            found.append(queue_item(answer, jenkins_url, item, path))
    return found


def seconds(value: object) -> float:
    """A duration as Jenkins reports it; anything but a finite number >= 0 is 0.0 (see the docstring)."""
    try:
        number = float(value) if isinstance(value, int | float | str) and not isinstance(value, bool) else 0.0
    except ValueError:
        return 0.0
    return number if math.isfinite(number) and number >= 0 else 0.0


def _loose_text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def test_cases(answer: AnswerSource, value: object) -> tuple[JenkinsCase, ...]:
    data = answer.obj(value)
    cases = []
    for s, suite in enumerate(answer.items(data, "suites")):
        suite_path = f"suites[{s}]"
        for c, case in enumerate(answer.items(answer.obj(suite, suite_path), "cases", suite_path)):
            found = answer.obj(case, f"{suite_path}.cases[{c}]")
            properties = found.get("properties")
            cases.append(
                JenkinsCase(
                    class_name=_loose_text(found.get("className")),
                    name=_loose_text(found.get("name")),
                    outcome=_CASE_OUTCOMES.get(_loose_text(found.get("status")), TestOutcome.ERROR),
                    duration_seconds=seconds(found.get("duration")),
                    message=_loose_text(found.get("errorDetails") or found.get("skippedMessage")),
                    output=_loose_text(found.get("errorStackTrace")),
                    properties={str(k): str(v) for k, v in properties.items()}
                    if isinstance(properties, Mapping)
                    else {},
                )
            )
    return tuple(cases)
