#!/usr/bin/env bash
# Session 2 on a 2-GPU machine, two lanes at once (run from the repo root, carry/wmfix present):
#   lane A, GPU 0: litmus checks (issue 7), the paper-sized tune, then cbe-dot with every fence
#                  under rand-str+-, cache-str+- (issue 3), 1000 runs each;
#   lane B, GPU 1: what a run costs (context creation, with and without a context held open),
#                  then cbe-dot with every fence under no-str+-, sys-str+- (issue 3).
# Everything lands in $OUT: lane-a.txt, lane-b.txt, tune.tar.gz, fenced-a.json, fenced-b.json.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
W=$PWD/carry/wmfix
START=$(date +%s); DEADLINE=$((START + ${BUDGET_S:-560}))
. scripts/gpu/lib.sh
per_run() { # per_run N CMD...: mean wall seconds of N sequential runs
  local n=$1; shift; local t0; t0=$(date +%s.%N)
  for _ in $(seq 1 "$n"); do "$@" > /dev/null 2>&1; done
  awk "BEGIN{printf \"%.3f\", ($(date +%s.%N) - $t0) / $n}"
}
header() {
  echo "# $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=index,name,driver_version,persistence_mode --format=csv,noheader | tr '\n' ';')"
  nvcc --version | tail -n 1
}

lane_a() {
  export CUDA_VISIBLE_DEVICES=0
  L=$OUT/lane-a.txt; header > "$L"
  for t in mp lb sb; do
    for s in none default; do
      step "litmus $t, stress $s" 60 $W litmus $t --distance 64 --stress $s --iterations 200 --cache /tmp/lc
    done
  done
  step "litmus mp, sync incantation" 60 $W litmus mp --distance 64 --sync --iterations 200 --cache /tmp/lc
  step "litmus mp, distances 0..255" 60 $W litmus mp --distance 0 --distances 256 --iterations 200 --cache /tmp/lc
  step "tune, paper sizes" 300 $W tune --out /tmp/tune
  tar czf "$OUT/tune.tar.gz" -C /tmp tune --exclude tune/cache 2>/dev/null
  /tmp/hold & local h=$!
  step "issue 3: cbe-dot, every fence, 1000 runs" 600 \
    $W test case-studies/cbe-dot --out /tmp/fa --env rand-str-,rand-str+,cache-str-,cache-str+ --runs 1000 --jobs 6 --fences all
  kill $h
  cp /tmp/fa/test/summary.json "$OUT/fenced-a.json" 2>/dev/null
}

lane_b() {
  export CUDA_VISIBLE_DEVICES=$(( $(nvidia-smi -L | wc -l) > 1 ? 1 : 0 ))
  L=$OUT/lane-b.txt; header > "$L"
  $W build case-studies/cbe-dot --out /tmp/fb > /dev/null 2>&1
  {
    echo; echo "## seconds per run, 20 sequential runs each"
    echo "trivial (cudaFree(0)):          $(per_run 20 /tmp/trivial)"
    echo "cbe-dot original:               $(per_run 20 sh -c 'cd /tmp/fb/original && ./dot 128 256')"
    echo "cbe-dot instrumented, sys-str+: $(per_run 20 sh -c 'cd /tmp/fb/tree && WMFIX_ENV=sys-str+ ./dot 128 256')"
    /tmp/hold & local h=$!; sleep 2
    echo "with a context held open by another process:"
    echo "trivial (cudaFree(0)):          $(per_run 20 /tmp/trivial)"
    echo "cbe-dot original:               $(per_run 20 sh -c 'cd /tmp/fb/original && ./dot 128 256')"
    echo "cbe-dot instrumented, sys-str+: $(per_run 20 sh -c 'cd /tmp/fb/tree && WMFIX_ENV=sys-str+ ./dot 128 256')"
    kill $h
  } >> "$L" 2>&1
  /tmp/hold & local h=$!
  step "issue 3: cbe-dot, every fence, 1000 runs" 600 \
    $W test case-studies/cbe-dot --out /tmp/fb --env no-str-,no-str+,sys-str-,sys-str+ --runs 1000 --jobs 6 --fences all
  kill $h
  cp /tmp/fb/test/summary.json "$OUT/fenced-b.json" 2>/dev/null
}

nvcc -O2 -o /tmp/hold scripts/gpu/hold.cu && nvcc -O2 -o /tmp/trivial scripts/gpu/trivial.cu || exit 1
lane_a & A=$!
lane_b & B=$!
wait $A $B
echo "done in $(( $(date +%s) - START )) s" | tee -a "$OUT/lane-a.txt"
