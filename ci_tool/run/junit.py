"""JUnit XML: the test results a stage leaves behind, written as tests finish and read back for reports.

Our files carry each test's pytest node id and its stage as testcase properties, and the classname is
prefixed with the stage (`A10-PyTorch-1.tests.a.test_x.TestC`) so files of many stages never collide.
`parse_junit` also reads pytest's own `--junitxml` output.

A file being written looks complete after every test: the stream seeks back over the closing tags,
appends one testcase and writes the tags again. A process killed mid-write leaves at worst a torn last
testcase, which `parse_junit` drops (everything before it is kept).
"""

from __future__ import annotations

import codecs
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
from ci_tool.run import output_bounds

# Kinds ci-tool gives a test that never finished (the failure `type` attribute).
TIMEOUT_KIND = "Timeout"
CRASH_KIND = "Crash"
INTERRUPTED_KIND = "Interrupted"  # stopped by Ctrl-C or a signal, or its result lost to a full results folder

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
    """Read a JUnit file (ours or pytest's); a torn file loses only its unfinished last testcase.

    The file is read in chunks and parsed as it streams (no tree, no whole text in memory): each
    testcase's texts keep at most MAX_TEXT_CHARS (output_bounds.BoundedText) and its attributes MAX_LINE_CHARS,
    so a test that printed 1.5 GB costs a few KiB here."""
    file = Path(path)
    target = _CaseCollector()
    parser = ET.XMLParser(target=target)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    repaired = False
    try:
        with open(file, "rb") as handle:
            while chunk := handle.read(output_bounds.READ_CHUNK_CHARS):
                parser.feed(decoder.decode(chunk))
            parser.feed(decoder.decode(b"", final=True))
        parser.close()
    except OSError as error:
        raise RunError(f"cannot read the JUnit report: {error.strerror}", where=Where(str(file))) from None
    except ET.ParseError:
        if not target.suite_names:
            raise RunError("expected a JUnit XML document, found no <testsuite>", where=Where(str(file))) from None
        repaired = True  # a killed writer's torn end: the testcases before it are whole
    return JunitReport(str(file), tuple(target.cases), tuple(target.suite_names), repaired)


class _CaseCollector:
    """The XML parser's target: builds each testcase as its end tag arrives (see parse_junit)."""

    def __init__(self) -> None:
        self.cases: list[CaseResult] = []
        self.suite_names: list[str] = []
        self.depth = 0
        self.case: _CaseParts | None = None
        self.text: output_bounds.BoundedText | None = None  # the element whose character data is being kept

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self.depth += 1
        if tag == "testsuite":
            self.suite_names.append(_line(attrib.get("name", "")))
        elif tag == "testcase":
            self.case = _CaseParts(self.depth, {k: _line(v) for k, v in attrib.items()})
        elif self.case is not None:
            self.text = self.case.child(tag, self.depth, attrib)

    def data(self, text: str) -> None:
        if self.text is not None:
            self.text.add(text)

    def end(self, tag: str) -> None:
        self.depth -= 1
        self.text = None
        if self.case is not None and tag == "testcase" and self.depth < self.case.depth:
            self.cases.append(self.case.build())
            self.case = None

    def close(self) -> None:
        return None


@dataclass
class _CaseParts:
    """What a testcase's elements said so far."""

    depth: int
    attrib: dict[str, str]
    properties: list[tuple[str, str]] = field(default_factory=list)
    details: dict[str, tuple[dict[str, str], output_bounds.BoundedText]] = field(default_factory=dict)  # failure, ...
    output: dict[str, output_bounds.BoundedText] = field(default_factory=dict)  # system-out, system-err

    def child(self, tag: str, depth: int, attrib: dict[str, str]) -> output_bounds.BoundedText | None:
        """Take an element inside the testcase; the text to keep its character data in, if any."""
        if tag == "property" and depth == self.depth + 2 and attrib.get("name"):
            self.properties.append((_line(attrib["name"]), _line(attrib.get("value", ""))))
        elif depth != self.depth + 1:
            return None
        elif tag in _TAGS.values() and tag not in self.details:
            self.details[tag] = ({k: _line(v) for k, v in attrib.items()}, output_bounds.BoundedText())
            return self.details[tag][1]
        elif tag in ("system-out", "system-err") and tag not in self.output:
            self.output[tag] = output_bounds.BoundedText()
            return self.output[tag]
        return None

    def build(self) -> CaseResult:
        props = dict(self.properties)
        outcome, detail = TestOutcome.PASSED, None
        for result, tag in _TAGS.items():
            if tag in self.details:
                outcome, detail = result, self.details[tag]
                break
        stage = props.get(STAGE_PROPERTY)
        nodeid = props.get(NODEID_PROPERTY) or _guess_nodeid(self.attrib, stage)
        kept = tuple((k, v) for k, v in self.properties if k not in (NODEID_PROPERTY, STAGE_PROPERTY))
        out, err = self.output.get("system-out"), self.output.get("system-err")
        return CaseResult(
            nodeid=nodeid,
            outcome=outcome,
            duration_seconds=_seconds(self.attrib.get("time")),
            message=detail[0].get("message", "") if detail is not None else "",
            text=detail[1].text() if detail is not None else "",
            kind=detail[0].get("type", "") if detail is not None else "",
            stdout=out.text() if out is not None else "",
            stderr=err.text() if err is not None else "",
            properties=kept,
            stage=stage,
        )


def _line(value: str) -> str:
    return output_bounds.cut_line(value)


def _seconds(value: str | None) -> float:
    try:
        return float(value or 0.0)
    except ValueError:
        return 0.0


def _guess_nodeid(attrib: dict[str, str], stage: str | None) -> str:
    """pytest's classname+name back to a node id-like text (pytest's XML does not keep the node id)."""
    classname = attrib.get("classname", "")
    if stage and classname.startswith(stage + "."):
        classname = classname[len(stage) + 1 :]
    name = attrib.get("name", "")
    return f"{classname}::{name}" if classname else name
