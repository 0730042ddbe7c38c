#!/usr/bin/env bash
# Builds and runs the wmfix runtime tests on a GPU (sm_90: H100/H200), writing everything to
# OUT_DIR: build logs, one .txt per test, summary.txt. Exit status 0 iff every test passed.
#
#   runtime-cu/tests/run_gpu_tests.sh OUT_DIR          (from the repo root, nvcc on PATH)
#
# Environment: NVCC (default nvcc), CXX (the host library's compiler, default g++), LAUNCHES (mapping_test launches per environment and shape,
# default 200), SANITIZE=0 to skip the compute-sanitizer memcheck run, TEST_TIMEOUT (seconds per
# test, default 900: a hang counts as a failure), BUILD_DIR (default OUT_DIR/build).
set -uo pipefail
out="${1:?usage: run_gpu_tests.sh OUT_DIR}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
build="${BUILD_DIR:-$out/build}"
mkdir -p "$build"
NVCC="${NVCC:-nvcc}"
flags=(-arch=sm_90 -std=c++17 -O3 -Werror all-warnings)
summary="$out/summary.txt"
: >"$summary"
fail=0

record() {  # record NAME RC EXPECTED_RC
  local verdict=PASS
  [ "$2" = "$3" ] || { verdict=FAIL; fail=1; }
  printf '%-46s rc=%-3s %s\n' "$1" "$2" "$verdict" | tee -a "$summary"
}
build_one() {  # build_one NAME SOURCES... (extra nvcc flags may follow the sources)
  local name="$1"; shift
  if "$NVCC" "${flags[@]}" "$@" -o "$build/$name" >"$build/$name.log" 2>&1; then return 0; fi
  echo "build of $name failed:"; cat "$build/$name.log"; record "build $name" 1 0; return 1
}
run() {  # run NAME EXPECTED_RC CMD...   (output to OUT_DIR/NAME.txt and to the terminal)
  local name="$1" want="$2"; shift 2
  echo "== $name: $*"
  timeout "${TEST_TIMEOUT:-900}" "$@" 2>&1 | tee "$out/$name.txt"
  record "$name" "${PIPESTATUS[0]}" "$want"
}

{ nvidia-smi -L; "$NVCC" --version | tail -n 2; } 2>&1 | tee "$out/device.txt"

echo "== building into $build"
# The host library every test program loads (what `wmfix build` makes, src/app/host_lib.rs).
if ${CXX:-g++} -std=c++17 -O2 -shared -fPIC -fvisibility=hidden -fvisibility-inlines-hidden \
  -o "$build/libwmfix_host.so" "$here/../wmfix_host.cpp" >"$build/libwmfix_host.log" 2>&1; then
  export WMFIX_HOST_LIB="$build/libwmfix_host.so"
else
  cat "$build/libwmfix_host.log"; record "build libwmfix_host.so" 1 0
fi
build_one host_test "$here/host_test.cu" &&
  run host_test 0 "$build/host_test" "$here/../profiles/hopper-default.toml"
build_one mapping_test "$here/mapping_test.cu" &&
  run mapping_test 0 "$build/mapping_test" --launches "${LAUNCHES:-200}"
build_one mapping_test_rdc "$here/mapping_test.cu" -rdc=true &&
  run mapping_test_rdc 0 "$build/mapping_test_rdc" --launches 20
build_one two_tu "$here/two_tu/main.cu" "$here/two_tu/kern.cu" && {
  run two_tu 0 "$build/two_tu"
  # A fence id beyond the program's 3 fences is a configuration error: exit status 3.
  run two_tu_bad_fences 3 env WMFIX_FENCES=0,3 "$build/two_tu"
}
build_one two_tu_rdc "$here/two_tu/main.cu" "$here/two_tu/kern.cu" "$here/two_tu/helper.cu" -rdc=true &&
  run two_tu_rdc 0 "$build/two_tu_rdc"
build_one overhead_bench "$here/overhead_bench.cu" &&
  run overhead_bench 0 "$build/overhead_bench"
if [ "${SANITIZE:-1}" != 0 ] && command -v compute-sanitizer >/dev/null 2>&1 && [ -x "$build/mapping_test" ]; then
  # Out-of-bounds or misaligned accesses anywhere (stressing blocks included); few launches.
  run mapping_test_memcheck 0 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$build/mapping_test" --launches 2 --no-termination
fi

echo
echo "== summary ($summary)"
cat "$summary"
[ "$fail" = 0 ] && echo "ALL PASS" || echo "SOME FAILED"
exit "$fail"
