#!/usr/bin/env bash
# Issue 7 on one GPU (run from the repo root, carry/wmfix present): litmus checks, the
# paper-sized tune (and one at patch size 64 if the first finds no critical size of at least
# 32 words), then sys-str+ with the default and the tuned profile on cub-scan-nf and ls-bh-nf
# (same seeds). Then, while time is left, issue 3's fenced cbe-dot runs for ENVS3.
# $OUT: tune.txt, tune.tar.gz, compare-*.json, fenced.json.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
W=$PWD/carry/wmfix
START=$(date +%s); DEADLINE=$((START + ${BUDGET_S:-560}))
L=$OUT/tune.txt
. scripts/gpu/lib.sh
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), $(nvcc --version | tail -n 1)" > "$L"
nvcc -O2 -o /tmp/hold scripts/gpu/hold.cu || exit 1

for t in mp lb sb; do
  for s in none default; do
    step "litmus $t, stress $s" 60 $W litmus $t --distance 64 --stress $s --iterations 200 --cache /tmp/lc
  done
done
step "litmus mp, sync incantation, stress default" 60 $W litmus mp --distance 64 --sync --iterations 200 --cache /tmp/lc
step "tune, paper sizes" 240 $W tune --out /tmp/tune
P=$(sed -n 's/^patch_size = \([0-9]*\).*/\1/p' /tmp/tune/profile.toml 2>/dev/null)
if [ -n "$P" ] && [ "$P" -lt 32 ]; then
  step "tune, patch size 64 given" 150 $W tune --out /tmp/tune64 --patch-size 64
fi
tar czf "$OUT/tune.tar.gz" -C /tmp --exclude cache tune $( [ -d /tmp/tune64 ] && echo tune64 ) 2>/dev/null
PROFILE=/tmp/tune/profile.toml
[ -f /tmp/tune64/profile.toml ] && PROFILE=/tmp/tune64/profile.toml
/tmp/hold & H=$!
for app in cub-scan-nf ls-bh-nf; do
  step "$app, sys-str+, default profile" 120 \
    $W test case-studies/$app --out /tmp/c-$app --env sys-str+ --runs 100 --jobs 8
  cp /tmp/c-$app/test/summary.json "$OUT/compare-$app-default.json" 2>/dev/null
  step "$app, sys-str+, tuned profile $PROFILE" 120 \
    env WMFIX_PROFILE=$PROFILE $W test case-studies/$app --out /tmp/c-$app --env sys-str+ --runs 100 --jobs 8
  cp /tmp/c-$app/test/summary.json "$OUT/compare-$app-tuned.json" 2>/dev/null
done
if [ -n "${ENVS3:-}" ]; then
  step "issue 3: cbe-dot, every fence, 1000 runs" 600 \
    $W test case-studies/cbe-dot --out /tmp/f3 --env "$ENVS3" --runs 1000 --jobs 8 --fences all
  cp /tmp/f3/test/summary.json "$OUT/fenced.json" 2>/dev/null
fi
kill $H
echo "done in $(( $(date +%s) - START )) s" >> "$L"
