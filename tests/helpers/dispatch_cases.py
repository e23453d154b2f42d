"""What the Jenkins dispatch tests share: the pull request's head and older commit, the status contexts, the
default stages, Jenkins test-report cases (`case`, `PASSING`), the statuses the fake GitHub holds, and a URL
that nothing answers (`closed_port_url`)."""

from __future__ import annotations

import socket

from tests.helpers.fake_github import FakeGitHub

SHA = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"


OLD_SHA = "0" * 40


FULL, CUSTOM = "Jenkins Full Build", "Custom Jenkins build"


DEFAULT_STAGES = ["CPU-Generic-1", "A10-PyTorch-1", "A10-PyTorch-2", "DGX_H100-PyTorch-1"]


def case(stage: str, name: str, status: str, message: str = "") -> dict[str, object]:
    """A test case of a Jenkins test report, as ci-tool's JUnit names it (stage-prefixed class name)."""
    return {
        "className": f"{stage}.tests.kv.test_pool.TestPool",
        "name": name,
        "status": status,
        "duration": 2.0,
        "errorDetails": message or None,
        "errorStackTrace": f"E   AssertionError: {message}" if message else None,
    }


PASSING = (case("CPU-Generic-1", "test_a", "PASSED"), case("A10-PyTorch-1", "test_b", "PASSED"),
           case("A10-PyTorch-2", "test_c", "SKIPPED"), case("DGX_H100-PyTorch-1", "test_d", "PASSED"))  # fmt: skip


def statuses(github: FakeGitHub) -> list[tuple[str, str, str, str]]:
    return [(str(s["sha"])[:7], str(s["context"]), str(s["state"]), str(s["description"])) for s in github.statuses]


def closed_port_url() -> str:
    """A loopback URL where nothing listens: connections are refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/"
