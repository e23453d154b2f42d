"""Baselines learnt from the history (learning.py, `ci-tool perf baseline propose`), on a real SQLite history
whose rows go in through perf_results' own recording API: a GPU type without a baseline file (B200) proposes
one from its quiet runs of one commit, names them, and says how many more it needs when it has too few."""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path

import pytest

from ci_tool.cli import main
from ci_tool.history.perf_results import PerfResult, record_perf_results
from ci_tool.history.store import HistoryStore, RunRecord, StageRecord, TestRecord
from ci_tool.outcomes import PerfVerdict, RunState, StageState, TestOutcome
from ci_tool.perf.baselines import BASELINE_DIR, baseline_file, load_baselines
from ci_tool.perf.blind_gate import blind_gate_line, throughput_baselined
from ci_tool.perf.learning import MIN_QUIET_RUNS, QUIET_NOISE, no_baseline_line, quiet_needed_if_read
from ci_tool.perf.noise import MAD_TO_SIGMA
from ci_tool.stages.names import parse_stage_name

ROOT = Path(__file__).resolve().parents[3]

GEMMA = "gpu-gemma_like-pool4g-b80"
LLAMA = "gpu-llama_like-pool12g-b64_1k"
TPS = "decode_tokens_per_s"
P50 = "step_latency_p50_ms"
STAGE = "DGX_B200-PyTorch-PerfSanity-1"


def row(run: str, commit: str, at: float, case: str, name: str, value: float, *, noise: float = 0.01,
        rounds: int = 5, verdict: PerfVerdict = PerfVerdict.NO_BASELINE) -> PerfResult:  # fmt: skip
    return PerfResult(run, STAGE, case, "B200", name, value, verdict, at, commit=commit, branch="main",
                      noise=noise * value, rounds=rounds)  # fmt: skip


def run_rows(run: str, commit: str, at: float, tps: float, p50: float, *, noise: float = 0.01) -> list[PerfResult]:
    """One stage run: gemma's tokens/s and p50 and llama's tokens/s (gated), and an eager-step count (recorded
    only, one round: it never makes a run loud)."""
    return [row(run, commit, at, GEMMA, TPS, tps, noise=noise), row(run, commit, at, GEMMA, P50, p50, noise=noise),
            row(run, commit, at, LLAMA, TPS, 2 * tps, noise=noise),
            row(run, commit, at, GEMMA, "eager_steps", 0.0, rounds=1, verdict=PerfVerdict.RECORDED)]  # fmt: skip


def record(history: Path, rows: list[PerfResult]) -> None:
    with HistoryStore(history) as store:
        record_perf_results(store, rows)


def propose_args(history: Path, folder: Path, *more: str) -> list[str]:
    return ["perf", "baseline", "propose", "--gpu", "B200", "--history", str(history), "--baselines", str(folder),
            *more]  # fmt: skip


TPS_VALUES = [9000.0, 9400.0, 9100.0, 8800.0, 9300.0]
P50_VALUES = [10.0, 9.6, 9.9, 10.4, 9.7]


def quiet_history(history: Path) -> None:
    """Five quiet runs of commit c2 (q1..q5), with around them what a baseline must not take: an older
    commit's quiet runs, a loud run of c2 (rounds spread 12 %), a c2 run that lost graph coverage and one on a
    busy host."""
    rows: list[PerfResult] = []
    for i in range(4):  # c1: older code, 20 % faster; never mixed into c2's medians
        rows += run_rows(f"old{i}", "c1", float(i), 11000.0, 8.0)
    for i, (tps, p50) in enumerate(zip(TPS_VALUES, P50_VALUES, strict=True)):
        rows += run_rows(f"q{i + 1}", "c2", 10.0 + i, tps, p50)
    rows += run_rows("loud", "c2", 20.0, 7000.0, 14.0, noise=0.12)
    lost = run_rows("lost", "c2", 21.0, 7100.0, 13.0)
    rows += [*lost[:2], row("lost", "c2", 21.0, LLAMA, TPS, 14200.0, verdict=PerfVerdict.LOST_COVERAGE)]
    # a busy host: every round alike 20 % slow, and the measuring thread waited a fifth of the time for a CPU
    rows += [*run_rows("busy", "c2", 22.0, 7300.0, 12.5), host_wait("busy", "c2", 22.0, 0.2)]
    rows.append(host_wait("q1", "c2", 10.0, 0.01))  # a wait this short leaves a run quiet
    record(history, rows)


def host_wait(run: str, commit: str, at: float, fraction: float) -> PerfResult:
    return row(run, commit, at, GEMMA, "host_wait_fraction", fraction, noise=0.0, verdict=PerfVerdict.RECORDED)


def test_propose_learns_a_b200_file_from_its_quiet_runs_of_one_commit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history, folder = tmp_path / "h.sqlite", tmp_path / "baselines"
    quiet_history(history)
    assert main(propose_args(history, folder)) == 0
    out = capsys.readouterr().out
    assert out.startswith("proposed from 5 quiet run(s) of commit c2 on B200: q1, q2, q3, q4, q5\n")
    assert f"--- /dev/null\n+++ {baseline_file(folder, 'B200')}\n" in out
    assert not baseline_file(folder, "B200").exists()  # a diff to review: nothing written unless asked
    gemma_tps = statistics.median(TPS_VALUES)
    assert gemma_tps == 9100.0
    # spread: max(1.4826 * MAD of the five medians, median of their own noise) = max(1.4826 * 200, 91)
    assert f"+    {TPS}: {{value: 9100.0, threshold: 0.1, spread: 296.52, runs: 5, commit: c2}}\n" in out
    # p50: MAD 0.2 ms -> 0.29652; the runs' own noise (1 % of ~10 ms) is less
    assert f"+    {P50}: {{value: 9.9, threshold: 0.15, spread: 0.29652, runs: 5, commit: c2}}\n" in out
    assert f"+    {TPS}: {{value: 18200.0, threshold: 0.1, spread: 593.04, runs: 5, commit: c2}}\n" in out
    assert "eager_steps" not in out  # recorded only, never a baseline

    assert main(propose_args(history, folder, "--write")) == 0
    assert capsys.readouterr().out.endswith(f"\n3 baseline(s) written to {baseline_file(folder, 'B200')}\n")
    written = load_baselines(folder, "B200")
    assert (written[(GEMMA, TPS)].value, written[(GEMMA, TPS)].spread) == (9100.0, pytest.approx(MAD_TO_SIGMA * 200))
    assert main(propose_args(history, folder)) == 0
    assert capsys.readouterr().out.endswith(f"{baseline_file(folder, 'B200')} already holds these baselines\n")


def test_an_a10s_first_quiet_runs_bootstrap_its_file_as_a_b200s_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # an A10 has no perf-sanity family yet: the runs a catalog would give it are proposed from the same way
    history, folder = tmp_path / "h.sqlite", tmp_path / "baselines"
    rows: list[PerfResult] = []
    for i, (tps, p50) in enumerate(zip(TPS_VALUES, P50_VALUES, strict=True)):
        rows += run_rows(f"a{i + 1}", "c2", 10.0 + i, tps / 4, p50 * 4)
    record(history, [dataclasses.replace(r, gpu="A10", stage="A10-PyTorch-PerfSanity-1") for r in rows])
    args = ["perf", "baseline", "propose", "--gpu", "A10", "--history", str(history), "--baselines", str(folder)]
    assert main([*args, "--write"]) == 0
    assert capsys.readouterr().out.startswith("proposed from 5 quiet run(s) of commit c2 on A10: a1, a2, a3, a4, a5\n")
    written = load_baselines(folder, "A10")
    assert written[(GEMMA, TPS)].value == statistics.median(TPS_VALUES) / 4
    assert throughput_baselined(folder) == frozenset({"A10"})  # its gate can now fail on throughput


def test_propose_keeps_an_edited_threshold_and_diffs_against_the_committed_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history, folder = tmp_path / "h.sqlite", tmp_path / "baselines"
    quiet_history(history)
    assert main(propose_args(history, folder, "--write")) == 0
    path = baseline_file(folder, "B200")
    path.write_text(path.read_text().replace("value: 9100.0, threshold: 0.1,", "value: 9100.0, threshold: 0.2,"))
    record(history, [r for i in range(5) for r in run_rows(f"n{i}", "c3", 30.0 + i, 9500.0 + 10 * i, 9.0)])
    capsys.readouterr()
    assert main(propose_args(history, folder)) == 0
    out = capsys.readouterr().out
    assert out.startswith("proposed from 5 quiet run(s) of commit c3 on B200: n0, n1, n2, n3, n4\n")
    assert f"-    {TPS}: {{value: 9100.0, threshold: 0.2, spread: 296.52, runs: 5, commit: c2}}\n" in out
    assert f"+    {TPS}: {{value: 9520.0, threshold: 0.2, spread: 95.2, runs: 5, commit: c3}}\n" in out


def test_a_run_on_a_slow_host_is_not_quiet_and_the_host_probe_is_learnt_as_a_reference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # six runs of c2 whose rounds all agree; in one ("slow") the host probe took twice its time in the others, and
    # with it every wall-clock metric 15 % worse: a host in a slow phase, not a baseline
    history, folder = tmp_path / "h.sqlite", tmp_path / "baselines"
    rows: list[PerfResult] = []
    for i, (tps, p50) in enumerate(zip(TPS_VALUES, P50_VALUES, strict=True)):
        rows += [*run_rows(f"q{i + 1}", "c2", 10.0 + i, tps, p50), probe(f"q{i + 1}", "c2", 10.0 + i, 16.0 + i / 10)]
    rows += [*run_rows("slow", "c2", 20.0, 7700.0, 11.5), probe("slow", "c2", 20.0, 33.0)]
    record(history, rows)
    assert main(propose_args(history, folder, "--write")) == 0
    out = capsys.readouterr().out
    assert out.startswith("proposed from 5 quiet run(s) of commit c2 on B200: q1, q2, q3, q4, q5\n")
    assert "+    host_probe_ms: {value: 16.2, spread: 0.14826, runs: 5, commit: c2}\n" in out  # no threshold
    written = load_baselines(folder, "B200")
    assert (written[(GEMMA, "host_probe_ms")].value, written[(GEMMA, TPS)].value) == (16.2, 9100.0)
    show = ["perf", "baseline", "show", "--gpu", "B200", "--baselines", str(folder)]
    assert main(show) == 0
    assert f"| {GEMMA} | host_probe_ms | 16.2 | 0.148 | reference | 5 | c2 |" in capsys.readouterr().out


def probe(run: str, commit: str, at: float, ms: float) -> PerfResult:
    """A run's host probe (its rounds' median; the rounds' own spread does not make a run loud)."""
    return row(run, commit, at, GEMMA, "host_probe_ms", ms, noise=0.005, verdict=PerfVerdict.RECORDED)


@pytest.mark.parametrize(
    ("quiet", "found", "needed"),
    [pytest.param(0, "1 (commit c1)", 4, id="one-of-another-commit"), pytest.param(3, "3 (commit c2)", 2, id="three")],
)
def test_too_few_quiet_runs_say_how_many_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], quiet: int, found: str, needed: int
) -> None:
    history, folder = tmp_path / "h.sqlite", tmp_path / "baselines"
    rows = run_rows("loud", "c2", 0.0, 7000.0, 14.0, noise=0.12)  # a loud run counts for nothing
    for i in range(quiet):
        rows += run_rows(f"q{i}", "c2", 1.0 + i, 9000.0, 10.0)
    rows += run_rows("other", "c1", 9.0, 9000.0, 10.0)  # another commit's quiet run does not add up
    record(history, rows)
    assert main(propose_args(history, folder)) == 1
    assert capsys.readouterr().err == (
        f"error: {history}: expected {MIN_QUIET_RUNS} quiet runs of one commit on B200 to propose baselines, "
        f"found {found}: {needed} more needed Hint: run its PerfSanity stage on a quiet B200 host (a run is quiet "
        f"when every gated metric's rounds agree within {QUIET_NOISE:.0%} and it waited at most 5% of the time for a "
        "CPU)\n"
    )
    assert not folder.exists()


def test_the_no_baseline_line() -> None:
    assert no_baseline_line("H100", 5) == ("no baseline for H100: gating on the threshold only; 5 more quiet run(s) "
                                           "set one")  # fmt: skip
    assert no_baseline_line("A10", 0) == ("no baseline for A10: gating on the threshold only; enough quiet runs: "
                                          "propose one with `ci-tool perf baseline propose --gpu A10`")  # fmt: skip


def record_b200_run(history: Path, run_id: str, rows: list[PerfResult]) -> None:
    """A finished run of the B200 perf stage, recorded as the runner records one, with its perf rows."""
    with HistoryStore(history) as store:
        stage = StageRecord(run_id, STAGE, StageState.PASSED, passed=2, duration_seconds=60.0)
        run = RunRecord(run_id, f"ci-tool stage run {STAGE}", RunState.PASSED, 100.0, 200.0, "b200-box")
        store.record_run(run, [(stage, [TestRecord("tests/perf/test_perf_sanity.py::test_e2e[x]", TestOutcome.PASSED,
                                                   30.0)], 160.0)])  # fmt: skip
        record_perf_results(store, rows)


def test_a_b200_runs_report_says_its_gate_is_the_threshold_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "h.sqlite"
    record(history, [r for i in range(2) for r in run_rows(f"q{i}", "c2", float(i), 9000.0, 10.0)])
    record_b200_run(history, "now", run_rows("now", "c2", 50.0, 9050.0, 10.1))
    assert main(["report", "now", "--history", str(history)]) == 0
    out = capsys.readouterr().out
    # two earlier quiet runs of c2 and this one: 2 more to go
    assert "\n- no baseline for B200: gating on the threshold only; 2 more quiet run(s) set one\n" in out
    assert f"| `{GEMMA}` | `B200` | `{TPS}` | 9050 | – | – | no_baseline |" in out
    record_b200_run(history, "then", [r for i in range(2) for r in run_rows(f"n{i}", "c2", 60.0 + i, 9000.0, 10.0)])
    assert main(["report", "now", "--history", str(history)]) == 0
    assert ("- no baseline for B200: gating on the threshold only; enough quiet runs: propose one with "
            "`ci-tool perf baseline propose --gpu B200`") in capsys.readouterr().out  # fmt: skip


def test_an_h200_runs_report_has_no_such_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = tmp_path / "h.sqlite"
    gated = [dataclasses.replace(r, gpu="H200", verdict=PerfVerdict.PASSED, baseline=r.value)
             for r in run_rows("now", "c2", 50.0, 9050.0, 10.1)]  # fmt: skip
    record_b200_run(history, "now", gated)
    assert main(["report", "now", "--history", str(history)]) == 0
    assert "no baseline" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("stage", "line"),
    [
        pytest.param(STAGE, "perf gate fail cannot fail on throughput: no baseline for B200 (no decode_tokens_per_s "
                     "in tests/scripts/perf-sanity/baselines/B200.yaml); only lost CUDA-graph coverage fails it",
                     id="b200-pre-merge"),
        pytest.param("DGX_B200-PyTorch-PerfSanity-Post-Merge-1", "perf gate warn cannot fail on throughput: no "
                     "baseline for B200 (no decode_tokens_per_s in tests/scripts/perf-sanity/baselines/B200.yaml); "
                     "only lost CUDA-graph coverage fails it", id="b200-post-merge"),
        pytest.param("DGX_H200-PyTorch-PerfSanity-1", "", id="h200-has-its-file"),
        pytest.param("CPU-Generic-PerfSanity-1", "", id="cpu-speed-is-only-recorded"),
        pytest.param("DGX_B200-PyTorch-1", "", id="functional"),
    ],
)
def test_the_plan_says_when_a_perf_gate_cannot_fail_on_throughput(
    stage: str, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert blind_gate_line(parse_stage_name(stage), throughput_baselined(ROOT / BASELINE_DIR)) == line
    assert main(["stage", "show", stage, "--json"]) == 0  # from the repository root: the committed catalog
    assert json.loads(capsys.readouterr().out)["perf_gate_blind"] == (line or None)


def test_stage_show_and_the_bot_plan_say_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stage", "show", STAGE]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[1].startswith("perf gate fail cannot fail on throughput: no baseline for B200 (")
    both = f'/bot run --stage-list "{STAGE},DGX_H200-PyTorch-PerfSanity-1"'
    assert main(["bot", "plan", both]) == 0
    planned = capsys.readouterr().out
    assert (f"\n- `{STAGE}`: perf gate fail cannot fail on throughput: no baseline for B200 (no "
            "decode_tokens_per_s in tests/scripts/perf-sanity/baselines/B200.yaml); only lost CUDA-graph coverage "
            "fails it.\n") in planned  # fmt: skip
    assert "`DGX_H200-PyTorch-PerfSanity-1`: perf gate" not in planned


def test_a_file_without_throughput_is_blind_too(tmp_path: Path) -> None:
    folder = tmp_path / "baselines"
    folder.mkdir()
    (folder / "B200.yaml").write_text("version: 1\ngpu: B200\nbaselines:\n  c:\n    step_latency_p50_ms: "
                                      "{value: 9.9, threshold: 0.15}\n")  # fmt: skip
    (folder / "A10.yaml").write_text("version: 1\ngpu: A10\nbaselines:\n  c:\n    decode_tokens_per_s: "
                                     "{value: 99, threshold: 0.1}\n")  # fmt: skip
    assert throughput_baselined(folder) == {"A10"}
    assert blind_gate_line(parse_stage_name("A10-PyTorch-PerfSanity-1"), {"A10"}) == ""


def test_a_runs_own_report_counts_when_the_history_reads(tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite"
    record(history, [r for i in range(3) for r in run_rows(f"q{i}", "c2", float(i), 9000.0, 10.0)])
    warned: list[str] = []
    with HistoryStore(history) as store:
        assert quiet_needed_if_read(store, ["B200", "A10"], warned.append) == {"B200": 2, "A10": MIN_QUIET_RUNS}
    assert quiet_needed_if_read(None, ["B200"], warned.append) == {}
    assert warned == []


def test_the_html_run_page_says_it_too(tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite"
    record_b200_run(history, "now", run_rows("now", "c2", 50.0, 9050.0, 10.1))
    page = tmp_path / "now.html"
    assert main(["report", "now", "--history", str(history), "--format", "html", "--output", str(page)]) == 0
    assert "<p>no baseline for B200: gating on the threshold only; 4 more quiet run(s) set one</p>" in page.read_text()
