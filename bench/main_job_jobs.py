"""The README's main job (`ci-tool run`), one stage at a time (`--jobs 1`) against side by side (the default
`--jobs`, what this host holds), each from a fresh history: wall time, and when the first GPU stage's result
line came: its `passed in` / `failed in` line where the host serves a GPU stage, else the first `waiting for
a runner` line.

    .venv/bin/python bench/main_job_jobs.py [--modes serial,default] [--jobs-default N] [--request TEXT]

`--request '/bot run --disable-fail-fast'` keeps a host that lacks a tool some tests need (act, Groovy, a
browser) from stopping the run at their failures: it times the same stages to their end.

Run from the checkout (a venv with the package installed, `pip install -e '.[engine,test]'`, torch among it).
Everything goes under $OUT (default: ./bench-out/main_job_jobs): per mode its history (`<mode>.sqlite`), its
results folder (`<mode>-runs/`) and its output with each line's second (`<mode>.log`); main_job_jobs.json
holds the numbers, and the table is printed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# A stage's result line: `<stage>: passed in 3.1 s (...)`, `<stage>: waiting for a runner: ...`, `... skipped: ...`
RESULT = re.compile(r"^(?P<stage>[A-Za-z0-9_]+(?:-[+\w\[\]]+)*): (?P<what>(?:passed|failed|unstable|interrupted) in |"
                    r"waiting for a runner|skipped|reused)")  # fmt: skip
MODES = {"serial": ["--jobs", "1"], "default": []}


def run_mode(mode: str, args: list[str], out: Path, request: list[str]) -> dict[str, object]:
    """One main job from a fresh history; each output line with its second since the start."""
    history, results, log = out / f"{mode}.sqlite", out / f"{mode}-runs", out / f"{mode}.log"
    history.unlink(missing_ok=True)
    shutil.rmtree(results, ignore_errors=True)
    command = [sys.executable, "-m", "ci_tool", "run", *request, "--history", str(history), "--results-dir",
               str(results), "--progress", "lines", *args]  # fmt: skip
    env = {**os.environ, "CI_TOOL_PROGRESS": "lines"}
    started = time.monotonic()
    first_gpu: tuple[float, str] | None = None
    first_gpu_ran = False
    lines, raw, times = [], [], []
    pipe = subprocess.PIPE
    with subprocess.Popen(command, cwd=ROOT, env=env, stdout=pipe, stderr=subprocess.STDOUT, text=True) as child:
        assert child.stdout is not None
        for line in child.stdout:
            at = time.monotonic() - started
            times.append(at)
            lines.append(f"{at:8.1f}  {line.rstrip()}")
            raw.append(line.strip())
            found = RESULT.match(line)
            if found and not found["stage"].startswith("CPU"):
                ran = found["what"].endswith(" in ")  # a GPU stage this host ran, not one that waits
                if first_gpu is None or (ran and not first_gpu_ran):
                    first_gpu, first_gpu_ran = (at, line.strip()), ran
    wall = time.monotonic() - started
    log.write_text("\n".join(lines) + "\n")
    said = [line for line in raw if "side by side" in line or "one stage at a time" in line]
    return {
        "mode": mode,
        "command": " ".join(command),
        "exit_code": child.returncode,
        "wall_seconds": round(wall, 1),
        "largest_gap_seconds": round(max((b - a for a, b in itertools.pairwise(times)), default=0.0), 1),
        "first_gpu_result_seconds": round(first_gpu[0], 1) if first_gpu else None,
        "first_gpu_result_line": first_gpu[1] if first_gpu else None,
        "bound": said[0] if said else "",
        "closing_line": next((line for line in reversed(raw) if " passed, " in line and "|" not in line), ""),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="serial,default", help="comma-separated: serial, default")
    parser.add_argument("--jobs-default", type=int, help="pass --jobs N in the default mode instead of the default")
    parser.add_argument("--request", help="the request to run (default: none, a bare `/bot run`)")
    options = parser.parse_args()
    out = Path(os.environ.get("OUT") or ROOT / "bench-out" / "main_job_jobs")
    out.mkdir(parents=True, exist_ok=True)
    if options.jobs_default:
        MODES["default"] = ["--jobs", str(options.jobs_default)]
    request = [options.request] if options.request else []
    rows = [run_mode(mode, MODES[mode], out, request) for mode in options.modes.split(",")]
    (out / "main_job_jobs.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(f"{'mode':8} {'exit':>4} {'wall s':>8} {'first GPU result s':>19}  bound")
    for row in rows:
        first = f"{row['first_gpu_result_seconds']!s:>19}"
        print(f"{row['mode']:8} {row['exit_code']:>4} {row['wall_seconds']:>8} {first}  {row['bound']}")
    if len(rows) == 2 and rows[1]["wall_seconds"]:
        print(f"serial / default wall time: {float(rows[0]['wall_seconds']) / float(rows[1]['wall_seconds']):.2f}")  # type: ignore[arg-type]
    for row in rows:
        print(f"{row['mode']}: first GPU result: {row['first_gpu_result_line']}")
    print(f"logs and histories in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
