#!/usr/bin/env bash
# Builds every wmfix runtime test with and without -rdc (no GPU needed) and runs the host-only
# unit tests. Usage: runtime-cu/tests/compile_test.sh [BUILD_DIR]   (default: a temporary dir)
# Uses nvcc from PATH; from the repo, `source scripts/nvcc-env.sh` first.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${1:-$(mktemp -d)}"
mkdir -p "$build"
NVCC="${NVCC:-nvcc}"
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
step "host_test (run)" "$build/host_test_rdc_false" "$here/../profiles/hopper-default.toml"
tail -n 1 "$build/host_test (run).log" | sed 's/^/    /'
exit $fail
