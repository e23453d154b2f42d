"""Baselines per (case, GPU type, metric): committed YAML, one file per GPU type, written from the history.

    tests/scripts/perf-sanity/baselines/H200.yaml
      version: 1
      gpu: H200
      baselines:
        gpu-gemma_like-pool4g-b80:
          decode_tokens_per_s: {value: 2944.0, threshold: 0.1, spread: 41.2, runs: 5, commit: 3f2a9c1}
          host_probe_ms: {value: 16.4, spread: 0.3, runs: 5, commit: 3f2a9c1}

They are data, not history: CI's clean clone has no history, so the gate reads these files, and
`ci-tool perf baseline set` rewrites one atomically from the median of recorded runs. A GPU type without a
file has no baselines (its cases are recorded, not gated). Thresholds are relative (0.1 = 10 %). `spread` is
the baseline's noise in the metric's unit (1.4826 * MAD between its runs' medians, at least the median of the
runs' own round noise); a file without it (an older one) reads as 0, the threshold alone. `host_probe_ms`
is a reference, not a gated metric: how fast the host ran when the baselines were set (busy_host.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml
from yaml.nodes import Node

from ci_tool.atomic import make_folder, write_text_atomically
from ci_tool.errors import PerfError, Where
from ci_tool.perf.config import CONFIG_DIR
from ci_tool.perf.metrics import metric
from ci_tool.text_file import read_text
from ci_tool.yaml_nodes import NodeKind, NodeReader, compose

BASELINE_DIR = CONFIG_DIR / "baselines"  # relative to the repository root
BASELINE_VERSION = 1
_ENTRY_KEYS = ("value", "threshold", "spread", "runs", "commit")
_WORD = (NodeKind.STR, NodeKind.INT)  # a GPU type or a commit may read as a number (`3090`, `1234567`)


@dataclass(frozen=True)
class Baseline:
    case_id: str
    gpu: str
    metric: str
    value: float
    threshold: float  # relative: a value this much worse than `value` is a regression
    runs: int = 1  # how many recorded runs the median was taken over
    commit: str = ""  # the newest commit among them
    spread: float = 0.0  # the noise between those runs, in the metric's unit (gate.py)


Baselines = Mapping[tuple[str, str], Baseline]  # (case, metric) -> baseline, for one GPU type


def baseline_file(folder: Path, gpu: str) -> Path:
    """`H200.yaml`; a GPU type with other characters (`H100 PCIE`) gets them as underscores."""
    return folder / (re.sub(r"[^A-Za-z0-9_.]+", "_", gpu) + ".yaml")


def load_baselines(folder: Path, gpu: str) -> dict[tuple[str, str], Baseline]:
    """The baselines of one GPU type; none when it has no file."""
    path = baseline_file(folder, gpu)
    if not path.exists():
        return {}
    text = read_text(path, name="perf baseline file", error=PerfError)
    root = compose(text, file=str(path), error=PerfError)
    reader = NodeReader(str(path), PerfError)
    found = _read(reader, root, gpu) if root is not None else {}
    reader.raise_all()
    return found


def _read(reader: NodeReader, root: Node, gpu: str) -> dict[tuple[str, str], Baseline]:
    top = reader.mapping(root, "", "a mapping of version, gpu, baselines", ("version", "gpu", "baselines"))
    if top is None:
        return {}
    if "version" in top:
        version = reader.integer(top["version"], "version", f"version {BASELINE_VERSION}", minimum=0)
        if version is not None and version != BASELINE_VERSION:
            reader.problem(top["version"], "version", f"expected version {BASELINE_VERSION}, found {version}")
    if "gpu" in top:
        named = reader.scalar(top["gpu"], "gpu", _WORD, "the GPU type of the file")
        if named is not None and named != gpu:
            reader.problem(top["gpu"], "gpu", f"expected gpu {gpu!r} (the file's name), found {named!r}",
                           "rename the file or fix its gpu key")  # fmt: skip
    cases = reader.mapping(top["baselines"], "baselines", "a mapping of cases", None) if "baselines" in top else {}
    found: dict[tuple[str, str], Baseline] = {}
    for case_id, metrics_node in (cases or {}).items():
        metrics = reader.mapping(metrics_node, f"baselines.{case_id}", "a mapping of metrics", None) or {}
        for name, node in metrics.items():
            path = f"baselines.{case_id}.{name}"
            try:
                metric(name)
            except PerfError as error:
                reader.problem(node, path, error.message, error.hint)
                continue
            baseline = _entry(reader, node, path, case_id, gpu, name)
            if baseline is not None:
                found[(case_id, name)] = baseline
    return found


def _entry(reader: NodeReader, node: Node, path: str, case_id: str, gpu: str, name: str) -> Baseline | None:
    entry = reader.mapping(node, path, "a mapping of value, threshold, spread, runs, commit", _ENTRY_KEYS)
    if entry is None:
        return None
    gated = metric(name).gated  # a reference metric (the host probe) is never gated: it needs no threshold
    for key in ("value", "threshold") if gated else ("value",):
        if key not in entry:
            reader.problem(node, path, f"expected the key {key!r}, found none", "run `ci-tool perf baseline set`")
            return None
    value = reader.number(entry["value"], f"{path}.value", "a number")
    threshold = (reader.number(entry["threshold"], f"{path}.threshold", "a relative threshold from 0 to 1")
                 if "threshold" in entry else 0.0)  # fmt: skip
    if threshold is not None and not 0 <= threshold <= 1:
        reader.problem(entry["threshold"], f"{path}.threshold",
                       f"expected a relative threshold from 0 to 1, found {threshold:g}", "0.1 means 10 %")  # fmt: skip
        return None
    spread = reader.number(entry["spread"], f"{path}.spread", "a spread >= 0") if "spread" in entry else 0.0
    if spread is not None and spread < 0:
        reader.problem(entry["spread"], f"{path}.spread", f"expected a spread >= 0, found {spread:g}",
                       "run `ci-tool perf baseline set`")  # fmt: skip
        return None
    runs = reader.integer(entry["runs"], f"{path}.runs", "an integer >= 1", minimum=1) if "runs" in entry else 1
    commit = reader.scalar(entry["commit"], f"{path}.commit", _WORD, "a commit") if "commit" in entry else ""
    if value is None or threshold is None or runs is None or spread is None:
        return None
    return Baseline(case_id, gpu, name, value, threshold, runs, commit or "", spread)


def baselines_text(gpu: str, baselines: Iterable[Baseline]) -> str:
    """The YAML of one GPU type's file: sorted, stable, so a `set` changes only the lines that changed."""
    by_case: dict[str, dict[str, dict[str, object]]] = {}
    for b in sorted(baselines, key=lambda b: (b.case_id, b.metric)):
        entry: dict[str, object] = {"value": round(b.value, 6), "threshold": b.threshold,
                                    "spread": round(b.spread, 6), "runs": b.runs, "commit": b.commit}  # fmt: skip
        if not metric(b.metric).gated:  # a reference metric: the gate reads its value, never a threshold
            del entry["threshold"]
        by_case.setdefault(b.case_id, {})[b.metric] = entry
    header = (
        f"# Perf-sanity baselines on {gpu}, written by `ci-tool perf baseline set` from the history (the median\n"
        "# of recorded runs; spread: their noise). Thresholds are relative (0.1 = 10 % worse fails, and only when\n"
        "# past 3x the combined noise too); edit them here, set values anew.\n"
    )
    body = yaml.safe_dump({"version": BASELINE_VERSION, "gpu": gpu, "baselines": by_case}, sort_keys=False,
                          default_flow_style=None, width=200)  # fmt: skip
    return header + body


def write_baselines(folder: Path, gpu: str, baselines: Iterable[Baseline]) -> Path:
    """Replace one GPU type's file atomically; return its path."""
    make_folder(folder, what="the baselines folder")
    path = baseline_file(folder, gpu)
    listed = list(baselines)
    if not listed:
        raise PerfError(f"expected baselines to write for {gpu}, found none", where=Where(str(path)),
                        hint="record runs first: `ci-tool stage run <a PerfSanity stage>`")  # fmt: skip
    write_text_atomically(path, baselines_text(gpu, listed), what="the baselines")
    return path
