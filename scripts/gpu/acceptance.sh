#!/usr/bin/env bash
# GPU acceptance of issues 3, 4 and 5 on cbe-dot, in priority order, within a deadline (the
# device tool gives one command 600 s). Run from the repo root with carry/wmfix (a release
# build). Results: $OUT/results.txt plus the JSON summaries; each step's command is printed.
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
W=$PWD/carry/wmfix
START=$(date +%s)
DEADLINE=$((START + ${BUDGET_S:-570}))
R="$OUT/results.txt"
say() { echo "$*" | tee -a "$R"; }
left() { echo $((DEADLINE - $(date +%s))); }
step() { # step TITLE CMD...: runs CMD with ctrl-c at the deadline, prints it and its output
  local title=$1; shift
  say ""; say "## $title ($(date -u +%T), $(left) s left)"; say "\$ $*"
  timeout -s INT "$(left)" "$@" 2>&1 | grep -v '^\s*$' | tee -a "$R"
}

say "# wmfix GPU acceptance, $(date -u +%F)"
say "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader), $(nvcc --version | tail -n 1)"
$W build case-studies/cbe-dot --out /tmp/w > /dev/null 2>&1 || { say "build failed"; exit 1; }

step "issue 4: all eight environments, fences off, 200 runs each, 8 jobs" \
  $W test case-studies/cbe-dot --out /tmp/w --env all --runs 200 --jobs 8
cp /tmp/w/test/summary.json "$OUT/test-fences-none.json" 2>/dev/null

step "issue 5: reduce, statistical stability, 8 jobs" \
  $W reduce case-studies/cbe-dot --out /tmp/w --hours 1 --jobs 8
cp /tmp/w/reduce/reduce.json /tmp/w/reduce/fences.patch "$OUT/" 2>/dev/null

for j in 1 4 8; do
  step "issue 4: throughput, sys-str+, fences off, 100 runs, $j jobs" \
    $W test case-studies/cbe-dot --out /tmp/w --env sys-str+ --runs 100 --jobs $j
done

say ""; say "## original program, 128 blocks, 100 runs (8 at a time): failing runs"
fails=$(seq 1 100 | xargs -P 8 -I{} sh -c 'cd /tmp/w/original && ./dot 128 256 >/dev/null 2>&1 || echo x' | wc -l)
say "original failed $fails of 100"

step "issue 3: fences on, all eight environments, 1000 runs each, 8 jobs" \
  $W test case-studies/cbe-dot --out /tmp/w --env all --runs 1000 --jobs 8 --fences all
cp /tmp/w/test/summary.json "$OUT/test-fences-all.json" 2>/dev/null
say ""; say "done $(date -u +%T), $(( $(date +%s) - START )) s"
