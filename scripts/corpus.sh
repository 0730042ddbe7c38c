#!/usr/bin/env bash
# Parse errors and fences of `wmfix insert` over public CUDA repositories (issue 26), from local
# git mirrors (none of their code is in this repository).
#
#   scripts/corpus.sh WMFIX MIRRORS OUT
#
# MIRRORS holds owner+name/repo git directories (the search tool's fetch); each repository is
# taken at its mirror's HEAD (the commit is printed), with the folders below, into OUT/src, and
# instrumented into OUT/<name>. Prints one line a repository: files parsed (.cu/.cuh and headers
# with device code); files with a parse error (every warning that leaves a file's code unparsed:
# "syntax error", "missing `X`", nesting too deep for the queries, a file copied unchanged); the
# other warnings that leave code uninstrumented (an access with no place for its fence, a launch
# from device code, a qualifier macro not instrumented, a macro's accesses, `#if` branches after
# the first, a link outside the input); fences; seconds; device functions declared through
# qualifier macros (or extended lambdas) and how many of them got a fence; `#elif`/`#else`
# branches instrumented that only each group's first branch was before (issue 45). OUT/<name>.errors
# lists each file's first parse error, one a line.
set -euo pipefail
W=$1 MIRRORS=$2 OUT=$3
mkdir -p "$OUT"
# owner+name and the folders taken (. for all)
REPOS=(
  "NVIDIA+cccl cub thrust libcudacxx/include"
  "NVIDIA+cuCollections ."
  "stotko+stdgpu ."
  "moderngpu+moderngpu ."
  "NVIDIA+cuda-samples ."
  "mattsinc+heterosync ."
  "b0nes164+GPUPrefixSums ."
  "rapidsai+cudf cpp/src cpp/include"
  "rapidsai+raft cpp/include"
  "rapidsai+cuvs cpp/src cpp/include"
  "NVIDIA+cutlass include examples"
  "facebookresearch+faiss faiss/gpu"
  "gunrock+gunrock include examples"
  "ginkgo-project+ginkgo cuda common/cuda_hip"
  "Dao-AILab+flash-attention csrc hopper"
  "NVIDIA+MatX include examples"
)
# Qualifier macros a repository's folders take from headers outside them, given as `--macro` (as
# its wmfix.toml would): cuVS's from RAFT's headers (raft/core/detail/macros.hpp,
# raft/util/cuda_dev_essentials.cuh); Ginkgo's from include/ginkgo/core/base/types.hpp and
# common/unified/base/kernel_launch.hpp (their CUDA definitions).
declare -A MACROS=(
  ["rapidsai+cuvs"]="DI=inline __device__;HDI=inline __host__ __device__;HD=__host__ __device__;_RAFT_DEVICE=__device__;_RAFT_HOST_DEVICE=__host__ __device__;_RAFT_FORCEINLINE=__forceinline__;RAFT_INLINE_FUNCTION=__host__ __device__ __forceinline__;RAFT_DEVICE_INLINE_FUNCTION=__device__ __forceinline__;RAFT_WEAK_FUNCTION="
  ["ginkgo-project+ginkgo"]="GKO_ATTRIBUTES=__host__ __device__;GKO_INLINE=__forceinline__;GKO_KERNEL=__device__"
)
printf '%-24s %-12s %8s %8s %6s %6s %9s %7s %11s %s\n' repo commit parsed errors "err%" other fences seconds "if-branches" "macro-declared functions (with fences)"
for entry in "${REPOS[@]}"; do
  read -r repo folders <<< "$entry"
  git_dir=$MIRRORS/$repo/repo
  [ -d "$git_dir" ] || { echo "$repo: no mirror at $git_dir" >&2; continue; }
  commit=$(git --git-dir "$git_dir" rev-parse --short=12 HEAD)
  src=$OUT/src/$repo
  if [ ! -d "$src" ]; then
    # Sources and headers only, blob by blob: a mirror may lack large files (documents, data).
    python3 - "$git_dir" "$src" $folders <<'PY'
import os, subprocess, sys
git_dir, dest, folders = sys.argv[1], sys.argv[2], sys.argv[3:]
names = subprocess.run(["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", "HEAD"],
                       capture_output=True, text=True, check=True).stdout.splitlines()
exts = (".cu", ".cuh", ".h", ".hpp", ".hxx", ".inl", ".cpp", ".cc", ".cxx")
for name in names:
    if not name.endswith(exts) or not (folders == ["."] or any(name.startswith(f + "/") for f in folders)):
        continue
    blob = subprocess.run(["git", "--git-dir", git_dir, "show", f"HEAD:{name}"], capture_output=True)
    if blob.returncode == 0:
        os.makedirs(os.path.join(dest, os.path.dirname(name)), exist_ok=True)
        open(os.path.join(dest, name), "wb").write(blob.stdout)
PY
  fi
  rm -rf "$OUT/$repo"
  given=()
  IFS=';' read -ra defs <<< "${MACROS[$repo]:-}"
  for d in "${defs[@]}"; do given+=(--macro "$d"); done
  "$W" insert "$src" "${given[@]}" --out "$OUT/$repo" --json > "$OUT/$repo.json" 2>/dev/null || true
  python3 - "$repo" "$commit" "$OUT/$repo.json" "$OUT/$repo.errors" <<'PY'
import json, re, sys
repo, commit, path, errors = sys.argv[1:]
d = json.load(open(path))
# A parse error's warning: `file:line:col: syntax error ...`, `... missing `X` ...`, nesting
# too deep, or (--on-parse-error skip) the file copied unchanged.
parse = re.compile(r"^(.*?):\d+:\d+: (syntax error|missing `|nesting deeper than)")
# Other code left uninstrumented: accesses left unfenced, launches and qualifier macros not
# instrumented, macros whose accesses get no fence, `#if` branches after the first, code that
# differs between a file's `#if` configurations (left out of every branch), links outside the
# input. Advice that leaves nothing uninstrumented (grid-wide synchronisation, cooperative
# launches: test under no-str- only) is not counted; any other warning is printed on stderr.
other = re.compile(r"left unfenced|not instrumented|get no fence|only the first branch|left out of every branch|is a link to")
advice = re.compile(r"test this kernel under no-str- only")
err, n_other, first = set(), 0, []
for w in d["warnings"]:
    m = parse.match(w)
    if m or w.endswith("file copied unchanged"):
        f = m.group(1) if m else w.split(":")[0]
        if f not in err:
            err.add(f)
            first.append(w)
    elif other.search(w):
        n_other += 1
    elif not advice.search(w):
        print(f"{repo}: a warning not counted: {w}", file=sys.stderr)
open(errors, "w").write("".join(w + "\n" for w in first))
n = d["instrumented"]
macro = f"{d['macro_functions']} ({d['macro_functions_fenced']})" if "macro_functions" in d else "-"
print(f"{repo:<24} {commit:<12} {n:>8} {len(err):>8} {100 * len(err) / max(n, 1):>5.1f}% {n_other:>6} {d['fences']:>9} {d['seconds']:>7.1f} {d.get('if_branches', 0):>11} {macro}")
PY
done
