"""What a completed L0 Test run left for the bot, read from its artifacts: the run record and request its plan
job archived (ACTIONS_SELECTION_ARTIFACT: selection.json, request.json) and each stage's JUnit
(ACTIONS_RESULTS_ARTIFACT_PREFIX + stage: results/<stage>/junit.xml), as the test cases Jenkins' test report
gives for a build. The JUnit is read by run/junit.py (ours: stage-prefixed class names, properties kept), so
the final CI report of a run is built exactly as a Jenkins build's.

Artifacts are zips; a zip that cannot be read, or a member that is no JUnit, is a DispatchError naming the
artifact (the follower notes it as unread; the status never turns green on what could not be read).
"""

from __future__ import annotations

import io
import json
import tempfile
import zipfile
from pathlib import Path

from ci_tool.dispatch.actions import ActionsClient, Artifact
from ci_tool.dispatch.model import JenkinsCase
from ci_tool.errors import CiToolError, DispatchError
from ci_tool.layout import ACTIONS_RESULTS_ARTIFACT_PREFIX, ACTIONS_SELECTION_ARTIFACT, SELECTION_ARTIFACT
from ci_tool.run.junit import CaseResult, classname_of, parse_junit

REQUEST_FILE = "request.json"  # the plan job's request, beside selection.json in the selection artifact
MAX_MEMBER_BYTES = 256 * 1024 * 1024  # a larger member of an artifact is not read (a zip bomb stays a zip)


def selection_artifact(artifacts: list[Artifact]) -> Artifact | None:
    return next((a for a in artifacts if a.name == ACTIONS_SELECTION_ARTIFACT and not a.expired), None)


def result_artifacts(artifacts: list[Artifact]) -> list[Artifact]:
    """The stages' results artifacts, in the order GitHub lists them."""
    return [a for a in artifacts if a.name.startswith(ACTIONS_RESULTS_ARTIFACT_PREFIX) and not a.expired]


def _members(data: bytes, what: str) -> dict[str, bytes]:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return {
                info.filename: archive.read(info)
                for info in archive.infolist()
                if not info.is_dir() and info.file_size <= MAX_MEMBER_BYTES
            }
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise DispatchError(f"{what}: expected a zip archive, found one that could not be read ({error})") from None


def selection_files(client: ActionsClient, repository: str, artifact: Artifact) -> tuple[object, object | None]:
    """The run record's JSON and the request's JSON (None when the artifact holds no request)."""
    what = f"the artifact {artifact.name!r}"
    members = _members(client.download(repository, artifact), what)
    if SELECTION_ARTIFACT not in members:
        raise DispatchError(f"{what}: expected {SELECTION_ARTIFACT} in it, found {sorted(members) or 'nothing'}")
    return _json(members[SELECTION_ARTIFACT], f"{what}: {SELECTION_ARTIFACT}"), (
        _json(members[REQUEST_FILE], f"{what}: {REQUEST_FILE}") if REQUEST_FILE in members else None
    )


def _json(data: bytes, what: str) -> object:
    try:
        return json.loads(data.decode("utf-8", errors="replace"))
    except ValueError as error:
        raise DispatchError(f"{what}: expected JSON, found text that is not ({error})") from None


def test_cases(client: ActionsClient, repository: str, artifact: Artifact) -> tuple[JenkinsCase, ...]:
    """The test cases of a stage's results artifact (each *.xml file in it that is JUnit)."""
    what = f"the artifact {artifact.name!r}"
    members = _members(client.download(repository, artifact), what)
    cases: list[JenkinsCase] = []
    with tempfile.TemporaryDirectory(prefix="ci-tool-junit-") as folder:
        for name, data in sorted(members.items()):
            if not name.endswith(".xml"):
                continue
            path = Path(folder, "junit.xml")
            path.write_bytes(data)
            try:
                report = parse_junit(path)
            except CiToolError as error:
                raise DispatchError(f"{what}: {name}: {str(error).removeprefix(str(path) + ': ')}") from None
            cases += [_case(found) for found in report.cases]
    return tuple(cases)


def _case(case: CaseResult) -> JenkinsCase:
    """A JUnit case as Jenkins' test report shows it: the stage-prefixed class name, the test's name."""
    return JenkinsCase(
        class_name=classname_of(case.nodeid, case.stage),
        name=case.nodeid.rsplit("::", 1)[-1],
        outcome=case.outcome,
        duration_seconds=case.duration_seconds,
        message=case.message,
        output=case.text,
        properties=dict(case.properties),
    )
