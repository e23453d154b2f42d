"""JUnit XML: the test results a stage leaves behind, written as tests finish and read back for reports.

Our files carry each test's pytest node id and its stage as testcase properties, and the classname is
prefixed with the stage (`A10-PyTorch-1.tests.a.test_x.TestC`) so files of many stages never collide.
`parse_junit` also reads pytest's own `--junitxml` output.

A file being written looks complete after every test: the stream seeks back over the closing tags,
appends one testcase and writes the tags again. A process killed mid-write leaves at worst a torn last
testcase, which `parse_junit` drops (everything before it is kept).
"""

from __future__ import annotations

import datetime
import re
import socket
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO

from ci_tool.atomic import write_text_atomically
from ci_tool.errors import RunError, Where
from ci_tool.outcomes import TestOutcome

# Kinds ci-tool gives a test that never finished (the failure `type` attribute).
TIMEOUT_KIND = "Timeout"
CRASH_KIND = "Crash"

# Testcase property names.
NODEID_PROPERTY = "nodeid"
STAGE_PROPERTY = "stage"
WAIVED_PROPERTY = "ci_tool.waived"  # the waive's reason
RERUN_PROPERTY = "ci_tool.rerun"  # "passed" / "failed": the outcome of the one rerun
UNSTABLE_PROPERTY = "ci_tool.unstable"  # listed as UNSTABLE: a failure does not fail the stage

_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_CLOSING = "</testsuite>\n</testsuites>\n"
_TAGS = {TestOutcome.FAILED: "failure", TestOutcome.ERROR: "error", TestOutcome.SKIPPED: "skipped"}


@dataclass(frozen=True)
class CaseResult:
    """One test's result. `kind` is the failure type (an exception name, Timeout or Crash)."""

    nodeid: str
    outcome: TestOutcome
    duration_seconds: float = 0.0
    message: str = ""  # one line: the failure or skip message
    text: str = ""  # the full failure report
    kind: str = ""
    stdout: str = ""
    stderr: str = ""
    properties: tuple[tuple[str, str], ...] = ()
    stage: str | None = None

    def prop(self, name: str) -> str | None:
        return next((value for key, value in self.properties if key == name), None)

    def with_property(self, name: str, value: str) -> CaseResult:
        kept = tuple((key, old) for key, old in self.properties if key != name)
        return replace(self, properties=(*kept, (name, value)))

    @property
    def is_failure(self) -> bool:
        return self.outcome.is_failure


@dataclass(frozen=True)
class JunitReport:
    """The testcases of one JUnit file (all its suites), in file order."""

    path: str
    cases: tuple[CaseResult, ...]
    suite_names: tuple[str, ...] = field(default=())
    repaired: bool = False  # the file was torn (a killed writer) and its last testcase dropped


_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_ATTR_ESCAPES = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"}
)


def escape(text: str) -> str:
    """XML character data (xml.sax.saxutils would import urllib, 25 ms of start-up per process)."""
    return text.translate(_TEXT_ESCAPES)


def quoteattr(text: str) -> str:
    """A double-quoted XML attribute value."""
    return '"' + text.translate(_ATTR_ESCAPES) + '"'


def _clean(text: str) -> str:
    return _ILLEGAL_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def classname_of(nodeid: str, stage: str | None) -> str:
    """pytest's classname (the node id without its last part, dotted), prefixed with the stage."""
    parts = nodeid.split("::")
    module = parts[0].removesuffix(".py").replace("/", ".")
    dotted = ".".join([module, *parts[1:-1]]) if len(parts) > 1 else module
    return f"{stage}.{dotted}" if stage else dotted


def testcase_xml(case: CaseResult) -> str:
    """One `<testcase>` element."""
    name = case.nodeid.split("::")[-1] if "::" in case.nodeid else case.nodeid
    head = (
        f"<testcase classname={quoteattr(_clean(classname_of(case.nodeid, case.stage)))} "
        f'name={quoteattr(_clean(name))} time="{case.duration_seconds:.3f}">'
    )
    props = [(NODEID_PROPERTY, case.nodeid)]
    if case.stage:
        props.append((STAGE_PROPERTY, case.stage))
    props.extend(case.properties)
    body = ["<properties>"]
    body += [f"<property name={quoteattr(_clean(k))} value={quoteattr(_clean(v))}/>" for k, v in props]
    body.append("</properties>")
    if case.outcome is not TestOutcome.PASSED:
        tag = _TAGS[case.outcome]
        kind = f" type={quoteattr(_clean(case.kind))}" if case.kind else ""
        body.append(f"<{tag}{kind} message={quoteattr(_clean(case.message))}>{escape(_clean(case.text))}</{tag}>")
    if case.stdout:
        body.append(f"<system-out>{escape(_clean(case.stdout))}</system-out>")
    if case.stderr:
        body.append(f"<system-err>{escape(_clean(case.stderr))}</system-err>")
    return head + "".join(body) + "</testcase>\n"


def _suite_open(suite_name: str, cases: Iterable[CaseResult] = ()) -> str:
    listed = list(cases)
    counts = {outcome: sum(1 for c in listed if c.outcome == outcome) for outcome in TestOutcome}
    seconds = sum(c.duration_seconds for c in listed)
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<testsuites>\n'
        f'<testsuite name={quoteattr(_clean(suite_name))} tests="{len(listed)}" '
        f'failures="{counts[TestOutcome.FAILED]}" errors="{counts[TestOutcome.ERROR]}" '
        f'skipped="{counts[TestOutcome.SKIPPED]}" time="{seconds:.3f}" '
        f'timestamp="{stamp}" hostname={quoteattr(socket.gethostname())}>\n'
    )


def junit_document(suite_name: str, cases: Iterable[CaseResult]) -> str:
    """A complete JUnit document of one suite."""
    listed = list(cases)
    return _suite_open(suite_name, listed) + "".join(testcase_xml(c) for c in listed) + _CLOSING


def write_junit(path: str | Path, suite_name: str, cases: Iterable[CaseResult]) -> None:
    """Write a complete JUnit file atomically."""
    write_text_atomically(path, junit_document(suite_name, cases), what="the JUnit report")


class JunitStream:
    """A JUnit file that is well-formed after every `add` (see the module docstring)."""

    def __init__(self, path: str | Path, suite_name: str) -> None:
        self.path = Path(path)
        self.suite_name = suite_name
        self.cases: list[CaseResult] = []
        self._xml: list[str] = []  # each case's <testcase>, rendered once
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = open(self.path, "w", encoding="utf-8")  # noqa: SIM115 - held open
        self._file.write(_suite_open(suite_name))
        self._end = self._file.tell()
        self._file.write(_CLOSING)
        self._file.flush()

    def add(self, case: CaseResult) -> None:
        self.cases.append(case)
        self._xml.append(testcase_xml(case))
        if self._file is None:
            return
        self._file.seek(self._end)
        self._file.write(self._xml[-1])
        self._end = self._file.tell()
        self._file.write(_CLOSING)
        self._file.truncate()
        self._file.flush()

    def close(self) -> None:
        """Rewrite the file with the suite's final counts."""
        if self._file is None:
            return
        self._file.close()
        self._file = None
        document = _suite_open(self.suite_name, self.cases) + "".join(self._xml) + _CLOSING
        write_text_atomically(self.path, document, what="the JUnit report")


def parse_junit(path: str | Path) -> JunitReport:
    """Read a JUnit file (ours or pytest's); a torn file loses only its unfinished last testcase."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise RunError(f"cannot read the JUnit report: {error.strerror}", where=Where(str(file))) from None
    repaired = False
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        root, repaired = _repair(text, file), True
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    cases = tuple(_case(element) for suite in suites for element in suite.iter("testcase"))
    return JunitReport(str(file), cases, tuple(s.get("name", "") for s in suites), repaired)


def _repair(text: str, file: Path) -> ET.Element:
    cut = text.rfind("</testcase>")
    if cut < 0:
        head = text.find("<testsuite ")
        close = text.find(">", head)
        if head < 0 or close < 0:
            raise RunError("expected a JUnit XML document, found no <testsuite>", where=Where(str(file)))
        fixed = text[: close + 1] + _CLOSING
    else:
        fixed = text[: cut + len("</testcase>")] + "\n" + _CLOSING
    try:
        return ET.fromstring(fixed)
    except ET.ParseError as error:
        raise RunError(f"expected JUnit XML, found malformed XML ({error})", where=Where(str(file))) from None


def _case(element: ET.Element) -> CaseResult:
    properties = tuple(
        (p.get("name", ""), p.get("value", "")) for p in element.findall("properties/property") if p.get("name")
    )
    props = dict(properties)
    outcome, detail = TestOutcome.PASSED, None
    for result, tag in _TAGS.items():
        found = element.find(tag)
        if found is not None:
            outcome, detail = result, found
            break
    stage = props.get(STAGE_PROPERTY)
    nodeid = props.get(NODEID_PROPERTY) or _guess_nodeid(element, stage)
    kept = tuple((k, v) for k, v in properties if k not in (NODEID_PROPERTY, STAGE_PROPERTY))
    return CaseResult(
        nodeid=nodeid,
        outcome=outcome,
        duration_seconds=float(element.get("time") or 0.0),
        message=(detail.get("message") or "") if detail is not None else "",
        text=(detail.text or "") if detail is not None else "",
        kind=(detail.get("type") or "") if detail is not None else "",
        stdout=element.findtext("system-out") or "",
        stderr=element.findtext("system-err") or "",
        properties=kept,
        stage=stage,
    )


def _guess_nodeid(element: ET.Element, stage: str | None) -> str:
    """pytest's classname+name back to a node id-like text (pytest's XML does not keep the node id)."""
    classname = element.get("classname", "")
    if stage and classname.startswith(stage + "."):
        classname = classname[len(stage) + 1 :]
    name = element.get("name", "")
    return f"{classname}::{name}" if classname else name
