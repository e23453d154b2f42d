"""pytest plugin of a touch-recording run (`ci-tool run --record-touches`): which test ran which file.

coverage.py measures the process with one dynamic context per test (its node id), as pytest-testmon and
`pytest-cov --cov-context=test` do; at the end the plugin writes `--touch-record FILE`: JSON of
repository-relative file -> the node ids of the tests that ran a line of it (setup and teardown
included). Lines run outside a test (imports during collection) belong to no test. Only files under the
rootdir count, the virtual environment's excepted. A test that starts another process does not see what
that process runs (no subprocess measurement): change-based selection counts on the record only for
files a test ran in its own process (stages/cbts.py, the touched rule).
"""

from __future__ import annotations

import json
from collections.abc import Generator
from pathlib import Path

import pytest

from ci_tool.atomic import write_text_atomically

PLUGIN = "ci_tool.run.touches"
OPTION = "--touch-record"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("ci-tool").addoption(OPTION, metavar="FILE", help="Write which test ran which file (JSON).")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    target = config.getoption("touch_record", None)
    if target:
        config.pluginmanager.register(_Recorder(Path(target), config.rootpath), "ci-tool-touches")


class _Recorder:
    def __init__(self, target: Path, root: Path) -> None:
        try:
            import coverage
        except ImportError:  # the runner checks before it starts; a hand-run pytest gets a usage error
            raise pytest.UsageError(
                f"{OPTION} needs coverage.py, found none Hint: pip install coverage"
            ) from None
        self.target, self.root = target, root.resolve()
        self.coverage = coverage.Coverage(data_file=None, source=[str(self.root)], omit=["*/.venv/*"])
        self.coverage.start()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        self.coverage.switch_context(item.nodeid)
        try:
            return (yield)
        finally:
            self.coverage.switch_context("")

    def pytest_sessionfinish(self) -> None:
        self.coverage.stop()
        data = self.coverage.get_data()
        found: dict[str, list[str]] = {}
        for measured in data.measured_files():
            path = Path(measured).resolve()
            if not path.is_relative_to(self.root):
                continue
            tests = {context for contexts in data.contexts_by_lineno(measured).values() for context in contexts}
            tests.discard("")
            if tests:
                found[path.relative_to(self.root).as_posix()] = sorted(tests)
        write_text_atomically(self.target, json.dumps(dict(sorted(found.items())), indent=1) + "\n")
