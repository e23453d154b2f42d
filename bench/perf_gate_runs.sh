#!/usr/bin/env bash
# The perf gate on one GPU type (GPU, default H200; H100 too), as docs/PERF.md records it: baselines from quiet runs
# (5 rounds a case, their spread kept; `perf baseline propose` where BASELINE_RUNS >= 5), then
# DGX_<GPU>-PyTorch-PerfSanity-1 gated on a quiet host and under a CPU hog on every core,
# then with a planted slowdown (KVENGINE_ATTENTION=torch: the engine's slower attention path), then with a
# planted extra cost of a known size (KVENGINE_EXTRA_STEP_COST: that fraction of the layers runs twice each
# decode step; one run per fraction in EXTRA_COSTS, default "0.10 0.03", EXTRA_COST_RUNS times).
#   OUT=results [GPU=H100] bench/perf_gate_runs.sh [BASELINE_RUNS QUIET_RUNS HOG_RUNS PLANTED_RUNS BUDGET_SECONDS EXTRA_COST_RUNS]
# The last lines of summary.txt tally each kind of run: how many failed, and in how many the gate judged a
# metric regressed (the history's verdicts: a run failing for another reason is not a catch).
# Every run is stamped CI_TOOL_COMMIT (default `perf-gates`: one commit for `propose` to learn from). Write the
# code's commit in from the machine whose checkout is current (its `git rev-parse --short HEAD`): a device's copy
# of the tree may carry an older .git, and a learnt file names the commit it was learnt at.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD:$PWD/src PYTHONUNBUFFERED=1 CI_TOOL_COMMIT=${CI_TOOL_COMMIT:-perf-gates}
OUT=${OUT:?set OUT to a results folder}
mkdir -p "$OUT"
BASELINE_RUNS=${1:-3} QUIET_RUNS=${2:-4} HOG_RUNS=${3:-4} PLANTED_RUNS=${4:-1} BUDGET_SECONDS=${5:-520}
EXTRA_COST_RUNS=${6:-0} EXTRA_COSTS=${EXTRA_COSTS:-0.10 0.03}
HISTORY=$OUT/history.sqlite
# Over several device calls: SEED_HISTORY names the history an earlier call left, BASELINE_RUNS=0 keeps
# the baselines that call set (its $GPU.yaml, committed or copied in before this one), and FIRST_RUN numbers
# this call's runs on from the last one's (default: after the last quiet run in the tally beside SEED_HISTORY);
# COUNTS_ARE_TOTALS=1 counts the seeded history's quiet and hog runs in QUIET_RUNS and HOG_RUNS.
if [ -n "${SEED_HISTORY:-}" ]; then  # with the tally.txt beside it, when there is one: the runs go on counting
    cp "$SEED_HISTORY" "$HISTORY"
    seed_tally="$(dirname "$SEED_HISTORY")/tally.txt"
    if [ -f "$seed_tally" ] && [ "$seed_tally" != "$OUT/tally.txt" ]; then cp "$seed_tally" "$OUT/tally.txt"; fi
fi
# by default one past the highest quiet-N in the tally (its 4th column: the run's label), else 1
FIRST_RUN=${FIRST_RUN:-$(awk '$4 ~ /^quiet-[0-9]+$/ {n = substr($4, 7) + 0; if (n > max) max = n} END {print max + 1}' \
    "$OUT/tally.txt" 2>/dev/null || echo 1)}
if [ -n "${COUNTS_ARE_TOTALS:-}" ]; then  # QUIET_RUNS and HOG_RUNS count the seeded history's runs too
    QUIET_RUNS=$((QUIET_RUNS - FIRST_RUN + 1)) HOG_RUNS=$((HOG_RUNS - FIRST_RUN + 1))
fi
GPU=${GPU:-H200}  # the GPU type its baselines are kept under (H200.yaml), as the perf fixture names it
STAGE=DGX_${GPU}-PyTorch-PerfSanity-1
START=$SECONDS
left() { [ $((SECONDS - START)) -lt "$BUDGET_SECONDS" ]; }

stage_run() {  # label, then env assignments: one gated stage run, its exit code and wall time in summary.txt
    local label=$1; shift
    local began=$SECONDS before
    before=$(newest_run)
    # --disable-reuse-test: every run measures (a planted run's code is the same commit; reuse would skip it)
    env "$@" python3 -m ci_tool stage run "$STAGE" --disable-reuse-test --history "$HISTORY" --output-dir "/tmp/perf-gate/$label" \
        > "/tmp/perf-gate-$label.log" 2>&1
    local code=$?
    echo "$label exit=$code wall=$((SECONDS - began))s" | tee -a "$OUT/summary.txt"
    echo "${label%-*} $code $(regressions "$before") $label" >> "$OUT/tally.txt"  # the kind: label less its index
    grep -h -E "regressed|lost coverage|FAILED|Error|failed in" "/tmp/perf-gate-$label.log" | head -8 >> "$OUT/summary.txt"
    newest >> "$OUT/summary.txt"
}

newest() {  # the newest recorded run's throughput, p50 latency and host wait: median, noise, rounds, verdict, note
    python3 - "$HISTORY" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
(run,) = db.execute("SELECT run_id FROM perf_results ORDER BY recorded_at DESC LIMIT 1").fetchone()
for case, metric, value, noise, rounds, verdict, note in db.execute(
        "SELECT case_id, metric, value, noise, rounds, verdict, note FROM perf_results WHERE run_id = ? AND metric IN "
        "('decode_tokens_per_s', 'step_latency_p50_ms', 'host_wait_fraction') ORDER BY recorded_at", (run,)):
    print(f"  {case:36} {metric:20} {value:9.2f} +-{noise:7.2f} ({noise / value if value else 0.0:5.1%}) x{rounds} {verdict} {note}")
PY
}

regressions() {  # $1 = newest run before the stage ran: 1 when a newer run has a metric judged regressed, else 0
    python3 - "$HISTORY" "$1" <<'PY'
import sqlite3, sys
try:  # read-only: never creates the history
    db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
    row = db.execute("SELECT run_id FROM perf_results ORDER BY recorded_at DESC LIMIT 1").fetchone()
    if row is None or row[0] == sys.argv[2]:  # the stage recorded nothing
        print(0)
    else:
        query = "SELECT COUNT(*) FROM perf_results WHERE run_id = ? AND verdict = 'regressed'"
        print(int(db.execute(query, row).fetchone()[0] > 0))
except sqlite3.Error:
    print(0)
PY
}

newest_run() {  # the newest recorded run's id ("" when none)
    python3 - "$HISTORY" <<'PY'
import sqlite3, sys
try:  # read-only: never creates the history
    db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
    row = db.execute("SELECT run_id FROM perf_results ORDER BY recorded_at DESC LIMIT 1").fetchone()
except sqlite3.Error:
    row = None
print(row[0] if row else "")
PY
}

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/summary.txt"
for i in $(seq "$BASELINE_RUNS"); do  # the baseline's runs: recorded, not gated
    left || break
    began=$SECONDS
    CI_TOOL_PERF_GATE=none CI_TOOL_HISTORY=$HISTORY CI_TOOL_RUN_ID=baseline-$i \
        python3 -m pytest -q -p no:cacheprovider -m gpu "tests/perf/test_perf_sanity.py" > "/tmp/baseline-$i.log" 2>&1
    echo "baseline-$i exit=$? wall=$((SECONDS - began))s" | tee -a "$OUT/summary.txt"
    newest >> "$OUT/summary.txt"
done
# Learnt from the quiet ones where 5 or more were, as a user's `perf baseline propose` would: a host in a slow spell
# during the baseline runs made a lenient baseline once (docs/PERF.md, "A slow mode of the host"); else all of them.
if [ "$BASELINE_RUNS" -ge 5 ] && python3 -m ci_tool perf baseline propose --gpu "$GPU" --history "$HISTORY" \
        --runs "$BASELINE_RUNS" --write >> "$OUT/summary.txt" 2>&1; then
    echo "baselines proposed from the quiet runs among $BASELINE_RUNS" | tee -a "$OUT/summary.txt"
elif [ "$BASELINE_RUNS" -gt 0 ]; then
    python3 -m ci_tool perf baseline set --gpu "$GPU" --history "$HISTORY" --runs "$BASELINE_RUNS" | tee -a "$OUT/summary.txt"
fi
cp "tests/scripts/perf-sanity/baselines/$GPU.yaml" "$OUT/$GPU.yaml"

for i in $(seq "$FIRST_RUN" $((FIRST_RUN + QUIET_RUNS - 1))); do
    left && stage_run "quiet-$i" CI_TOOL_RUN_ID="quiet-$i"
    if left && [ "$i" -lt $((FIRST_RUN + HOG_RUNS)) ]; then
        hogs=()
        for _ in $(seq "$(nproc)"); do (while :; do :; done) & hogs+=($!); done
        stage_run "hog-$i" CI_TOOL_RUN_ID="hog-$i"
        kill "${hogs[@]}" 2>/dev/null; wait "${hogs[@]}" 2>/dev/null
    fi
done
for i in $(seq "$FIRST_RUN" $((FIRST_RUN + PLANTED_RUNS - 1))); do
    left && stage_run "planted-torch-attention-$i" CI_TOOL_RUN_ID="planted-$i" KVENGINE_ATTENTION=torch
done
for i in $(seq "$EXTRA_COST_RUNS"); do  # the fractions take turns, so a budget cut leaves each some runs
    for cost in $EXTRA_COSTS; do
        left && stage_run "planted-extra-cost-$cost-$i" CI_TOOL_RUN_ID="extra-cost-$cost-$i" \
            KVENGINE_EXTRA_STEP_COST="$cost"
    done
done
if [ -f "$OUT/tally.txt" ]; then
    echo "runs by kind: failed, with a metric judged regressed" | tee -a "$OUT/summary.txt"
    awk '{runs[$1]++; failed[$1] += ($2 != 0); regressed[$1] += $3; if (!($1 in seen)) {seen[$1]; order[++n] = $1}}
         END {for (i = 1; i <= n; i++) {k = order[i]; printf "  %-32s failed %d of %d, regressed in %d\n",
              k, failed[k], runs[k], regressed[k]}}' "$OUT/tally.txt" | tee -a "$OUT/summary.txt"
fi
tail -n 30 "/tmp/perf-gate-quiet-$FIRST_RUN.log" > "$OUT/quiet-$FIRST_RUN.tail" 2>/dev/null
true
