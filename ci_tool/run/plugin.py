"""The pytest plugin that runs a ci-tool test list. Load it explicitly: `pytest -p ci_tool.run.plugin ...`.

Without `--test-list` it does nothing. With it:
- collection is limited to the list's files and folders, and an item runs when a list entry selects it
  (ci_tool.run.selection: node id, file, folder, parametrized parent, `-k`/`-m` via pytest's own
  expression matching); entries that select nothing are reported (terminal summary and
  `--test-list-report FILE`);
- `TIMEOUT (N)` (minutes) becomes `pytest.mark.timeout(N*60)` unless the test function (or its
  parameter set) has its own timeout marker; class and module markers lose to the list, as in
  TensorRT-LLM's precedence (function > parameter > list > class > module > command line); pytest-timeout's
  thread method runs on one watchdog thread (ci_tool.run.watchdog) instead of a thread per test;
- SKIP / XFAIL entries skip / xfail their tests; UNSTABLE adds a testcase property;
- `--waives-file FILE` skips waived tests with their reason, honouring `full:GPU/` scopes against
  `--waive-gpu TOKEN` (the stage's GPU token; without it only unscoped waives apply);
- `--only-nodeids FILE` / `--exclude-nodeids FILE` narrow the selection to (or away from) exact node
  ids, for reruns and for resuming after a crash, keeping every entry's markers; `--exclude-entries
  FILE` leaves out what other list lines select (the ISOLATION lines, which run in their own processes);
- `--junit-stream FILE` writes JUnit as tests finish, stage-prefixed (ci_tool.run.junit), and
  `--events FILE` appends one JSON line per test start and finish, so a killed process leaves the
  finished results and the name of the test it died in. ISOLATION is the stage runner's business.
- As ci-tool's child (`--events`, the leader of its own process group) SIGTERM ends the whole group,
  so a dead ci-tool (whose death sends it) takes the tests' processes down too (ci_tool.run.parent_death).
- Under pytest-xdist (`-n N`: a stage that runs its tests in several worker processes, run/invocation.py)
  the work is split by where each fact arises. A worker collects and filters (each the same way: each
  writes the same `--test-list-report`), arms the timeouts and appends each test's `start` event (with its
  timeout, which only the worker knows) and, before a timeout ends it, a `timeout` event. The controller,
  which hears every worker's reports, writes the JUnit stream and the `finish` and `done` events, and turns
  xdist's report of a worker that died in a test into that test's crash or timeout.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import signal
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from _pytest.mark import KeywordMatcher, MarkMatcher
from _pytest.mark.expression import Expression

from ci_tool.atomic import write_text_atomically
from ci_tool.errors import CiToolError, Where, shown
from ci_tool.outcomes import TestOutcome
from ci_tool.run import junit, output_bounds, parent_death
from ci_tool.run.case_reports import case_from_reports
from ci_tool.run.events import EventKind
from ci_tool.run.perf_log import add_perf_options, register_perf_log
from ci_tool.run.selection import Selector, collection_paths, parse_selector
from ci_tool.run.watchdog import TimeoutWatchdog
from ci_tool.testdb.lines import LineStatus, TestLine, parse_test_line
from ci_tool.testdb.waives import load_waives
from ci_tool.text_file import lines, read_text

PLUGIN_NAME = "ci_tool_test_list"
XDIST_CRASH_PHASE = "???"  # the `when` of xdist's report for a test whose worker died while it ran


class Role(enum.Enum):
    """Which process of a pytest session this is: one that runs its tests itself, or xdist's parts."""

    SINGLE = "single"  # no xdist: collects, runs and reports
    CONTROLLER = "controller"  # xdist's: hears the workers' reports
    WORKER = "worker"  # xdist's: collects and runs a share of the tests

    @classmethod
    def of(cls, config: pytest.Config) -> Role:
        if hasattr(config, "workerinput"):
            return cls.WORKER
        distributing = config.pluginmanager.hasplugin("dsession") or (config.getoption("numprocesses", None) or 0)
        return cls.CONTROLLER if distributing else cls.SINGLE


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ci-tool", "ci-tool test lists")
    group.addoption("--test-list", metavar="FILE", help="Run exactly the tests this ci-tool test list selects.")
    group.addoption("--test-list-report", metavar="FILE", help="Write what each list entry collected (JSON).")
    group.addoption("--waives-file", metavar="FILE", help="Skip the tests this waives file names, with its reason.")
    group.addoption("--stage-name", metavar="NAME", help="Stage the results belong to (the JUnit prefix).")
    group.addoption("--waive-gpu", metavar="TOKEN", help="The GPU token `full:TOKEN/` waives apply to.")
    group.addoption("--junit-stream", metavar="FILE", help="Write JUnit XML as each test finishes.")
    group.addoption("--events", metavar="FILE", help="Append a JSON line per test start and finish.")
    group.addoption(
        "--output-log", metavar="FILE", help="Where this process's output goes (named where long texts are cut)."
    )
    group.addoption("--only-nodeids", metavar="FILE", help="Of the selected tests, run only these node ids.")
    group.addoption("--exclude-nodeids", metavar="FILE", help="Of the selected tests, skip these node ids.")
    group.addoption(
        "--exclude-entries", metavar="FILE", help="Of the selected tests, skip those these list lines select."
    )
    add_perf_options(group)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    register_perf_log(config, config.getoption("stage_name", None))
    list_file = config.getoption("test_list", None)
    if not list_file:
        return
    # ci-tool stops this process with SIGINT (its own session: that SIGINT comes from ci-tool alone), so
    # SIGINT ignored by whoever started ci-tool (a script's background job) must not make it deaf to it.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if config.getoption("events", None) and os.getpgrp() == os.getpid():  # ci-tool's child, its group's leader
        parent_death.end_group_on_sigterm()
    try:
        plugin = TestListPlugin(config, Path(list_file))
    except CiToolError as error:
        raise pytest.UsageError(str(error)) from None
    config.pluginmanager.register(plugin, PLUGIN_NAME)


@dataclass
class _Entry:
    """A list entry, its pytest expressions compiled, and the items it selected."""

    number: int  # 1-based line number in the list file
    line: TestLine
    selector: Selector
    keyword: Expression | None
    mark: Expression | None
    selected: list[str] = field(default_factory=list)  # node ids

    def selects(self, item: pytest.Item, matchers: dict[str, Any]) -> bool:
        if not self.selector.covers_nodeid(item.nodeid):
            return False
        if self.keyword is not None:
            matcher = matchers.setdefault("k", KeywordMatcher.from_item(item))
            if not self.keyword.evaluate(matcher):
                return False
        if self.mark is not None:
            matcher = matchers.setdefault("m", MarkMatcher.from_markers(item.iter_markers()))
            if not self.mark.evaluate(matcher):
                return False
        return True


def _compile(selector: Selector, where: Where) -> tuple[Expression | None, Expression | None]:
    compiled: list[Expression | None] = []
    for flag, text in (("-k", selector.keyword), ("-m", selector.mark)):
        try:
            compiled.append(Expression.compile(text) if text is not None else None)
        except SyntaxError as error:
            raise CiToolError(
                f"expected a pytest {flag} expression, found {text!r} ({error.msg} at column {error.offset})",
                where=where,
            ) from None
        except (RecursionError, ValueError):  # pytest's parser recurses; int() of a long `a(x=1...)` argument
            raise CiToolError(
                f"expected a pytest {flag} expression, found {shown(str(text))} (nested too deep or too long)",
                where=where,
            ) from None
    return compiled[0], compiled[1]


def _make_entry(number: int, line: TestLine, where: Where) -> _Entry:
    selector = parse_selector(line.test_id, where)
    keyword, mark = _compile(selector, where)
    return _Entry(number, line, selector, keyword, mark)


class _EntryIndex:
    """Entries keyed by file path, so an item is checked only against entries on its path's ancestors."""

    def __init__(self, entries: list[_Entry]) -> None:
        self.by_path: dict[str, list[_Entry]] = defaultdict(list)
        for entry in entries:
            self.by_path[entry.selector.file_path].append(entry)

    def candidates(self, nodeid: str) -> list[_Entry]:
        path = nodeid.split("::", 1)[0]
        found: list[_Entry] = []
        while path:
            found.extend(self.by_path.get(path, ()))
            path = path.rpartition("/")[0]
        return found


class TestListPlugin:
    """The plugin object registered when `--test-list` is given."""

    __test__ = False  # not a pytest test class despite the name

    def __init__(self, config: pytest.Config, list_file: Path) -> None:
        self.config = config
        self.root = config.rootpath
        self.stage = config.getoption("stage_name", None)
        output_log = config.getoption("output_log", None)
        self.log_name = Path(output_log).name if output_log else ""  # where a cut failure's whole text is
        self.invalid: list[dict[str, object]] = []
        self.entries = self._read_entries(list_file)
        self.waives = self._read_waives(config.getoption("waives_file", None))
        self.index = _EntryIndex(self.entries)
        self.only = _read_nodeids(config.getoption("only_nodeids", None))
        self.exclude = _read_nodeids(config.getoption("exclude_nodeids", None)) or frozenset()
        excluded_entries = config.getoption("exclude_entries", None)
        self.excluded_entries = _EntryIndex(self._read_entries(Path(excluded_entries)) if excluded_entries else [])
        self.missing = {e.selector.file_path for e in self.entries if not (self.root / e.selector.file_path).exists()}
        self.collection_errors: dict[str, str] = {}
        self.collected: list[str] = []
        self.reports: dict[str, list[pytest.TestReport]] = defaultdict(list)
        self.role = Role.of(config)
        stream = config.getoption("junit_stream", None) if self.role is not Role.WORKER else None
        self.junit = junit.JunitStream(stream, self.stage or "pytest") if stream else None
        self.watchdog: TimeoutWatchdog | None = None
        self.current_timeout: float | None = None
        self.events_file = config.getoption("events", None)
        events = self.events_file
        # unbuffered appends: each event reaches the file in one write, before a crash can lose it (xdist's
        # workers and controller append to one file: an O_APPEND write lands whole, after the others)
        self.events_fd: int | None = os.open(events, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) if events else None
        if config.args_source is not pytest.Config.ArgsSource.ARGS:
            paths = collection_paths([e.selector for e in self.entries if e.selector.file_path not in self.missing])
            config.args = [str(self.root / path) for path in paths]

    def _read_entries(self, list_file: Path) -> list[_Entry]:
        text = read_text(list_file, name="the test list", error=CiToolError)
        entries = []
        for number, raw in enumerate(lines(text), start=1):
            if raw.strip() and not raw.lstrip().startswith("#"):
                where = Where(str(list_file), number, 1)
                try:
                    entries.append(_make_entry(number, parse_test_line(raw, where), where))
                except CiToolError as error:  # reported with the entries that collect nothing
                    self.invalid.append(
                        {"line": number, "id": raw.strip(), "reason": f"invalid entry: {error.message}"}
                    )
        return entries

    def _read_waives(self, waives_file: str | None) -> list[tuple[str, _Entry]]:
        if not waives_file:
            return []
        token = self.config.getoption("waive_gpu", None)
        waives = []
        for waive in load_waives(waives_file):
            if waive.applies_to(token):
                line = TestLine(raw=waive.test_id, test_id=waive.test_id, status=LineStatus.SKIP, reason=waive.reason)
                waives.append((waive.reason or "no reason given", _make_entry(0, line, waive.where)))
        return waives

    # -- collection -------------------------------------------------------------------------------

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            text = output_bounds.cut_text(report.longreprtext, full_text_in=self.log_name)
            self.collection_errors[report.nodeid] = text
            if self.junit is not None:
                message = text.strip().splitlines()[-1:] or ["collection failed"]
                self.junit.add(
                    junit.CaseResult(
                        report.nodeid,
                        TestOutcome.ERROR,
                        message=output_bounds.cut_line(message[0]),
                        text=text,
                        kind="CollectionError",
                        stage=self.stage,
                    )
                )

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        selected: list[pytest.Item] = []
        deselected: list[pytest.Item] = []
        seen: set[str] = set()
        for item in items:
            matchers: dict[str, Any] = {}
            chosen = [e for e in self.index.candidates(item.nodeid) if e.selects(item, matchers)]
            if not chosen or item.nodeid in seen:
                deselected.append(item)
                continue
            seen.add(item.nodeid)
            for entry in chosen:
                entry.selected.append(item.nodeid)
            if self._left_out(item, matchers):
                deselected.append(item)  # runs in another process: the entry still counts as collecting
                continue
            selected.append(item)
            self._annotate(item, chosen, matchers)
        if deselected:
            config.hook.pytest_deselected(items=deselected)
        items[:] = selected
        self.collected = [item.nodeid for item in selected]

    def _left_out(self, item: pytest.Item, matchers: dict[str, Any]) -> bool:
        """Whether a selected item runs elsewhere: done before a resume, not rerun, or isolated."""
        if item.nodeid in self.exclude or (self.only is not None and item.nodeid not in self.only):
            return True
        return any(e.selects(item, matchers) for e in self.excluded_entries.candidates(item.nodeid))

    def _annotate(self, item: pytest.Item, chosen: list[_Entry], matchers: dict[str, Any]) -> None:
        """Apply the most specific entry's markers, then any waive."""
        ordered = sorted(chosen, key=lambda e: -len(e.selector.path))
        minutes = next((e.line.timeout_minutes for e in ordered if e.line.timeout_minutes), None)
        if minutes and not any(mark.name == "timeout" for mark in item.own_markers):
            item.add_marker(pytest.mark.timeout(minutes * 60))
        status = next((e.line for e in ordered if e.line.status), None)
        if status is not None and status.status is LineStatus.SKIP:
            item.add_marker(pytest.mark.skip(reason=status.reason or "SKIP in the test list"))
        elif status is not None and status.status is LineStatus.XFAIL:
            item.add_marker(pytest.mark.xfail(reason=status.reason or "XFAIL in the test list", strict=False))
        elif status is not None and status.status is LineStatus.UNSTABLE:
            item.user_properties.append((junit.UNSTABLE_PROPERTY, status.reason or ""))
        reason = next((reason for reason, waive in self.waives if waive.selects(item, matchers)), None)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"waived: {reason}"))
            item.user_properties.append((junit.WAIVED_PROPERTY, reason))

    def uncollected(self) -> list[dict[str, object]]:
        """The entries that selected no item, with why."""
        found = list(self.invalid)
        for entry in self.entries:
            if not entry.selected:
                found.append({"line": entry.number, "id": entry.line.test_id, "reason": self._why_empty(entry)})
        return sorted(found, key=lambda record: int(str(record["line"])))

    def _why_empty(self, entry: _Entry) -> str:
        path = entry.selector.file_path
        if path in self.missing:
            return "no such file or folder"
        broken = sorted(n for n in self.collection_errors if n and (entry.selector.covers_nodeid(n) or path == n))
        if broken:
            return f"collection error in {broken[0]}"
        filters = [f"-k {entry.selector.keyword!r}"] if entry.selector.keyword is not None else []
        filters += [f"-m {entry.selector.mark!r}"] if entry.selector.mark is not None else []
        return "no collected test matches " + " ".join(filters) if filters else "collected no test"

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        target = self.config.getoption("test_list_report", None)
        if target:
            report = {
                "entries": [{"line": e.number, "id": e.line.test_id, "selected": e.selected} for e in self.entries],
                "uncollected": self.uncollected(),
                "collection_errors": [{"nodeid": n, "text": t} for n, t in self.collection_errors.items()],
                "collected": self.collected,
            }
            write_text_atomically(target, json.dumps(report, indent=1) + "\n", what="the test-list report")
        self._event({"event": EventKind.COLLECTED, "count": len(self.collected)})

    # -- running ----------------------------------------------------------------------------------

    def pytest_timeout_set_timer(self, item: pytest.Item, settings: Any) -> bool | None:
        """pytest-timeout's thread method, with one watchdog thread instead of one per test."""
        self.current_timeout = float(settings.timeout)
        if settings.method != "thread":
            return None
        if self.watchdog is None:
            self.watchdog = TimeoutWatchdog(on_expiry=self._timing_out)
        self.watchdog.arm(item, settings)
        return True

    def pytest_timeout_cancel_timer(self, item: pytest.Item) -> bool | None:
        self.current_timeout = None
        if self.watchdog is None:
            return None
        self.watchdog.disarm()
        return None  # let pytest-timeout cancel a signal timer too (a no-op otherwise)

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        if self.role is not Role.CONTROLLER:  # a worker's start event carries the timeout it armed
            start = {"event": EventKind.START, "nodeid": nodeid, "time": time.time(), "timeout": self.current_timeout}
            self._event(start)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.role is Role.WORKER:
            return
        if report.when == XDIST_CRASH_PHASE:
            self.reports.pop(report.nodeid, None)
            self._finish(self._worker_death(report))
            return
        self.reports[report.nodeid].append(report)
        if report.when != "teardown":
            return
        reports = self.reports.pop(report.nodeid)
        self._finish(case_from_reports(report.nodeid, reports, self.stage, log_name=self.log_name))

    def _timing_out(self, nodeid: str) -> None:
        """Said by a test's watchdog just before pytest-timeout ends the process: under xdist the controller
        then knows the worker that died was stopped by a timeout, not a crash. (Alone, the process's log
        says so: ci_tool.run.process reads its banner.)"""
        if self.role is Role.WORKER:
            self._event({"event": EventKind.TIMEOUT, "nodeid": nodeid})

    def _worker_death(self, report: pytest.TestReport) -> junit.CaseResult:
        """The test an xdist worker died in: a timeout when its worker said so first, else a crash (the
        worker's stack dump and output are in this process's log)."""
        said = self._worker_events(report.nodeid)
        timed_out = EventKind.TIMEOUT in said
        outcome, kind = (TestOutcome.FAILED, junit.TIMEOUT_KIND) if timed_out else (TestOutcome.ERROR, junit.CRASH_KIND)
        started = said.get(EventKind.START, {}).get("time")
        seconds = max(0.0, time.time() - started) if isinstance(started, int | float) else 0.0
        what = "Timeout: the test did not finish within its timeout" if timed_out else "Crash: its worker process died"
        worker = (report.longreprtext.strip().splitlines() or ["its worker died"])[-1]  # xdist's: which worker
        message = f"{what} after {seconds:.1f} s ({worker})"
        text = f"{message}\nIts stack and output are in {self.log_name or 'the log of its pytest process'}."
        return junit.CaseResult(report.nodeid, outcome, seconds, message, text, kind, stage=self.stage)

    def _worker_events(self, nodeid: str) -> dict[str, dict[str, object]]:
        """The events workers appended for `nodeid`, the last of each kind (`start`, `timeout`)."""
        found: dict[str, dict[str, object]] = {}
        if not self.events_file or not os.path.exists(self.events_file):
            return found
        for line in lines(read_text(self.events_file, name="the events file", error=CiToolError)):
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict) and event.get("nodeid") == nodeid:
                    found[str(event.get("event"))] = event
        return found

    def _finish(self, case: junit.CaseResult) -> None:
        if self.junit is not None:
            self.junit.add(case)
        self._event(
            {"event": EventKind.FINISH, "nodeid": case.nodeid, "outcome": case.outcome,
             "seconds": case.duration_seconds}
        )  # fmt: skip

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        missing = self.uncollected()
        if not missing:
            return
        terminalreporter.section("ci-tool test list", sep="-", yellow=True)
        for found in missing:
            terminalreporter.line(f"line {found['line']}: {found['id']!r} collected nothing ({found['reason']})")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.junit is not None:
            self.junit.close()
        if self.events_fd is not None:
            if self.role is not Role.WORKER:  # the session's end: the controller's, not a worker's
                self._event({"event": EventKind.DONE})
            os.close(self.events_fd)
            self.events_fd = None

    def _event(self, record: dict[str, object]) -> None:
        if self.events_fd is None:
            return
        data = (json.dumps(record) + "\n").encode()
        while data:  # a nearly full disk may take part of a write: the rest follows, or the error is raised
            data = data[os.write(self.events_fd, data) :]


def _read_nodeids(path: str | None) -> frozenset[str] | None:
    if not path:
        return None
    text = read_text(path, name="the node id file", error=CiToolError)
    return frozenset(line.strip() for line in lines(text) if line.strip())
