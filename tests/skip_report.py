"""The skipped tests of a session, for .ci/run: one CI host runs every test, so only `gpu` tests may skip there.

    CI_TOOL_TEST_SKIPS_FILE=FILE pytest ...   the session writes FILE at its end: a JSON list of its skipped
                                              tests, each {"test": node id, "reason": ..., "gpu": bool}
    python -m tests.skip_report FILE          prints them, grouped by reason; exit 1 when one is not
                                              `gpu`-marked, naming it

The session takes the variable out of the environment when it starts, so the pytest processes its tests
and fixtures start never write the file. tests/conftest.py installs the hooks.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

SKIPS_FILE_ENV = "CI_TOOL_TEST_SKIPS_FILE"
HINT = (
    "Hint: install what the reason names (.ci/run installs Slurm, Chromium and Groovy; the Slurm tests need root; "
    "the test extra installs act, whose tests also need node and GitHub's pinned actions beside the checkout), "
    "or mark a test that needs a GPU `gpu`"
)


class _SkipRecorder:
    """The session's skipped tests, written to `path` at its end. Every test's reports reach
    `pytest_runtest_logreport` in the session's own process, under pytest-xdist too: its workers send them to
    the controller, their markers among the report's keywords."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.skips: list[dict[str, object]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):
            longrepr = report.longrepr
            reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
            gpu = "gpu" in report.keywords
            self.skips.append({"test": report.nodeid, "reason": reason.removeprefix("Skipped: "), "gpu": gpu})

    def pytest_sessionfinish(self) -> None:
        self.path.write_text(json.dumps(self.skips, indent=1) + "\n", encoding="utf-8")


def pytest_configure(config: pytest.Config) -> None:
    path = os.environ.pop(SKIPS_FILE_ENV, None)
    if path and not hasattr(config, "workerinput"):  # an xdist worker's reports go to its controller
        config.pluginmanager.register(_SkipRecorder(Path(path)), "ci-tool-skip-recorder")


def summary(skips: Sequence[dict[str, object]]) -> tuple[list[str], list[str]]:
    """(the lines that list the skips by reason, the error lines: one per skip that is not `gpu`-marked)."""
    gpu = sum(1 for skip in skips if skip["gpu"])
    lines = [f"skipped: {len(skips)} tests, {gpu} of them gpu-marked"]
    by_reason = Counter((bool(skip["gpu"]), str(skip["reason"])) for skip in skips)
    lines += [
        f"  {count:4} {'gpu' if is_gpu else 'NOT gpu'}: {reason}" for (is_gpu, reason), count in by_reason.items()
    ]
    errors = [
        f"error: {skip['test']} skipped and is not gpu-marked: {skip['reason']} {HINT}"
        for skip in skips
        if not skip["gpu"]
    ]
    return lines, errors


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.skip_report SKIPS_FILE", file=sys.stderr)
        return 2
    try:
        skips = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        print(f"error: {argv[0]}: expected the skips the test session wrote, found {error}", file=sys.stderr)
        return 1
    lines, errors = summary(skips)
    print("\n".join(lines))
    print("\n".join(errors), file=sys.stderr, end="\n" if errors else "")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
