#!/usr/bin/env bash
# The GPU work still owed to issues 6 and 7 and to `wmfix cost`, in priority order, for the next
# session that has device time (none was left in session 3). Run from the repo root with
# carry/wmfix (a release build of this commit). $OUT gets next.txt (the log) and next.tar.gz
# (summary/report JSON of every step). Steps:
#   1. the in-process context hold (hold.rs): cbe-dot sys-str+ runs per hour with and without
#   2. issue 7: cbe-dot at 64 blocks under sys-str+, default profile vs the H200 profile
#   3. issue 6: reductions of ct-octree, ls-bh-nf, cbe-ht (cut off or not run in session 2)
#   4. wmfix cost on cbe-dot, tpo-tm, cub-scan-nf (after their reductions)
# Issue 6's 16,000-run table is scripts/gpu/table.sh, a call of its own (two studies a call).
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT" /tmp/next
W=$PWD/carry/wmfix
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-560} ))
L=$OUT/next.txt
. scripts/gpu/lib.sh
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), $(nvcc --version | tail -n 1)" > "$L"
keep() { cp "$1" "/tmp/next/$2" 2>/dev/null; }

step "hold: cbe-dot sys-str+ 400 runs, context held" 60 \
  $W test case-studies/cbe-dot --out /tmp/h1 --env sys-str+ --runs 400 --jobs 8
keep /tmp/h1/test/summary.json hold-on.json
step "hold: the same with --no-hold" 60 \
  $W test case-studies/cbe-dot --out /tmp/h1 --env sys-str+ --runs 400 --jobs 8 --no-hold
keep /tmp/h1/test/summary.json hold-off.json

# A copy of cbe-dot at 64 blocks, where the default profile need not err in every run.
cp -r case-studies/cbe-dot /tmp/cbe-dot-64
sed -i 's|^run = .*|run = "./dot 64 256"|' /tmp/cbe-dot-64/wmfix.toml
for p in default nvidia-h200; do
  prof=""; [ $p = nvidia-h200 ] && prof=$PWD/runtime-cu/profiles/nvidia-h200.toml
  step "issue 7: cbe-dot 64 blocks, sys-str+, profile $p, 400 runs, seed 1" 90 \
    env ${prof:+WMFIX_PROFILE=$prof} $W test /tmp/cbe-dot-64 --out /tmp/c64-$p --env sys-str+ --runs 400 --jobs 8 --seed 1
  keep /tmp/c64-$p/test/summary.json "cbe-dot-64-$p.json"
done

for study in ct-octree ls-bh-nf cbe-ht tpo-tm cub-scan-nf cbe-dot; do
  step "reduce $study" 150 $W reduce case-studies/$study --out /tmp/r-$study --hours 1 --split ddmin
  keep /tmp/r-$study/reduce/reduce.json "reduce-$study.json"
done
for study in cbe-dot tpo-tm cub-scan-nf; do
  step "cost $study" 90 $W cost case-studies/$study --out /tmp/r-$study --rounds 30
  keep /tmp/r-$study/cost/cost.json "cost-$study.json"
done
tar czf "$OUT/next.tar.gz" -C /tmp next
