#!/usr/bin/env bash
# Builds the host library and every wmfix runtime test with and without -rdc (no GPU needed),
# runs the host-only unit tests and checks that a program loads the library (on the CPU). Usage: runtime-cu/tests/compile_test.sh [BUILD_DIR]   (default: a temporary dir)
# Uses nvcc from PATH; from the repo, `source scripts/nvcc-env.sh` first.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:-$(mktemp -d)}"
mkdir -p "$build"
NVCC="${NVCC:-nvcc}"
CXX="${CXX:-g++}"
flags=(-arch=sm_90 -std=c++17 -O2 -Werror all-warnings -Xcompiler -Wall,-Wextra)
fail=0
step() {  # step NAME CMD...
  local name="$1"; shift
  if "$@" >"$build/$name.log" 2>&1; then
    printf '%-44s ok\n' "$name"
  else
    printf '%-44s FAILED (%s)\n' "$name" "$build/$name.log"; sed 's/^/    /' "$build/$name.log" | head -40; fail=1
  fi
}
# The host library, as `wmfix build` makes it (src/app/host_lib.rs), warnings as errors.
lib="$build/libwmfix_host.so"
step "host library" "$CXX" -std=c++17 -O2 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden \
  -fvisibility-inlines-hidden -o "$lib" "$here/../wmfix_host.cpp"
for rdc in false true; do
  for t in interface_compile host_test mapping_test overhead_bench; do
    step "$t -rdc=$rdc" "$NVCC" "${flags[@]}" -rdc=$rdc "$here/$t.cu" -o "$build/${t}_rdc_$rdc"
  done
  # Two TUs (three with -rdc): kernel defined in kern.cu, launched from main.cu.
  extra=(); [ "$rdc" = true ] && extra=("$here/two_tu/helper.cu")
  step "two_tu -rdc=$rdc" "$NVCC" "${flags[@]}" -rdc=$rdc "$here/two_tu/main.cu" "$here/two_tu/kern.cu" "${extra[@]}" \
    -o "$build/two_tu_rdc_$rdc"
  # The same with separate compilation and a separate link step.
  step "two_tu -rdc=$rdc separate compile+link" bash -c "
    '$NVCC' ${flags[*]} -rdc=$rdc -c '$here/two_tu/main.cu' -o '$build/main_$rdc.o' &&
    '$NVCC' ${flags[*]} -rdc=$rdc -c '$here/two_tu/kern.cu' -o '$build/kern_$rdc.o' &&
    { [ $rdc = false ] || '$NVCC' ${flags[*]} -rdc=true -c '$here/two_tu/helper.cu' -o '$build/helper_$rdc.o'; } &&
    '$NVCC' -arch=sm_90 -rdc=$rdc '$build/main_$rdc.o' '$build/kern_$rdc.o' \$( [ $rdc = true ] && echo '$build/helper_$rdc.o' ) \
      -o '$build/two_tu_sep_rdc_$rdc'"
done
# Fence scopes 0 and 2 and the default prologue (nothing defined).
for scope in 0 2; do
  step "interface_compile scope=$scope" bash -c "sed -e 's/WMFIX_FENCE_SCOPE 1/WMFIX_FENCE_SCOPE $scope/' \
    -e 's|\"../wmfix.cuh\"|\"$here/../wmfix.cuh\"|' '$here/interface_compile.cu' > '$build/ic_scope$scope.cu' &&
    '$NVCC' ${flags[*]} '$build/ic_scope$scope.cu' -o '$build/ic_scope$scope'"
done
step "default prologue" bash -c "printf '#include \"%s\"\n__global__ void k(int* p) { WMFIX_KERNEL_ENTRY(); p[wmfix_threadIdx().x] = 1; WMFIX_FENCE(0); }\nint main() { k<<<wmfix_launch(1, 0), 32>>>(nullptr); return 0; }\n' '$here/../wmfix.cuh' > '$build/default.cu' && '$NVCC' ${flags[*]} '$build/default.cu' -o '$build/default'"
# What instrumented TUs include is C++11 and later.
for std in c++11 c++14 c++20; do
  step "default prologue -std=$std" bash -c "'$NVCC' -arch=sm_90 -std=$std -O2 -Werror all-warnings '$build/default.cu' -o '$build/default_$std'"
  step "two_tu -rdc=true -std=$std" "$NVCC" -arch=sm_90 -std=$std -O2 -Werror all-warnings -rdc=true "$here/two_tu/main.cu" \
    "$here/two_tu/kern.cu" "$here/two_tu/helper.cu" -o "$build/two_tu_$std"
done
# The glue loads the library and the library reads the environment (no GPU needed): a bad
# WMFIX_ENV is exit 3, and so is a WMFIX_HOST_LIB that cannot be loaded.
step "library loaded (bad WMFIX_ENV: exit 3)" bash -c "WMFIX_HOST_LIB='$lib' WMFIX_ENV=bogus '$build/default_c++11' 2>&1; [ \$? = 3 ]"
step "missing WMFIX_HOST_LIB: exit 3" bash -c "WMFIX_HOST_LIB=/nonexistent.so '$build/default_c++11' 2>&1; [ \$? = 3 ]"
step "host_test (run)" "$build/host_test_rdc_false" "$here/../profiles/hopper-default.toml"
tail -n 1 "$build/host_test (run).log" | sed 's/^/    /'
exit $fail
