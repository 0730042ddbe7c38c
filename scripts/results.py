#!/usr/bin/env python3
"""The READMEs' GPU tables, from a results folder that scripts/gpu/evidence.sh wrote.

Usage: scripts/results.py results/<date>-<gpu> [apps|fenced|reduce|race-reduce|public|cost|peer|stress|gpus|coverage|overhead|serve-on ...]
       scripts/results.py --check [ROOT]   the generated tables match their result files (exit 1 if not)
       scripts/results.py --write [ROOT]   rewrites the generated tables that differ

results/README.md, the index of results folders with the places outside each that cite it, is
generated too: --check fails when it is stale, --write rewrites it.

A generated table in a Markdown file under ROOT (the repository's by default) is the output of
`scripts/results.py FOLDER TABLE...` between `<!-- results.py FOLDER TABLE... -->` and
`<!-- /results.py -->` (FOLDER relative to ROOT, no `### TABLE` headings); each results folder's
cost.svg is `cost-svg`'s. scripts/test.sh runs --check: a committed table that its result files
no longer give fails the tests, naming the table.

Every file there is {"meta": {gpu, driver, nvcc, commit, command, date}, "result": ...}; each
table ends with the GPU, driver, commit and dates it was measured with. Cells that a step did not
finish say so; a study whose baseline failed says so instead of a rate.
"""
import contextlib
import difflib
import io
import json
import lzma
import math
import os
import re
import sys


def load(folder, step, name):
    """A step's JSON file, or its xz-compressed copy (`NAME.xz`: large raw files), or None."""
    path = os.path.join(folder, step, name)
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    if os.path.exists(path + ".xz"):
        with lzma.open(path + ".xz", "rt") as f:
            return json.load(f)
    return None


def read(folder, step, name):
    """A step's text file, or "" where there is none."""
    path = os.path.join(folder, step, name)
    return open(path).read() if os.path.exists(path) else ""


def log_says(folder, step, text):
    return text in read(folder, step, "log.txt")


def wilson(k, n, z=1.96):
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    d = 1 + z * z / n
    c = p + z * z / (2 * n)
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return ((c - h) / d, (c + h) / d)


def cell(folder, step, metas):
    doc = load(folder, step, "summary.json")
    if doc is None:
        if log_says(folder, step, "original program fails its post-condition"):
            return "baseline fails"
        return "-"
    metas.append(doc["meta"])
    s = doc["result"]
    out = []
    for r in s["rows"]:
        e = r["fail"] + r["timeout"] + r["crash"]
        lo, hi = wilson(e, r["runs"])
        per_h = 3600 * e / r["seconds"] if r["seconds"] > 0 else 0
        out.append(f"{e}/{r['runs']} ({100 * e / max(r['runs'], 1):.0f}%, {100 * lo:.0f}-{100 * hi:.0f}; {per_h:,.0f}/h)")
    text = "; ".join(out)
    if s.get("interrupted"):
        text += " (cut short)"
    return text


def provenance(metas, script="scripts/gpu/evidence.sh"):
    if not metas:
        return ""
    gpus = sorted({f"{m['gpu']}, driver {m['driver']}" for m in metas})
    commits = sorted({m["commit"] for m in metas})
    dates = sorted(m["date"] for m in metas)
    return (f"\nMeasured on {'; '.join(gpus)}, wmfix {', '.join(commits)}, "
            f"{dates[0]} to {dates[-1]}, by `{script}` (each file under the results folder names its command).\n")


def steps(folder, prefix):
    return sorted(d for d in os.listdir(folder) if d.startswith(prefix))


def apps(folder):
    metas = []
    studies = []
    for d in steps(folder, "apps-"):
        study = d[len("apps-"):].rsplit("-sys-", 1)[0].removesuffix("-no")
        if study not in studies:
            studies.append(study)
    profiles = sorted({d.rsplit("-sys-", 1)[1] for d in steps(folder, "apps-") if "-sys-" in d})
    print("Errors in runs of the program as written (fences off): errors/runs (%, 95% Wilson interval; errors per hour of wall time at 8 runs at a time).\n")
    print("| study | no-str- | " + " | ".join(f"sys-str+ `{p}` profile" for p in profiles) + " |")
    print("|---|---|" + "---|" * len(profiles))
    for study in studies:
        cells = [cell(folder, f"apps-{study}-no", metas)]
        cells += [cell(folder, f"apps-{study}-sys-{p}", metas) for p in profiles]
        print(f"| {study} | " + " | ".join(cells) + " |")
    print(provenance(metas))


def fenced(folder):
    metas = []
    print("The studies with their fences (must not err):\n")
    print("| study | environment | errors/runs |")
    print("|---|---|---|")
    for d in steps(folder, "fenced-"):
        study, env = d[len("fenced-"):].rsplit("-sys-", 1)
        print(f"| {study} | sys-str+ `{env}` | {cell(folder, d, metas)} |")
    print(provenance(metas))


def completed(folder):
    """The kept fences with the model's completion, under sys-str+ (must not err)."""
    metas = []
    print("The reduced programs with the model's completion, sys-str+ with the shipped profile (must not err):\n")
    print("| study | fences on | errors/runs |")
    print("|---|---|---|")
    for d in steps(folder, "completed-"):
        doc = load(folder, d, "summary.json")
        fences = doc["result"].get("fences", "?") if doc else "?"
        print(f"| {d[len('completed-'):]} | {fences} | {cell(folder, d, metas)} |")
    print(provenance(metas))


def miss(res, settings, steps=1):
    """The stability check's miss probability and the rate it holds for (reduce.json's
    stability_rate; before that field, the lower of the assumed rate and --rare-rate; with
    several steps a run, also as a rate a step), or why there is none (a program without errors
    has no rate to assume, an incomplete reduction no stability check)."""
    m = res.get("miss_probability")
    if m is not None:
        rate = res.get("stability_rate")
        if rate is None and res.get("assumed_rate") is not None:
            rate = min(res["assumed_rate"], settings.get("rare_rate") or 1.0)
        if rate is None:
            return f"{m:.3g}"
        if steps > 1:
            step = 1 - (1 - rate) ** (1 / steps)
            return f"{m:.3g} at {100 * step:.3g}% a step ({100 * rate:.3g}% of {steps}-step runs)"
        return f"{m:.3g} at {100 * rate:.3g}%"
    return "- (no error without fences)" if (res.get("unfenced") or [1])[0] == 0 else "-"


def per_check(res):
    m = res.get("check_miss_probability")
    return f"{res['iterations']} ({m:.2g})" if m is not None else f"{res['iterations']}"


def model(r):
    """The fences the PTX memory model adds (id: side on variable), and the unrecognised."""
    m = r.get("model", {})
    found = [f"{c['id']}: {c['side']} on `{c['variable']}`" for c in m.get("fences", [])]
    unrecognised = [str(i) for i, _ in m.get("unrecognised", [])]
    if len(unrecognised) > 3:  # many: the ids in one item
        found.append(f"{len(unrecognised)} not recognised")
    else:
        found += [f"{i}: not recognised" for i in unrecognised]
    return "; ".join(found) or "-"


def agreement(folder):
    """How often each fence was kept over the seeds (reduce-STUDY is seed 1, seeds-STUDY 2 and 3)."""
    metas = []
    print("| study | seed 1 | seed 2 | seed 3 | fences kept by k of 3 seeds |")
    print("|---|---|---|---|---|")
    for d in steps(folder, "reduce-"):
        study = d[len("reduce-"):]
        docs = [load(folder, d, "reduce.json")] + [load(folder, "seeds-" + study, f"reduce-seed{k}.json") for k in (2, 3)]
        sets = []
        for doc in docs:
            if doc is None:
                sets.append(None)
                continue
            metas.append(doc["meta"])
            res = doc["result"]["result"]
            sets.append((res["fences"], res["complete"]))
        cells = ["-" if s is None else (", ".join(map(str, s[0])) or "none") + ("" if s[1] else " (incomplete)") for s in sets]
        counts = {}
        for s in sets:
            for f in (s[0] if s else []):
                counts[f] = counts.get(f, 0) + 1
        n = sum(s is not None for s in sets)
        agree = ", ".join(f"{f}: {c}/{n}" for f, c in sorted(counts.items())) or "-"
        print(f"| {study} | {' | '.join(cells)} | {agree} |")
    print(provenance(metas))


def journal_errors(folder, step):
    """Errors over the reduction's journal, and how many were time-outs ('-' without a journal;
    journals before wmfix counted time-outs give '?')."""
    path = os.path.join(folder, step, "journal.jsonl")
    if not os.path.exists(path):
        return "-"
    errors, timeouts, counted = 0, 0, True
    for line in list(open(path))[1:]:
        try:
            tally = json.loads(line)["tally"]
        except (ValueError, KeyError):
            continue
        errors += tally["errors"]
        counted = counted and "timeouts" in tally
        timeouts += tally.get("timeouts", 0)
    return f"{errors} ({timeouts if counted else '?'})"


def wall_total(folder, d, r):
    """The reduction's wall seconds and whether it was resumed from a journal (an earlier call's
    checks replayed); for a resumed one, the sum over the calls since its last fresh start that
    the step's log.txt records (each `# $ command` with its `# exit` line; a fresh start, without
    --resume or --resume-from, drops the calls before it), and how many calls."""
    if not r.get("replayed_checks"):
        return r["wall_seconds"], None
    runs = re.findall(r"^# \$ (.*)$\n(?:(?!^# \$ ).*\n)*?^# exit \d+ after (\d+) s of this step$",
                      read(folder, d, "log.txt"), re.M)
    calls = []
    for cmd, seconds in runs:
        if not any(a in ("--resume", "--resume-from") for a in cmd.split()):
            calls = []
        calls.append(int(seconds))
    return sum(calls), len(calls)


def wall(folder, d, r):
    """The reduction's wall seconds as a table cell (`wall_total`)."""
    total, calls = wall_total(folder, d, r)
    if calls is None:
        return f"{total:.0f}"
    return f"{r['wall_seconds']:.0f} (resumed; {total} over {calls} calls)"


def reduce_steps(folder, prefix, metas):
    """(step, study, reduce.json or None) of each step named prefix + study; the meta of each
    finished one appended to metas."""
    for d in steps(folder, prefix):
        doc = load(folder, d, "reduce.json")
        if doc is not None:
            metas.append(doc["meta"])
        yield d, d[len(prefix):], doc


def reduce(folder):
    metas = []
    print("| study | fences | kept | complete | checks (cached) | runs | errors (time-outs) | runs per check (miss) | wall s | miss probability | model completion | sanity |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for d, study, doc in reduce_steps(folder, "reduce-", metas):
        if doc is None:
            print(f"| {study} | - | not finished | | | | {journal_errors(folder, d)} | | | | | |")
            continue
        r = doc["result"]
        res = r["result"]
        # A loop fence whose check passed with its placement after the loop alone: "5 (after loop)".
        after = set(res.get("after_loop_only", []))
        # A fence add-back found after a failed stability check: "9 (rare)".
        rare = set(res.get("added_back", []))
        kept = ", ".join(str(f) + (" (after loop)" if f in after else "") + (" (rare)" if f in rare else "")
                         for f in res["fences"]) or "none"
        print(f"| {study} | {r['initial_fences']} -> {len(res['fences'])} | {kept} | {res['complete']} | "
              f"{res['checks']} ({res['cached_checks']}) | {res['runs']} | {journal_errors(folder, d)} | {per_check(res)} | {wall(folder, d, r)} | {miss(res, r.get('settings', {}), r.get('steps', 1))} | "
              f"{model(r)} | {r.get('sanity', {}).get('passed', 'original')} |")
    print(provenance(metas))


def race_reduce(folder):
    """`reduce --oracle race --warm` (steps warm-reduce-race-STUDY), each with the stressed runs
    of what it kept and the model's completion (warm-stress-warm-reduce-race-STUDY)."""
    metas = []
    print("`reduce --oracle race --warm`: the start set from one detection run (host check: the "
          "detections' seconds), confirmed by the stress stability check; then the set kept, with "
          "the model's completion, in stressed runs (sys-str+, `--warm`).\n")
    print("| study | fences | kept | of them store-load | detections | host check s | stress runs | wall s | stressed runs afterwards: errors/runs |")
    print("|---|---|---|---|---:|---:|---:|---:|---|")
    for d, study, doc in reduce_steps(folder, "warm-reduce-race-", metas):
        if doc is None:
            print(f"| {study} | - | not finished | | | | | | |")
            continue
        r = doc["result"]
        res, race = r["result"], r.get("race") or {}
        kept = ", ".join(str(f) for f in res["fences"]) or "none"
        sl = ", ".join(str(f) for f in race.get("store_load", [])) or "-"
        after = "not run"
        stressed = load(folder, "warm-stress-" + d, "summary.json")
        if stressed is not None:
            metas.append(stressed["meta"])
            row = stressed["result"]["rows"][0]
            errors = row["fail"] + row["timeout"] + row["crash"]
            cut = ", cut short by the step's bound" if stressed["result"].get("interrupted") else ""
            after = f"{errors}/{row['runs']} (fences {stressed['result']['fences']}{cut})"
        print(f"| {study} | {r['initial_fences']} -> {len(res['fences'])} | {kept} | {sl} | "
              f"{race.get('detections', '-')} | {race.get('seconds', 0):.1f} | {res['runs']} | "
              f"{wall(folder, d, r)} | {after} |")
    print(provenance(metas))


def trust_race(folder):
    """`wmfix race` at its defaults (trust-race-STUDY): events, whether every one was checked,
    the verdict and the exit code's meaning."""
    metas = []
    print("`wmfix race` at its defaults (no `--events`: the trace takes a quarter of the device's "
          "free memory; each launch checked on its own, on all cores); runs: the detection runs made (the default "
          "was one run; it is now up to three, stopping at the first that shows a race); events over all of them.\n")
    print("| study | runs | events | launches cut or lost | every event checked | racing place pairs | verdict | run s | host check s |")
    print("|---|---:|---:|---|---|---:|---|---:|---:|")
    for d in steps(folder, "trust-race-"):
        doc = load(folder, d, "race.json")
        if doc is None:
            print(f"| {d[len('trust-race-'):]} | - | - | - | not run | | | | |")
            continue
        metas.append(doc["meta"])
        r = doc["result"]
        events = sum(run["events"] for run in r["runs"])
        unchecked = r["dropped"] + r.get("cut", 0) + r["stats"]["reads_not_checked"]
        lost = "none" if unchecked == 0 and not r.get("lost") else f"{unchecked} events, {len(r.get('lost', []))} runs lost"
        share = r.get("checked_share")
        whole = "yes (100%)" if r.get("complete") else f"NO ({100 * share:.2f}%)" if share is not None else "NO"
        rows = len(r["rows"])
        verdict = "race (exit 2)" if rows else ("no race (exit 0)" if r.get("complete") else "inconclusive (exit 6)")
        print(f"| {d[len('trust-race-'):]} | {len(r['runs'])} | {events:,} | {lost} | {whole} | {rows} | {verdict} | "
              f"{r['detection_s']:.1f} | {r['check_s']:.1f} |")
    print(provenance(metas))


def race_vs_racecheck(folder):
    """The ground truth's kernels by kind, `wmfix race` (ground-truth-MODEL*, each model's first
    step) beside compute-sanitizer racecheck (racecheck-ground-truth): the kernel-level lines
    scripts/race_ground_truth.py writes into each step's confusion.txt."""
    def lines(d):
        text = read(folder, d, "confusion.txt") if d else ""
        return {m[0]: (int(m[1]), int(m[2])) for m in re.findall(r"^kernels (\S+) (\d+) (\d+)$", text, re.M)}
    first = lambda prefix: next((d for d in steps(folder, prefix)), None)
    ptx, hrf, rc = lines(first("ground-truth-ptx")), lines(first("ground-truth-scoped-hrf")), lines(first("racecheck-ground-truth"))
    print("The generated suite's kernels (tests/ground_truth) by the kind of race they hold, found by "
          "`wmfix race` under each model and by compute-sanitizer's racecheck (the program as written; "
          "racecheck checks shared memory only and names no kind, so a kernel counts as found when it "
          "names the kernel at all, against the ptx labels); race-free: kernels with no race under the model, "
          "and how many were reported:\n")
    print("| kind | ptx: kernels | wmfix race (ptx) | racecheck | scoped-hrf: kernels | wmfix race (scoped-hrf) |")
    print("|---|---:|---:|---:|---:|---:|")
    cell = lambda t, k, i: str(t[k][i]) if k in t else "-"
    for k in ["data-race", "relaxed-message", "unordered-strong", "race-free"]:
        print(f"| {k} | {cell(ptx, k, 0)} | {cell(ptx, k, 1)} | {cell(rc, k, 1)} | {cell(hrf, k, 0)} | {cell(hrf, k, 1)} |")


def race_apps(folder):
    """`wmfix race` on issue 46's applications (race-app-STUDY-{ok,racy}-MODEL): each build's
    verdict against what it should be (the racy build races, the correct one does not), with
    what the report names: the kinds of its rows and the fences or scopes to change."""
    metas = []
    print("`wmfix race` at its defaults on the race applications (case-studies/ra-*), the correct "
          "build and the racy one (`-DRACY`: block-scope atomics or fences across blocks), under "
          "each model; runs: the detection runs made (up to three by default, stopping at the first that shows a "
          "race; one before), events over all of them:\n")
    print("| application | build | model | runs | events | every event checked | rows (kinds) | verdict | as it should be | what the rows name | run s | host check s |")
    print("|---|---|---|---:|---:|---|---|---|---|---|---:|---:|")
    for d in steps(folder, "race-app-"):
        m = re.match(r"race-app-(.+)-(ok|racy)-(ptx|scoped-hrf)$", d)
        if not m:
            continue
        app, build, model = m.groups()
        doc = load(folder, d, "race.json")
        if doc is None:
            print(f"| {app} | {build} | {model} | - | - | not run | | | | | | |")
            continue
        metas.append(doc["meta"])
        r = doc["result"]
        events = sum(run["events"] for run in r["runs"])
        whole = "yes" if r.get("complete") else "NO"
        kinds = sorted({row["class"] for row in r["rows"]})
        rows = f"{len(r['rows'])} ({', '.join(kinds)})" if kinds else "0"
        raced = bool(r["rows"])
        verdict = "race" if raced else ("no race" if r.get("complete") else "inconclusive")
        right = "yes" if (raced == (build == "racy")) and (raced or r.get("complete")) else "NO"
        names = []
        if r.get("suggested"):
            names.append("fences " + ", ".join(str(f) for f in r["suggested"][:8]))
        if any(row.get("narrow_scope") for row in r["rows"]):
            names.append("a block-scope atomic to widen")
        sides = [row["explanation"].get(k) for row in r["rows"] for k in ("writer", "reader", "relay")]
        if any(side and side.get("block_scope_fence") for side in sides):
            names.append("a block-scope fence to widen")
        fences = "; ".join(names) or "-"
        print(f"| {app} | {build} | {model} | {len(r['runs'])} | {events:,} | {whole} | {rows} | {verdict} | {right} | {fences} | "
              f"{r['detection_s']:.1f} | {r['check_s']:.1f} |")
    print(provenance(metas))


def ground_truth(folder):
    """`wmfix race` on the ground-truth suite (ground-truth-MODEL[-again-N|-runs10]): per model and
    kind, the kernels' pairs found and missed against labels.json (the step's confusion.txt,
    written by scripts/race_ground_truth.py), the kernels with a wrong verdict and, over
    several detection runs, those whose verdict was not the same in every run."""
    metas = []
    print("`wmfix race` on the generated suite (tests/ground_truth: 5,076 kernels labelled by construction), "
          "one build a step and its detection runs; per kind, kernel pairs found in some run (TP), missed (FN), "
          "reported wrongly (FP), rightly not reported (TN):\n")
    print("| step | model | runs | kind | TP | FN | FP | TN | kernels wrong | verdict not the same in every run |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for d in steps(folder, "ground-truth-"):
        doc = load(folder, d, "race.json")
        if doc:
            metas.append(doc["meta"])
        text = read(folder, d, "confusion.txt")
        m = re.search(r"^model (\S+):", text, re.M)
        runs = re.search(r"^model \S+: \d+ kernels, (\d+) detection run", text, re.M)
        runs = int(runs[1]) if runs else 1
        wrong = len(re.findall(r"^WRONG ", text, re.M))
        unstable = len(re.findall(r"^NOT IN EVERY RUN ", text, re.M)) if runs > 1 else "-"
        rows = re.findall(r"^(data-race|relaxed-message|unordered-strong)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", text, re.M)
        if not m or not rows:
            print(f"| {d} | - | - | not run | | | | | | |")
            continue
        for i, (kind, tp, fn, fp, tn) in enumerate(rows):
            end = i == len(rows) - 1
            first = lambda v: v if i == 0 else ""
            print(f"| {first(d)} | {first(m[1])} | {first(runs)} | {kind} | {tp} | {fn} | {fp} | {tn} | "
                  f"{wrong if end else ''} | {unstable if end else ''} |")
    print(provenance(metas))


def public(folder):
    """The differential check on public programs (trust-differential-public): each program's
    builds and whether the instrumented one, fences off and no stress, ends as the original."""
    doc = load(folder, "trust-differential-public", "public.json")
    print("`wmfix build` on public programs (cuda-samples, HeteroSync; scripts/public_programs.py): "
          "the original and the instrumented program built and run natively, the instrumented one "
          "with its fences off and no stress; it must end as the original does (exit code, signal, "
          "time-out, and the program's own check where its exit status is not one).\n")
    print("| program | original builds | instrumented builds | fences | exit status is its check | check | s |")
    print("|---|---|---|---:|---|---|---:|")
    if doc is None:
        print("| - | not run | | | | | |")
        return
    r = doc["result"]

    def yes(v):
        return "-" if v is None else ("yes" if v else "NO")
    for p in r["programs"]:
        verdict = p["check"]
        if p.get("instrumented_built") is False:
            verdict = "instrumented build fails: " + "; ".join(p.get("errors", [])[:1])
        how = "yes" if p["exit_is_check"] else ("its output, grepped" if p.get("post_check") else "no")
        fences = "" if p.get("fences") is None else p["fences"]
        print(f"| {p['name']} | {yes(p['original_built'])} | {yes(p['instrumented_built'])} | {fences} | "
              f"{how} | {verdict.replace('|', '/')} | {p['seconds']:.0f} |")
    t = r["totals"]
    left = f"; not reached before the bound: {', '.join(r['left_out'])}" if r.get("left_out") else ""
    print(f"\n{t['programs']} programs ({'; '.join(r['commits'])}): {t['original_built']} originals and "
          f"{t['instrumented_built']} instrumented programs built; {t['passed']} end as the original does, "
          f"{t['differs']} differ{left}.")
    print(provenance([doc["meta"]]))


def cost_rows(folder, metas):
    """(study, completed, row) for each row of each cost step's cost.json; `completed`: the
    cost-model step (the kept fences with the model's completion)."""
    for d in steps(folder, "cost-"):
        doc = load(folder, d, "cost.json")
        if doc is None:
            continue
        metas.append(doc["meta"])
        study = d[len("cost-"):]
        completed = study.startswith("model-")
        for row in doc["result"]["rows"]:
            yield (study[len("model-"):] if completed else study), completed, row


def cost(folder):
    metas = []
    print("Mean per run with 95% half-width; ratio to the program as written (`none`). Errors: the "
          "variant's runs that failed, timed out or crashed; their times are in the means where "
          "they printed one.\n")
    print("| study | variant | fences | errors | kernel ms (wmfix-time-ms) | x none | wall s | x none | energy J | x none |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for study, completed, row in cost_rows(folder, metas):
        def m(key, digits):
            v = row.get(key)
            return f"{v['mean']:.{digits}f} ± {v['ci95']:.{digits}f}" if v else "-"

        def ratio(key):
            v = row.get(key)
            return f"{v[0]:.2f} ± {v[1]:.2f}" if v else "-"
        variant = "reduced + model" if completed and row["variant"] not in ("none", "all") else row["variant"]
        errors = f"{row['errors']} of {row['runs']}" if "errors" in row and "runs" in row else "-"
        print(f"| {study} | {variant} | {row['fences']} | {errors} | {m('reported_ms', 3)} | {ratio('reported_ratio')} | "
              f"{m('wall_s', 3)} | {ratio('wall_ratio')} | {m('energy_j', 1)} | {ratio('energy_ratio')} |")
    print(provenance(metas))


def cost_svg(folder):
    """Writes cost.svg in the folder (cost_svg_text)."""
    text = cost_svg_text(folder)
    if text is None:
        return
    path = os.path.join(folder, "cost.svg")
    with open(path, "w") as f:
        f.write(text)
    print(f"wrote {path}")


def cost_svg_text(folder):
    """cost.svg's text, or None without cost rows: kernel time with fences over kernel time
    without, per study, as bars with 95% intervals (as in the paper's Fig. 5): the reduced set
    (with the model's completion where that step ran) beside every fence."""
    bars = {}
    metas = []
    for study, completed, row in cost_rows(folder, metas):
        r = row.get("reported_ratio")
        # Cells kept under another name for the record (the README says why) are not drawn.
        if not r or row["variant"] == "none" or study.endswith("-both-placements"):
            continue
        name = "all" if row["variant"] == "all" else ("reduced + model" if completed else "reduced")
        bars.setdefault(study, {})[name] = (r[0], r[1], row["fences"])
    if not bars:
        return None
    kinds = [k for k in ("reduced", "reduced + model", "all") if any(k in v for v in bars.values())]
    colours = {"reduced": "#4c78a8", "reduced + model": "#72b7b2", "all": "#e45756"}
    top = max(v[0] + v[1] for b in bars.values() for v in b.values())
    top = max(1.5, float(int(top + 1)))
    w, h, left, bottom, per = 120 * len(bars) + 80, 320, 60, 260, 120
    y = lambda v: bottom - (bottom - 20) * v / top
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h + 40}" font-family="sans-serif" font-size="11">']
    for t in range(int(top) + 1):
        out.append(f'<line x1="{left}" x2="{w - 10}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#ddd"/>'
                   f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{t}x</text>')
    out.append(f'<line x1="{left}" x2="{w - 10}" y1="{y(1):.1f}" y2="{y(1):.1f}" stroke="#888" stroke-dasharray="4 3"/>')
    bw = (per - 30) / len(kinds)
    for i, (study, b) in enumerate(sorted(bars.items())):
        x0 = left + 15 + i * per
        for j, k in enumerate(kinds):
            if k not in b:
                continue
            v, ci, n = b[k]
            x = x0 + j * bw
            out.append(f'<rect x="{x:.1f}" y="{y(v):.1f}" width="{bw - 4:.1f}" height="{y(0) - y(v):.1f}" fill="{colours[k]}"><title>{study}, {k} ({n} fences): {v:.2f} ± {ci:.2f}</title></rect>')
            cx = x + (bw - 4) / 2
            out.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(v + ci):.1f}" y2="{y(max(v - ci, 0)):.1f}" stroke="black"/>')
            out.append(f'<text x="{cx:.1f}" y="{y(v + ci) - 3:.1f}" text-anchor="middle" font-size="9">{n}</text>')
        out.append(f'<text x="{x0 + (per - 30) / 2:.1f}" y="{bottom + 16}" text-anchor="middle">{study}</text>')
    for j, k in enumerate(kinds):
        out.append(f'<rect x="{left + j * 140}" y="{h + 8}" width="10" height="10" fill="{colours[k]}"/>'
                   f'<text x="{left + j * 140 + 14}" y="{h + 17}">{k}</text>')
    out.append(f'<text x="{left}" y="12">kernel time with fences / without (wmfix-time-ms, 95% interval; number: fences). {metas[0]["gpu"]}, driver {metas[0]["driver"]}, wmfix {metas[0]["commit"]}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def peer(folder):
    path = os.path.join(folder, "peer-litmus", "runs.txt")
    if not os.path.exists(path):
        return
    lines = open(path).read().splitlines()
    print("\n".join(l for l in lines if l.startswith("#")) + "\n")
    runs = {}
    for l in lines:
        if l.startswith("#") or not l.strip():
            continue
        kv = dict(p.split("=", 1) for p in l.split() if "=" in p)
        try:
            n, w, s = int(kv["instances"]), int(kv["weak"]), float(kv["seconds"])
        except (KeyError, ValueError):
            continue
        runs.setdefault((kv["tool"], kv["test"], kv["stress"]), []).append((n / s, w / s, w / n))

    def med(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2]

    rows = {k: tuple(med([r[i] for r in v]) for i in range(3)) + (len(v),) for k, v in runs.items()}
    print("| tool | test | stress | runs | instances/s | weak/s | weak fraction |")
    print("|---|---|---|---|---|---|---|")
    for (tool, test, stress), (ips, wps, frac, n) in sorted(rows.items()):
        print(f"| {tool} | {test} | {stress} | {n} | {ips:.3g} | {wps:.3g} | {100 * frac:.4g}% |")
    print()
    for stressed, ps, what in [(False, "none", "unstressed"), (True, "shipped", "stressed")]:
        mine = [(v, k[2]) for k, v in rows.items() if k[:2] == ("wmfix", "MP") and (k[2].startswith("none")) != stressed]
        b = rows.get(("peer", "MP", ps))
        if mine and b:
            a, name = max(mine, key=lambda m: m[0][1])
            print(f"- MP {what} (wmfix's best, `{name}`): weak/s wmfix/peer = {a[1] / max(b[1], 1e-12):.3g}; instances/s wmfix/peer = {a[0] / b[0]:.3g}")
    print("\nMedians of the runs; targets (issue 13): MP weak/s ratio >= 10 unstressed and >= 3 stressed, stressed instances/s ratio >= 1.")


# scripts/gpu/evidence.sh's stress cells: step suffix, column title.
STRESS_COLUMNS = [
    ("no", "no-str-"),
    ("sys-builtin", "sys-str+ built-in default"),
    ("sys-shipped", "sys-str+ shipped default"),
    ("sys-h200tuned", "sys-str+ H200-tuned"),
    ("sys-newtune", "sys-str+ new tune"),
    ("sys-mix", "sys-str+ two variants (examples/mix.toml)"),
    ("aim-shipped", "aim-str+ shipped default"),
]
FENCELESS = ["cbe-dot", "cbe-ht", "ct-octree", "tpo-tm", "sdk-red-nf", "cub-scan-nf", "ls-bh-nf"]


def errors_and_runs(folder, step):
    doc = load(folder, step, "summary.json")
    if doc is None:
        return None
    rows = doc["result"]["rows"]
    return (sum(r["fail"] + r["timeout"] + r["crash"] for r in rows), sum(r["runs"] for r in rows))


PROFILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "runtime-cu", "profiles")
# Columns measured with a named profile file (WMFIX_PROFILE), and that file.
PROFILE_OF_COLUMN = {"sys-h200tuned": "nvidia-h200", "sys-builtin": "hopper-default"}


def profile_values(name):
    """(patch_size, sequence, spread) as a profile file in runtime-cu/profiles sets them, or None."""
    path = os.path.join(PROFILES, f"{name}.toml")
    if not os.path.exists(path):
        return None
    values = {}
    for line in open(path):
        key, _, value = line.split("#")[0].partition("=")
        if key.strip() in ("patch_size", "sequence", "spread"):
            values[key.strip()] = value.strip()
    return tuple(values.get(k) for k in ("patch_size", "sequence", "spread"))


def shipped_stand_in(names, study, shipped):
    """For a study without a sys-shipped cell: the column whose profile file sets the values the
    shipped profile sets (measured before that profile shipped), or None."""
    mine = profile_values(shipped[0]) if len(shipped) == 1 else None
    for k, name in PROFILE_OF_COLUMN.items():
        if mine and mine == profile_values(name) and f"stress-{study}-{k}" in names:
            return k
    return None


def stress(folder):
    """scripts/gpu/evidence.sh's stress steps: the fence-less studies under each candidate stress, the fenced
    studies under the shipped default, the new tune's profile, cbe-ht's native checks."""
    metas = []
    names = set(os.listdir(folder))
    columns = [(k, t) for k, t in STRESS_COLUMNS if any(f"stress-{s}-{k}" in names for s in FENCELESS)]
    if not columns:
        return
    shipped = sorted({(load(folder, f"stress-{s}-{k}", "summary.json") or {}).get("result", {}).get("profile", {}).get("name", "?")
                      for s in FENCELESS for k, _ in columns if k.endswith("shipped") and f"stress-{s}-{k}" in names})
    print("Errors in runs of the program as written (fences off): errors/runs (%, 95% Wilson interval; errors per hour of wall time). "
          f"Shipped default on this GPU: {', '.join(shipped) or '-'}.\n")
    # step[(study, column)]: the cell's step; a study's sys-shipped cell may stand in from a column
    # measured with the same values under another profile's name.
    step = {(s, k): f"stress-{s}-{k}" for s in FENCELESS for k, _ in columns}
    stood_in = {}
    for s in FENCELESS:
        k = "sys-shipped" if f"stress-{s}-sys-shipped" not in names and (s, "sys-shipped") in step else None
        other = k and shipped_stand_in(names, s, shipped)
        if other:
            step[(s, k)] = f"stress-{s}-{other}"
            stood_in[s] = other
    print("| study | " + " | ".join(t for _, t in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for study in FENCELESS:
        print(f"| {study} | " + " | ".join(cell(folder, step[(study, k)], metas) + (" ‡" if k == "sys-shipped" and study in stood_in else "")
                                           for k, _ in columns) + " |")
    if stood_in:
        others = sorted(set(stood_in.values()))
        print(f"\n‡ {', '.join(sorted(stood_in))}: the {' and '.join(others)} cell, measured with "
              f"{' and '.join(PROFILE_OF_COLUMN[o] + '.toml' for o in others)} as WMFIX_PROFILE, whose patch_size, sequence "
              f"and spread are those of the shipped {shipped[0]}.toml (runtime-cu/profiles).")
    for k, title in columns:
        rates = [errors_and_runs(folder, step[(s, k)]) for s in FENCELESS]
        seen = [e / r for e, r in (x for x in rates if x) if r > 0]
        if k != "no" and seen:
            print(f"\n- {title}: errors in {sum(1 for x in seen if x > 0)} of {len(seen)} studies measured, "
                  f"at least 20% of runs in {sum(1 for x in seen if x >= 0.2)}; lowest {100 * min(seen):.0f}%.", end="")
    print("\n\nThe studies with their fences, sys-str+ with the shipped default (must not err):\n")
    print("| study | errors/runs |")
    print("|---|---|")
    for d in sorted(n for n in names if n.startswith("stress-fenced-")):
        print(f"| {d[len('stress-fenced-'):]} | {cell(folder, d, metas)} |")
    for d in sorted(n for n in names if n.startswith("stress-allfences-")):
        print(f"| {d[len('stress-allfences-'):]} with every inserted fence | {cell(folder, d, metas)} |")
    seen = [d for d in sorted(names) if os.path.exists(os.path.join(folder, d, "failures.txt"))
            and os.path.getsize(os.path.join(folder, d, "failures.txt")) > 0]
    if seen:
        print("\nWhat the erring runs printed last (`failures.txt`, counted): see the step folders: " + ", ".join(seen) + ".")
    cub = [(f, t) for f, t in [("none", "CUB as written (--fences none)"), ("all", "--fences all")]
           if f"cub-scan-lib-sys-{f}" in names]
    if cub:
        print("\ncub-scan-lib (CUB's DeviceScan, preprocessed mode), sys-str+:\n")
        print("| fences | errors/runs |")
        print("|---|---|")
        for f, t in cub:
            print(f"| {t} | {cell(folder, f'cub-scan-lib-sys-{f}', metas)} |")
    grids = steps(folder, "stress-sdk-red-grid-")
    if grids:
        print("\nsdk-red-nf with other arguments (blocks, threads, elements, reductions per run), sys-str+, "
              "the shipped default of the cell's wmfix (its summary names the profile):\n")
        print("| ./red ... | profile | errors/runs |")
        print("|---|---|---|")
        for d in grids:
            args = d[len("stress-sdk-red-grid-"):].replace("-cut", "").replace("x", " ")
            doc = load(folder, d, "summary.json") or {}
            prof = doc.get("result", {}).get("profile", {}).get("name", "-")
            print(f"| {args} | {prof} | {cell(folder, d, metas)} |")
    profile = os.path.join(folder, "stress-tune", "profile.toml")
    if os.path.exists(profile):
        keys = [l.strip() for l in open(profile) if l.split("=")[0].strip() in ("patch_size", "sequence", "spread")]
        print(f"\nThe new tune (stress-tune/profile.toml): {'; '.join(keys)}.")
    native = os.path.join(folder, "cbe-ht-native", "native.txt")
    if os.path.exists(native):
        print("\ncbe-ht natively: " + "; ".join(l.strip() for l in open(native) if not l.startswith("#")) + ".")
    print(provenance(metas))


def builds(folder):
    """Fence sets at 1 and 10 builds (steps) a run: builds-STUDY-B-WHAT, WHAT `noN` (a reduced
    set less fence N) or another name; the fences on are the test's own record."""
    metas = []
    print("Under sys-str+, B builds (steps) a run (errors/runs; errors per hour):\n")
    print("| study | cell | fences on | builds a run | errors/runs |")
    print("|---|---|---|---|---|")
    for d in steps(folder, "builds-"):
        m = re.match(r"builds-(.+?)-(\d+)-(.+)$", d)
        if not m:
            continue
        study, b, what = m.groups()
        fences = ((load(folder, d, "summary.json") or {}).get("result") or {}).get("fences", "-")
        print(f"| {study} | {what} | {fences} | {b} | {cell(folder, d, metas)} |")
    print(provenance(metas))

def gpus(folder):
    """One GPU against two (gpus-N-test-STUDY, gpus-N-reduce-STUDY): runs an hour of `wmfix test`
    (from each summary's runs and seconds; a test cut by its bound still gives a rate) and the
    reductions' wall time, with the ratio of two GPUs to one."""
    metas = []
    def rate(d):
        s = (load(folder, d, "summary.json") or {})
        if s:
            metas.append(s["meta"])
        rows = (s.get("result") or {}).get("rows") or []
        runs, secs = sum(r["runs"] for r in rows), sum(r["seconds"] for r in rows)
        return 3600 * runs / secs if secs > 0 else None
    def walls(d):
        r = load(folder, d, "reduce.json")
        if not r:
            return None
        metas.append(r["meta"])
        # A reduction resumed in a later call: its journal's checks, every call's.
        rows = [json.loads(l) for l in read(folder, d, "journal.jsonl").splitlines()[1:]]
        return sum(x["tally"]["seconds"] for x in rows if "tally" in x)
    def ratio(a, b):
        return f"x{b / a:.2f}" if a and b else "-"
    print("Runs an hour of `wmfix test` (sys-str+, 8 runs at a time a GPU) and seconds of the "
          "reduction's checks, on one GPU and on two of one machine:\n")
    print("| study | test, 1 GPU | test, 2 GPUs | ratio | reduce, 1 GPU | reduce, 2 GPUs | ratio |")
    print("|---|---|---|---|---|---|---|")
    studies = sorted({m.group(1) for d in os.listdir(folder) for m in [re.match(r"gpus-\d+-(?:test|reduce)-(.+)$", d)] if m})
    for s in studies:
        t1, t2 = rate(f"gpus-1-test-{s}"), rate(f"gpus-2-test-{s}")
        r1, r2 = walls(f"gpus-1-reduce-{s}"), walls(f"gpus-2-reduce-{s}")
        f = lambda v, fmt: fmt.format(v) if v is not None else "-"
        print(f"| {s} | {f(t1, '{:,.0f}')} | {f(t2, '{:,.0f}')} | {ratio(t1, t2)} | {f(r1, '{:.0f} s')} | {f(r2, '{:.0f} s')} | {ratio(r1, r2)} |")
    print(provenance(metas))

def coverage(folder):
    """Fence sites by the memory their accesses ran on (coverage-test-STUDY, `wmfix test` with the
    runs recording coverage), and what recording costs the stress (coverage-off/on-test-STUDY)."""
    metas = []
    print("Under sys-str+, fences off: the fence sites each study's runs executed, and on which memory:\n")
    print("| study | errors/runs | sites | ran | on global memory | on shared or local memory only |")
    print("|---|---|---|---|---|---|")
    for d in steps(folder, "coverage-test-"):
        s = load(folder, d, "summary.json")
        if not s:
            continue
        metas.append(s["meta"])
        row = s["result"]["rows"][0]
        c = row.get("coverage")
        if not c:
            continue
        ids = lambda text: set() if text == "none" else {i for p in text.split(",") for i in (range(int(p.split("-")[0]), int(p.split("-")[-1]) + 1))}
        ran, glob = ids(c["executed"]), ids(c["global"])
        only = ", ".join(str(i) for i in sorted(ran - glob)) or "-"
        e = row["fail"] + row["timeout"] + row["crash"]
        print(f"| {d[len('coverage-test-'):]} | {e}/{row['runs']} | {c['fences']} | {len(ran)} | {len(glob)} | {only} |")
    print("\nThe same runs without and with the recording (`wmfix test` and `wmfix test --coverage`):\n")
    print("| study | without | with |")
    print("|---|---|---|")
    for d in steps(folder, "coverage-off-test-"):
        study = d[len("coverage-off-test-"):]
        print(f"| {study} | {cell(folder, d, metas)} | {cell(folder, 'coverage-on-test-' + study, metas)} |")
    print(provenance(metas))

def overhead(folder):
    """overhead-bench's table (runtime-cu/tests/overhead_bench.cu's output) as Markdown."""
    text = read(folder, "overhead-bench", "overhead.txt")
    rows = [l.split(None, 6) for l in text.splitlines()
            if re.match(r"^\S+\s+(none|all)\s", l)]
    if not rows:
        print("overhead-bench: not run")
        return
    print("| environment | fences | kernel | as written (ms) | instrumented (ms) | ratio |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        env, fences, rest = r[0], r[1], " ".join(r[2:])
        m = re.match(r"^(.*?)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)", rest)
        if m:
            print(f"| {env} | {fences} | {m[1]} | {m[2]} | {m[3]} | x{m[4]} |")
    head = [l[2:] for l in text.splitlines() if l.startswith("# ")]
    host = [l for l in text.splitlines() if l.startswith("host:")]
    print()
    host = [re.sub(r"\s*\(\d+\)$", "", l) for l in host]
    print("Median of 100 launches each, alternating; " + "; ".join(host) + ".")
    raw = os.path.join("results", os.path.basename(os.path.normpath(folder)), "overhead-bench", "overhead.txt")
    print(f"Measured: {head[0] if head else 'no header'} (`{raw}`).")


def serve_on(folder):
    """Issue 48: warm processes that serve on after a failed run. Fence-less `wmfix test` runs
    (serve-on-{cold,before-1,after-1,after-2}-STUDY): errors and runs an hour cold, warm with the
    wmfix before (a failed run ended its process) and after, on one GPU and on two; then the
    reductions (serve-on-{before,after}-reduce[-race]-STUDY) before and after."""
    metas = []
    def row(d):
        s = load(folder, d, "summary.json")
        if not s:
            return None
        metas.append(s["meta"])
        rows = s["result"].get("rows") or []
        runs = sum(r["runs"] for r in rows)
        errs = sum(r["fail"] + r["timeout"] + r["crash"] for r in rows)
        secs = sum(r["seconds"] for r in rows)
        procs = re.search(r"warm: \d+ runs in (\d+) processes", read(folder, d, "log.txt"))
        return {"runs": runs, "errs": errs, "rate": 3600 * runs / secs if secs > 0 else None,
                "procs": int(procs[1]) if procs else None}
    def errs(r):
        lo, hi = wilson(r["errs"], r["runs"])
        return f"{r['errs']}/{r['runs']} ({100 * r['errs'] / r['runs']:.1f}%, {100 * lo:.1f}-{100 * hi:.1f}%)"
    def rate(r, base=None):
        if r is None or r["rate"] is None:
            return "-"
        x = f" (x{r['rate'] / base['rate']:.1f})" if base and base["rate"] else ""
        return f"{r['rate']:,.0f}/h{x}"
    print("Fences off under sys-str+ (nearly every run errs): errors/runs (%, 95% Wilson interval) and "
          "runs an hour, 8 runs at a time a GPU; `before` is wmfix before this change (a run that "
          "erred ended its warm process), the ratios are to the cold runs and, for two GPUs, to one:\n")
    print("| study | cold, 1 GPU | `--warm` before, 1 GPU | `--warm` after, 1 GPU | `--warm` after, 2 GPUs | processes (after, 1 GPU / 2 GPUs) |")
    print("|---|---|---|---|---|---|")
    studies = sorted({m.group(1) for d in os.listdir(folder) for m in [re.match(r"serve-on-cold-(.+)$", d)] if m})
    for st in studies:
        c, b, a1, a2 = (row(f"serve-on-{w}-{st}") for w in ("cold", "before-1", "after-1", "after-2"))
        cell_ = lambda r, base=None: f"{errs(r)}; {rate(r, base)}" if r else "not run"
        procs = "/".join(str(r["procs"]) if r and r["procs"] is not None else "-" for r in (a1, a2))
        print(f"| {st} | {cell_(c)} | {cell_(b, c)} | {cell_(a1, c)} | {cell_(a2, a1)} | {procs} |")
    extra = sorted({(m["study"], m["kind"] or m["cold"]) for d in os.listdir(folder)
                    for m in [re.match(r"serve-on-(?:after-[12]-(?P<kind>long|j1|j2|j4|j16|mps|mpsj16|paced-long|paced-xl|paced)|(?P<cold>cold400|cold-mps))-(?P<study>.+)$", d)] if m})
    if extra:
        print("\nLonger cells (long: 24,000 runs a GPU (paced-long: 8,000; paced-xl: 40,000); jN: N runs at a time a GPU; mps: under wmfix's "
              "MPS server (`--mps`), mpsj16 with 16 at a time; paced: as many at a time as make the most runs (`run::pace`); "
              "cold400: 400 cold runs; cold-mps: 400 cold runs under `--mps`), the ratio to the cold runs above and, for two GPUs, to one:\n")
        print("| study | cell | 1 GPU | 2 GPUs | processes (1 GPU / 2 GPUs) |")
        print("|---|---|---|---|---|")
        for st, kind in extra:
            c = row(f"serve-on-cold-{st}")
            if kind in ("cold400", "cold-mps"):
                r = row(f"serve-on-{kind}-{st}")
                name = "cold, 400 runs" + (", `--mps`" if kind == "cold-mps" else "")
                print(f"| {st} | {name} | {errs(r)}; {rate(r)} | - | - |" if r else f"| {st} | {name} | not run | - | - |")
                continue
            a1, a2 = row(f"serve-on-after-1-{kind}-{st}"), row(f"serve-on-after-2-{kind}-{st}")
            cell_ = lambda r, base=None: f"{errs(r)}; {rate(r, base)}" if r else "not run"
            procs = "/".join(str(r["procs"]) if r and r["procs"] is not None else "-" for r in (a1, a2))
            print(f"| {st} | `--warm` after, {kind} | {cell_(a1, c)} | {cell_(a2, a1)} | {procs} |")
    print("\nReductions with `--warm` on one GPU (the stress oracle, and the race oracle with its stress "
          "confirmation), wall seconds before and after, and whether they kept the same fences:\n")
    print("| study | oracle | before | after | after/before | same fences | paced (`run::pace`) | paced/before | paced fences as after's |")
    print("|---|---|---|---|---|---|---|---|---|")
    def red(d):
        r = load(folder, d, "reduce.json")
        if not r:
            return None
        metas.append(r["meta"])
        res = dict(r["result"])
        # A reduction resumed from a journal: its seconds are those of all its calls.
        res["wall_seconds"], res["calls"] = wall_total(folder, d, res)
        return res
    names = sorted({(m.group(2), m.group(1) or "") for d in os.listdir(folder)
                    for m in [re.match(r"serve-on-(?:before|paced)-reduce-(race-)?(.+)$", d)] if m})
    for st, race in names:
        b, a = red(f"serve-on-before-reduce-{race}{st}"), red(f"serve-on-after-reduce-{race}{st}")
        oracle = "race" if race else "stress"
        wall = lambda r: ("-" if not r or r.get("interrupted") else f"{r['wall_seconds']:.1f}"
                          + (f" ({r['calls']} calls, resumed)" if r["calls"] else ""))
        ratio = f"x{a['wall_seconds'] / b['wall_seconds']:.2f}" if a and b else "-"
        ids = lambda r: sorted(k["id"] for k in r.get("kept") or [])
        same = ("yes" if ids(a) == ids(b) else f"no: {ids(b)} -> {ids(a)}") if a and b else "-"
        p = red(f"serve-on-paced-reduce-{race}{st}")
        paced = f"x{p['wall_seconds'] / b['wall_seconds']:.2f}" if p and b else "-"
        p_same = ("yes" if ids(p) == ids(a) else f"no: {ids(a)} -> {ids(p)}") if p and a else "-"
        print(f"| {st} | {oracle} | {wall(b)} | {wall(a)} | {ratio} | {same} | {wall(p)} | {paced} | {p_same} |")
    print(provenance(metas))


REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def insert_speed(folder):
    """`wmfix insert`'s speed (issue 47), from the bench's raw file FOLDER/insert_throughput.jsonl
    (`WMFIX_BENCH_RAW=... cargo bench --bench insert_throughput`): the latest record of each
    case, every run's time in it."""
    path = os.path.join(folder, "insert_throughput.jsonl")
    latest = {}
    for line in open(path) if os.path.exists(path) else []:
        r = json.loads(line)
        latest[(r["scenario"], r["arg"], r["mode"])] = r
    print("Each case's latest record: `library` parses, plans and renders in the bench's process "
          "(no files read or written), `cli` runs `wmfix insert --json` on the files written to a "
          "folder; seconds are wall time, the median and range of the runs; peak is the process's "
          "peak resident memory.\n")
    print("| case | mode | MB (files) | fences | runs | seconds: median (range) | MB/s | peak MB | target | commit | load |")
    print("|---|---|---|---:|---:|---|---:|---:|---|---|---|")
    for (scenario, arg, mode), r in latest.items():
        secs = sorted(r["seconds"])
        n = len(secs)
        med = secs[n // 2] if n % 2 else (secs[n // 2 - 1] + secs[n // 2]) / 2
        case = f"{scenario} {os.path.basename(arg.rstrip('/')) if scenario == 'folder' else arg}"
        rng = f" ({secs[0]:.3f}-{secs[-1]:.3f})" if n > 1 else ""
        load = "/".join(f"{x:.1f}" for x in r["load"])
        print(f"| {case} | {mode} | {r['mb']:.1f} ({r['files']}) | {r['fences']:,} | {n} | {med:.3f}{rng} | "
              f"{r['mb'] / med:.2f} | {r['peak_mb']:.0f} | {r['target']} | {r['commit']} | {load} |")
    if latest:
        rs = list(latest.values())
        dates = sorted(r["date"] for r in rs)
        machines = sorted({f"{r['cpu']}, {r['nproc']} cores" for r in rs})
        print(f"\nMeasured on {'; '.join(machines)}, {dates[0]} to {dates[-1]} (load: the 1, 5 and 15 "
              f"minute load averages when the case began), each row by the command in its record, "
              f"`WMFIX_BENCH_RAW={os.path.relpath(path, REPO)} WMFIX_BENCH_RUNS=N cargo bench --bench insert_throughput -- CASE`.")


TABLES = {"apps": apps, "fenced": fenced, "reduce": reduce, "race-reduce": race_reduce, "trust-race": trust_race, "public": public, "agreement": agreement, "completed": completed, "cost": cost, "cost-svg": cost_svg, "builds": builds, "peer": peer, "stress": stress, "gpus": gpus, "coverage": coverage, "overhead": overhead, "serve-on": serve_on, "ground-truth": ground_truth, "race-apps": race_apps, "race-vs-racecheck": race_vs_racecheck, "insert-speed": insert_speed}


# A generated table in a Markdown file: the output of `scripts/results.py FOLDER TABLE...` (FOLDER
# relative to the repository's root) between these two lines, which `--check` compares with what
# the result files make now and `--write` rewrites.
BEGIN = re.compile(r"^<!-- results\.py (\S+)((?: [a-z-]+)+) -->$")
END = "<!-- /results.py -->"
# Folders the Markdown search leaves out: build outputs, the built guide, virtual environments.
SKIPPED = {"target", "book", "wmfix-out", "node_modules"}


def render(folder, names):
    """The tables' text as a Markdown file holds it: each table's output, no heading."""
    parts = []
    for name in names:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            TABLES[name](folder)
        parts.append(buf.getvalue().strip("\n"))
    return "\n\n".join(parts)


def markdown_files(root):
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED
                         and not d.startswith("target"))
        for f in sorted(files):
            if f.endswith(".md"):
                yield os.path.join(top, f)


class Block:
    """One generated table of a Markdown file: where it is, what made it, its text there."""

    def __init__(self, path, line, folder, names, start, end):
        self.path, self.line, self.folder, self.names = path, line, folder, names
        self.start, self.end = start, end  # the lines between the markers

    def name(self, root):
        return (f"{os.path.relpath(self.path, root)}:{self.line}: table {' '.join(self.names)} "
                f"of {self.folder}")


def blocks(root, path, lines, problems):
    """The generated tables of a file's lines (a marker in a fenced code block is an example,
    not one); a marker without its end, an unknown table or folder goes to `problems`."""
    out, i, fence = [], 0, None
    while i < len(lines):
        line = lines[i].rstrip("\n")
        i += 1
        if fence is None:
            opens = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
            if opens:
                fence = opens.group(1)
                continue
        else:
            closes = re.match(r"^ {0,3}(`{3,}|~{3,})\s*$", line)
            if closes and closes.group(1)[0] == fence[0] and len(closes.group(1)) >= len(fence):
                fence = None
            continue
        m = BEGIN.match(line)
        if not m:
            continue
        where = f"{os.path.relpath(path, root)}:{i}"
        folder, names = m.group(1), m.group(2).split()
        end = next((j for j in range(i, len(lines)) if lines[j].rstrip("\n") == END), None)
        if end is None:
            problems.append(f"{where}: `{lines[i - 1].strip()}` has no `{END}` after it")
            break
        unknown = [n for n in names if n not in TABLES or n == "cost-svg"]
        if unknown:
            problems.append(f"{where}: unknown table {', '.join(unknown)} (known: "
                            f"{', '.join(n for n in TABLES if n != 'cost-svg')})")
        elif not os.path.isdir(os.path.join(root, folder)):
            problems.append(f"{where}: no results folder {folder}")
        else:
            out.append(Block(path, i, folder, names, i, end))
        i = end + 1
    return out


def generated(root, block):
    """The block's lines as the result files make them now: a blank line around the tables."""
    text = render(os.path.join(root, block.folder), block.names)
    return ["\n"] + [l + "\n" for l in text.split("\n")] + ["\n"]


def svgs(root):
    """(path, committed text, text made now) of each results folder's cost.svg."""
    results = os.path.join(root, "results")
    for d in sorted(os.listdir(results)) if os.path.isdir(results) else []:
        path = os.path.join(results, d, "cost.svg")
        if os.path.isfile(path):
            yield path, open(path).read(), cost_svg_text(os.path.join(results, d)) or ""


def index_text(root):
    """results/README.md: each results folder with the sentences outside it that cite it (file
    and line, the words around the citation); a folder nothing cites says so."""
    res = os.path.join(root, "results")
    folders = sorted(d for d in os.listdir(res) if os.path.isdir(os.path.join(res, d)))
    cites = {d: [] for d in folders}
    for path in markdown_files(root):
        rel = os.path.relpath(path, root)
        if rel == os.path.join("results", "README.md"):
            continue
        for n, line in enumerate(open(path), 1):
            for d in folders:
                at = line.find(d)
                if at < 0 or rel.startswith(os.path.join("results", d) + os.sep):
                    continue
                words = re.sub(r"\s+", " ", line[max(0, at - 120):at]).strip()
                words = re.sub(r"\]\([^)]*$", "]", words).split("|")[-1].strip()
                words = re.sub(r"[\[(`]*(\.\./)*(results/)?$", "", words).strip()
                cites[d].append(f"`{rel}:{n}`: ...{words[-100:]}")
    out = ["# Results\n", "\n",
           "Every GPU figure the docs cite comes from one of these folders, written by\n",
           "`scripts/gpu/evidence.sh` (each file names its GPU, driver, date, wmfix commit and command; the\n",
           "folder's README says what was measured). Below, each folder and the places outside it that cite\n",
           "it, with the words before the citation. Generated: `scripts/results.py --write` rewrites this\n",
           "file, `--check` (in the tests) fails when it is stale.\n"]
    for d in folders:
        out.append(f"\n## [{d}]({d}/)\n\n")
        if not cites[d]:
            out.append("Cited nowhere outside results/ (kept as history; a candidate for removal).\n")
        for c in cites[d]:
            out.append(f"- {c}\n")
    return "".join(out)


def check(root, write):
    """--check: every generated table of the Markdown files under root and every results
    folder's cost.svg against what the result files make now; exit 1 naming each that differs.
    --write: rewrites those that differ."""
    problems, differ, seen = [], [], 0
    for path in markdown_files(root):
        lines = open(path).readlines()
        found = blocks(root, path, lines, problems)
        for b in reversed(found):  # from the end, so that a rewrite keeps the earlier lines' numbers
            seen += 1
            want = generated(root, b)
            have = lines[b.start:b.end]
            if want != have:
                differ.append((b.name(root), have, want))
                lines[b.start:b.end] = want
        if write and any(d[0].startswith(os.path.relpath(path, root) + ":") for d in differ):
            with open(path, "w") as f:
                f.writelines(lines)
    for path, have, want in svgs(root):
        seen += 1
        if have != want:
            differ.append((f"{os.path.relpath(path, root)}: cost-svg of {os.path.dirname(os.path.relpath(path, root))}",
                           have.splitlines(True), want.splitlines(True)))
            if write:
                with open(path, "w") as f:
                    f.write(want)
    index = os.path.join(root, "results", "README.md")
    if os.path.isdir(os.path.dirname(index)):
        seen += 1
        want = index_text(root)
        have = open(index).read() if os.path.exists(index) else ""
        if have != want:
            differ.append(("results/README.md: the index of results folders",
                           have.splitlines(True), want.splitlines(True)))
            if write:
                with open(index, "w") as f:
                    f.write(want)
    for p in problems:
        print(f"results.py: {p}", file=sys.stderr)
    for name, have, want in differ:
        if write:
            print(f"results.py: {name} rewritten", file=sys.stderr)
            continue
        print(f"results.py: {name} differs from what the result files make now:", file=sys.stderr)
        diff = list(difflib.unified_diff(have, want, "committed", "made now", n=1))
        sys.stderr.writelines(l if l.endswith("\n") else l + "\n" for l in diff[:60])
        if len(diff) > 60:
            print(f"... ({len(diff) - 60} more diff lines)", file=sys.stderr)
    if problems or (differ and not write):
        print(f"results.py --check: {len(differ)} of {seen} generated tables differ, {len(problems)} "
              f"markers wrong; `scripts/results.py --write` rewrites the tables from the result files",
              file=sys.stderr)
        sys.exit(1)
    if write:
        print(f"results.py: {seen} generated tables, {len(differ)} rewritten", file=sys.stderr)
    else:
        print(f"results.py: {seen} generated tables match their result files", file=sys.stderr)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        sys.exit(__doc__)
    if argv[0] in ("--check", "--write"):
        root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
        check(os.path.normpath(root), argv[0] == "--write")
        return
    folder, names = argv[0], argv[1:] or list(TABLES)
    if not os.path.isdir(folder):
        sys.exit(f"{folder}: no such results folder\n\n{__doc__}")
    unknown = [n for n in names if n not in TABLES]
    if unknown:
        sys.exit(f"unknown table {', '.join(unknown)} (known: {', '.join(TABLES)})")
    for name in names:
        print(f"### {name}\n")
        TABLES[name](folder)


if __name__ == "__main__":
    main(sys.argv[1:])
