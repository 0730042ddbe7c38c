#!/usr/bin/env bash
# Issue 13's GPU evidence for the stress itself, on one H100/H200, in named, resumable steps:
#   1. the tune again, with the engine whose stressing blocks run the runtime's stress loop;
#   2. the seven fence-less case studies under sys-str+ with the shipped default profile (what
#      wmfix picks for this GPU), under aim-str+, and then no-str-, sys-str+ with the built-in
#      default, with the H200-tuned profile (not on an H200, where that is the shipped one) and
#      with the new tune, RUNS runs each (default 100);
#   3. the three fenced studies, 300 runs under the shipped default (must not err);
#   4. cbe-ht's native checks at its tested size (64 blocks) and with every fence at 128.
# The most important steps come first; later ones wait for a later call.
#
#   scripts/gpu/stress.sh --list            # the steps, in order, and which are done
#   scripts/gpu/stress.sh [PATTERN ...]     # run the steps not yet done (all, or those matching)
#
# Run from the repo root on the GPU machine with a release build of wmfix at carry/wmfix (and
# carry/VERSION, the commit it was built from). Steps run until BUDGET_S seconds (default 530)
# are spent; each is bounded with `timeout --foreground -s INT`, so wmfix still writes complete
# records when a bound is reached, and a cut-short test resumes with `wmfix test --resume` in the
# next call (the machine keeps /tmp/st while it stays warm). Results go to
# results/<date>-<gpu>/stress-*/; a step is done once its folder holds DONE. Every file names
# the GPU, driver, date, wmfix commit and command: text in a header, JSON as {"meta": {...},
# "result": <what wmfix wrote>}. $OUT gets stress.log and stress.tar.gz (the results folder, to
# unpack at the repo root). `scripts/results.py results/<date>-<gpu> stress` makes the tables
# of runtime-cu/README.md from it.
#
# Variables: W (wmfix, default carry/wmfix), OUT, BUDGET_S, JOBS (runs at a time, default 8),
# RUNS (per cell, default 100), LIMIT (seconds per cell, default 60; 100 runs took about 25 s on
# an H200 on 2026-11-24), FENCED_LIMIT (default 150), TUNE_LIMIT (default 240), RESULTS.
set -uo pipefail
ROOT=$PWD
W=${W:-$ROOT/carry/wmfix}
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
START=$(date +%s)
DEADLINE=$((START + ${BUDGET_S:-530}))
JOBS=${JOBS:-8}
RUNS=${RUNS:-100}
LOG=$OUT/stress.log
WORK=/tmp/st

gpu_field() { nvidia-smi --query-gpu="$1" --format=csv,noheader 2>/dev/null | head -n 1; }
GPU=$(gpu_field name)
DRIVER=$(gpu_field driver_version)
SLUG=$(printf '%s' "${GPU:-unknown gpu}" | tr 'A-Z' 'a-z' | sed -E 's/[^a-z0-9]+/-/g; s/^-//; s/-$//')
COMMIT=$(cat "$ROOT/carry/VERSION" 2>/dev/null || echo unknown)
NVCC=$(nvcc --version 2>/dev/null | tail -n 1)
RESULTS=${RESULTS:-$(ls -d "$ROOT"/results/*-"$SLUG" 2>/dev/null | tail -n 1)}
[ -n "$RESULTS" ] || RESULTS=$ROOT/results/$(date -u +%F)-$SLUG
PROFILES=$ROOT/runtime-cu/profiles
NEW_TUNE=$RESULTS/stress-tune/profile.toml

left() { echo $((DEADLINE - $(date +%s))); }
log() { echo "$*" | tee -a "$LOG"; }
header() { # the header of a text result: GPU, driver, date, commit, command
  echo "# $GPU, driver $DRIVER, $NVCC; $(date -u +%FT%TZ); wmfix $COMMIT"
  echo "# \$ $*"
}

# json_result FILE CMD... : wraps the JSON file wmfix wrote with its provenance, in place.
json_result() {
  local file=$1; shift
  [ -f "$file" ] || return 0
  python3 - "$file" "$GPU" "$DRIVER" "$NVCC" "$COMMIT" "$*" <<'PY'
import json, sys, datetime
path, gpu, driver, nvcc, commit, command = sys.argv[1:]
with open(path) as f:
    result = json.load(f)
meta = {"gpu": gpu, "driver": driver, "nvcc": nvcc, "commit": commit, "command": command,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
with open(path, "w") as f:
    json.dump({"meta": meta, "result": result}, f, indent=1)
PY
}

# bounded LIMIT CMD... : CMD with SIGINT at LIMIT seconds or the deadline, whichever is first;
# its output to the step's log. Returns CMD's exit status (124: the bound was reached).
bounded() {
  local limit=$1; shift
  local l; l=$(left); [ "$limit" -lt "$l" ] && l=$limit
  [ "$l" -gt 5 ] || return 124
  { header "$@"; } >> "$STEP_DIR/log.txt"
  timeout --foreground -s INT -k 30 "$l" "$@" >> "$STEP_DIR/log.txt" 2>&1
  local rc=$?
  echo "# exit $rc after $(( $(date +%s) - STEP_T0 )) s of this step" >> "$STEP_DIR/log.txt"
  return $rc
}

# A study is built once: each cell starts from a copy of its first build (wmfix sees it is up
# to date: the build stamp does not depend on the folder), which saves a build per cell.
BUILT="build.stamp fences.json original tree runtime"
prebuilt() { # prebuilt STUDY OUT: seed OUT with the study's build, if there is one
  local cache=$WORK/build-$1 out=$2 f
  [ -d "$out" ] || [ ! -f "$cache/build.stamp" ] || { mkdir -p "$out" && for f in $BUILT; do cp -r "$cache/$f" "$out/"; done; }
}
keep_build() { # keep_build STUDY OUT: keep OUT's build for the study's other cells
  local cache=$WORK/build-$1 out=$2 f
  [ -f "$cache/build.stamp" ] || [ ! -f "$out/build.stamp" ] || { mkdir -p "$cache" && for f in $BUILT; do cp -r "$out/$f" "$cache/"; done; }
}

# test_cell STUDY ENV RUNS [VAR=VALUE...]: one `wmfix test`, its summary (which names the chip
# profile the runs got) kept as summary.json. Done when the test was not cut short.
test_cell() {
  local study=$1 env=$2 runs=$3; shift 3
  local out=$WORK/$STEP
  prebuilt "$study" "$out"
  local cmd=(env "$@" "$W" test "case-studies/$study" --out "$out" --env "$env" --runs "$runs" --jobs "$JOBS" --seed 1)
  [ -f "$out/test/runs.jsonl" ] && cmd+=(--resume)
  bounded "${LIMIT:-60}" "${cmd[@]}"
  local rc=$?
  keep_build "$study" "$out"
  cp "$out/test/summary.json" "$STEP_DIR/summary.json" 2>/dev/null && json_result "$STEP_DIR/summary.json" "${cmd[@]}"
  # 0: no error; 2: some run erred; 3: the baseline failed (a result too).
  case $rc in 0|2|3) return 0 ;; *) return $rc ;; esac
}

# The fenced studies' 300 runs take about a minute at 8 at a time: a longer bound.
fenced_cell() { LIMIT=${FENCED_LIMIT:-150} test_cell "$@"; }

# A profile file, or the step waits: the new tune's profile exists only once stress-tune is done.
with_profile() { # with_profile FILE STUDY ENV RUNS
  local file=$1; shift
  [ -f "$file" ] || { echo "no profile $file yet" >> "$STEP_DIR/log.txt"; return 1; }
  test_cell "$@" "WMFIX_PROFILE=$file"
}

# The tune with the paper's sizes but the patch phase, which the H200's counts do not need
# (runtime-cu/README.md); bounded, so a slow engine leaves what it measured in raw.json.
tune_step() {
  local cmd=("$W" tune --out "$WORK/tune" --patch-size 64)
  bounded "${TUNE_LIMIT:-240}" "${cmd[@]}"
  local rc=$?
  local f; for f in raw.json profile.toml spread.svg; do cp "$WORK/tune/$f" "$STEP_DIR/" 2>/dev/null; done
  cp "$WORK/tune/analysis.json" "$STEP_DIR/" 2>/dev/null && json_result "$STEP_DIR/analysis.json" "${cmd[@]}"
  [ -f "$STEP_DIR/profile.toml" ] || return 1
  return $rc
}

# cbe-ht (case-studies/cbe-ht/README.md, "The tested size"): the original natively at 64 blocks,
# and the instrumented program with every fence and no stress at 128, where the original fails.
cbe_ht_native() {
  local f=$STEP_DIR/native.txt build=$WORK/cbe-ht-build
  prebuilt cbe-ht "$build"
  bounded 120 "$W" build case-studies/cbe-ht --out "$build" || return 1
  header "original ./ht B 256 and instrumented WMFIX_ENV=no-str- WMFIX_FENCES=all ./ht 128 256, failing runs counted" > "$f"
  count() { # count LABEL N CMD...: how many of N runs fail
    local label=$1 n=$2 fails=0 i; shift 2
    for i in $(seq "$n"); do
      [ "$(left)" -gt 5 ] || return 124
      "$@" > /dev/null 2>&1 || fails=$((fails + 1))
    done
    echo "$label: $fails of $n runs failed" >> "$f"
  }
  (cd "$build/original" && count "original ht 64 256" "${NATIVE:-100}" ./ht 64 256) || return $?
  (cd "$build/original" && count "original ht 128 256" 20 ./ht 128 256) || return $?
  (cd "$build/tree" && count "all fences ht 128 256" 50 env WMFIX_ENV=no-str- WMFIX_FENCES=all ./ht 128 256) || return $?
}

# ---- the steps, in priority order: "name function args..." ----
STEPS=()
add() { STEPS+=("$*"); }
FENCELESS="cbe-dot cbe-ht ct-octree tpo-tm sdk-red-nf cub-scan-nf ls-bh-nf"
FENCED="sdk-red cub-scan ls-bh"

add stress-tune tune_step
for s in $FENCELESS; do add "stress-$s-sys-shipped" test_cell "$s" sys-str+ "$RUNS"; done
for s in $FENCELESS; do add "stress-$s-aim-shipped" test_cell "$s" aim-str+ "$RUNS"; done
for s in $FENCED; do add "stress-fenced-$s" fenced_cell "$s" sys-str+ 300; done
for s in $FENCELESS; do add "stress-$s-no" test_cell "$s" no-str- "$RUNS"; done
# The profile wmfix ships for this GPU, as src/chip.rs picks it: <slug>.toml, or the longest
# profile name that begins the slug at a word. None: the shipped cells are the built-in default.
SHIPPED=
for f in "$PROFILES"/*.toml; do
  n=$(basename "$f" .toml)
  if [ "$SLUG" = "$n" ] || [ "${SLUG#"$n"-}" != "$SLUG" ]; then
    [ ${#n} -gt ${#SHIPPED} ] && SHIPPED=$n
  fi
done
[ -n "$SHIPPED" ] && for s in $FENCELESS; do add "stress-$s-sys-builtin" with_profile "$PROFILES/hopper-default.toml" "$s" sys-str+ "$RUNS"; done
# The H200-tuned profile, unless it is what ships for this GPU (then it is the shipped cells).
[ "$SHIPPED" = nvidia-h200 ] || for s in $FENCELESS; do add "stress-$s-sys-h200tuned" with_profile "$PROFILES/nvidia-h200.toml" "$s" sys-str+ "$RUNS"; done
for s in $FENCELESS; do add "stress-$s-sys-newtune" with_profile "$NEW_TUNE" "$s" sys-str+ "$RUNS"; done
add stress-cbe-ht-native cbe_ht_native

# ---- the driver ----
is_done() { [ -f "$RESULTS/$1/DONE" ]; }
matches() { # matches NAME PATTERN...: no pattern, or one is a glob matching NAME
  local name=$1; shift
  [ $# -eq 0 ] && return 0
  local p; for p in "$@"; do [[ $name == $p ]] && return 0; done
  return 1
}

if [ "${1:-}" = --list ]; then
  for s in "${STEPS[@]}"; do
    name=${s%% *}
    is_done "$name" && echo "done  $name" || echo "todo  $name"
  done
  exit 0
fi

mkdir -p "$RESULTS" "$WORK"
{ header "$0 $*"; echo "# results: ${RESULTS#"$ROOT"/}, budget ${BUDGET_S:-530} s, $RUNS runs a cell"; } > "$LOG"
[ -x "$W" ] || { log "no wmfix at $W"; exit 1; }
for s in "${STEPS[@]}"; do
  read -r STEP fn args <<< "$s"
  matches "$STEP" "$@" || continue
  is_done "$STEP" && continue
  [ "$(left)" -gt 20 ] || { log "deadline: $STEP and later steps left for the next call"; break; }
  STEP_DIR=$RESULTS/$STEP
  mkdir -p "$STEP_DIR"
  STEP_T0=$(date +%s)
  # shellcheck disable=SC2086
  $fn $args
  rc=$?
  dt=$(( $(date +%s) - STEP_T0 ))
  if [ $rc -eq 0 ]; then
    date -u +%FT%TZ > "$STEP_DIR/DONE"
    log "done  $STEP ($dt s)"
  else
    log "left  $STEP (exit $rc after $dt s)"
  fi
done
log "finished after $(( $(date +%s) - START )) s"
tar czf "$OUT/stress.tar.gz" -C "$ROOT" "${RESULTS#"$ROOT"/}"
