from __future__ import annotations

from pathlib import Path

import pytest

from ci_tool.errors import RunError
from ci_tool.outcomes import TestOutcome
from ci_tool.run import junit
from ci_tool.run.flaky import load_flaky_signatures, match_flaky


def test_shipped_signatures_load() -> None:
    names = [signature.name for signature in load_flaky_signatures()]
    assert names == [
        "cuda-oom",
        "cuda-device-busy",
        "nccl-timeout",
        "port-in-use",
        "connection-reset",
        "download-timeout",
    ]


@pytest.mark.parametrize(
    ("output", "name"),
    [
        ("RuntimeError: CUDA error: out of memory", "cuda-oom"),
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB", "cuda-oom"),
        ("OSError: [Errno 98] Address already in use", "port-in-use"),
        ("[rank0]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)", "nccl-timeout"),
        ("ConnectionResetError: [Errno 104] Connection reset by peer", "connection-reset"),
        ("AssertionError: assert 1 == 2", None),
    ],
    ids=["cuda-oom", "torch-oom", "port", "nccl", "reset", "real-bug"],
)
def test_match_flaky(output: str, name: str | None) -> None:
    case = junit.CaseResult("a.py::t", TestOutcome.FAILED, message="failed", stderr=output)
    found = match_flaky(case, load_flaky_signatures())
    assert (found.name if found else None) == name


def test_passing_tests_never_match() -> None:
    case = junit.CaseResult("a.py::t", TestOutcome.PASSED, stdout="CUDA error: out of memory")
    assert match_flaky(case, load_flaky_signatures()) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: 2\nsignatures: []\n", "expected a mapping with `version: 1` and a `signatures:` list"),
        (
            "version: 1\nsignatures:\n- {name: a, pattern: x, why: y, extra: 1}\n",
            "expected only the keys name, pattern, why, found 'extra'",
        ),
        (
            "version: 1\nsignatures:\n- {name: a, pattern: '(', why: y}\n",
            "expected a regular expression, found '(' (missing ), unterminated subpattern at position 0)",
        ),
        (
            "version: 1\nsignatures:\n- {name: Bad_Name, pattern: x, why: y}\n",
            "expected a name of lower-case words joined by '-', found 'Bad_Name'",
        ),
        (
            "version: 1\nsignatures:\n- {name: a, pattern: x}\n",
            "expected a non-empty string for why, found {'name': 'a', 'pattern': 'x'}",
        ),
    ],
    ids=["version", "unknown-key", "bad-regex", "bad-name", "missing-why"],
)
def test_invalid_signature_files(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "s.yml").write_text(text)
    with pytest.raises(RunError) as error:
        load_flaky_signatures(tmp_path / "s.yml")
    assert error.value.message == message
