#!/usr/bin/env bash
# A short GPU call: cbe-ht's native failure rate by size (its default fails natively), then
# reductions of tpo-tm and ct-octree while time is left. Repo root, carry/wmfix present.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
W=$PWD/carry/wmfix
START=$(date +%s); DEADLINE=$((START + ${BUDGET_S:-200}))
R="$OUT/results.txt"
say() { echo "$*" | tee -a "$R"; }
left() { echo $((DEADLINE - $(date +%s))); }
say "# $(date -u +%F) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
mkdir -p /tmp/ht && cp case-studies/cbe-ht/ht.cu /tmp/ht/ && (cd /tmp/ht && nvcc -O3 -arch=sm_90 -o ht ht.cu)
say "## cbe-ht original, native: failing runs of 10 (blocks threads buckets)"
for cfg in "128 256 1024" "64 256 1024" "32 256 1024" "16 256 1024" "128 256 16384" "64 128 4096" "32 128 4096"; do
  f=0; for i in $(seq 1 10); do (cd /tmp/ht && ./ht $cfg > /dev/null 2>&1) || f=$((f+1)); done
  say "ht $cfg: $f/10"
done
for name in tpo-tm ct-octree; do
  [ "$(left)" -gt 10 ] || break
  say ""; say "## $name: reduce (\$ wmfix reduce case-studies/$name --hours 1 --split ddmin; $(left) s left)"
  timeout -s INT "$(left)" $W reduce "case-studies/$name" --out "/tmp/o-$name" --hours 1 --split ddmin 2>&1 | grep -v '^\s*$' | tee -a "$R"
done
say "done $(( $(date +%s) - START )) s"
