"""One task of a multi-node launch: `srun --nodes=M ... python -m ci_tool.run.ranks --done=FILE -- COMMAND...`.

    rank 0       runs COMMAND (pytest) to its end, forwarding SIGINT and SIGTERM to it, then writes FILE and
                 exits with COMMAND's exit status, which srun passes back to the stage runner
    other ranks  hold their node in the step for rank 0: they exit 0 once FILE exists, or when signalled

The ranks wait on a file, not on srun: `srun --wait` would SIGKILL them and make srun exit 137 whatever
pytest returned. The stage folder (and so FILE) is on the file system every node of the cluster shares.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

RANK_ENV = "SLURM_PROCID"
POLL_SECONDS = 0.1
USAGE = "usage: python -m ci_tool.run.ranks --done=FILE -- COMMAND..."


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 3 or not args[0].startswith("--done=") or args[1] != "--":
        print(USAGE, file=sys.stderr)
        return 2
    done = Path(args[0].removeprefix("--done="))
    if int(os.environ.get(RANK_ENV, "0")) == 0:
        return _lead(args[2:], done)
    return _hold(done)


def _lead(command: list[str], done: Path) -> int:
    child = subprocess.Popen(command)

    def forward(signum: int, frame: FrameType | None) -> None:
        child.send_signal(signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, forward)
    status = child.wait()
    done.write_text(f"{status}\n", encoding="utf-8")
    return status if status >= 0 else 128 - status  # a child killed by signal N: 128 + N, as a shell says


def _hold(done: Path) -> int:
    def leave(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(0)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, leave)
    while not done.exists():
        time.sleep(POLL_SECONDS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
