#!/usr/bin/env bash
# GPU acceptance, part 1 (issues 2, 3, 4): run on the device machine from the repo root with
# carry/wmfix (a release build) present. Writes everything under $OUT (or ./gpu-out).
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
W=$PWD/carry/wmfix
log() { echo "== $*" | tee -a "$OUT/steps.txt"; }

log "machine $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
nvcc --version | tail -n 2 | tee -a "$OUT/gpu.txt"

# Issue 2: cbe-dot original, and instrumented with all fences / no fences, 100 runs each, serial.
log "build cbe-dot"
$W build case-studies/cbe-dot --out /tmp/cbe > "$OUT/build.txt" 2>&1 || { cat "$OUT/build.txt"; exit 1; }
count() { # count DIR ENV... : runs ./dot 100 times, prints passes
  local dir=$1; shift
  local pass=0
  for i in $(seq 1 100); do
    if (cd "$dir" && env "$@" WMFIX_SEED=$i ./dot 256 256 > /dev/null 2>&1); then pass=$((pass+1)); fi
  done
  echo "$pass"
}
{
  echo "cbe-dot 256 blocks x 256 threads, 100 serial runs each (passes of 100)"
  echo "original:                          $(count /tmp/cbe/original X=1)"
  echo "instrumented WMFIX_FENCES=all  no-str-: $(count /tmp/cbe/tree WMFIX_FENCES=all WMFIX_ENV=no-str-)"
  echo "instrumented WMFIX_FENCES=none no-str-: $(count /tmp/cbe/tree WMFIX_FENCES=none WMFIX_ENV=no-str-)"
} | tee "$OUT/issue2-cbe-dot.txt"

# Issue 3: the runtime's own GPU tests (mapping bijection, overhead).
log "runtime tests"
bash runtime-cu/tests/run_gpu_tests.sh "$OUT/runtime" > "$OUT/runtime-tests.txt" 2>&1; echo "rc=$?" >> "$OUT/runtime-tests.txt"
tail -n 40 "$OUT/runtime-tests.txt"

# Block-count sweep: where does cbe-dot without fences rarely fail natively (no-str-)?
log "block sweep"
{
  echo "blocks  fails/50 no-str- (fences none)  fails/50 sys-str+ (fences none)"
  for b in 2 4 8 16 32 64 128; do
    f1=0; f2=0
    for i in $(seq 1 50); do
      (cd /tmp/cbe/tree && WMFIX_FENCES=none WMFIX_ENV=no-str- WMFIX_SEED=$i ./dot $b 256 >/dev/null 2>&1) || f1=$((f1+1))
      (cd /tmp/cbe/tree && WMFIX_FENCES=none WMFIX_ENV=sys-str+ WMFIX_SEED=$i ./dot $b 256 >/dev/null 2>&1) || f2=$((f2+1))
    done
    echo "$b  $f1  $f2"
  done
} | tee "$OUT/block-sweep.txt"

# Issue 4: throughput of wmfix test with 1, 4 and 8 jobs (sys-str+, fences none).
log "jobs"
for j in 1 4 8; do
  $W test case-studies/cbe-dot --out /tmp/cbe --env sys-str+ --runs 200 --jobs $j > "$OUT/jobs-$j.txt" 2>/dev/null
  echo "jobs=$j"; cat "$OUT/jobs-$j.txt"
done
log "done $(date -u +%FT%TZ)"
