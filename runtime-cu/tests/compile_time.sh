#!/usr/bin/env bash
# What the runtime costs each compiled file (issue 45), side by side in one run: a one-line
# kernel and a case study, each compiled as written, instrumented with the runtime of OLD (a
# commit before the split, default 3e8f496: wmfix.cuh with <string>, <vector>, <algorithm>...)
# and instrumented with this checkout's runtime; and, apart, the file as written with only
# this checkout's wmfix.cuh included (`header`: what the runtime's header costs a file that
# includes it, without the instrumented code's own device code, such as the stressing loops
# each translation unit with a kernel compiles once). The instrumented text is the same (the
# rewriter's output, with the current wmfix); only the runtime folder beside it differs.
# Compiles alternate between the three, REPEATS times (default 9); prints every compile's wall
# and CPU seconds (user + system of nvcc and everything it runs: steadier than wall time on a
# machine that others share) and the medians. No GPU needed.
#
#   source scripts/nvcc-env.sh; runtime-cu/tests/compile_time.sh [OUT_FILE]
#
# Environment: WMFIX (the wmfix binary, default target/test-fast/wmfix), OLD, REPEATS, FLAGS
# (default: -std=c++17 -O3 -arch=sm_90 -c, as the case studies build).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${1:-/dev/stdout}"
wmfix="${WMFIX:-$root/target/test-fast/wmfix}"
old="${OLD:-3e8f496}"
repeats="${REPEATS:-9}"
read -r -a flags <<<"${FLAGS:--std=c++17 -O3 -arch=sm_90 -c}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The inputs: a one-line kernel and cbe-dot.
mkdir -p "$work/one"
printf '__global__ void k(float* a) { a[threadIdx.x] = 1; }\nint main() { k<<<1, 32>>>(nullptr); return 0; }\n' >"$work/one/k.cu"
cp -r "$root/case-studies/cbe-dot" "$work/study"
for app in one study; do
  "$wmfix" insert "$work/$app" --out "$work/$app-out" >/dev/null
  # The same instrumented tree beside the old runtime.
  mkdir -p "$work/$app-old/runtime"
  cp -r "$work/$app-out/tree" "$work/$app-old/tree"
  git -C "$root" archive "$old" runtime-cu | tar -x -C "$work/$app-old/runtime" --strip-components=1
  # The file as written, including only the header.
  for f in "$work/$app"/*.cu; do
    { echo '#include "../runtime/wmfix.cuh"'; cat "$f"; } >"$work/$app-out/tree/header-$(basename "$f")"
  done
done

time_one() {  # time_one DIR FILE: "wall/cpu" seconds of one compile, "failed/failed" if it fails
  if ! (cd "$1" && /usr/bin/time -f '%e %U %S' -o "$work/time" nvcc "${flags[@]}" "$2" -o /dev/null 2>/dev/null); then
    # The old runtime lacks macros the current rewriter emits (cbe-dot since the fence sites of
    # several places): there is no "old" figure for such a file.
    printf 'failed/failed'
    return
  fi
  awk '{printf "%.2f/%.2f", $1, $2 + $3}' "$work/time"
}

diff_of() { awk -v a="$1" -v b="$2" 'BEGIN {print (a == "nan" ? "nan" : a - b)}'; }

# The median of the numbers on stdin, "nan" for none.
median() { { grep -E '^[0-9.]+$' || true; } | sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

{
  echo "# wmfix runtime compile time per file (runtime-cu/tests/compile_time.sh)"
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(uname -n), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
  echo "# wmfix: $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- runtime-cu ':!runtime-cu/README.md' || echo ' (runtime-cu modified)')  old runtime: $old"
  echo "# nvcc: $(nvcc --version | tail -n 1)  flags: ${flags[*]}  repeats: $repeats"
  echo "# file variant wall/CPU seconds..."
  for app in one study; do
    file=k.cu
    [ "$app" = study ] && file=dot.cu
    declare -A times=()
    for ((i = 0; i < repeats; i++)); do
      times[plain]+="$(time_one "$work/$app" "$file") "
      times[old]+="$(time_one "$work/$app-old/tree" "$file") "
      times[new]+="$(time_one "$work/$app-out/tree" "$file") "
      times[header]+="$(time_one "$work/$app-out/tree" "header-$file") "
    done
    for v in plain old new header; do
      echo "$file $v ${times[$v]}"
    done
    for part in 1 2; do  # 1: wall, 2: CPU
      what=wall
      [ $part = 2 ] && what=CPU
      p=$(tr ' ' '\n' <<<"${times[plain]}" | grep . | cut -d/ -f$part | median)
      o=$(tr ' ' '\n' <<<"${times[old]}" | grep . | cut -d/ -f$part | median)
      n=$(tr ' ' '\n' <<<"${times[new]}" | grep . | cut -d/ -f$part | median)
      h=$(tr ' ' '\n' <<<"${times[header]}" | grep . | cut -d/ -f$part | median)
      printf '%s median %s: as written %.2f s, old runtime %.2f s (%+.2f s), new runtime %.2f s (%+.2f s), as written with wmfix.cuh %.2f s (%+.2f s)\n' \
        "$file" "$what" "$p" "$o" "$(diff_of "$o" "$p")" "$n" "$(diff_of "$n" "$p")" "$h" "$(diff_of "$h" "$p")"
    done
    unset times
  done
} >"$out"
