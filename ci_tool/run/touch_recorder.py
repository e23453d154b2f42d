"""pytest plugin of a touch-recording run (`ci-tool run --record-touches`, `ci-tool stage run --record-touches`):
which test ran which unit of which file.

coverage.py measures the process with one dynamic context per test (its node id), as pytest-testmon and
`pytest-cov --cov-context=test` do. The Python processes a test starts are measured too: the plugin points
COVERAGE_PROCESS_START at a config of its own (coverage's .pth file starts coverage in every Python process
of the environment that finds it set) whose static context is the variable TEST_VARIABLE, which holds the
running test's node id, so a child's lines belong to the test that started it. Children write their data
beside the record (FILE.d/); a child still running when the session ends, or killed before it exits, is
not counted, and one started with an environment of its own (without COVERAGE_PROCESS_START) is not
measured.

A test marked `timed` (it measures time: a perf case, a gate) runs unmeasured, coverage stopped and its
children not started under it, since coverage's tracer slows what it measures; its record is the unit
UNMEASURED of its test file (change/touch_records.py), and a narrowed stage runs it whatever the change. A
wider fixture first set up inside it is unmeasured too, and so is every test that uses that fixture.

A fixture wider than a function (module, class, session scope) is set up once, inside the first test that
asks for it: what its set-up runs is counted for every test that uses it. What runs outside every test
(imports while collecting, a wider fixture's teardown after its last test) is counted for OUTSIDE_TESTS
(change/touch_records.py): every test may read what it made.

At the end the plugin maps each measured file's executed lines to units (change/units.py: the function
whose body holds the line, `<module>` for the rest) and writes `--touch-record FILE`, compact JSON:

    {"tests": [node id, ...], "files": {file: {unit: [index into tests, ...]}}}

Only files under the rootdir count, the virtual environment's excepted; paths are rootdir-relative, posix.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections import defaultdict
from collections.abc import Generator, Iterable, Mapping
from pathlib import Path

import pytest

from ci_tool.atomic import write_text_atomically
from ci_tool.change.python_tree import Unreadable
from ci_tool.change.touch_records import OUTSIDE_TESTS, UNMEASURED
from ci_tool.change.units import MODULE_UNIT, SourceUnits, source_units

PLUGIN = "ci_tool.run.touch_recorder"
OPTION = "--touch-record"
TEST_VARIABLE = "TOUCH_RECORD_TEST"  # not CI_TOOL_*: test suites (ours) keep those from their tests
FIXTURE_CONTEXT = "<fixture> "  # + a fixture's name: what its set-up ran (no node id starts with "<")
TIMED = "timed"  # the marker of a test that measures time: it runs unmeasured
_START_VARIABLE = "COVERAGE_PROCESS_START"
_OMIT = "*/.venv/*"
# A child process's warnings would land in the output a test checks; a child measures what it can, silently.
_QUIET = (
    "already-imported, cant-combine, couldnt-parse, dynamic-conflict, include-ignored, module-not-imported, "
    "module-not-measured, module-not-python, no-ctracer, no-data-collected, no-source, no-sysmon, "
    "no-sysmon-context, trace-changed"
)

Lines = dict[str, dict[int, set[str]]]  # absolute file -> line -> the tests that ran it


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("ci-tool").addoption(
        OPTION, metavar="FILE", help="Write which test ran which unit of which file (JSON)."
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{TIMED}: measures time; a touch-recording run leaves it unmeasured")
    target = config.getoption("touch_record", None)
    if target:
        config.pluginmanager.register(_Recorder(Path(target), config.rootpath), "ci-tool-touches")


class _Recorder:
    def __init__(self, target: Path, root: Path) -> None:
        try:
            import coverage
        except ImportError:  # the runner checks before it starts; a hand-run pytest gets a usage error
            raise pytest.UsageError(f"{OPTION} needs coverage.py, found none Hint: pip install coverage") from None
        self.target, self.root = target.resolve(), root.resolve()
        self.children = self.target.with_name(self.target.name + ".d")
        self.children.mkdir(parents=True, exist_ok=True)
        self.child_config = self.children / "coverage.ini"
        self.child_config.write_text(_child_config(self.children, self.root), encoding="utf-8")
        self.saved = {name: os.environ.get(name) for name in (_START_VARIABLE, TEST_VARIABLE)}
        os.environ[_START_VARIABLE] = str(self.child_config)
        os.environ[TEST_VARIABLE] = ""
        self.contexts: list[str] = []  # the test, and the wider fixtures it is setting up, innermost last
        self.fixtures: dict[str, frozenset[str]] = {}  # test -> the fixtures it uses
        self.timing = False  # a `timed` test is running: nothing is measured
        self.unmeasured: set[str] = set()  # the `timed` tests
        self.unmeasured_fixtures: set[tuple[str, str]] = set()  # (name, where defined) of those set up inside one
        self.coverage = coverage.Coverage(data_file=None, source=[str(self.root)], omit=[_OMIT], config_file=False)
        self.coverage.start()

    def _switch(self, context: str) -> None:
        self.coverage.switch_context(context)
        os.environ[TEST_VARIABLE] = context

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        self.fixtures[item.nodeid] = frozenset(getattr(item, "fixturenames", ()))
        if item.get_closest_marker(TIMED) is not None:
            return (yield from self._unmeasured(item.nodeid))
        self.contexts.append(item.nodeid)
        self._switch(item.nodeid)
        try:
            return (yield)
        finally:
            self.contexts.pop()
            self._switch(self.contexts[-1] if self.contexts else "")

    def _unmeasured(self, test: str) -> Generator[None, object, object]:
        """Run a `timed` test with coverage stopped and its children unmeasured (the module docstring)."""
        self.unmeasured.add(test)
        self.timing = True
        self.coverage.stop()
        os.environ.pop(_START_VARIABLE, None)
        try:
            return (yield)
        finally:
            os.environ[_START_VARIABLE] = str(self.child_config)
            self.coverage.start()
            self._switch(self.contexts[-1] if self.contexts else "")
            self.timing = False

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[object]) -> Generator[None, object, object]:
        """A fixture wider than a function is set up once, in the first test that asks for it: what its set-up
        runs belongs to every test that uses it."""
        if fixturedef.scope != "function" and self.timing:
            self.unmeasured_fixtures.add((fixturedef.argname, fixturedef.baseid))
        if fixturedef.scope == "function" or self.timing:
            return (yield)
        self.contexts.append(FIXTURE_CONTEXT + fixturedef.argname)
        self._switch(self.contexts[-1])
        try:
            return (yield)
        finally:
            self.contexts.pop()
            self._switch(self.contexts[-1] if self.contexts else "")

    def pytest_sessionfinish(self) -> None:
        self.coverage.stop()
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        lines: Lines = defaultdict(lambda: defaultdict(set))
        _add(lines, self.coverage.get_data())
        for path in sorted(self.children.glob("child*")):
            _add(lines, _child_data(path))
        unmeasured = self.unmeasured | {
            test
            for test, names in self.fixtures.items()
            for name, where in self.unmeasured_fixtures
            if name in names and test.startswith(where)  # the fixture is visible where it was defined
        }
        record = _record(_attributed(lines, self.fixtures), self.root, unmeasured)
        write_text_atomically(self.target, json.dumps(record, separators=(",", ":")) + "\n")
        shutil.rmtree(self.children, ignore_errors=True)


def _child_config(folder: Path, root: Path) -> str:
    """The coverage config of the processes the tests start (`$$`: a `$` in a path is no variable)."""

    def escaped(path: Path) -> str:
        return str(path).replace("$", "$$")

    return (
        f"[run]\ndata_file = {escaped(folder / 'child')}\nparallel = true\nsource = {escaped(root)}\n"
        f"omit = {_OMIT}\ncontext = ${{{TEST_VARIABLE}}}\nsigterm = true\ndisable_warnings = {_QUIET}\n"
    )


def _child_data(path: Path) -> object:
    from coverage import CoverageData

    data = CoverageData(basename=str(path))
    with contextlib.suppress(Exception):  # a child killed while it wrote: what it measured is lost, not the run
        data.read()
    return data


def _add(lines: Lines, data: object) -> None:
    for measured in data.measured_files():  # type: ignore[attr-defined]
        for line, contexts in data.contexts_by_lineno(measured).items():  # type: ignore[attr-defined]
            lines[measured][line] |= set(contexts)


def _attributed(lines: Lines, fixtures: Mapping[str, frozenset[str]]) -> Lines:
    """The lines with each context made tests: a wider fixture's set-up belongs to the tests that use it, and
    what ran outside every test to OUTSIDE_TESTS."""
    users: dict[str, set[str]] = defaultdict(set)
    for test, names in fixtures.items():
        for name in names:
            users[FIXTURE_CONTEXT + name].add(test)
    found: Lines = defaultdict(lambda: defaultdict(set))
    for measured, by_line in lines.items():
        for line, contexts in by_line.items():
            for context in contexts:
                found[measured][line] |= _tests_of(context, users)
    return found


def _tests_of(context: str, users: Mapping[str, set[str]]) -> set[str]:
    if not context:
        return {OUTSIDE_TESTS}
    if context.startswith(FIXTURE_CONTEXT):
        return users.get(context) or {OUTSIDE_TESTS}
    return {context}


def _record(lines: Lines, root: Path, unmeasured: Iterable[str] = ()) -> dict[str, object]:
    """The record file's JSON: each file under `root` (not the virtual environment), its units, their tests;
    an `unmeasured` test holds the unit UNMEASURED of its own test file, and nothing else."""
    units: dict[str, dict[str, set[str]]] = {}
    for measured, by_line in lines.items():
        path = Path(measured).resolve()
        if not path.is_relative_to(root) or ".venv" in path.relative_to(root).parts:
            continue
        found = _units_of(path, by_line.items())
        if found:
            units[path.relative_to(root).as_posix()] = found
    skipped = set(unmeasured)
    for found in units.values():  # a test both measured and not (a fixture first set up in a timed one)
        for ran in found.values():
            ran -= skipped
    for test in sorted(skipped):
        units.setdefault(test.split("::", 1)[0], {}).setdefault(UNMEASURED, set()).add(test)
    tests = sorted({test for found in units.values() for ran in found.values() for test in ran})
    index = {test: position for position, test in enumerate(tests)}
    files = {
        source: {unit: sorted(index[test] for test in ran) for unit, ran in sorted(found.items()) if ran}
        for source, found in sorted(units.items())
        if any(found.values())
    }
    return {"tests": tests, "files": files}


def _units_of(path: Path, by_line: Iterable[tuple[int, set[str]]]) -> dict[str, set[str]]:
    """unit -> the tests that ran a line of it (a file that no longer parses: all of it is <module>)."""
    try:
        units: SourceUnits | Unreadable = source_units(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        units = Unreadable("cannot be read")
    found: dict[str, set[str]] = defaultdict(set)
    for line, tests in by_line:
        found[units.unit_at(line) if isinstance(units, SourceUnits) else MODULE_UNIT] |= tests
    return dict(found)
