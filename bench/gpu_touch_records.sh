#!/usr/bin/env bash
# Touch records made on a GPU runner, and what they narrow. Run from the checkout on a machine with a GPU the
# catalog knows (an H200 here): `OUT=DIR bash bench/gpu_touch_records.sh`.
#
# 1. In a clone of the checkout, its work tree committed on top (records name the commit they were made at),
#    the stages of a post-merge run record touches as CI's do (`ci-tool stage run --record-touches
#    --disable-reuse-test`), into one history: the CPU stages in the background, the GPU stage meanwhile.
# 2. A branch plants one fault in one function of src/kvengine ($FAULT_FILE: `$FAULT_FROM` -> `$FAULT_TO`).
# 3. `ci-tool bot plan '/bot run' --base main` answers what each pre-merge stage runs and why (plan.md), and
#    `ci-tool run '/bot run --disable-fail-fast' --base main` runs that narrowed pipeline (narrowed.log): each
#    stage that runs a test of the fault must fail on it (fail-fast off: the first failure stops no stage).
# CPU_STAGES and GPU_STAGES name the recording stages (default: CPU-Generic-1 and 2, DGX_H200-PyTorch-Post-Merge-1).
# What comes back under $OUT: record.log (and one record-STAGE.log each), fault.diff, plan.md, narrowed.log,
# history.sqlite.
set -uo pipefail
OUT=${OUT:?set OUT to the folder the results go to}
FAULT_FILE=${FAULT_FILE:-src/kvengine/pool.py}
FAULT_FROM=${FAULT_FROM:-return num_blocks <= len(self._free)}
FAULT_TO=${FAULT_TO:-return num_blocks < len(self._free)}
CPU_STAGES=${CPU_STAGES:-CPU-Generic-1 CPU-Generic-2}
GPU_STAGES=${GPU_STAGES:-DGX_H200-PyTorch-Post-Merge-1}
WORK=$(mktemp -d)
HISTORY=$OUT/history.sqlite
CI_TOOL=(python3 -m ci_tool)
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@localhost GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@localhost

git clone -q "$PWD" "$WORK/repo" || exit 1
tar --exclude=./.git -cf - . | tar -xf - -C "$WORK/repo"  # the work tree as it is, not only its commits
cd "$WORK/repo" && git checkout -q -B main && git add -A && { git diff --cached --quiet || git commit -qm snapshot; }
export PYTHONPATH=$PWD:$PWD/src PYTHONUNBUFFERED=1
echo "records at $(git rev-parse HEAD)"

record() {
    local start=$(date +%s)
    "${CI_TOOL[@]}" stage run "$1" --record-touches --disable-reuse-test --history "$HISTORY" \
        --output-dir "$WORK/out/$1" >"$OUT/record-$1.log" 2>&1
    echo "$1: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/record.log"
}
(for stage in $CPU_STAGES; do record "$stage"; done) &
for stage in $GPU_STAGES; do record "$stage"; done
wait

git checkout -q -b planted-fault
python3 - "$FAULT_FILE" "$FAULT_FROM" "$FAULT_TO" <<'EOF'
import sys
from pathlib import Path

path, old, new = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
text = path.read_text()
if text.count(old) != 1:
    sys.exit(f"{path}: expected one `{old}`, found {text.count(old)}")
path.write_text(text.replace(old, new))
EOF
git commit -qam "planted fault: $FAULT_FILE" || exit 1
git diff -U0 main -- "$FAULT_FILE" | tee "$OUT/fault.diff"

"${CI_TOOL[@]}" bot plan '/bot run' --base main --head HEAD --history "$HISTORY" >"$OUT/plan.md" 2>&1
echo "bot plan: exit $?"
[ -n "${PLAN_ONLY:-}" ] && exit 0  # the plan alone (PLAN_ONLY=1): the narrowed run is left out
start=$(date +%s)
"${CI_TOOL[@]}" run '/bot run --disable-fail-fast' --base main --head HEAD --history "$HISTORY" --results-dir "$WORK/runs" \
    >"$OUT/narrowed.log" 2>&1
echo "narrowed run: exit $? in $(($(date +%s) - start)) s" | tee -a "$OUT/narrowed.log"
