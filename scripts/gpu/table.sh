#!/usr/bin/env bash
# Issue 6's table: `wmfix test <study> --env all --runs $RUNS` (fences off: the programs as
# written) for each study named, in order, while the deadline allows; a study cut short keeps
# the runs done (ctrl-c) and says so in its summary ("interrupted": true). Run from the repo
# root with carry/wmfix. $OUT: table.txt (the log) and table.tar.gz (each study's summary.json
# as <study>.json); `scripts/table.py` turns the summaries into the README's markdown table.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT" /tmp/table
W=$PWD/carry/wmfix
DEADLINE=$(( $(date +%s) + ${BUDGET_S:-560} ))
L=$OUT/table.txt
. scripts/gpu/lib.sh
echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), $(nvcc --version | tail -n 1)" > "$L"
for study in "$@"; do
  step "$study: all eight environments, ${RUNS:-200} runs each, fences off" 600 \
    $W test "case-studies/$study" --out "/tmp/t-$study" --env all --runs "${RUNS:-200}" --jobs "${JOBS:-8}"
  cp "/tmp/t-$study/test/summary.json" "/tmp/table/$study.json" 2>/dev/null
done
tar czf "$OUT/table.tar.gz" -C /tmp table
