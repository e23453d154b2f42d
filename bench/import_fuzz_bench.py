"""Fuzz campaign of `ci-tool history import`: a real unrecorded.json mutated N ways (type swaps, deletions,
NaN/inf/huge numbers, wrong nesting, unknown keys; one to three changes each), each imported through the
real CLI into one history, and every import that succeeds read back by `report latest` and `history`.

    python bench/import_fuzz_bench.py [--count N] [--seed S]

Prints how many imported, how many were our located error, how many were anything else ("unexpected"),
and the first few of those with their mutation. Exit code 1 when any was unexpected.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ci_tool.cli import main
from tests.ci_tool.history.unrecorded_mutations import as_text, random_mutations


def quiet(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue() + err.getvalue()


def campaign(count: int, seed: int) -> int:
    outcomes: collections.Counter[str] = collections.Counter()
    errors: collections.Counter[str] = collections.Counter()
    unexpected: list[tuple[str, str]] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        run_dir, history = Path(folder) / "run", str(Path(folder) / "h.sqlite")
        run_dir.mkdir()
        for said, record in random_mutations(seed, count):
            (run_dir / "unrecorded.json").write_text(as_text(record))
            code, printed = quiet(["history", "import", str(run_dir), "--history", history])
            if code == 0:
                for verb in (["report", "latest"], ["history", "--json"]):
                    read_code, read = quiet([*verb, "--history", history])
                    code, printed = (read_code, read) if read_code else (code, printed)
            if "error: unexpected " in printed or code not in (0, 1):
                outcomes["unexpected"] += 1
                unexpected.append((said, printed.strip().splitlines()[-1] if printed.strip() else f"exit {code}"))
            elif code == 0:
                outcomes["imported"] += 1
            else:
                outcomes["our error"] += 1
                errors[printed.split(": expected ", 1)[-1].split(",")[0][:40]] += 1
    seconds = time.monotonic() - started
    print(f"{count} mutations (seed {seed}) in {seconds:.1f} s: " + ", ".join(f"{n} {k}" for k, n in outcomes.items()))
    print(f"  {outcomes['unexpected']} unexpected; {len(errors)} distinct expectations in our errors, e.g.:")
    for what, n in errors.most_common(8):
        print(f"    {n:5d}  expected {what}")
    for said, line in unexpected[:5]:
        print(f"  UNEXPECTED after {said}: {line}")
    return 1 if unexpected else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    sys.exit(campaign(options.count, options.seed))
