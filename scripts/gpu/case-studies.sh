#!/usr/bin/env bash
# GPU first look at every case study (issue 6), in a deadline: each study's error rate without
# fences under no-str- and sys-str+, and with every fence under sys-str+; then reductions of the
# fence-less studies while time is left. Run from the repo root with carry/wmfix present.
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
W=$PWD/carry/wmfix
START=$(date +%s)
DEADLINE=$((START + ${BUDGET_S:-540}))
RUNS=${RUNS:-40}
R="$OUT/results.txt"
say() { echo "$*" | tee -a "$R"; }
left() { echo $((DEADLINE - $(date +%s))); }
step() {
  local title=$1; shift
  [ "$(left)" -gt 5 ] || { say "## $title: skipped, no time left"; return; }
  say ""; say "## $title ($(date -u +%T), $(left) s left)"; say "\$ $*"
  timeout -s INT "$(left)" "$@" 2>&1 | grep -v '^\s*$' | tee -a "$R"
}
say "# wmfix case studies on the GPU, $(date -u +%F)"
say "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), $(nvcc --version | tail -n 1)"
for cs in case-studies/*/; do
  cs=${cs%/}; name=$(basename "$cs")
  [ "$name" = cbe-dot ] && continue
  step "$name: fences off" $W test "$cs" --out "/tmp/o-$name" --env no-str-,sys-str+ --runs "$RUNS"
  step "$name: every fence on" $W test "$cs" --out "/tmp/o-$name" --env sys-str+ --runs "${FRUNS:-20}" --fences all
done
for name in sdk-red-nf cub-scan-nf cbe-ht tpo-tm ct-octree ls-bh-nf; do
  [ -d "case-studies/$name" ] || continue
  step "$name: reduce" $W reduce "case-studies/$name" --out "/tmp/o-$name" --hours 1 --split ddmin
done
say ""; say "done $(date -u +%T), $(( $(date +%s) - START )) s"
