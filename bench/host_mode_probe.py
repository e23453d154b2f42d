"""Why a host-bound perf case runs in a fast or a slow mode per process: the host, measured beside the case.

On some GPU hosts a perf case's wall-clock metrics fall 15-25 % in some processes and not in others, with the
device's own step time unchanged (docs/PERF.md, "A slow mode of the host"). This bench starts one process per
row, each pinned to a CPU set (or not), and has each record beside the case's step latency what could explain
it: the CPUs it ran on, a fixed pure-Python loop's time (the core's speed), a tiny op's launch-and-sync round
trip (the path to the GPU), and the device step time (CUDA events).

    PYTHONPATH=$PWD:$PWD/src python3 bench/host_mode_probe.py [--case CASE_ID] [--unpinned N] [--pinned N]
        [--json out.json]

First it prints the host's layout: CPUs, NUMA nodes and their CPU lists, the GPU's local CPU list, and the
cores' current clock where the kernel shows it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from ci_tool.perf.host_probe import probe_ms

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CASE = "gpu-deepseek_v4_like-pool8g-b64_1k"
LOOP_ITERATIONS = 2_000_000  # the host probe's loop, 4x as long: what docs/PERF.md's table measured


def current_cpu() -> int:
    """The CPU this thread runs on now (field 39 of /proc/thread-self/stat)."""
    fields = Path("/proc/thread-self/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[36])  # fields after the command name start at the 3rd


def child(case_id: str) -> dict[str, object]:
    """One process: the case's rounds on one engine, with the host's measures before and after each round."""
    import torch

    from bench.decode_bandwidth_bench import perf_cases
    from kvengine.benchmark import DecodeLoad, run_decode
    from kvengine.loader import load_preset
    from tests.perf.engine_case import WARMUP_STEPS, build_engine

    def launch_round_trip_us() -> float:
        if not torch.cuda.is_available():
            return 0.0
        x = torch.zeros(1, device="cuda")
        times = []
        for _ in range(300):
            began = time.perf_counter()
            x.add_(1)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - began) * 1e6)
        return statistics.median(times)

    case = perf_cases()[case_id]
    engine = build_engine(case)
    load = DecodeLoad(case.load.concurrency, case.load.input_len, case.load.output_len, WARMUP_STEPS)
    rounds = []
    for _ in range(4):
        cpus_before, loop_ms, trip_us = current_cpu(), probe_ms(LOOP_ITERATIONS), launch_round_trip_us()
        found = run_decode(engine, load_preset(case.model), load, hidden_size=case.hidden_size)
        rounds.append({
            "cpu": [cpus_before, current_cpu()], "python_loop_ms": round(loop_ms, 2),
            "launch_round_trip_us": round(trip_us, 2), "step_p50_ms": round(found.percentile_ms(0.5), 3),
            "device_step_ms": round(found.device_step_ms or 0.0, 3), "tokens_per_s": round(found.tokens_per_s),
        })
    return {"affinity": sorted(os.sched_getaffinity(0)), "rounds": rounds[1:]}  # the first round warms up


def host_layout() -> str:
    lines = [f"CPUs: {os.cpu_count()}"]
    for node in sorted(Path("/sys/devices/system/node").glob("node[0-9]*")):
        lines.append(f"{node.name}: cpus {(node / 'cpulist').read_text().strip()}")
    try:
        bus = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader"], capture_output=True,
                             text=True, check=True).stdout.strip().lower()  # fmt: skip
        local = Path(f"/sys/bus/pci/devices/{bus[4:]}/local_cpulist")
        lines.append(f"GPU {bus}: local cpus {local.read_text().strip() if local.exists() else '(not shown)'}")
        lines.append(subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True).stdout.strip())
    except (OSError, subprocess.CalledProcessError) as err:
        lines.append(f"nvidia-smi: {err}")
    clocks = []
    for cpu in range(os.cpu_count() or 0):
        freq = Path(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq")
        if freq.exists():
            clocks.append(f"{cpu}:{int(freq.read_text()) // 1000}")
    lines.append("clocks MHz: " + (" ".join(clocks) if clocks else "(not shown)"))
    model = next((line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("model name")), "")
    lines.append(model)
    return "\n".join(lines)


def cpu_sets() -> list[tuple[str, list[int] | None]]:
    """(label, CPUs) to pin rows to: each NUMA node, then each half of the CPUs, then one CPU at each end."""
    cpus = sorted(os.sched_getaffinity(0))
    sets: list[tuple[str, list[int] | None]] = []
    for node in sorted(Path("/sys/devices/system/node").glob("node[0-9]*")):
        listed = _parse_cpulist((node / "cpulist").read_text())
        if listed and listed != cpus:
            sets.append((node.name, listed))
    half = len(cpus) // 2
    sets += [("first half", cpus[:half]), ("second half", cpus[half:]), (f"cpu {cpus[0]}", cpus[:1]),
             (f"cpu {cpus[-1]}", cpus[-1:])]  # fmt: skip
    return sets


def _parse_cpulist(text: str) -> list[int]:
    found: list[int] = []
    for part in text.strip().split(","):
        if "-" in part:
            low, high = part.split("-")
            found += range(int(low), int(high) + 1)
        elif part:
            found.append(int(part))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default=DEFAULT_CASE)
    parser.add_argument("--unpinned", type=int, default=6, help="processes left to the scheduler")
    parser.add_argument("--pinned", type=int, default=2, help="processes per CPU set")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.case)))
        return
    print(host_layout(), flush=True)
    plan = [("unpinned", None)] * args.unpinned + [s for s in cpu_sets() for _ in range(args.pinned)]
    results = []
    print("| CPUs | ran on | python loop ms | launch round trip µs | step p50 ms | device step ms | tokens/s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for label, cpus in plan:
        command = [sys.executable, __file__, "--child", "--case", args.case]
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT,
                              preexec_fn=(lambda c=cpus: os.sched_setaffinity(0, c)) if cpus else None)  # fmt: skip
        if done.returncode != 0:
            print(f"| {label} | failed: {done.stderr.strip().splitlines()[-1:]} |", flush=True)
            continue
        row = json.loads(done.stdout.strip().splitlines()[-1])
        row["label"] = label
        results.append(row)
        rounds = row["rounds"]

        def med(key: str, rounds: list[dict[str, object]] = rounds) -> float:
            return statistics.median(float(r[key]) for r in rounds)  # type: ignore[arg-type]

        ran_on = sorted({c for r in rounds for c in r["cpu"]})
        print(f"| {label} | {ran_on} | {med('python_loop_ms'):.1f} | {med('launch_round_trip_us'):.1f} | "
              f"{med('step_p50_ms'):.3f} | {med('device_step_ms'):.3f} | {med('tokens_per_s'):,.0f} |", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
