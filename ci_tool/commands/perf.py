"""`ci-tool perf baseline set|show|diff` and `ci-tool perf trend`: baselines per (case, GPU type, metric)
from the history, and a case's history as a picture.

    perf baseline set --gpu H200 [--case C] [--runs 5] [--threshold 0.1]   median of the newest runs -> YAML
    perf baseline propose --gpu B200 [--write]                              the quiet runs of one commit ->
                                                                            a diff of the file (learning.py)
    perf baseline show --gpu H200                                           the committed baselines
    perf baseline diff --gpu H200 [--run RUN_ID]                            a run's results vs the baselines
    perf trend CASE --gpu H200 [--metric M] [--png FILE]                    the change points with their commits,
                                                                            and the plot (matplotlib)
"""

from __future__ import annotations

import dataclasses
import difflib
import statistics
from pathlib import Path

import click

from ci_tool.commands import number_types
from ci_tool.commands.history_options import history_option
from ci_tool.errors import PerfError, Where
from ci_tool.history.perf_results import PerfResult, newest_perf_run, perf_keys, perf_series, run_perf_results
from ci_tool.history.store import HistoryStore, history_path
from ci_tool.perf.baselines import (
    BASELINE_DIR,
    Baseline,
    baseline_file,
    baselines_text,
    load_baselines,
    write_baselines,
)
from ci_tool.perf.gate import judge
from ci_tool.perf.learning import MIN_QUIET_RUNS, baseline_spread, gated_rows, propose
from ci_tool.perf.metrics import BASELINED, metric
from ci_tool.perf.report_lines import perf_table
from ci_tool.perf.shifts import series_shifts
from ci_tool.stages.modes import PerfGate

baselines_option = click.option(
    "--baselines", "folder", type=click.Path(file_okay=False, path_type=Path), default=BASELINE_DIR,
    show_default=True, help="Folder of the per-GPU baseline files.",
)  # fmt: skip
gpu_option = click.option("--gpu", required=True, help="GPU type as sysinfo names it (H200, B200), or cpu.")


@click.group()
def perf() -> None:
    """Perf-sanity baselines and trends."""


@perf.group()
def baseline() -> None:
    """Set, show and compare baselines per (case, GPU type, metric)."""


@baseline.command("set")
@gpu_option
@history_option
@baselines_option
@click.option("--case", "cases", multiple=True, help="Only these cases (repeatable); others keep their baselines.")
@click.option("--runs", default=5, show_default=True, type=click.IntRange(1, 100), help="Newest runs in the median.")
@click.option(
    "--threshold",
    type=number_types.FiniteFloatRange(min=0, max=1),
    help="Relative threshold [default: kept, else the metric's].",
)
def set_command(gpu: str, history_file: Path | None, folder: Path, cases: tuple[str, ...], runs: int,
                threshold: float | None) -> int:  # fmt: skip
    """Write GPU's baselines: for each gated metric and the host probe, the median of its newest recorded runs and
    their spread."""
    kept = load_baselines(folder, gpu)
    with HistoryStore(history_path(history_file), read_only=True) as store:
        keys = [(c, m) for c, m in perf_keys(store, gpu=gpu) if m in BASELINED and (not cases or c in cases)]
        if not keys:
            raise PerfError(f"expected recorded perf results for {gpu}, found none", where=Where(str(store.path)),
                            hint="run a PerfSanity stage on that GPU first (`ci-tool stage run ...`)")  # fmt: skip
        written = 0
        for case_id, name in keys:
            series = perf_series(store, case_id, gpu=gpu, metric=name, limit=runs)
            if not series:  # every row of it bad (each warned): the key keeps the baseline it has
                continue
            written += 1
            old = kept.get((case_id, name))
            chosen = threshold if threshold is not None else (old.threshold if old else metric(name).threshold)
            if not metric(name).gated:  # the host probe: a reference, never gated
                chosen = None
            kept[(case_id, name)] = Baseline(case_id, gpu, name, statistics.median(r.value for r in series),
                                             float(chosen or 0.0), len(series), series[-1].commit,
                                             baseline_spread(series))  # fmt: skip
    path = write_baselines(folder, gpu, kept.values())
    click.echo(f"{written} baseline(s) set from up to {runs} run(s) each in {path}")
    return 0


@baseline.command("propose")
@gpu_option
@history_option
@baselines_option
@click.option("--runs", default=MIN_QUIET_RUNS, show_default=True, type=click.IntRange(MIN_QUIET_RUNS, 100),
              help="Newest quiet runs of the commit in the median.")  # fmt: skip
@click.option("--write", is_flag=True, help="Write the proposed file (else only print the diff to review).")
def propose_command(gpu: str, history_file: Path | None, folder: Path, runs: int, write: bool) -> int:
    """Propose GPU's baseline file from its quiet runs of one commit (median and spread per gated metric, the
    runs named), as a diff against the committed file; --write writes it."""
    kept = load_baselines(folder, gpu)
    with HistoryStore(history_path(history_file), read_only=True) as store:
        proposal = propose(gated_rows(store, gpu), gpu, kept, where=str(store.path), limit=runs)
    path = baseline_file(folder, gpu)
    old = baselines_text(gpu, kept.values()) if kept else ""
    new = baselines_text(gpu, proposal.baselines)
    click.echo(f"proposed from {len(proposal.runs)} quiet run(s) of commit {proposal.commit} on {gpu}: "
               + ", ".join(q.run_id for q in proposal.runs))  # fmt: skip
    diff = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                fromfile=str(path) if kept else "/dev/null", tofile=str(path))  # fmt: skip
    text = "".join(diff)
    click.echo(text if text else f"{path} already holds these baselines", nl=not text)
    if write:
        write_baselines(folder, gpu, proposal.baselines)
        click.echo(f"\n{len(proposal.baselines)} baseline(s) written to {path}")
    return 0


@baseline.command("show")
@gpu_option
@baselines_option
def show_command(gpu: str, folder: Path) -> int:
    """Print GPU's baselines."""
    found = load_baselines(folder, gpu)
    if not found:
        click.echo(f"no baselines for {gpu} ({baseline_file(folder, gpu)} does not exist)")
        return 0
    click.echo("| case | metric | baseline | spread | threshold | runs | commit |\n|---|---|---:|---:|---:|---:|---|")
    for b in sorted(found.values(), key=lambda b: (b.case_id, b.metric)):
        threshold = f"{b.threshold:.0%}" if metric(b.metric).gated else "reference"
        click.echo(f"| {b.case_id} | {b.metric} | {b.value:.4g} | {b.spread:.3g} | {threshold} | {b.runs} "
                   f"| {b.commit} |")  # fmt: skip
    return 0


@baseline.command("diff")
@gpu_option
@history_option
@baselines_option
@click.option("--run", "run_id", help="A recorded run [default: the newest with results on GPU].")
def diff_command(gpu: str, history_file: Path | None, folder: Path, run_id: str | None) -> int:
    """A run's results on GPU against the committed baselines: value, baseline, delta, verdict (exit 1 when one
    regressed, as a pre-merge gate would fail)."""
    baselines = load_baselines(folder, gpu)
    with HistoryStore(history_path(history_file), read_only=True) as store:
        results = _run_results(store, gpu, run_id)
    rows = []
    for case_id in dict.fromkeys(r.case_id for r in results):
        mine = [r for r in results if r.case_id == case_id]
        case_baselines = {m: b for (c, m), b in baselines.items() if c == case_id}
        judged = judge({r.metric: r.value for r in mine}, case_baselines, gate=PerfGate.FAIL, requires_graphs=False,
                       noise={r.metric: r.noise for r in mine})  # fmt: skip
        for r, j in zip(mine, judged, strict=True):
            b = j.baseline
            rows.append(dataclasses.replace(r, verdict=j.verdict, note=j.note, baseline=b.value if b else None,
                                            threshold=b.threshold if b else None))  # fmt: skip
    click.echo("\n".join(perf_table(rows)))
    return 1 if any(r.verdict.fails for r in rows) else 0


def _run_results(store: HistoryStore, gpu: str, run_id: str | None) -> list[PerfResult]:
    if run_id is None:
        newest = newest_perf_run(store, gpu=gpu)
        if newest is None:
            raise PerfError(f"expected recorded perf results for {gpu}, found none", where=Where(str(store.path)))
        run_id = newest
    results = [r for r in run_perf_results(store, run_id) if r.gpu == gpu]
    if not results:
        raise PerfError(f"expected perf results of run {run_id!r} on {gpu}, found none", where=Where(str(store.path)))
    return results


@perf.command("trend")
@click.argument("case")
@gpu_option
@click.option("--metric", "metric_name", default="decode_tokens_per_s", show_default=True)
@click.option("--png", type=click.Path(dir_okay=False, path_type=Path), help="Also draw the plot here (matplotlib).")
@click.option("--limit", default=100, show_default=True, type=click.IntRange(1, 10000), help="Newest runs drawn.")
@history_option
@baselines_option
def trend_command(case: str, gpu: str, metric_name: str, png: Path | None, limit: int, history_file: Path | None,
                  folder: Path) -> int:  # fmt: skip
    """Print the change points of CASE's METRIC on GPU over its recorded runs, each with the commit range it
    landed in; with --png, draw the series with its baseline, threshold and change points."""
    metric(metric_name)  # an unknown metric is an error with the closest names
    with HistoryStore(history_path(history_file), read_only=True) as store:
        series = perf_series(store, case, gpu=gpu, metric=metric_name, limit=limit)
        if not series:
            known = sorted({c for c, _ in perf_keys(store, gpu=gpu)})
            from ci_tool.errors import did_you_mean

            hint = did_you_mean(case, known) or f"cases on {gpu}: {', '.join(known) or 'none'}"
            raise PerfError(f"expected recorded results of {case!r} {metric_name} on {gpu}, found none",
                            where=Where(str(store.path)), hint=hint)  # fmt: skip
    shifts = series_shifts(series)
    if png is not None:
        from ci_tool.perf.trend import draw_trend  # matplotlib only for the picture

        draw_trend(series, load_baselines(folder, gpu).get((case, metric_name)), png, shifts)
        click.echo(f"{len(series)} run(s) of {case} {metric_name} on {gpu} drawn in {png}")
    else:
        click.echo(f"{len(series)} run(s) of {case} {metric_name} on {gpu}")
    click.echo(f"{len(shifts)} change point(s) (E-Divisive means)" + "".join(f"\n  {s.line()}" for s in shifts))
    return 0
