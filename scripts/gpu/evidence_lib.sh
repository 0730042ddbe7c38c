#!/usr/bin/env bash
# The GPU evidence steps' functions: scripts/gpu/steps.py declares the steps (name, function and
# arguments, budget, outputs), scripts/gpu/evidence.py runs each as `FUNCTION ARGS...` in a bash
# that sourced this file, with STEP, STEP_DIR, STEP_T0, START, DEADLINE, RESULTS, WORK, W and
# the step's LIMIT in the environment. Every file a step writes names the GPU, driver, date,
# wmfix commit and command: text files in a header, JSON files as {"meta": {...}, "result": <what
# wmfix wrote>}. Test cells and reductions also keep failures.txt (the last line of each erring
# run's output, counted) and reductions their journal.jsonl. Variables as evidence.py lists them.
set -uo pipefail
ROOT=$PWD
W=${W:-$ROOT/carry/wmfix}
START=${START:-$(date +%s)}
DEADLINE=${DEADLINE:-$((START + ${BUDGET_S:-530}))}
JOBS=${JOBS:-8}
RUNS=${RUNS:-100}
WORK=${WORK:-/tmp/ev}

gpu_field() { nvidia-smi --query-gpu="$1" --format=csv,noheader 2>/dev/null | head -n 1; }
GPU=$(gpu_field name)
DRIVER=$(gpu_field driver_version)
SLUG=$(printf '%s' "${GPU:-unknown gpu}" | tr 'A-Z' 'a-z' | sed -E 's/[^a-z0-9]+/-/g; s/^-//; s/-$//')
COMMIT=$(cat "$ROOT/carry/VERSION" 2>/dev/null || echo unknown)
NVCC=$(nvcc --version 2>/dev/null | tail -n 1)
# TAG (a date, say) names a new folder results/<TAG>-<gpu> for whatever GPU the call gets.
[ -n "${TAG:-}" ] && RESULTS=${RESULTS:-$ROOT/results/$TAG-$SLUG}
RESULTS=${RESULTS:-$(ls -d "$ROOT"/results/*-"$SLUG" 2>/dev/null | tail -n 1)}
[ -n "$RESULTS" ] || RESULTS=$ROOT/results/$(date -u +%F)-$SLUG
PROFILES=$ROOT/runtime-cu/profiles
NEW_TUNE=$RESULTS/stress-tune/profile.toml

left() { echo $((DEADLINE - $(date +%s))); }
header() { # the header of a text result: GPU, driver, date, commit, command
  echo "# $GPU, driver $DRIVER, $NVCC; $(date -u +%FT%TZ); wmfix $COMMIT"
  echo "# \$ $*"
}

# json_result FILE CMD... : wraps the JSON file wmfix wrote with its provenance, in place.
json_result() {
  local file=$1; shift
  [ -f "$file" ] || return 0
  python3 - "$file" "$GPU" "$DRIVER" "$NVCC" "$COMMIT" "$*" <<'EOF'
import json, sys, datetime
path, gpu, driver, nvcc, commit, command = sys.argv[1:]
with open(path) as f:
    result = json.load(f)
meta = {"gpu": gpu, "driver": driver, "nvcc": nvcc, "commit": commit, "command": command,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
with open(path, "w") as f:
    json.dump({"meta": meta, "result": result}, f, indent=1)
EOF
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
# BUILD_TAG keeps apart the builds of another wmfix (the issue-48 steps' `before` binary).
prebuilt() { # prebuilt STUDY OUT: seed OUT with the study's build, if there is one
  local cache=$WORK/build-${BUILD_TAG:-}$1 out=$2 f
  [ -d "$out" ] || [ ! -f "$cache/build.stamp" ] || { mkdir -p "$out" && for f in $BUILT; do cp -r "$cache/$f" "$out/"; done; }
}
keep_build() { # keep_build STUDY OUT: keep OUT's build for the study's other cells
  local cache=$WORK/build-${BUILD_TAG:-}$1 out=$2 f
  [ -f "$cache/build.stamp" ] || [ ! -f "$out/build.stamp" ] || { mkdir -p "$cache" && for f in $BUILT; do cp -r "$out/$f" "$cache/"; done; }
}

# test_cell STUDY ENV RUNS [VAR=VALUE...] [-- wmfix test options]: one `wmfix test`, its
# summary (which names the chip profile the runs got) kept as summary.json in the step's
# folder. Done when the test was not cut short; a cut-short test resumes (`wmfix test
# --resume`) in the next call while the machine keeps $WORK.
test_cell() {
  local study=$1 env=$2 runs=$3; shift 3
  local vars=(); while [ $# -gt 0 ] && [ "$1" != -- ]; do vars+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift
  local out=$WORK/$STEP
  prebuilt "$study" "$out"
  # One step a run unless the cell says otherwise: the stress tables compare rates a run of one
  # step, as the paper's; ct-octree's and ls-bh-nf's `steps = 10` is for their reductions.
  case " $* " in *" --steps "*) ;; *) set -- "$@" --steps 1 ;; esac
  local cmd=(env "${vars[@]}" "$W" test "${STUDY_DIR:-case-studies/$study}" --out "$out" --env "$env" --runs "$runs" --jobs "$JOBS" --seed 1 "$@")
  [ -f "$out/test/runs.jsonl" ] && cmd+=(--resume)
  bounded "${LIMIT:-60}" "${cmd[@]}"
  local rc=$?
  keep_build "$study" "$out"
  failures "$out/test"
  cp "$out/test/summary.json" "$STEP_DIR/summary.json" 2>/dev/null && json_result "$STEP_DIR/summary.json" "${cmd[@]}"
  # 0: no error; 2: some run erred; 3: the baseline failed (a result too).
  case $rc in 0|2|3) return 0 ;; *) return $rc ;; esac
}

# failures DIR: what the erring runs under DIR/logs said last (the program's own verdict line,
# counted), into the step's failures.txt: whether an error is the bug or, say, a time-out.
failures() {
  local logs=$1/logs
  [ -d "$logs" ] || return 0
  find "$logs" -type f | head -n 500 | while read -r f; do tail -n 1 "$f"; done |
    sort | uniq -c | sort -rn | head -n 30 > "$STEP_DIR/failures.txt"
}

# The fenced studies' 300 runs take about a minute at 8 at a time: a longer bound.
fenced_cell() { LIMIT=${FENCED_LIMIT:-150} test_cell "$@"; }

# A profile file, or the step waits: the new tune's profile exists only once stress-tune is done.
with_profile() { # with_profile FILE STUDY ENV RUNS
  local file=$1; shift
  [ -f "$file" ] || { echo "no profile $file yet" >> "$STEP_DIR/log.txt"; return 1; }
  test_cell "$@" "WMFIX_PROFILE=$file"
}


# Issue 13: the stress. The tune again (the paper's sizes but the patch phase, which the H200's
# counts do not need: runtime-cu/README.md; bounded, so a slow engine leaves what it measured in
# raw.json); the fence-less studies under sys-str+ with the shipped default profile (what wmfix
# picks for this GPU) and under aim-str+; the fenced studies, 300 runs (must not err); no-str-;
# sys-str+ with the built-in default, with the H200-tuned profile (not on an H200, where that is
# the shipped one) and with the new tune; RUNS runs a cell (default 100; 100 runs took about
# 25 s on an H200 on 2026-11-24). scripts/results.py stress makes runtime-cu/README.md's table.
tune_step() {
  local cmd=("$W" tune --out "$WORK/tune" --patch-size 64)
  bounded "${TUNE_LIMIT:-240}" "${cmd[@]}"
  local rc=$?
  local f; for f in raw.json profile.toml patches.svg spread.svg; do cp "$WORK/tune/$f" "$STEP_DIR/" 2>/dev/null; done
  cp "$WORK/tune/analysis.json" "$STEP_DIR/" 2>/dev/null && json_result "$STEP_DIR/analysis.json" "${cmd[@]}"
  [ -f "$STEP_DIR/profile.toml" ] || return 1
  return $rc
}
# The fence-less studies with every inserted fence on must not err either: a study that still
# errs there has errors no fence removes (a time-out under stress, say), and its reduction
# rejects removals at random (ct-octree on an H100, 2026-11-25, did not finish).
# cub-scan-lib: CUB's own look-back, instrumented through preprocessed mode (its wmfix.toml), as
# written (--fences none) and with every fence; its first build takes about a minute.
# The profile wmfix ships for this GPU, as src/run/profile.rs picks it: <slug>.toml, or the
# longest profile name that begins the slug at a word. None: the shipped cells are the built-in default.
SHIPPED=
for f in "$PROFILES"/*.toml; do
  n=$(basename "$f" .toml)
  if [ "$SLUG" = "$n" ] || [ "${SLUG#"$n"-}" != "$SLUG" ]; then
    [ ${#n} -gt ${#SHIPPED} ] && SHIPPED=$n
  fi
done
# A profile of two variants, one per launch (runtime-cu/README.md, "Several variants"): the
# shipped st4 on 5 locations and the built-in ld st st ld on 2, which exposed sdk-red-nf better.

# sdk-red-nf erred in no cell above: does a larger or smaller grid open its window (one partial
# sum's store racing the ticket's atomic), or more reductions per run (its fourth argument:
# launches, each from partial sums reset to 0 and each checked)? The study copied with its run
# command's arguments changed, sys-str+ with the shipped profile, RUNS runs each.
sdk_red_grid() { # sdk_red_grid BLOCKS THREADS [ELEMENTS LAUNCHES]
  local name="$*"
  local copy=$WORK/sdk-red-nf-${name// /-}
  rm -rf "$copy" && cp -r case-studies/sdk-red-nf "$copy" || return 1
  sed -i "s|^run = .*|run = \"./red $*\"|" "$copy/wmfix.toml"
  STUDY_DIR=$copy test_cell sdk-red-nf sys-str+ "$RUNS"
}

# What a run costs and how many at a time pay (issue 14: the 459-run stability check dominates
# the short reductions on an H100, about 4 runs a second at 8 at a time). One run's wall time,
# sequentially: the original, the instrumented program without and with stress, with every
# fence; then `wmfix test` at several --jobs (summary.json's runs_per_hour per cell).
run_cost() { # run_cost STUDY: the study's run command, timed alone
  local study=$1 build=$WORK/build-$1 f=$STEP_DIR/run-cost.txt run
  run=$(sed -n 's/^run = "\(.*\)"$/\1/p' "case-studies/$study/wmfix.toml")
  [ -f "$build/build.stamp" ] || bounded 180 "$W" build "case-studies/$study" --out "$build" || return 1
  header "$study: '$run' run 3 times one after another in original/ and tree/ (WMFIX_ENV, WMFIX_FENCES)" > "$f"
  echo "# persistence mode: $(gpu_field persistence_mode); compute mode: $(gpu_field compute_mode)" >> "$f"
  local profile=WMFIX_PROFILE=${SHIPPED:+$PROFILES/$SHIPPED.toml}
  echo "# instrumented runs with $profile" >> "$f"
  timed() { # timed LABEL DIR VAR=VALUE...: three runs' wall seconds
    local label=$1 dir=$2 t i TIMEFORMAT=%R; shift 2
    # shellcheck disable=SC2086
    t=$(cd "$dir" && for i in 1 2 3; do { time env "$@" $run > /dev/null 2>&1; } 2>&1; done | tr '\n' ' ')
    echo "$label: $t" >> "$f"
  }
  timed original "$build/original" "$profile"
  local v
  for v in "no-str- none" "sys-str+ none" "sys-str+ all" "aim-str+ none"; do
    timed "${v% *} fences ${v#* }" "$build/tree" "$profile" "WMFIX_ENV=${v% *}" "WMFIX_FENCES=${v#* }"
  done
}
jobs_cell() { JOBS=$1 test_cell "$2" sys-str+ 96; } # jobs_cell JOBS STUDY

# cbe-ht (case-studies/cbe-ht/README.md, "The tested size"): where the scheduler puts its
# blocks; how often the original fails natively at several grid sizes (64 is the tested one);
# the instrumented program with every fence and no stress at 128, where the original fails.
cbe_ht_native() {
  local f=$STEP_DIR/native.txt build=$WORK/cbe-ht-build b
  nvcc -O3 -arch=sm_90 -o "$WORK/placement" scripts/gpu/placement.cu >> "$STEP_DIR/log.txt" 2>&1 || return 1
  { header "scripts/gpu/placement.cu 128 256 1024 20"; "$WORK/placement" 128 256 1024 20; } > "$STEP_DIR/placement.txt" 2>&1
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
  for b in 128 64 32 16; do
    (cd "$build/original" && count "original ht $b 256" "${NATIVE:-50}" ./ht "$b" 256) || return $?
  done
  (cd "$build/tree" && count "all fences ht 128 256" 50 env WMFIX_ENV=no-str- WMFIX_FENCES=all ./ht 128 256) || return $?
}

# resumable_reduce OUT KEPT CMD...: `wmfix reduce` (CMD) into OUT, resumed from OUT's journal or,
# on a fresh machine, from KEPT (the journal an earlier call committed to the results folder,
# taken in with --resume-from), the check it cut short included; wmfix refuses a journal written
# with other settings, sources or runtime (exit 65), and the reduction starts again.
# REDUCE_CMD: the command as it ran.
resumable_reduce() {
  local out=$1 kept=$2; shift 2
  REDUCE_CMD=("$@")
  local rc=0 resume=()
  if [ -f "$out/reduce/journal.jsonl" ]; then resume=(--resume)
  elif [ -f "$kept" ]; then resume=(--resume-from "$kept")
  fi
  if [ ${#resume[@]} -gt 0 ]; then
    bounded "${LIMIT:-300}" "$@" "${resume[@]}" || rc=$?
    if [ $rc -eq 65 ]; then rm -f "$out/reduce/journal.jsonl"; resume=(); else REDUCE_CMD+=("${resume[@]}"); fi
  fi
  if [ ${#resume[@]} -eq 0 ]; then
    rc=0
    bounded "${LIMIT:-300}" "$@" || rc=$?
  fi
  return $rc
}

reduce_study() { # reduce_study STUDY [wmfix reduce options]: into $WORK/$STEP (reduce-STUDY for the main ones); STUDY_DIR: a copy to reduce instead
  local study=$1; shift
  local out=$WORK/$STEP rc=0
  resumable_reduce "$out" "$STEP_DIR/journal.jsonl" \
    "$W" reduce "${STUDY_DIR:-case-studies/$study}" --out "$out" --hours 1 --jobs "$JOBS" "$@" || rc=$?
  local cmd=("${REDUCE_CMD[@]}")
  cp "$out/reduce/reduce.json" "$STEP_DIR/" 2>/dev/null && json_result "$STEP_DIR/reduce.json" "${cmd[@]}"
  # Every check's fence set, runs and errors: why a reduction was slow can be read afterwards.
  cp "$out/reduce/journal.jsonl" "$STEP_DIR/" 2>/dev/null
  failures "$out/reduce"
  [ -f "$out/reduce/fences.patch" ] && { header "${cmd[@]}"; cat "$out/reduce/fences.patch"; } > "$STEP_DIR/fences.patch"
  case $rc in 0|3|5) return 0 ;; *) return $rc ;; esac
}
# The cost steps take the reduction from the results folder's record, so that a fresh machine
# can measure a reduction made on an earlier one (the fence ids hold for the same sources).
cost_study() { # cost_study STUDY [--from STEP] [--model]: the reduced fences of reduce-STUDY (or of STEP) as the reduction placed them (--model: with the model's completion, as the patches place it)
  local study=$1 from=reduce-$1; shift
  [ "${1:-}" = --from ] && { from=$2; shift 2; }
  local r=$RESULTS/$from/reduce.json
  [ -f "$r" ] || { echo "no $from/reduce.json yet" >> "$STEP_DIR/log.txt"; return 1; }
  if [ "${1:-}" = --model ] && [ -z "$(reduce_ids "$r" completed)" ]; then
    echo "$study: no kept fences, nothing to complete" >> "$STEP_DIR/log.txt"; return 0
  fi
  local saved=$WORK/$STEP.reduce.json out=$WORK/$STEP
  unwrap "$r" > "$saved" || return 1
  local cmd=("$W" cost "case-studies/$study" --out "$out" --rounds "${ROUNDS:-30}" --fences "$saved" "$@")
  bounded "${LIMIT:-150}" "${cmd[@]}"
  local rc=$?
  cp "$out/cost/cost.json" "$STEP_DIR/" 2>/dev/null && json_result "$STEP_DIR/cost.json" "${cmd[@]}"
  return $rc
}
seeds_study() { # seeds_study STUDY [wmfix reduce options]: two more reductions (seeds 2 and 3) beside reduce-STUDY's seed 1; STUDY_DIR: a copy to reduce instead
  local study=$1 seed rc=0; shift
  for seed in 2 3; do
    # A seed an earlier call completed is kept as recorded, not run again (a journal of other
    # sources or runtime would start it afresh).
    if is_complete "$STEP_DIR/reduce-seed$seed.json"; then
      echo "# seed $seed: complete in an earlier call, kept" >> "$STEP_DIR/log.txt"
      continue
    fi
    local out=$WORK/${STUDY_DIR:+$STEP-}reduce-$study-seed$seed
    resumable_reduce "$out" "$STEP_DIR/journal-seed$seed.jsonl" \
      "$W" reduce "${STUDY_DIR:-case-studies/$study}" --out "$out" --hours 1 --jobs "$JOBS" --seed "$seed" "$@" || rc=$?
    cp "$out/reduce/reduce.json" "$STEP_DIR/reduce-seed$seed.json" 2>/dev/null &&
      json_result "$STEP_DIR/reduce-seed$seed.json" "${REDUCE_CMD[@]}"
    cp "$out/reduce/journal.jsonl" "$STEP_DIR/journal-seed$seed.jsonl" 2>/dev/null
  done
  case $rc in 0|3|5) return 0 ;; *) return $rc ;; esac
}
# unwrap JSON: what wmfix wrote, from a record json_result wrapped with its meta (or as it is).
unwrap() {
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); json.dump(d["result"] if "meta" in d else d, sys.stdout)' "$1"
}
# is_complete REDUCE_JSON: a reduction's record that says complete.
is_complete() {
  [ -f "$1" ] && unwrap "$1" | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin).get("result", {}).get("complete") is True else 1)' 2>/dev/null
}
# reduce_ids REDUCE_JSON WHAT: from a reduction's record, comma-separated ids: `completed` the
# kept fences and the model's, `in_loop` the kept fences that keep their in-body placement (all
# but those found needed after the loop only); or `steps`, its steps a run.
reduce_ids() {
  unwrap "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)
kept = set(r["result"]["fences"])
what = sys.argv[1]
if what == "steps":
    print(r.get("steps", 1))  # records before wmfix had steps: one
else:
    ids = {"completed": kept | {m["id"] for m in r.get("model", {}).get("fences", [])},
           "in_loop": kept - set(r["result"].get("after_loop_only", []))}[what]
    print(",".join(str(i) for i in sorted(ids)))' "$2"
}

# The kept fences with the model's completion must pass: RUNS sys-str+ runs with only those on.
# The ids come from the reduce step's record in the results folder (so a fresh machine can run
# it; the ids hold for the same sources).
completed_study() { # completed_study STUDY [FROM]: after reduce-STUDY (or the step FROM; in FROM_RESULTS, a results folder, if set)
  local study=$1 from=${2:-reduce-$1}
  local r=${FROM_RESULTS:-$RESULTS}/$from/reduce.json
  [ -f "$r" ] || { echo "no $from/reduce.json yet" >> "$STEP_DIR/log.txt"; return 1; }
  local ids
  ids=$(reduce_ids "$r" completed)
  [ -n "$ids" ] || { echo "$study: no kept fences, nothing to check" >> "$STEP_DIR/log.txt"; return 0; }
  # As the patches place them: the model's fences after their loops only, and kept loop fences
  # the reducer found needed after the loop only, without their in-body placement.
  local in_loop
  in_loop=$(reduce_ids "$r" in_loop)
  # At the steps a run the reduction had (its guarantee is a rate a step).
  # shellcheck disable=SC2086
  test_cell "$study" sys-str+ "$RUNS" "WMFIX_FENCES_IN_LOOP=$in_loop" -- --fences "$ids" --steps "$(reduce_ids "$r" steps)" ${TEST_OPTS:-}
}
# Issue 14: reductions, then what the reduced fences cost, with the model's completion, and two
# more seeds of each reduction (scripts/results.py reduce, agreement, cost).

# Several builds (steps) a run: ct-octree's fifth argument, ls-bh-nf's fourth. A fence whose
# absence errs in 1-2% of runs cost ct-octree's reduction on the H100 four add-back searches of
# 459-run checks (23 minutes), ls-bh-nf's one (588 s; 2026-11-26). With B builds a run such a
# fence errs in about B times as many runs, while a run costs little more (process start-up is
# most of it). The cells: the reduced set without one of its rarely needed fences, at 1 and 10
# builds a run; then the reductions at 10.
with_builds() { # with_builds STUDY B: STUDY_DIR, a copy of the study for B steps a run (its own output folders)
  STUDY_DIR=$WORK/$1-builds-$2
  rm -rf "$STUDY_DIR" && cp -r "case-studies/$1" "$STUDY_DIR"
}
builds_cell() { # builds_cell STUDY B FENCES [RUNS]: STUDY at B builds (steps) a run under sys-str+ with FENCES on
  local STUDY_DIR  # with_builds's, for this step only (bash scopes it dynamically)
  with_builds "$1" "$2" || return 1
  test_cell "$1" sys-str+ "${4:-$RUNS}" -- --fences "$3" --steps "$2" || return
  failed_builds "$WORK/$STEP/test"
}
# failed_builds DIR: which build (step) of a run failed, counted over the erring runs' logs
# (the harnesses print "build N: ..." or "step N: ..." for each failing one), into
# failed-builds.txt: whether a run's first build errs more often than its later ones
# (ls-bh-nf without fence 1, 2026-11-26: 29 failing steps of 4000, spread over all ten).
failed_builds() {
  local logs=$1/logs
  [ -d "$logs" ] || return 0
  find "$logs" -type f -exec grep -ho '^\(build\|step\) [0-9]*:' {} + |
    sort | uniq -c | sort -k2,2 -k3,3n > "$STEP_DIR/failed-builds.txt"
}
# At B steps a run (`--steps B`), --rare-rate (1%) is a rate a step: the stability check is
# sized for 1 - 0.99^B of runs, as if steps erred independently (measured for ct-octree and
# ls-bh-nf on the H100: case-studies/README.md, "Steps a run"). The steps run before wmfix had
# --steps (2cf6425 to 318a4ac) did the same by hand: a copy whose run command got B as its last
# argument, and --rare-rate 1 - 0.99^B; their records name those commands.
builds_reduce() { # builds_reduce STUDY B [seeds]: STUDY's reduction at B steps a run (seeds: two more seeds of it)
  local STUDY_DIR
  with_builds "$1" "$2" || return 1
  local fn=reduce_study; [ "${3:-}" = seeds ] && fn=seeds_study
  $fn "$1" --steps "$2"
}
# ct-octree's set reduced at 10 builds (fences 0, 3, 9, 14: not 2, 10, 13 as at one build),
# checked at 1 and 10 builds a run.
# Which step of a ten-step ls-bh-nf run errs without fence 1 (failed-builds.txt), over 400 runs.
# The short studies' seed-1 reductions again with wmfix 2cf6425 (their first ran with f3f1bcc):
# issue 14's median from one binary.
# ct-octree and ls-bh-nf again at one build with add-back split at a quarter (94d226b; their
# reduce-* split at the middle: 1,372 s and 588 s).
# `--steps 10` as wmfix has it since 7b2c14a (the ten-build rows above did it by hand): the same
# sizing, so the same times are expected; seeds 1 of the two studies, as a check of the option.
# And with the recheck of a set whose removals all fail (wmfix after 7b2c14a): ct-octree's ten-build
# seed 3 ran 50 failing removals after a 3-run check passed without fence 3 (511 s over three
# calls); its seeds 2 and 3 again.
# A ct-octree process of 1 build took 0.31-0.38 s natively on the H100, of 100 builds 0.40 s
# (2026-11-26): the process, not the build, is the cost; and ls-bh-nf's failing steps of ten-step
# runs spread evenly over the steps (builds-ls-bh-nf-10-no1-which). So 100 builds a run, checks
# sized for 1% a build (--rare-rate 1 - 0.99^100), and the cells that test the steps' independence.
# ct-octree's three seeds at ten steps (ef058bd, 2026-11-26) kept 0, 3, 4, 9, 13; 0, 3, 9, 14;
# 0, 3, 10, 11, 13: each set, their union and every fence, 400 ten-step runs each (4,000 builds),
# to tell a seed that missed a rarely needed fence from a fence needed by none.
# Each seed's set erred in 0.15-0.18% of builds, the union in 0.03%, every fence in none (the
# cells above, 2026-11-26): below the 1% a step the checks were sized for. ct-octree at ten steps
# with the stability check sized for 0.2% a step (about 230 ten-step runs a check).
# What ct-octree's set at ten builds a run costs (its cost-* row is of the one-build set, 6
# fences; ls-bh-nf's set is the same at both). The study's runs are ten builds now (steps = 10).

# sdk-red-nf under aim-str+: as many errors a run as sys-str+ and runs twice as fast on an H100
# (2026-11-25), so its 459-run stability check may end within issue 14's five minutes.

# The litmus engine: each test with and without the default stress (README's rates).
litmus_cell() { # litmus_cell TEST STRESS
  local cmd=("$W" litmus "$1" --distance 64 --stress "$2" --iterations "${LITMUS_LAUNCHES:-200}" --cache $WORK/cache)
  bounded "${LIMIT:-90}" "${cmd[@]}" || return $?
  { header "${cmd[@]}"; sed -n '/^GPU:/,$p' "$STEP_DIR/log.txt"; } > "$STEP_DIR/litmus.txt"
}

# The peer benchmark (issue 13): reeselevine/cuda-litmus at 4b6c4a0, from a checkout given as
# $PEER (default peer/cuda-litmus, an ignored folder carried to the GPU machine; no third-party
# code is in git). Its MP is made relaxed in a copy (as shipped it uses release/acquire and can
# show no weak outcome; kernels/mp.cu includes functions.cu itself). Both tools run interleaved, three rounds, each with and without its own
# stress; wmfix's LB and SB beside. runs.txt has one line per run, with how each number is
# read; scripts/results.py peer makes the table of medians and ratios.
peer_litmus() {
  local src=${PEER:-$ROOT/peer/cuda-litmus} dir=$WORK/peer runs=$STEP_DIR/runs.txt
  [ -f "$src/runner.cu" ] || { echo "no peer checkout at $src" >> "$STEP_DIR/log.txt"; return 1; }
  rm -rf "$dir" && cp -r "$src" "$dir" || return 1
  sed -i 's/cuda::memory_order_release/cuda::memory_order_relaxed/; s/cuda::memory_order_acquire/cuda::memory_order_relaxed/' "$dir/kernels/mp.cu"
  grep -q memory_order_acquire "$dir/kernels/mp.cu" && { echo "mp.cu still acquires" >> "$STEP_DIR/log.txt"; return 1; }
  (cd "$dir" && nvcc -O3 -DSCOPE_DEVICE -I. -rdc=true -arch=sm_90 runner.cu kernels/mp.cu -o mp-runner) >> "$STEP_DIR/log.txt" 2>&1 || return 1
  sed 's/^testIterations=.*/testIterations=1000/' "$dir/params/stress_params.txt" > "$dir/shipped.txt"
  sed 's/^testIterations=.*/testIterations=1000/; s/^\(barrierPct\|memStressPct\|preStressPct\|shufflePct\)=.*/\1=0/' "$dir/params/stress_params.txt" > "$dir/none.txt"
  {
    header "peer: $dir/mp-runner -s {none,shipped}.txt -t params/2-loc.txt; wmfix: $W litmus TEST --distance 64 --stress {none,default} [--sync|--dual] --iterations 2000 (-sync: with --sync, -dual: with --dual)"
    echo "# peer: instances = 'Total behaviors' (one per testing thread and iteration: each thread writes one instance and reads the next block's; threads whose two instances coincide are skipped and not counted, none with more than one testing block), weak = 'Number of weak behaviors' (r0=1 r1=0), seconds = 'Time taken' (the iteration loop: memsets, copies, both kernels)"
    echo "# wmfix: instances, weak (r0=1 r1=0 for MP) and seconds from its report (the timed launches after one untimed launch: kernels, evaluation, resets)"
  } > "$runs"
  local rep s t out
  for rep in 1 2 3; do
    for s in none shipped; do
      [ "$(left)" -gt 10 ] || return 124
      out=$(cd "$dir" && timeout --foreground -s INT 60 ./mp-runner -s "$s.txt" -t params/2-loc.txt 2>&1)
      echo "$out" >> "$STEP_DIR/log.txt"
      echo "tool=peer test=MP stress=$s rep=$rep instances=$(echo "$out" | sed -n 's/^Total behaviors: //p') weak=$(echo "$out" | sed -n 's/^Number of weak behaviors: //p') seconds=$(echo "$out" | sed -n 's/^Time taken: \([0-9.e+-]*\) seconds/\1/p')" >> "$runs"
    done
    for t in mp lb sb; do
      for s in none none-sync none-dual default default-sync default-dual; do
        [ "$(left)" -gt 10 ] || return 124
        local opts=(--stress "${s%%-*}")
        case $s in *-sync) opts+=(--sync) ;; *-dual) opts+=(--dual) ;; esac
        out=$(timeout --foreground -s INT 60 "$W" litmus "$t" --distance 64 "${opts[@]}" --iterations 2000 --cache $WORK/cache 2>&1)
        echo "$out" >> "$STEP_DIR/log.txt"
        echo "tool=wmfix test=${t^^} stress=$s rep=$rep $(echo "$out" | sed -n 's/^[A-Z]* at distance [0-9]*: \([0-9]*\) instances in [0-9]* launches, \([0-9.]*\) s$/instances=\1 seconds=\2/p') weak=$(echo "$out" | sed -n 's/^  weak: \([0-9]*\) .*/\1/p')" >> "$runs"
      done
    done
  done
}

# The engine's incantations, one at a time (issue 13's ablation): MP, LB and SB at distance 64
# with the default stress, varying the stressing blocks per launch and thread synchronisation.
litmus_ablation() {
  local f=$STEP_DIR/ablation.txt t v out
  header "$W litmus TEST --distance 64 --iterations 500 VARIANT" > "$f"
  for t in mp lb sb; do
    for v in "--stress none" "--stress none --sync" "--stress none --barrier" "--stress-blocks 1..8 --barrier" "--stress none --pack 4" "--stress none --pack 16" "--stress-blocks 1..8 --pack 4" "--stress-blocks 1..8 --pack 4 --sync" "--stress-blocks 1..8 --prestress 64" "--stress-blocks 1..8 --banks 64" "--stress none --banks 64" "--stress-blocks 1..8" "--stress-blocks 8..32" "--stress-blocks 32..128" "--stress-blocks 64..512" "--stress-blocks 64..512 --sync"; do
      case $v in --stress-blocks*) v="--stress default $v" ;; esac
      [ "$(left)" -gt 10 ] || return 124
      # shellcheck disable=SC2086
      out=$(timeout --foreground -s INT 60 "$W" litmus "$t" --distance 64 --iterations 500 --cache $WORK/cache $v 2>&1)
      echo "$out" >> "$STEP_DIR/log.txt"
      echo "$t | $v | $(echo "$out" | sed -n 's/^  weak: //p')" >> "$f"
    done
  done
}

# How the weak rate depends on the distance between x and y (the peer and ablation steps use 64),
# unstressed with --sync and with the default stress.
litmus_distances() {
  local f=$STEP_DIR/distances.txt t d s out
  header "$W litmus TEST --distance D --iterations 500 --stress S [--sync]" > "$f"
  for t in mp lb sb; do
    for s in none-sync default; do
      for d in 1 4 16 32 64 96 128 192 255; do
        [ "$(left)" -gt 10 ] || return 124
        local opts=(--stress "${s%-sync}")
        [ "$s" = "${s%-sync}" ] || opts+=(--sync)
        out=$(timeout --foreground -s INT 60 "$W" litmus "$t" --distance "$d" "${opts[@]}" --iterations 500 --cache "$WORK/cache" 2>&1)
        echo "$out" >> "$STEP_DIR/log.txt"
        echo "$t | $s | $d | $(echo "$out" | sed -n 's/^  weak: //p')" >> "$f"
      done
    done
    # Incantations together, unstressed, at 64.
    for s in "--sync --barrier" "--sync --pack 4" "--sync --barrier --pack 4" "--dual" "--dual --barrier" "--dual --pack 4"; do
      [ "$(left)" -gt 10 ] || return 124
      # shellcheck disable=SC2086
      out=$(timeout --foreground -s INT 60 "$W" litmus "$t" --distance 64 --stress none $s --iterations 500 --cache "$WORK/cache" 2>&1)
      echo "$out" >> "$STEP_DIR/log.txt"
      echo "$t | none $s | 64 | $(echo "$out" | sed -n 's/^  weak: //p')" >> "$f"
    done
  done
}

# Issue 11 on a GPU: the GPU check passes, a doubled SIGINT (timeout without --foreground
# signals wmfix and its process group) leaves complete records, --json, a device that is not there.
cli_checks() {
  local f=$STEP_DIR/checks.txt o=$WORK/cli rc
  rm -rf "$o"; mkdir -p "$o"
  header "issue 11 checks" > "$f"
  "$W" test case-studies/cbe-dot --out "$o/t" --runs 20 >> "$STEP_DIR/log.txt" 2>&1
  echo "test, 20 runs: exit $? (0 or 2 expected)" >> "$f"
  timeout -s INT --preserve-status 25 "$W" test case-studies/cbe-dot --out "$o/t2" --runs 100000 >> "$STEP_DIR/log.txt" 2>&1
  rc=$?
  echo "test cut by timeout -s INT (doubled signal): exit $rc (130 expected); summary says interrupted: $(grep -o '"interrupted": [a-z]*' "$o/t2/test/summary.json")" >> "$f"
  timeout -s INT --preserve-status 20 "$W" reduce case-studies/ls-bh-nf --out "$o/r" --hours 1 >> "$STEP_DIR/log.txt" 2>&1
  rc=$?
  echo "reduce cut by timeout -s INT: exit $rc (130 expected); reduce.json: $(grep -o '"interrupted": [a-z]*' "$o/r/reduce/reduce.json"); fences.patch starts: $(head -c 40 "$o/r/reduce/fences.patch")" >> "$f"
  "$W" test case-studies/cbe-dot --out "$o/t" --runs 20 --json > "$o/t.json" 2>> "$STEP_DIR/log.txt"
  echo "test --json: exit $?; parses: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(type(d).__name__, sorted(d)[:6])' "$o/t.json" 2>&1)" >> "$f"
  CUDA_VISIBLE_DEVICES=99 "$W" test case-studies/cbe-dot --out "$o/t3" > "$o/nodev.txt" 2>&1
  echo "CUDA_VISIBLE_DEVICES=99: exit $? (69 expected): $(tail -n 1 "$o/nodev.txt")" >> "$f"
}

# Issue 29: one GPU against two, on a two-GPU machine, in the same call (TAG names a folder of its
# own: results/<TAG>-<gpu>). Each study's `wmfix test` (240 sys-str+ runs, runs an hour from its
# summary's seconds) and `wmfix reduce` (its defaults: ten steps a run for ct-octree and ls-bh-nf)
# on GPU 0 with 8 runs at a time, then on GPUs 0 and 1 with 8 a GPU; seed 1 both times.
gpu_list() { seq -s, 0 $(($1 - 1)); } # gpu_list N: 0,1,...,N-1
gpus_test() { JOBS=$((8 * $2)) test_cell "$1" sys-str+ "${GPUS_RUNS:-240}" -- --gpus "$(gpu_list "$2")"; } # gpus_test STUDY N
gpus_reduce() { JOBS=$((8 * $2)) reduce_study "$1" --gpus "$(gpu_list "$2")" "${@:3}"; } # gpus_reduce STUDY N [OPTIONS]
gpus_test_mps() { JOBS=$((8 * $2)) test_cell "$1" sys-str+ "${GPUS_RUNS:-480}" -- --gpus "$(gpu_list "$2")" --mps; } # gpus_test_mps STUDY N

# Issue 26: fence sites on shared or local memory, told at run time (the runtime fences and counts
# a site only when its access is on global memory; WMFIX_COVERAGE). sdk-red-tmpl (the SDK's
# threadFenceReduction shape: shared memory through a call with explicit template arguments, a
# struct in local memory) tested and reduced; each fence-less study tested with the runtime that
# skips such sites (its summary.json rows carry the coverage). TAG: a folder of its own.
# Does recording coverage change what stress shows? (cub-scan-nf erred in 57/100 runs recording it,
# wmfix d8d157c, against 78/100 with the runtime before.) Each study without and with --coverage.

# Issue 29: where a short CUDA process's start goes (scripts/gpu/ctx_probe.cu: driver init,
# context, first kernel), alone and 16 at a time, with and without a context held by another
# process (as wmfix holds one while runs go).
probe_round() { # probe_round FILE EXE LABEL: 8 processes alone, then 48 at 16 at a time
  local f=$1 exe=$2
  echo "## $3: one at a time" >> "$f"
  for i in $(seq 8); do "$exe" >> "$f" 2>&1; done
  echo "## $3: 48 processes, 16 at a time" >> "$f"
  local s; s=$(date +%s.%N)
  seq 48 | xargs -P 16 -I{} "$exe" >> "$f" 2>&1
  echo "## $3: 48 in $(python3 -c "import time; print(round(time.time() - $s, 2))") s" >> "$f"
}
ctx_probe() {
  local f=$STEP_DIR/probe.txt exe=$WORK/ctx_probe
  nvcc -O2 -arch=sm_90 -o "$exe" scripts/gpu/ctx_probe.cu >> "$STEP_DIR/log.txt" 2>&1 || return 1
  header "scripts/gpu/ctx_probe.cu: 8 alone, then 48 at 16 at a time; then again with a context held" > "$f"
  probe_round "$f" "$exe" "nothing held"
  python3 -c "import ctypes, time; c = ctypes.CDLL('libcuda.so.1'); c.cuInit(0); d = ctypes.c_int(); c.cuDeviceGet(ctypes.byref(d), 0); x = ctypes.c_void_p(); c.cuDevicePrimaryCtxRetain(ctypes.byref(x), d); time.sleep(120)" &
  local holder=$!
  sleep 2
  probe_round "$f" "$exe" "a context held"
  kill $holder 2>/dev/null
}

# Issue 26: a library case study with a fence removed. cub-scan-lib-nf: CUB's DeviceScan over a
# struct (its two-word tile state) with the status release taken out of a copy of CUB's header
# (the study's prepare.sh, from the CUB this nvcc ships); as it is (must err), with every fence
# (must not), reduced (the fences after SetPartial's and SetInclusive's value stores are the ones
# the release gave); and CUB as shipped (the same harness on the toolkit's header: must not err).
lib_nf() { # lib_nf LIMIT FUNCTION ARGS...: after prepare.sh (a first build takes a minute)
  local limit=$1; shift
  sh case-studies/cub-scan-lib-nf/prepare.sh >> "$STEP_DIR/log.txt" 2>&1 || return 1
  LIMIT=$limit "$@"
}
lib_shipped() { # lib_shipped ENV: the study with CUB's own header (no nf-include/ on the include path)
  local dir=$WORK/cub-scan-lib-shipped
  [ -d "$dir" ] && [ -f "$WORK/build-cub-scan-lib-shipped/build.stamp" ] && { STUDY_DIR=$dir LIMIT=200 test_cell cub-scan-lib-shipped "$1" 200; return; }
  rm -rf "$dir" && mkdir -p "$dir" && cp case-studies/cub-scan-lib-nf/scan.cu "$dir/"
  sed 's/-Inf-include/-DWMFIX_CUB_SCAN_LIB_NF=0/' case-studies/cub-scan-lib-nf/wmfix.toml > "$dir/wmfix.toml"
  STUDY_DIR=$dir LIMIT=200 test_cell cub-scan-lib-shipped "$1" 200
}
# Under `+` environments every run timed out (H100, 2026-11-26, lib-nf-test-*): CUB's scan takes
# its tile from blockIdx and waits for the tile before it, so it needs blocks dispatched in order,
# which block randomisation takes away. Hence sys-str- here.
# The reducer keeping the application's fences over a library header's that order the same
# accesses (reduce-cub-scan-lib-nf kept CUB's ThreadStore internals, fence 784, for the stores
# in the study's own copy of the header).
# With keep_block_order = true (the studies' wmfix.toml since): `+` keeps blocks in order.
# The library study reduced as the others are, under the default environment (sys-str+ with
# blocks kept in order), and CUB as shipped at that setting with time for 200 runs.

# Issue 29: does a private MPS server (nvidia-cuda-mps-control, its pipe and log folders under
# $WORK; quit after) take CUDA context creation off the host's serial path? The probe as above
# under it, then cbe-dot's test (as gpus-1-test-cbe-dot) under it.
with_mps() { # with_mps CMD...: CMD with an MPS server of its own
  command -v nvidia-cuda-mps-control > /dev/null || { echo "no nvidia-cuda-mps-control" >> "$STEP_DIR/log.txt"; return 1; }
  export CUDA_MPS_PIPE_DIRECTORY=$WORK/mps-pipe CUDA_MPS_LOG_DIRECTORY=$WORK/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d >> "$STEP_DIR/log.txt" 2>&1 || return 1
  "$@"
  local rc=$?
  echo quit | timeout 20 nvidia-cuda-mps-control >> "$STEP_DIR/log.txt" 2>&1
  sleep 1
  cp "$CUDA_MPS_LOG_DIRECTORY"/*.log "$STEP_DIR/" 2>/dev/null
  unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  return $rc
}
ctx_probe_mps() {
  local f=$STEP_DIR/probe.txt exe=$WORK/ctx_probe
  nvcc -O2 -arch=sm_90 -o "$exe" scripts/gpu/ctx_probe.cu >> "$STEP_DIR/log.txt" 2>&1 || return 1
  header "scripts/gpu/ctx_probe.cu under MPS: 8 alone, then 48 at 16 at a time" > "$f"
  probe_round "$f" "$exe" MPS
}
# The same on a two-GPU machine (TAG: a folder of its own): one MPS server for both GPUs.
# wmfix's own server (`--mps`, since 2026-11-26), one GPU: as mps-1-test-cbe-dot, and a reduction.
wmfix_mps_test() { JOBS=8 test_cell "$1" sys-str+ "${GPUS_RUNS:-240}" -- --gpus 0 --mps; }

# Issue 27: wmfix race. The ground-truth suite (tests/race-suite; scripts/race_suite.py checks
# each kernel's verdict into verdicts.txt), every case study in one detection run at its own
# settings (the fence-less ones must race, the fenced ones not), sdk-red-nf and sdk-red at one
# reduction a run (where stress shows next to nothing), and compute-sanitizer racecheck on the
# same programs beside it. Each step keeps race.json (wrapped with its provenance) and the
# fences.json it names sites of. RACE_EVENTS: trace records a run may hold (default 10^8, 4 GB
# of device memory).
race_step() { # race_step DIR [wmfix race options]: into $WORK/$STEP (RACE_DEFAULTS=1: no --events)
  local dir=$1; shift
  local out=$WORK/$STEP events=(--events "${RACE_EVENTS:-100000000}")
  [ "${RACE_DEFAULTS:-}" = 1 ] && events=()
  local cmd=("$W" race "$dir" --out "$out" "${events[@]}" "$@")
  bounded "${LIMIT:-240}" "${cmd[@]}"
  local rc=$?
  cp "$out/fences.json" "$STEP_DIR/" 2>/dev/null
  cp "$out/race/race.json" "$STEP_DIR/" 2>/dev/null && json_result "$STEP_DIR/race.json" "${cmd[@]}"
  # A small trace comes back, to check it again offline when the detector changes.
  local t=$out/race/trace-0.bin
  [ -f "$t" ] && [ "$(stat -c %s "$t")" -lt 40000000 ] && gzip -c "$t" > "$STEP_DIR/trace-0.bin.gz"
  [ -f "$STEP_DIR/race.json" ] || return 1
  case $rc in 0|2|6) return 0 ;; *) return $rc ;; esac
}
race_suite() { # race_suite [DIR]: a suite of ok_/race_ kernels (default tests/race-suite)
  local dir=${1:-tests/race-suite}
  race_step "$dir" || return 1
  python3 scripts/race_suite.py "$STEP_DIR" "$dir/suite.cu" > "$STEP_DIR/verdicts.txt" 2>&1
  tail -n 1 "$STEP_DIR/verdicts.txt" >> "$STEP_DIR/log.txt"
  return 0
}
one_reduction() { # one_reduction STUDY [wmfix race options]: the study run as `./red 256 256 65536 1`
  local copy=$WORK/$1-one-reduction
  rm -rf "$copy" && cp -r "case-studies/$1" "$copy" || return 1
  sed -i 's|^run = .*|run = "./red 256 256 65536 1"|' "$copy/wmfix.toml"
  shift
  race_step "$copy" "$@"
}
racecheck() { # racecheck DIR: compute-sanitizer's racecheck on the original program, timed
  local dir=$1 out=$WORK/$STEP run
  run=$(sed -n 's/^run = "\(.*\)"$/\1/p' "$dir/wmfix.toml")
  run=${run//\{steps\}/1} # one build a run, as wmfix race runs it
  bounded 240 "$W" build "$dir" --out "$out" || return 1
  local f=$STEP_DIR/racecheck.txt t0
  header "cd original && compute-sanitizer --tool racecheck $run" > "$f"
  t0=$(date +%s.%N)
  (cd "$out/original" && timeout --foreground -s INT 200 compute-sanitizer --tool racecheck --print-limit 20 $run) >> "$f" 2>&1
  echo "# exit $? after $(python3 -c "print(round($(date +%s.%N) - $t0, 2))") s" >> "$f"
}
racecheck_one() { # racecheck_one STUDY: racecheck of the study at one reduction a run
  local copy=$WORK/$1-one-reduction-rc
  rm -rf "$copy" && cp -r "case-studies/$1" "$copy" || return 1
  sed -i 's|^run = .*|run = "./red 256 256 65536 1"|' "$copy/wmfix.toml"
  racecheck "$copy"
}
# runtime-cu/README.md's costs: tests/overhead_bench.cu, each kernel as written and instrumented
# (median of 100 launches each), into overhead.txt.
overhead_bench() {
  local f=$STEP_DIR/overhead.txt bin=$WORK/overhead_bench
  header "nvcc -O3 -arch=sm_90 -std=c++17 -o overhead_bench runtime-cu/tests/overhead_bench.cu && ./overhead_bench" > "$f"
  nvcc -O3 -arch=sm_90 -std=c++17 -o "$bin" runtime-cu/tests/overhead_bench.cu >> "$f" 2>&1 || return 1
  timeout --foreground -s INT 120 "$bin" >> "$f" 2>&1
  local rc=$?
  echo "# exit $rc" >> "$f"
  return $rc
}
# The runtime's own GPU tests (runtime-cu/tests/run_gpu_tests.sh: the mapping, two TUs with and
# without -rdc, the host tests, memcheck), after any change to the runtime: summary.txt and one
# .txt a test; the build folder left out.
runtime_tests() {
  local f=$STEP_DIR/summary.txt
  BUILD_DIR=$WORK/runtime-build \
    timeout --foreground -s INT "${LIMIT:-300}" runtime-cu/tests/run_gpu_tests.sh "$STEP_DIR" > "$STEP_DIR/log.txt" 2>&1
  local rc=$?
  { header "runtime-cu/tests/run_gpu_tests.sh OUT"; cat "$f" 2>/dev/null; echo "# exit $rc"; } > "$f.new" && mv "$f.new" "$f"
  return $rc
}
race_small() { RACE_EVENTS=4000000 race_step "$@"; } # the first reductions of 300
# The rest of the studies under racecheck, for the side-by-side table beside wmfix race.
# Each fence-less study with its stress reduction's fences and their model completion enabled
# (case-studies/README.md's H100 rows; ct-octree: the union of its seeds' sets): no race may be left.
race_reduced() { local s=$1; shift; race_step "case-studies/$s" --fences "$@"; }
# `reduce --oracle race` (issue 27): the start set from one detection run, confirmed by the
# stress stability check (add-back if it fails), with wmfix's MPS server; the wall time is
# reduce.json's `wall_seconds`. `race-start.json` says what the traces decided.
race_reduce() {
  reduce_study "$@" --oracle race --race-events "${RACE_EVENTS:-100000000}" --mps
  local rc=$?
  cp "$WORK/$STEP/reduce/race-start.json" "$STEP_DIR/" 2>/dev/null
  return $rc
}
# sdk-red-nf's 300 reductions write 237 M events: its first reductions (4 M records) are enough.
race_reduce_small() { RACE_EVENTS=4000000 race_reduce "$@"; }
# What the race oracle's reductions kept, with the model's completion: 1,000 stressed runs each.
race_stressed() { RUNS=1000 LIMIT=${LIMIT:-240} completed_study "$1" "reduce-race-$1"; }
# The same server over one GPU and two, in one call of a two-GPU machine (TAG: a folder of its
# own): does MPS lift the host's serial context creation that kept two GPUs at 1.04x?

# Issue 29: warm processes (`--warm`: each process calls the program's main once a run and
# serves runs until one errs, so runs share a CUDA context) against a process a run, over one GPU
# and two, in one call of a two-GPU machine (TAG: a folder of its own). First a smoke check (20
# warm runs, their logs kept); cbe-dot with every fence on (its runs pass, as most of a
# reduction's checks do); the fenced studies warm (must not err: what one run leaves in the
# process must not fail the next); ls-bh-nf's and ct-octree's reductions.
warm_smoke() {
  test_cell cbe-dot sys-str+ 20 -- --fences all --warm --gpus 0
  local rc=$?
  cp "$WORK/$STEP/warm/"*.log "$STEP_DIR/" 2>/dev/null
  return $rc
}
gpus_runs() { JOBS=$((8 * $2)) test_cell "$1" sys-str+ "${GPUS_RUNS:-480}" -- --gpus "$(gpu_list "$2")" "${@:3}"; } # gpus_runs STUDY N [OPTIONS]
# Long enough that the processes' start is a small part: 4,800 runs (about a minute on one GPU).
gpus_runs_long() { GPUS_RUNS=4800 gpus_runs "$@"; }
# The same after a process served up to 1,000 runs instead of 100 (fewer restarts, each of which
# makes a context while the others wait).
# Issue 27 with warm runs: the race oracle's sets with their model completion, 1,000 stressed
# runs each; the race oracle's reductions with a warm stress confirmation.
race_stressed_warm() { TEST_OPTS=--warm race_stressed "$1"; }
race_reduce_warm() { # the race oracle, its stress confirmation warm (no MPS)
  reduce_study "$@" --oracle race --race-events "${RACE_EVENTS:-100000000}" --warm
  local rc=$?
  cp "$WORK/$STEP/reduce/race-start.json" "$STEP_DIR/" 2>/dev/null
  return $rc
}
race_reduce_warm_small() { RACE_EVENTS=4000000 race_reduce_warm "$@"; }
# What those reductions kept, with the model's completion: 1,000 warm stressed runs each.
# sdk-red-nf's runs hold 300 reductions each: 1,000 of them take about 320 s at 12 at a time.
race_reduced_warm_stressed() {
  local limit=240 jobs=$JOBS
  [ "$1" = sdk-red-nf ] && limit=360 jobs=12
  RUNS=1000 LIMIT=${LIMIT:-$limit} JOBS=$jobs TEST_OPTS=--warm completed_study "$1" "warm-reduce-race-$1"
}
# ct-octree's missing fences err in about 1.6% of builds where the race oracle's set lacks them
# (2026-11-27e): the stability check's default --rare-rate (5% a step) is too coarse; at 1%.
race_reduce_warm_rare() { race_reduce_warm "$@" --rare-rate 0.01; }
rare_stressed() { RUNS=1000 LIMIT=${LIMIT:-240} TEST_OPTS=--warm completed_study "$1" "warm-reduce-race-rare-$1"; }
# ct-octree's rarely needed fences show in some detection runs' traces only: four runs.
race_reduce_warm_runs4() { race_reduce_warm "$@" --race-runs 4; }
runs4_stressed() { RUNS=1000 LIMIT=${LIMIT:-240} TEST_OPTS=--warm completed_study "$1" "warm-reduce-race-runs4-$1"; }

# Issue 44: no silent wrong answer. `wmfix race` at its defaults (the trace sized from the
# device's free memory: no --events) on the ten case studies, each launch checked on its own:
# race.json's `complete` must be true (every event checked), 7 race and 3 none. sdk-red's and
# sdk-red-nf's 300 reductions a run make 237 M events.
trust_race() { RACE_DEFAULTS=1 LIMIT=${LIMIT:-300} race_step "$@"; }
# reduce --oracle race on threadFenceReduction without its fence, one launch a run (sdk-red-nf
# at one reduction), where stress rarely shows the race: the fences ordering the race the
# detector saw (writer and reader side) are kept, each with its proof in reduce.json.
trust_reduce_one() {
  local copy=$WORK/sdk-red-nf-one-reduce
  rm -rf "$copy" && cp -r case-studies/sdk-red-nf "$copy" || return 1
  sed -i 's|^run = .*|run = "./red 256 256 65536 1"|' "$copy/wmfix.toml"
  STUDY_DIR=$copy reduce_study sdk-red-nf --oracle race --mps
  local rc=$?
  cp "$WORK/$STEP/reduce/race-start.json" "$STEP_DIR/" 2>/dev/null
  return $rc
}
# The same under PTX strictly (`--strict`: the last block's barrier completes no acquire, so the
# reader side needs its fence too), at 256 blocks and at 16, where stress shows the race less.
trust_reduce_strict() { # trust_reduce_strict BLOCKS
  local copy=$WORK/sdk-red-nf-one-strict-$1
  rm -rf "$copy" && cp -r case-studies/sdk-red-nf "$copy" || return 1
  sed -i "s|^run = .*|run = \"./red $1 256 65536 1\"|" "$copy/wmfix.toml"
  STUDY_DIR=$copy reduce_study sdk-red-nf --oracle race --strict --mps
  local rc=$?
  cp "$WORK/$STEP/reduce/race-start.json" "$STEP_DIR/" 2>/dev/null
  return $rc
}
# The same at sdk-red-nf's own 300 reductions a run (237 M events, now checked whole where the
# reductions of 2026-11-27 read the first 4 M), its stress confirmation warm.
trust_reduce_full() {
  reduce_study sdk-red-nf --oracle race --warm
  local rc=$?
  cp "$WORK/$STEP/reduce/race-start.json" "$STEP_DIR/" 2>/dev/null
  return $rc
}
# A program whose module-scope state makes a second call of main in one process err
# (tests/gpu-programs/module-state): `wmfix test` cold and --warm, every fence on, sys-str+; the
# warm one must fall back to cold runs and give the same error rate (0).
trust_module_state() { STUDY_DIR=tests/gpu-programs/module-state test_cell module-state sys-str+ 100 -- --fences all "$@"; }

# Issue 48: warm processes that serve on after a run that failed its post-condition. `before` is
# wmfix as it was (carry/wmfix-old[.xz] and carry/VERSION-old: a run that erred ended its process),
# `after` this one. Fence-less runs (nearly every one errs) of three studies: cold (the error
# rates), warm before on one GPU, warm after on one GPU and on two (runs/h: summary.json's
# runs_per_hour); then stress reductions (--warm) and the race oracle's reductions with their warm
# stress confirmation, before and after (wall time: reduce.json's wall_seconds).
OLD_W=$ROOT/carry/wmfix-old
before() { # before FUNCTION ARGS...: FUNCTION with the old wmfix, its own builds and provenance
  # Unpacked only by a step that runs it (listing the steps, or a test, writes nothing).
  if [ ! -x "$OLD_W" ] && [ -f "$OLD_W.xz" ]; then xz -dc "$OLD_W.xz" >"$OLD_W" && chmod +x "$OLD_W"; fi
  [ -x "$OLD_W" ] || { echo "no $OLD_W" >> "$STEP_DIR/log.txt"; return 1; }
  W=$OLD_W COMMIT=$(cat "$ROOT/carry/VERSION-old" 2>/dev/null || echo unknown) BUILD_TAG=old- "$@"
}
unfenced_runs() { # unfenced_runs STUDY GPUS RUNS [wmfix test options]; JOBS_A_GPU (default 8)
  JOBS=$((${JOBS_A_GPU:-8} * $2)) LIMIT=${LIMIT:-120} test_cell "$1" sys-str+ "$3" -- --fences none --gpus "$(gpu_list "$2")" "${@:4}"
}
# The first call's open questions: cbe-ht's cold error rate (99/100 against 94.1% of 1,600 warm)
# on a larger sample; one GPU against two over runs long enough that the processes' start is a
# small part (3,200 runs of cbe-dot and cbe-ht took a few seconds in all); tpo-tm, whose warm runs
# take about 0.21 s a worker, with 16 runs at a time a GPU.
serve_on_16() { JOBS_A_GPU=16 unfenced_runs "$@"; }
# One and four runs at a time: how much of an erring run's GPU time is the kernel itself and how
# much the processes taking turns on the GPU.
serve_on_j() { JOBS_A_GPU=$1 unfenced_runs "${@:2}"; }
# The same cells as serve-on-after-1-*, with the binary that paces warm runs (run::pace: as
# many at a time a GPU as make the most runs, where the cells above had 8 at a time).
# Paced over runs long enough that the processes' start is a small part, on one GPU and two
# (issue 48: two GPUs at least 1.8x one): 8,000 fence-less runs a GPU.
paced_long() { LIMIT=200 unfenced_runs "$@"; }
paced_xl() { LIMIT=300 unfenced_runs "$@"; }
# tpo-tm's erring runs are bound by the GPU time each takes (16 at a time a GPU gave the rate of
# 8): with wmfix's MPS server the processes' kernels can run side by side.
# MPS runs the kernels of several processes side by side, a testing environment of its own: the
# warm cells' error rates are compared with cold runs under the same server.
cold_mps() { LIMIT=200 unfenced_runs "$1" 1 "$2" --mps; }
# The same reductions with warm runs paced per GPU (run::pace), the binary at carry/wmfix.
# Issue 44, item 4: public programs (cuda-samples' and HeteroSync's, scripts/public_programs.py's
# table), prepared on the workstation into carry/public (`python3 scripts/public_programs.py
# prepare /work/.mirror carry/public`: no third-party code in the repository). `wmfix build` on
# each, 12 at a time: the original and the instrumented program built, then run natively, the
# instrumented one with its fences off and no stress; it must end as the original does.
# public.json (each program's builds, wmfix's exit and the check's line) and public.md, the table.
trust_public() {
  [ -d carry/public ] || { echo "no carry/public: run scripts/public_programs.py prepare first" >> "$STEP_DIR/log.txt"; return 1; }
  local cmd=(python3 scripts/public_programs.py check "$W" carry/public "$WORK/public" --jobs 12)
  bounded "${LIMIT:-420}" "${cmd[@]}"
  local rc=$?
  cp "$WORK/public/public.md" "$STEP_DIR/public.md" 2>/dev/null
  cp "$WORK/public/public.json" "$STEP_DIR/public.json" 2>/dev/null && json_result "$STEP_DIR/public.json" "${cmd[@]}"
  [ -f "$STEP_DIR/public.json" ] || return 1
  return $rc
}

# Issue 46: the race ground truth (tests/ground_truth: kernels labelled by construction under
# ptx and scoped-hrf), written on the workstation by `cargo test --profile test-fast --test
# race_ground_truth` into target/race-ground-truth and carried as carry/race-ground-truth (the
# GPU machine has no cargo). `wmfix race` on it under each model (RACE_DEFAULTS: the trace a
# quarter of free memory), then scripts/race_ground_truth.py against labels.json: confusion.txt,
# the wrong kernels, exit 1 if any. Repeated (-again-N) for the same verdict on every run.
GROUND_TRUTH=${GROUND_TRUTH:-carry/race-ground-truth}
ground_truth() { # ground_truth MODEL [wmfix race options]
  [ -d "$GROUND_TRUTH" ] || { echo "no $GROUND_TRUTH" >> "$STEP_DIR/log.txt"; return 1; }
  rm -rf "$WORK/gt-$STEP" && cp -r "$GROUND_TRUTH" "$WORK/gt-$STEP"
  # One build (the original and the detection variant: most of a step's time) serves every
  # ground-truth step of the call.
  BUILT="$BUILT race .wmfix-output" prebuilt race-ground-truth "$WORK/$STEP"
  RACE_DEFAULTS=1 LIMIT=${LIMIT:-480} race_step "$WORK/gt-$STEP" --model "$@" || return 1
  BUILT="$BUILT race .wmfix-output" keep_build race-ground-truth "$WORK/$STEP"
  python3 scripts/race_ground_truth.py "$STEP_DIR" "$WORK/gt-$STEP/labels.json" > "$STEP_DIR/confusion.txt" 2>&1
  local rc=$?
  # A wrong verdict keeps its trace (to replay the kernel on the workstation); else it goes.
  [ $rc -eq 0 ] && rm -f "$STEP_DIR/trace-0.bin.gz"
  tail -n 3 "$STEP_DIR/confusion.txt" >> "$STEP_DIR/log.txt"
  return $rc
}
# compute-sanitizer's racecheck on the same suite as written (issue 46's side-by-side table):
# racecheck.txt.xz, and confusion.txt from scripts/race_ground_truth.py --racecheck.
racecheck_ground_truth() {
  [ -d "$GROUND_TRUTH" ] || { echo "no $GROUND_TRUTH" >> "$STEP_DIR/log.txt"; return 1; }
  local dir=$WORK/gt-$STEP build f=$STEP_DIR/racecheck.txt
  rm -rf "$dir" && cp -r "$GROUND_TRUTH" "$dir"
  build=$(sed -n "s/^build = '\(.*\)'$/\1/p" "$dir/wmfix.toml")
  (cd "$dir" && bounded 300 bash -c "$build") || return 1
  header "cd race-ground-truth && compute-sanitizer --tool racecheck --print-limit 100000 ./suite" > "$f"
  (cd "$dir" && bounded 400 compute-sanitizer --tool racecheck --print-limit 100000 --log-file "$f.log" ./suite)
  local rc=$?
  cat "$f.log" >> "$f" 2>/dev/null && rm -f "$f.log"
  echo "# exit $rc" >> "$f"
  python3 scripts/race_ground_truth.py --racecheck "$f" "$dir/labels.json" > "$STEP_DIR/confusion.txt" 2>&1
  xz -T0 -f "$f"
  [ $rc -eq 0 ]
}
# Issue 46's applications (case-studies/ra-*): each in its correct build and its racy one
# (-DRACY: block-scope atomics or fences across blocks), under both models, at the defaults.
race_app() { # race_app STUDY ok|racy MODEL
  local copy=$WORK/$STEP-app
  rm -rf "$copy" && cp -r "case-studies/$1" "$copy" || return 1
  [ "$2" = racy ] && sed -i 's|^build = "nvcc |build = "nvcc -DRACY |' "$copy/wmfix.toml"
  RACE_DEFAULTS=1 race_step "$copy" --model "$3"
}

