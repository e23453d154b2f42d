"""The perf section of a report, pure: every case's gated metric with value, baseline, delta and verdict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ci_tool.history.perf_results import PerfResult
from ci_tool.markdown_safe import code, code_cell
from ci_tool.outcomes import PerfVerdict
from ci_tool.perf.learning import no_baseline_line, unbaselined_gpus
from ci_tool.perf.metrics import GATED

_SHOWN = {PerfVerdict.REGRESSED: "**regressed**", PerfVerdict.LOST_COVERAGE: "**lost coverage**",
          PerfVerdict.WARNED: "warned", PerfVerdict.SKIPPED: "skipped"}  # fmt: skip


def perf_table(results: Sequence[PerfResult]) -> list[str]:
    lines = ["| Case | GPU | Metric | Value | Baseline | Delta | Verdict |", "|---|---|---|---:|---:|---:|---|"]
    for r in results:
        baseline = f"{r.baseline:.4g}" if r.baseline is not None else "–"
        delta = f"{r.delta:+.1%}" if r.delta is not None else "–"
        verdict = _SHOWN.get(r.verdict, r.verdict.value) + (f": {code_cell(r.note)}" if r.note else "")
        case = f"{code_cell(r.case_id)} | {code_cell(r.gpu)} | {code_cell(r.metric)}"  # from the PR's configs
        lines.append(f"| {case} | {r.value:.4g} | {baseline} | {delta} | {verdict} |")
    return lines


def perf_section(results: Sequence[PerfResult], quiet_needed: Mapping[str, int] | None = None) -> list[str]:
    """`### Perf` with the table (stage per case), a GPU type without baselines and the post-merge warnings
    called out. `quiet_needed`: the quiet runs each GPU type still needs for a baseline (learning.py). The table
    keeps the gated metrics and any metric with a verdict; the recorded-only ones (graph steps, pool shares, the
    host's wait and probe: a dozen a GPU case) are named under it; the HTML report and the history keep their
    values."""
    if not results:
        return []
    shown = [r for r in results if _in_table(r)]
    left_out = list(dict.fromkeys(r.metric for r in results if not _in_table(r)))
    warned = [r for r in results if r.verdict is PerfVerdict.WARNED]
    lines = ["", f"### Perf: {len({(r.stage, r.case_id) for r in results})} case run(s)", ""]
    needed = quiet_needed or {}
    unbaselined = unbaselined_gpus(results)
    if unbaselined:
        lines += [f"- {no_baseline_line(gpu, needed.get(gpu))}" for gpu in unbaselined] + [""]
    if warned:
        lines += [f"- warning in {code(r.stage or 'pytest')}: {code(r.note)}" for r in warned] + [""]
    lines += perf_table(shown)
    if left_out:
        lines += ["", f"Also recorded, not gated: {', '.join(code(name) for name in left_out)}"]
    return lines


def _in_table(r: PerfResult) -> bool:
    """A gated metric, or one the gate gave a verdict (lost coverage on graph_coverage, say)."""
    return r.metric in GATED or r.verdict is not PerfVerdict.RECORDED
