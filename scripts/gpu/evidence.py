#!/usr/bin/env python3
"""Every GPU figure the READMEs cite, regenerated on one H100/H200: the one GPU script.

    scripts/gpu/evidence.sh --list            # the steps, in priority order, and which are done
    scripts/gpu/evidence.sh --table           # each step's command, budget and outputs
    scripts/gpu/evidence.sh [PATTERN ...]     # run the steps not yet done (all, or those matching)

The steps are declared in scripts/gpu/steps.py; each runs a function of
scripts/gpu/evidence_lib.sh in a bash of its own. Variables: W (wmfix), OUT, WORK (the machine's
scratch folder, default /tmp/ev), BUDGET_S, JOBS (runs at a time, default 8), RUNS (per app
cell, default 100), LIMIT (seconds per wmfix command, overriding every step's budget),
FENCED_LIMIT, TUNE_LIMIT, NATIVE, PEER, RESULTS (the results folder; default results/<TAG>-<gpu>
when TAG is set, else the newest results/*-<gpu>), FROM_RESULTS, TEST_OPTS, GROUND_TRUTH: as
evidence_lib.sh reads them.

Run from the repository root on the GPU machine with a release build of wmfix at carry/wmfix (or
carry/wmfix.xz) and carry/VERSION (the commit it was built from). Steps run in priority order
until BUDGET_S seconds (default 530) are spent; each wmfix command is bounded with
`timeout --foreground -s INT`, so wmfix still writes complete records when a bound is reached.
Results go to results/<date>-<gpu>/<step>/; a step is done once its folder holds DONE, so a
later call (with the results committed back) runs only what is left. Every file a step writes
names the GPU, driver, date, wmfix commit and command. $OUT gets evidence.log and
evidence.tar.gz: the folders of the steps this call ran, to unpack at the repository root.
"""
import datetime
import fnmatch
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import steps as declared  # noqa: E402

ROOT = Path.cwd()
LIB = Path(__file__).resolve().parent / "evidence_lib.sh"


def sh(cmd):
    """A command's stdout, or '' where it cannot run."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout
    except OSError:
        return ""


def gpu_field(name):
    lines = sh(["nvidia-smi", f"--query-gpu={name}", "--format=csv,noheader"]).splitlines()
    return lines[0] if lines else ""


def slug_of(gpu):
    return re.sub(r"[^a-z0-9]+", "-", (gpu or "unknown gpu").lower()).strip("-")


def shipped_profile(slug, profiles):
    """The profile wmfix ships for this GPU, as src/run/profile.rs picks it: <slug>.toml, or the
    longest profile name that begins the slug at a word; '' where none."""
    best = ""
    for f in sorted(profiles.glob("*.toml")):
        n = f.stem
        if (slug == n or slug.startswith(n + "-")) and len(n) > len(best):
            best = n
    return best


def results_folder(slug):
    if os.environ.get("RESULTS"):
        return Path(os.environ["RESULTS"])
    if os.environ.get("TAG"):
        return ROOT / "results" / f"{os.environ['TAG']}-{slug}"
    found = sorted((ROOT / "results").glob(f"*-{slug}"))
    if found:
        return found[-1]
    return ROOT / "results" / f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d}-{slug}"


def main(args):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `--list | head`
    gpu, driver = gpu_field("name"), gpu_field("driver_version")
    slug = slug_of(gpu)
    results = results_folder(slug)
    profiles = ROOT / "runtime-cu" / "profiles"
    table = declared.steps(
        runs=os.environ.get("RUNS", "100"),
        profiles=profiles,
        new_tune=results / "stress-tune" / "profile.toml",
        shipped=shipped_profile(slug, profiles),
    )
    done = lambda s: (results / s.name / "DONE").is_file()
    if args[:1] == ["--list"]:
        for s in table:
            print(("done  " if done(s) else "todo  ") + s.name)
        return 0
    if args[:1] == ["--table"]:
        for s in table:
            budget = f"{s.budget} s" if s.budget else "its own bounds"
            print(f"{s.name}\t{' '.join(s.command)}\t{budget}\t{', '.join(s.outputs) or '-'}")
        return 0
    out = Path(os.environ.get("OUT", ROOT / "gpu-out"))
    work = Path(os.environ.get("WORK", "/tmp/ev"))
    out.mkdir(parents=True, exist_ok=True)
    start = int(time.time())
    budget = int(os.environ.get("BUDGET_S", "530"))
    deadline = start + budget
    log_path = out / "evidence.log"
    commit = (ROOT / "carry" / "VERSION").read_text().strip() if (ROOT / "carry" / "VERSION").is_file() else "unknown"
    nvcc = (sh(["nvcc", "--version"]).splitlines() or [""])[-1]
    results.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    log_path.write_text(f"# {gpu}, driver {driver}, {nvcc}; {now}; wmfix {commit}\n"
                        f"# $ scripts/gpu/evidence.sh {' '.join(args)}\n"
                        f"# results: {os.path.relpath(results, ROOT)}, budget {budget} s\n")

    def log(line):
        print(line, flush=True)
        with open(log_path, "a") as f:
            f.write(line + "\n")

    w = Path(os.environ.get("W", ROOT / "carry" / "wmfix"))
    # The binary may travel compressed; it is unpacked only to run steps.
    if not os.access(w, os.X_OK) and Path(f"{w}.xz").is_file():
        with open(w, "wb") as f:
            subprocess.run(["xz", "-dc", f"{w}.xz"], stdout=f, check=True)
        w.chmod(0o755)
    if not os.access(w, os.X_OK):
        log(f"no wmfix at {w}")
        return 1
    ran = []
    for s in table:
        if args and not any(fnmatch.fnmatchcase(s.name, p) for p in args):
            continue
        if done(s):
            continue
        if deadline - int(time.time()) <= 20:
            log(f"deadline: {s.name} and later steps left for the next call")
            break
        step_dir = results / s.name
        step_dir.mkdir(parents=True, exist_ok=True)
        ran.append(os.path.relpath(step_dir, ROOT))
        t0 = int(time.time())
        env = dict(os.environ, STEP=s.name, STEP_DIR=str(step_dir), STEP_T0=str(t0), START=str(start),
                   DEADLINE=str(deadline), RESULTS=str(results), WORK=str(work), W=str(w))
        if s.budget and "LIMIT" not in os.environ:
            env["LIMIT"] = str(s.budget)
        rc = subprocess.run(["bash", "-c", 'source "$0"; "$@"', str(LIB), *s.command], env=env).returncode
        dt = int(time.time()) - t0
        if rc == 0:
            (step_dir / "DONE").write_text(datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") + "\n")
            log(f"done  {s.name} ({dt} s)")
        else:
            log(f"left  {s.name} (exit {rc} after {dt} s)")
    log(f"finished after {int(time.time()) - start} s")
    subprocess.run(["tar", "czf", str(out / "evidence.tar.gz"), "-C", str(ROOT), "--files-from", "/dev/null", *ran])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
