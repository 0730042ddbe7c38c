#!/usr/bin/env python3
"""Instrumented files compile wherever the originals compile (issue 26), over the public
repositories that scripts/corpus.sh instrumented (none of their code is in this repository).

    scripts/corpus_compile.py CORPUS [--jobs N] [--limit N] [--if-groups]

CORPUS is corpus.sh's OUT: CORPUS/src/<owner+name> (the sources) and CORPUS/<owner+name>/tree
(instrumented by `wmfix insert`, its runtime beside it). Each .cu file of the repositories below
is compiled standalone (`nvcc -c -arch=sm_90`, the repository's include folders) as it is; where
that succeeds, its instrumented copy is compiled the same way. Prints one line a file that the
instrumented copy broke (with nvcc's first error), a line a repository, and the total; exit 1 if
any instrumented copy failed where its original compiled. --limit takes at most N files a
repository (in name order) to bound the time; --if-groups takes only the files that get another
configuration (below), before --limit.

A file with `#if` groups of its own is also compiled in one configuration other than the
default (issue 45), both copies alike: with `-DM=1` for the first macro M that one of its
`#if`/`#ifdef`/`#ifndef`/`#elif` lines tests (`defined(M)` or a bare name) that the file does not
`#define` itself, that is not reserved (no leading underscore: `__CUDA_ARCH__`, `_WIN32`) and that
is not an include guard. Defining it flips the branch `#ifdef M`, `#ifndef M`, `defined(M)` and a
bare `#if M` take when M is not defined. Each repository's line also gives the `#elif`/`#else`
branches that `wmfix insert` instrumented which only each group's first branch was before
(`if_branches` of corpus.sh's CORPUS/<owner+name>.json).
"""
import argparse
import concurrent.futures as cf
import json
import os
import re
import subprocess
import sys

# owner+name, folders searched for .cu files, include folders (relative to the repository),
# extra nvcc flags.
REPOS = [
    ("NVIDIA+cuda-samples", ["Samples"], ["Common"], []),
    ("mattsinc+heterosync", ["cuda"], [], []),
    ("b0nes164+GPUPrefixSums", ["GPUPrefixSumsCUDA"], [], []),
    ("moderngpu+moderngpu", ["demo", "tests", "tutorial"], ["src"], ["--expt-extended-lambda"]),
    ("NVIDIA+cuCollections", ["examples"], ["include"], ["--expt-extended-lambda"]),
]
FLAGS = ["-c", "-arch=sm_90", "-std=c++17", "-o", os.devnull]


DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|define)\b(.*)$")
NAME = re.compile(r"\b[A-Za-z_]\w*\b")


def flipping_define(path):
    """The `-DM=1` of the module docstring for the file at path, or None."""
    try:
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError:
        return None
    defined = set()
    tested = []
    for i, line in enumerate(lines):
        m = DIRECTIVE.match(line)
        if not m:
            continue
        word, rest = m.group(1), m.group(2).split("//")[0]
        if word == "define":
            name = NAME.search(rest)
            if name:
                defined.add(name.group(0))
            continue
        if word in ("ifdef", "ifndef"):
            names = NAME.findall(rest)[:1]
            # An include guard: `#ifndef X` then `#define X`.
            if word == "ifndef" and names and i + 1 < len(lines) and re.match(
                rf"^\s*#\s*define\s+{re.escape(names[0])}\b", lines[i + 1]
            ):
                continue
        else:
            rest = re.sub(r"\bdefined\b", " ", rest)
            names = NAME.findall(re.sub(r"\b\d\w*", " ", rest))
        tested += names
    for name in tested:
        if not name.startswith("_") and name not in defined and name not in ("true", "false"):
            return f"-D{name}=1"
    return None


def compile_one(root, rel, includes, extra):
    """(ok, first error line) of nvcc on root/rel, run in the file's folder."""
    path = os.path.join(root, rel)
    cmd = ["nvcc", *FLAGS, *extra, *[f"-I{os.path.join(root, i)}" for i in includes], path]
    try:
        p = subprocess.run(cmd, cwd=os.path.dirname(path), capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return False, "timed out after 600 s"
    if p.returncode == 0:
        return True, ""
    errors = [l for l in p.stderr.splitlines() if "error" in l]
    return False, (errors or p.stderr.splitlines() or ["(no output)"])[0][:300]


def files(src, folders):
    out = []
    for f in folders:
        for d, _, names in os.walk(os.path.join(src, f)):
            out += [os.path.relpath(os.path.join(d, n), src) for n in names if n.endswith(".cu")]
    return sorted(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--if-groups", action="store_true")
    a = ap.parse_args()
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True)
    if nvcc.returncode != 0:
        sys.exit("corpus_compile: no nvcc on PATH (source scripts/nvcc-env.sh)")
    print(f"# nvcc: {nvcc.stdout.strip().splitlines()[-1]}")
    total = [0, 0, 0]  # files, originals compiling, instrumented compiling among those
    other = [0, 0, 0]  # the same in the other configuration of files with #if groups
    new_branches = 0
    broken = 0
    with cf.ThreadPoolExecutor(a.jobs) as pool:
        for repo, folders, includes, extra in REPOS:
            src, tree = os.path.join(a.corpus, "src", repo), os.path.join(a.corpus, repo, "tree")
            if not os.path.isdir(src) or not os.path.isdir(tree):
                print(f"{repo}: not in {a.corpus} (run scripts/corpus.sh first)")
                continue
            todo = files(src, folders)
            if a.if_groups:
                todo = [r for r in todo if flipping_define(os.path.join(src, r))]
            if a.limit:
                todo = todo[: a.limit]
            orig = dict(zip(todo, pool.map(lambda r: compile_one(src, r, includes, extra), todo)))
            good = [r for r in todo if orig[r][0]]
            inst = dict(zip(good, pool.map(lambda r: compile_one(tree, r, includes, extra), good)))
            ok = [r for r in good if inst[r][0]]
            for r in good:
                if not inst[r][0]:
                    broken += 1
                    print(f"  BROKEN {repo}/{r}: {inst[r][1]}")
            print(f"{repo:<24} files {len(todo):>4}  originals compiling {len(good):>4}  "
                  f"instrumented compiling {len(ok):>4}", flush=True)
            for i, n in enumerate((len(todo), len(good), len(ok))):
                total[i] += n
            # The other configuration: files with #if groups of their own.
            flips = {r: flipping_define(os.path.join(src, r)) for r in todo}
            flipped = [r for r in todo if flips[r]]
            ex = lambda r: [*extra, flips[r]]
            orig = dict(zip(flipped, pool.map(lambda r: compile_one(src, r, includes, ex(r)), flipped)))
            good = [r for r in flipped if orig[r][0]]
            inst = dict(zip(good, pool.map(lambda r: compile_one(tree, r, includes, ex(r)), good)))
            ok = [r for r in good if inst[r][0]]
            for r in good:
                if not inst[r][0]:
                    broken += 1
                    print(f"  BROKEN {repo}/{r} {flips[r]}: {inst[r][1]}")
            try:
                branches = json.load(open(os.path.join(a.corpus, f"{repo}.json"))).get("if_branches", 0)
            except (OSError, ValueError):
                branches = "?"
            print(f"{'':<24} with #if groups {len(flipped):>4}, in another configuration (-DM=1): "
                  f"originals compiling {len(good):>4}  instrumented compiling {len(ok):>4}; "
                  f"#elif/#else branches newly instrumented (whole repository): {branches}", flush=True)
            for i, n in enumerate((len(flipped), len(good), len(ok))):
                other[i] += n
            if isinstance(branches, int):
                new_branches += branches
    print(f"total: {total[0]} files, {total[1]} originals compile, {total[2]} of them instrumented "
          f"({100 * total[2] / max(total[1], 1):.1f}%)")
    print(f"another configuration: {other[0]} files with #if groups, {other[1]} originals compile, "
          f"{other[2]} of them instrumented ({100 * other[2] / max(other[1], 1):.1f}%); "
          f"#elif/#else branches newly instrumented: {new_branches}")
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
