"""The replay research's helpers import one another by bare name (`from replay_runs import ...`), as the scripts
in research/replay/ do when run: their tests put the folder on the path the same way."""

from __future__ import annotations

import sys
from pathlib import Path

REPLAY = Path(__file__).resolve().parents[2] / "research" / "replay"
if str(REPLAY) not in sys.path:
    sys.path.insert(0, str(REPLAY))
