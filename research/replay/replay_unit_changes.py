"""What the touched rule's function grain can say about each replayed commit before any record is read: for
every changed Python file under --source, the units its diff edits (change/units.py) and whether the rule may
narrow it, or why not (a unit it adds, module-level code, a name other files read, a file that does not
parse), as change/touch_evidence.py judges it. A file it may narrow
runs the tests whose records ran those units; the others run their stages' full set. Cheap: git and ast only,
no test runs, so it shows at once what a change of the unit rules does to mutation_replay_bench.py's commits.

    .venv/bin/python research/replay/replay_unit_changes.py 6161427e5d 75d2d31f58 ...   (default: the 5 of docs/PERF.md)
"""

from __future__ import annotations

import argparse
import subprocess
from collections.abc import Sequence
from pathlib import Path

from ci_tool.change.touch_evidence import file_change
from ci_tool.change.touch_records import RecordedFile
from ci_tool.change.units import UnitChange

ROOT = Path(__file__).resolve().parents[2]  # research/replay/ -> the checkout
REPLAYED = ("6161427e5d", "75d2d31f58", "f41e2a48a5", "b73a6c7573", "960c6bc744")  # docs/PERF.md's replay


def _git(*args: str) -> str | None:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else None  # None: the file is not on that side


def verdict(path: str, change: UnitChange) -> str:
    """The touched rule's own judgement of the change (touch_records.RecordedFile), before any record."""
    why = RecordedFile(path, change).unrecorded
    return f"full set: {why}" if why else "narrows"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("commits", nargs="*", default=REPLAYED)
    parser.add_argument("--source", default="src/kvengine")
    options = parser.parse_args(argv)
    print("| commit | file | units edited | function grain |\n|---|---|---|---|")
    for commit in options.commits:
        names = _git("diff", "--name-only", "--no-renames", f"{commit}^", commit, "--", options.source) or ""
        for path in (name for name in names.split() if name.endswith(".py")):
            found = file_change(ROOT, path, base=f"{commit}^", head=commit)
            change = found.change
            shown = ", ".join(change.units[:4]) + (f" +{len(change.units) - 4}" if len(change.units) > 4 else "")
            print(f"| {commit[:10]} | {path} | {shown} | {verdict(path, change)} |")
            for other, units in sorted(found.readers.items()):
                print(f"| {commit[:10]} | {other} (reads it) | {', '.join(sorted(units))} | narrows |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
