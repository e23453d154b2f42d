"""A test's pytest reports (setup, call, teardown) as one JUnit testcase, within the bounds of
ci_tool.run.output_bounds: what the test-list plugin streams as each test ends."""

from __future__ import annotations

import pytest

from ci_tool.outcomes import TestOutcome
from ci_tool.run import junit, output_bounds


def case_from_reports(
    nodeid: str, reports: list[pytest.TestReport], stage: str | None, *, log_name: str = ""
) -> junit.CaseResult:
    """One test's setup/call/teardown reports as one JUnit testcase, its texts cut to their bounds (a
    failure's whole report and captured output stay in the process's log, `log_name`, where pytest
    prints them)."""
    duration = sum(r.duration for r in reports)
    failing = next((r for r in reports if r.failed), None)
    skipping = next((r for r in reports if r.skipped), None)
    text = message = kind = ""
    if failing is not None:
        outcome = TestOutcome.FAILED if failing.when == "call" else TestOutcome.ERROR
        text = failing.longreprtext
        crash = getattr(failing.longrepr, "reprcrash", None)
        message = crash.message if crash is not None else (text.strip().splitlines() or [""])[-1]
        kind = _exception_type(message)
    elif skipping is not None:
        outcome = TestOutcome.SKIPPED
        if hasattr(skipping, "wasxfail"):
            message, kind = f"xfail: {skipping.wasxfail}".rstrip(": "), "pytest.xfail"
        elif isinstance(skipping.longrepr, tuple):
            message, kind = str(skipping.longrepr[2]).removeprefix("Skipped: "), "pytest.skip"
        text = message
    else:
        outcome = TestOutcome.PASSED
    last = reports[-1]  # its sections and properties accumulate those of the earlier phases
    properties = tuple(
        (output_bounds.cut_line(str(k)), output_bounds.cut_line(str(v))) for k, v in last.user_properties
    )
    stdout = "".join(content for title, content in last.sections if "stdout" in title)
    stderr = "".join(content for title, content in last.sections if "stderr" in title)
    shown_in = log_name if failing is not None else ""  # pytest prints a failure's output, not a pass's
    return junit.CaseResult(
        nodeid, outcome, duration, output_bounds.cut_line(message),
        output_bounds.cut_text(text, full_text_in=shown_in), kind,
        output_bounds.cut_text(stdout, full_text_in=shown_in), output_bounds.cut_text(stderr, full_text_in=shown_in),
        properties, stage,
    )  # fmt: skip


def _exception_type(message: str) -> str:
    """`ValueError: bad` -> `ValueError`; '' when the message does not start with a type name."""
    head = message.split(":", 1)[0].strip()
    return head if head and head.replace(".", "").replace("_", "").isalnum() and " " not in head else ""
