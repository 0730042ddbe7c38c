#!/usr/bin/env python3
"""Public programs for the differential check (issue 44, item 4): an instrumented program with
its fences off must end as the original does on the same input.

Usage:
  scripts/public_programs.py prepare MIRRORS DEST
      copies each program's files out of the git mirrors under MIRRORS (MIRRORS/<owner>+<name>/repo,
      as `fetch` leaves them: /work/.mirror) into DEST/<name>/, with a generated wmfix.toml, and
      the mirrors' commits into DEST/COMMITS.txt. No third-party code is in this repository:
      only this table.
  scripts/public_programs.py check WMFIX DEST OUT [--no-check] [--jobs N] [--only NAME,...]
      runs `WMFIX build DEST/<name> --out OUT/<name>` for every prepared program, N at a time
      (default 2), and writes OUT/public.json (per program: name, source commit, whether the
      original and the instrumented program built, wmfix's exit code, the check's line, seconds)
      and prints a Markdown table with totals (also OUT/public.md). Each build is bounded at
      BOUND_S seconds; on SIGINT the running builds are interrupted and the files still written.
  scripts/public_programs.py list
      the table, one program a line.

The table holds plain runtime-API programs only: no input files, OpenGL/EGL, MPI/OpenMP,
multi-GPU, cooperative launch (grid sync: reductionMultiBlockCG, simpleAWBarrier,
conjugateGradientMultiBlockCG are left out), NVRTC or driver-API modules, and no library beyond
the CUDA runtime and the CCCL headers (the PyPI nvcc install has no cuRAND, cuBLAS or cuFFT: the
MC_* samples, simpleCUBLAS and simpleCUFFT are left out; nor cuda_profiler_api.h: matrixMul
and asyncAPI are left out). Each builds with the PyPI nvcc 13.0
(scripts/nvcc-env.sh) and runs in a few seconds on an H200. `check` says whether a program's exit
status is its result's check: cuda-samples mostly exit EXIT_FAILURE when the GPU's result differs
from the CPU's; some only print a verdict, which the generated `check` greps; a few check nothing
(the differential check then compares how they end: exit code, signal or time-out).
"""
import argparse
import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import time

SDK = "NVIDIA+cuda-samples"
HS = "mattsinc+heterosync"
# cuda-samples' Common/ headers the programs include (copied beside each program, not instrumented).
COMMON = ["helper_cuda.h", "helper_functions.h", "helper_image.h", "helper_string.h",
          "helper_timer.h", "exception.h", "helper_math.h"]
NVCC = "nvcc -O2 -arch=sm_90"
PASSED = 'grep -q "Test passed" "$WMFIX_RUN_OUTPUT"'


def sdk(name, folder, srcs, run="./prog", *, timeout=30, exit_check=True, check=None,
        includes="", sources=None, extra=(), flags="", note=""):
    """A cuda-samples program: FOLDER under Samples/, SRCS compiled into ./prog. Every file of
    SRCS, SOURCES (default: the folder's source files but EXTRA) is instrumented."""
    return dict(name=f"sdk-{name}", mirror=SDK, folder=f"Samples/{folder}", common=True,
                build=f"{NVCC}{flags} -I. -ICommon{includes} -o prog {srcs}", run=run,
                timeout_s=timeout, crash_exit_codes=[], exit_check=exit_check, check=check,
                sources=sources, extra=list(extra), note=note)


def hs(name, folder, run, exe, *, check=None, exit_check=True, timeout=30, note=""):
    """A HeteroSync program (its CUDA UVM version): the Makefile's command with sm_90 and
    nanosleep (Volta+), compiled from FOLDER's main file (the lock files are #included)."""
    main = {"allSyncPrims-1kernel": "main.cu"}.get(exe, f"{exe}.cu")
    return dict(name=f"hs-{name}", mirror=HS, folder=folder, common=False,
                build=f"nvcc -O3 -arch=sm_90 -DHAS_NANOSLEEP=1 -I. -o {exe} {main}", run=run,
                timeout_s=timeout, crash_exit_codes=[], exit_check=exit_check, check=check,
                sources=None, extra=[], note=note)


# HeteroSync's synchronisation primitives: one binary, one primitive a run. <numLdSt> 10,
# <numTBs> 264 (2 a SM on an H200's 132 SMs: the barriers want a multiple of the SM count),
# <numCSIters> 10. It exits -1 (255) when the storage differs from the CPU's golden copy.
SYNC_PRIMS = ["atomicTreeBarrUniq", "atomicTreeBarrUniqLocalExch", "lfTreeBarrUniq",
              "lfTreeBarrUniqLocalExch", "spinMutex", "spinMutexEBO", "sleepMutex", "faMutex",
              "spinSem2", "spinSemEBO2", "spinMutexUniq", "spinMutexEBOUniq", "sleepMutexUniq",
              "faMutexUniq", "spinSemUniq2", "spinSemEBOUniq2"]

PROGRAMS = [
    # cuda-samples with inter-block communication (atomics, fences, multi-kernel passes).
    sdk("threadFenceReduction", "2_Concepts_and_Techniques/threadFenceReduction", "threadFenceReduction.cu"),
    sdk("simpleAtomicIntrinsics", "0_Introduction/simpleAtomicIntrinsics",
        "simpleAtomicIntrinsics.cu simpleAtomicIntrinsics_cpu.cpp"),
    sdk("systemWideAtomics", "0_Introduction/systemWideAtomics", "systemWideAtomics.cu",
        note="waived (exit 2) where pageable memory is not accessible from the device"),
    sdk("histogram", "2_Concepts_and_Techniques/histogram",
        "histogram64.cu histogram256.cu histogram_gold.cpp main.cpp"),
    sdk("reduction", "2_Concepts_and_Techniques/reduction", "reduction.cpp reduction_kernel.cu",
        exit_check=False, check=PASSED),
    sdk("scan", "2_Concepts_and_Techniques/scan", "main.cpp scan.cu scan_gold.cpp"),
    sdk("mergeSort", "0_Introduction/mergeSort",
        "bitonic.cu main.cpp mergeSort.cu mergeSort_host.cpp mergeSort_validate.cpp"),
    sdk("sortingNetworks", "2_Concepts_and_Techniques/sortingNetworks",
        "bitonicSort.cu main.cpp oddEvenMergeSort.cu sortingNetworks_validate.cpp"),
    sdk("shfl_scan", "2_Concepts_and_Techniques/shfl_scan", "shfl_scan.cu"),
    sdk("scalarProd", "2_Concepts_and_Techniques/scalarProd", "scalarProd.cu scalarProd_cpu.cpp"),
    sdk("warpAggregatedAtomicsCG", "3_CUDA_Features/warpAggregatedAtomicsCG", "warpAggregatedAtomicsCG.cu",
        note="this_grid() for ranks only, no grid sync; ordinary launch (wmfix warns: no-str- only)"),
    sdk("radixSortThrust", "2_Concepts_and_Techniques/radixSortThrust", "radixSortThrust.cu",
        exit_check=False, check=PASSED, note="Thrust (CCCL headers, not instrumented)"),
    sdk("simpleVoteIntrinsics", "0_Introduction/simpleVoteIntrinsics", "simpleVoteIntrinsics.cu"),
    sdk("binaryPartitionCG", "3_CUDA_Features/binaryPartitionCG", "binaryPartitionCG.cu",
        exit_check=False, note="atomics across blocks; exits 0 whatever it computed; this_grid() (wmfix warns: no-str- only)"),
    # Other plain cuda-samples.
    sdk("vectorAdd", "0_Introduction/vectorAdd", "vectorAdd.cu"),
    sdk("clock", "0_Introduction/clock", "clock.cu", exit_check=False),
    sdk("simpleTemplates", "0_Introduction/simpleTemplates", "simpleTemplates.cu"),
    sdk("template", "0_Introduction/template", "template.cu template_cpu.cpp"),
    sdk("simpleAttributes", "0_Introduction/simpleAttributes", "simpleAttributes.cu"),
    sdk("simpleCallback", "0_Introduction/simpleCallback", "simpleCallback.cu multithreading.cpp",
        note="host threads (its own multithreading.cpp)"),
    sdk("simpleHyperQ", "0_Introduction/simpleHyperQ", "simpleHyperQ.cu"),
    sdk("simpleMultiCopy", "0_Introduction/simpleMultiCopy", "simpleMultiCopy.cu"),
    sdk("simpleOccupancy", "0_Introduction/simpleOccupancy", "simpleOccupancy.cu"),
    sdk("simplePitchLinearTexture", "0_Introduction/simplePitchLinearTexture", "simplePitchLinearTexture.cu"),
    sdk("simpleLayeredTexture", "0_Introduction/simpleLayeredTexture", "simpleLayeredTexture.cu"),
    sdk("simpleCubemapTexture", "0_Introduction/simpleCubemapTexture", "simpleCubemapTexture.cu"),
    sdk("simplePrintf", "0_Introduction/simplePrintf", "simplePrintf.cu", exit_check=False),
    sdk("simpleStreams", "0_Introduction/simpleStreams", "simpleStreams.cu"),
    sdk("simpleZeroCopy", "0_Introduction/simpleZeroCopy", "simpleZeroCopy.cu"),
    sdk("simpleCooperativeGroups", "0_Introduction/simpleCooperativeGroups", "simpleCooperativeGroups.cu",
        exit_check=False, note="thread-block groups only"),
    sdk("fp16ScalarProduct", "0_Introduction/fp16ScalarProduct", "fp16ScalarProduct.cu", exit_check=False),
    sdk("convolutionSeparable", "2_Concepts_and_Techniques/convolutionSeparable",
        "convolutionSeparable.cu convolutionSeparable_gold.cpp main.cpp"),
    sdk("convolutionTexture", "2_Concepts_and_Techniques/convolutionTexture",
        "convolutionTexture.cu convolutionTexture_gold.cpp main.cpp"),
    sdk("interval", "2_Concepts_and_Techniques/interval", "interval.cu",
        extra=["boost"], note="its bundled boost headers are copied, not instrumented"),
    sdk("inlinePTX", "2_Concepts_and_Techniques/inlinePTX", "inlinePTX.cu"),
    sdk("streamOrderedAllocation", "2_Concepts_and_Techniques/streamOrderedAllocation",
        "streamOrderedAllocation.cu"),
    sdk("globalToShmemAsyncCopy", "3_CUDA_Features/globalToShmemAsyncCopy", "globalToShmemAsyncCopy.cu"),
    sdk("simpleCudaGraphs", "3_CUDA_Features/simpleCudaGraphs", "simpleCudaGraphs.cu", exit_check=False),
    sdk("graphMemoryNodes", "3_CUDA_Features/graphMemoryNodes", "graphMemoryNodes.cu"),
    sdk("newdelete", "3_CUDA_Features/newdelete", "newdelete.cu"),
    sdk("StreamPriorities", "3_CUDA_Features/StreamPriorities", "StreamPriorities.cu", exit_check=False),
    sdk("cudaTensorCoreGemm", "3_CUDA_Features/cudaTensorCoreGemm", "cudaTensorCoreGemm.cu", exit_check=False),
    sdk("immaTensorCoreGemm", "3_CUDA_Features/immaTensorCoreGemm", "immaTensorCoreGemm.cu", exit_check=False),
    sdk("BlackScholes", "5_Domain_Specific/BlackScholes", "BlackScholes.cu BlackScholes_gold.cpp"),
    sdk("binomialOptions", "5_Domain_Specific/binomialOptions",
        "binomialOptions.cpp binomialOptions_gold.cpp binomialOptions_kernel.cu"),
    sdk("SobolQRNG", "5_Domain_Specific/SobolQRNG", "sobol.cpp sobol_gold.cpp sobol_gpu.cu sobol_primitives.cpp"),
    sdk("quasirandomGenerator", "5_Domain_Specific/quasirandomGenerator",
        "quasirandomGenerator.cpp quasirandomGenerator_gold.cpp quasirandomGenerator_kernel.cu"),
    sdk("fastWalshTransform", "5_Domain_Specific/fastWalshTransform",
        "fastWalshTransform.cu fastWalshTransform_gold.cpp", exit_check=False, check=PASSED),
    sdk("FDTD3d", "5_Domain_Specific/FDTD3d", "src/FDTD3d.cpp src/FDTD3dGPU.cu src/FDTD3dReference.cpp",
        run="./prog -dimx=96 -dimy=96 -dimz=96 -timesteps=5", includes=" -Iinc"),
    sdk("transpose", "6_Performance/transpose", "transpose.cu"),
    sdk("alignedTypes", "6_Performance/alignedTypes", "alignedTypes.cu"),
    sdk("LargeKernelParameter", "6_Performance/LargeKernelParameter", "LargeKernelParameter.cu"),
] + [
    hs(p, "cuda/syncPrims/uvm", f"./allSyncPrims-1kernel {p} 10 264 10", "allSyncPrims-1kernel")
    for p in SYNC_PRIMS
] + [
    # HeteroSync's relaxed-atomics microbenchmarks at their `run` files' arguments: they exit 0
    # whatever they found and print their verdict.
    hs("flags", "cuda/relaxedAtomics/uvm/flags", "./flags 160 32 16 4 0.33 1 1", "flags",
       exit_check=False, check='grep -q "Test PASSED" "$WMFIX_RUN_OUTPUT"'),
    hs("refCounter", "cuda/relaxedAtomics/uvm/refCounter", "./refCounter 32 64 32 4", "refCounter",
       exit_check=False, check='grep -q "TEST PASSED" "$WMFIX_RUN_OUTPUT"'),
    hs("seqlocks", "cuda/relaxedAtomics/uvm/seqlocks", "./seqlocks 512 128 4 0", "seqlocks",
       exit_check=False, check='! grep -q ERROR "$WMFIX_RUN_OUTPUT"'),
    hs("splitCounter", "cuda/relaxedAtomics/uvm/splitCounter", "./splitCounter 112 32", "splitCounter",
       exit_check=False, check='grep -qx PASSED "$WMFIX_RUN_OUTPUT"'),
    hs("uts", "cuda/uts/uvm", "./uts 1 8192 90 32 128", "uts", exit_check=False,
       note="unbalanced tree search with host and GPU workers; checks nothing"),
]

SOURCE_EXT = (".cu", ".cuh", ".h", ".hpp", ".cpp", ".c", ".inl")


def git(mirror_dir, *args, text=True):
    return subprocess.run(["git", "--git-dir", mirror_dir, *args], check=True,
                          capture_output=True, text=text).stdout


def mirror_path(mirrors, mirror):
    return os.path.join(mirrors, mirror, "repo")


def toml_str(s):
    return json.dumps(s)  # a TOML basic string is a JSON string for these characters


def prepare(mirrors, dest):
    os.makedirs(dest, exist_ok=True)
    commits = {}
    for m in sorted({p["mirror"] for p in PROGRAMS}):
        commits[m] = git(mirror_path(mirrors, m), "rev-parse", "HEAD").strip()
    with open(os.path.join(dest, "COMMITS.txt"), "w") as f:
        for m, c in commits.items():
            f.write(f"{m.replace('+', '/')} {c}\n")
    for p in PROGRAMS:
        md = mirror_path(mirrors, p["mirror"])
        commit = commits[p["mirror"]]
        out = os.path.join(dest, p["name"])
        names = git(md, "ls-tree", "-r", "--name-only", commit, p["folder"] + "/").splitlines()
        own, extra = [], []
        for n in names:
            rel = n[len(p["folder"]) + 1:]
            if not rel.endswith(SOURCE_EXT) or rel.startswith((".vscode/", "doc/")):
                continue
            (extra if any(rel == e or rel.startswith(e + "/") for e in p["extra"]) else own).append(rel)
        files = [(f"{p['folder']}/{r}", r) for r in own + extra]
        if p["common"]:
            files += [(f"Common/{h}", f"Common/{h}") for h in COMMON]
        for src, rel in files:
            path = os.path.join(out, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(git(md, "show", f"{commit}:{src}", text=False))
        sources = p["sources"] or sorted(own)
        lines = [
            f"# {p['name']}: {p['mirror'].replace('+', '/')} {commit}, {p['folder']}",
            "# Generated by scripts/public_programs.py prepare: the differential check of issue 44.",
            f"sources = [{', '.join(toml_str(s) for s in sources)}]",
            f"build = {toml_str(p['build'])}",
            f"run = {toml_str(p['run'])}",
            f"timeout_s = {p['timeout_s']}",
            f"crash_exit_codes = {json.dumps(p['crash_exit_codes'])}",
        ]
        if p["check"]:
            lines.append(f"check = {toml_str(p['check'])}")
        with open(os.path.join(out, "wmfix.toml"), "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(out, "SOURCE.json"), "w") as f:
            json.dump({"repo": p["mirror"].replace("+", "/"), "commit": commit,
                       "folder": p["folder"]}, f)
    print(f"prepared {len(PROGRAMS)} programs in {dest} (commits in {os.path.join(dest, 'COMMITS.txt')})")


def first_errors(log, n=4):
    """The first lines of a build log that say `error`."""
    try:
        text = open(log, errors="replace").read().splitlines()
    except OSError:
        return []
    return [l.strip() for l in text if re.search(r"\berror\b", l)][:n]


def classify(p, rc, stdout, stderr, out):
    """What one `wmfix build` said: the builds and the check."""
    r = {"original_built": None, "instrumented_built": None, "check": "not run"}
    both = stdout + "\n" + stderr
    m = re.search(r"with (\d+) fences in", stdout)
    r["fences"] = int(m.group(1)) if m else None
    if m:
        r["original_built"] = r["instrumented_built"] = True
    failed = re.search(r"build failed in (\S+) ", both)
    if rc == 4 and failed:
        where = failed.group(1).rstrip("/")
        if os.path.basename(where) == "original":
            r["original_built"] = False
            r["errors"] = first_errors(os.path.join(out, "build-original.log"))
        else:
            r["original_built"], r["instrumented_built"] = True, False
            r["errors"] = first_errors(os.path.join(out, "build-instrumented.log"))
    for line in stdout.splitlines():
        if "ends as the original does (" in line and "check not run" not in line:
            r["check"] = re.search(r"ends as the original does \((.*)\)\s*$", line).group(0)
    if rc == 7:
        m = re.search(r"does not end as the original does: (.*?);", both)
        r["check"] = "differs: " + (m.group(1) if m else both.strip().splitlines()[-1])
    elif rc in (130, -signal.SIGINT, -signal.SIGKILL):
        r["check"] = "not run: interrupted at the bound"
    elif rc not in (0, 4):
        r["check"] = f"wmfix exit {rc}: " + (stderr.strip().splitlines() or [""])[-1][:300]
    warnings = [l.strip() for l in stderr.splitlines() if re.search(r"unsupported|warning", l, re.I)]
    if warnings:
        r["warnings"] = warnings[:5]
    return r


def check_one(wmfix, dest, outroot, p, no_check):
    d = os.path.join(dest, p["name"])
    out = os.path.join(outroot, p["name"])
    src = json.load(open(os.path.join(d, "SOURCE.json")))
    cmd = [wmfix, "build", d, "--out", out] + (["--no-check"] if no_check else [])
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    RUNNING.add(proc)
    try:
        stdout, stderr = proc.communicate(timeout=BOUND_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            stdout, stderr = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, stderr = proc.communicate()
    RUNNING.discard(proc)
    rc = proc.returncode
    r = {"name": p["name"], "repo": src["repo"], "commit": src["commit"], "folder": src["folder"],
         "exit_is_check": p["exit_check"], "post_check": p["check"], "wmfix_exit": rc}
    r.update(classify(p, rc, stdout, stderr, out))
    r["seconds"] = round(time.time() - t0, 1)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "wmfix-output.txt"), "w") as f:
        f.write(f"$ {' '.join(cmd)}\n# exit {rc}\n--- stdout\n{stdout}\n--- stderr\n{stderr}")
    return r


# Seconds one program's `wmfix build` may take (SIGINT then, as a ctrl-c); the `wmfix build`s
# running when this script gets SIGINT get it too, and the table holds the programs done.
BOUND_S = 300
RUNNING = set()


def yes(v):
    return "-" if v is None else ("yes" if v else "**NO**")


def table(results):
    lines = ["| program | source | original builds | instrumented builds | fences | exit is the check | wmfix exit | check | s |",
             "|---|---|---|---|---:|---|---:|---|---:|"]
    for r in results:
        verdict = r["check"]
        if r.get("instrumented_built") is False:
            verdict = "instrumented build fails: " + "; ".join(r.get("errors", [])[:1])
        how = "yes" if r["exit_is_check"] else ("output grep" if r["post_check"] else "no")
        lines.append(f"| {r['name']} | {r['repo']}@{r['commit'][:8]} {r['folder']} | {yes(r['original_built'])} | "
                     f"{yes(r['instrumented_built'])} | {'' if r.get('fences') is None else r['fences']} | {how} | "
                     f"{r['wmfix_exit']} | {verdict.replace('|', '/')} | {r['seconds']} |")
    n = len(results)
    orig = sum(r["original_built"] is True for r in results)
    inst = sum(r["instrumented_built"] is True for r in results)
    passed = sum(r["check"].startswith("ends as the original does") for r in results)
    differ = sum(r["check"].startswith("differs") for r in results)
    lines.append("")
    lines.append(f"{n} programs: {orig} originals built, {inst} instrumented programs built; "
                 f"{passed} end as the original does, {differ} differ, {n - passed - differ} not checked.")
    return "\n".join(lines), dict(programs=n, original_built=orig, instrumented_built=inst,
                                  passed=passed, differs=differ)


def check(args):
    wmfix = os.path.abspath(args.wmfix)
    os.makedirs(args.out, exist_ok=True)
    names = set(args.only.split(",")) if args.only else None
    todo = [p for p in PROGRAMS if os.path.isfile(os.path.join(args.dest, p["name"], "wmfix.toml"))
            and (names is None or p["name"] in names)]
    results = {}
    ex = concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs)
    futs = [ex.submit(check_one, wmfix, args.dest, args.out, p, args.no_check) for p in todo]

    def done(r):
        results[r["name"]] = r
        print(f"{r['name']}: exit {r['wmfix_exit']}, {r['check']} ({r['seconds']} s)",
              file=sys.stderr, flush=True)
    try:
        for f in concurrent.futures.as_completed(futs):
            done(f.result())
    except KeyboardInterrupt:
        print("interrupted: the table holds the programs done", file=sys.stderr, flush=True)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for f in futs:
            f.cancel()
        for proc in list(RUNNING):
            try:
                os.killpg(proc.pid, signal.SIGINT)
            except OSError:
                pass
        for f in concurrent.futures.wait([f for f in futs if not f.cancelled()], timeout=25).done:
            if f.exception() is None and f.result()["name"] not in results:
                done(f.result())
    ex.shutdown(wait=False, cancel_futures=True)
    ordered = [results[p["name"]] for p in todo if p["name"] in results]
    text, totals = table(ordered)
    commits = open(os.path.join(args.dest, "COMMITS.txt")).read() if os.path.exists(
        os.path.join(args.dest, "COMMITS.txt")) else ""
    doc = {"no_check": args.no_check, "commits": commits.splitlines(), "totals": totals,
           "left_out": [p["name"] for p in todo if p["name"] not in results], "programs": ordered}
    with open(os.path.join(args.out, "public.json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(args.out, "public.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    if RUNNING:  # a thread still waits on a wmfix that did not stop: do not wait with it
        sys.stdout.flush()
        os._exit(0)
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("prepare")
    pp.add_argument("mirrors")
    pp.add_argument("dest")
    pc = sub.add_parser("check")
    pc.add_argument("wmfix")
    pc.add_argument("dest")
    pc.add_argument("out")
    pc.add_argument("--no-check", action="store_true")
    pc.add_argument("--jobs", type=int, default=2)
    pc.add_argument("--only", help="comma-separated program names")
    sub.add_parser("list")
    args = ap.parse_args(argv)
    if args.cmd == "prepare":
        prepare(args.mirrors, args.dest)
    elif args.cmd == "check":
        return check(args)
    else:
        for p in PROGRAMS:
            how = "exit" if p["exit_check"] else ("grep" if p["check"] else "none")
            print(f"{p['name']:32} {p['folder']:55} check: {how:5} run: {p['run']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
