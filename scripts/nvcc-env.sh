# Source this file: puts nvcc 13.0 on PATH, installing it from PyPI into .venv-nvcc when
# neither PATH nor CUDA_HOME has one. Pinned to 13.0.x to match the GPU machines' toolkit.
_wmfix_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! command -v nvcc >/dev/null 2>&1; then
  if [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
    export PATH="$CUDA_HOME/bin:$PATH"
  else
    _venv="$_wmfix_root/.venv-nvcc"
    _cu="$_venv/lib/python3.11/site-packages/nvidia/cu13"
    if [ ! -x "$_venv/bin/python" ] || ! ls "$_venv"/lib/python3*/site-packages/nvidia/cu13/bin/nvcc >/dev/null 2>&1; then
      echo "wmfix: installing nvcc 13.0 from PyPI into $_venv" >&2
      # About 300 MB: pip's lines, and a line every 25 s while a download is silent.
      python3 -m venv "$_venv" || { echo "wmfix: python3 -m venv failed" >&2; return 1; }
      "$_venv/bin/pip" install --disable-pip-version-check --progress-bar off \
        nvidia-cuda-nvcc==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85 \
        nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 2>&1 |
        python3 "$_wmfix_root/scripts/heartbeat.py" "installing nvcc" >&2
      [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "wmfix: nvcc install failed" >&2; return 1; }
    fi
    _cu=$(ls -d "$_venv"/lib/python3*/site-packages/nvidia/cu13 | head -n 1)
    export PATH="$_cu/bin:$PATH"
    # The wheel keeps its libraries in lib/, where nvcc.profile does not look when linking.
    export LIBRARY_PATH="$_cu/lib${LIBRARY_PATH:+:$LIBRARY_PATH}"
  fi
fi
# cuobjdump and nvdisasm read the SASS of the litmus kernels (the optcheck in
# tests/nvcc_compile.rs). PyPI has them from 13.2 on only; they disassemble 13.0's sm_90 code.
if ! command -v cuobjdump >/dev/null 2>&1 || ! command -v nvdisasm >/dev/null 2>&1; then
  _venv="$_wmfix_root/.venv-nvcc"
  [ -x "$_venv/bin/python" ] || python3 -m venv "$_venv"
  if ! ls "$_venv"/lib/python3*/site-packages/nvidia/cu13/bin/nvdisasm >/dev/null 2>&1; then
    echo "wmfix: installing cuobjdump and nvdisasm 13.2 from PyPI into $_venv" >&2
    "$_venv/bin/pip" install -q --disable-pip-version-check \
      nvidia-cuda-cuobjdump==13.2.86 nvidia-cuda-nvdisasm==13.2.86 >&2 ||
      echo "wmfix: cuobjdump/nvdisasm install failed; the SASS check will fail" >&2
  fi
  _cu=$(ls -d "$_venv"/lib/python3*/site-packages/nvidia/cu13 2>/dev/null | head -n 1)
  [ -n "$_cu" ] && export PATH="$PATH:$_cu/bin"
fi
unset _wmfix_root _venv _cu
