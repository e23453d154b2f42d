"""`ci-tool bot handle` in processes of its own, several at once for one event (the idempotency tests and the
Actions dispatch tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.bot_handle import ALLOWLIST, CATALOG

HANDLERS = 3


REPO_ROOT = Path(__file__).resolve().parents[2]


def handle_in_a_process(event_path: Path, history: Path) -> subprocess.Popen[str]:
    argv = ["bot", "handle", "--event", str(event_path), "--allowlist", ALLOWLIST, *CATALOG, "--poll-seconds", "0.1",
            "--retry-seconds", "0", "--lost-answer-seconds", "600"]  # fmt: skip
    code = "import sys; from ci_tool.cli import main; sys.exit(main(sys.argv[1:]))"
    environment = {**os.environ, "CI_TOOL_HISTORY": str(history)}
    return subprocess.Popen([sys.executable, "-c", code, *argv], cwd=REPO_ROOT, env=environment, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
