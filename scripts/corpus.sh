#!/usr/bin/env bash
# Parse errors and fences of `wmfix insert` over public CUDA repositories (issue 26), from local
# git mirrors (none of their code is in this repository).
#
#   scripts/corpus.sh WMFIX MIRRORS OUT
#
# MIRRORS holds owner+name/repo git directories (the search tool's fetch); each repository is
# taken at its mirror's HEAD (the commit is printed), with the folders below, into OUT/src, and
# instrumented into OUT/<name>. Prints one line a repository: files parsed (.cu/.cuh and headers
# with device code), files with a parse error, fences, seconds, device functions declared through
# qualifier macros (or extended lambdas) and how many of them got a fence, `#elif`/`#else` branches
# instrumented that only each group's first branch was before (issue 45); and the commits.
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
)
printf '%-24s %-12s %8s %8s %6s %9s %7s %11s %s\n' repo commit parsed errors "err%" fences seconds "if-branches" "macro-declared functions (with fences)"
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
  "$W" insert "$src" --out "$OUT/$repo" --json > "$OUT/$repo.json" 2>/dev/null || true
  python3 - "$repo" "$commit" "$OUT/$repo.json" <<'PY'
import json, sys
repo, commit, path = sys.argv[1:]
d = json.load(open(path))
err = {w.split(":")[0] for w in d["warnings"] if "syntax error" in w}
n = d["instrumented"]
macro = f"{d['macro_functions']} ({d['macro_functions_fenced']})" if "macro_functions" in d else "-"
print(f"{repo:<24} {commit:<12} {n:>8} {len(err):>8} {100 * len(err) / max(n, 1):>5.1f}% {d['fences']:>9} {d['seconds']:>7.1f} {d.get('if_branches', 0):>11} {macro}")
PY
done
