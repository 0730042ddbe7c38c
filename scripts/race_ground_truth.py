#!/usr/bin/env python3
"""The generated race ground truth on the GPU: `wmfix race`'s rows against each kernel's label.

    python3 scripts/race_ground_truth.py FOLDER LABELS
    python3 scripts/race_ground_truth.py --racecheck OUTPUT LABELS
    # FOLDER: `wmfix race`'s output folder (race/race.json, fences.json), or one holding
    # race.json and fences.json, of a run (any --model) on the suite that
    # `cargo test --test race_ground_truth` writes (target/race-ground-truth); LABELS is its
    # labels.json

A row belongs to the kernel (fences.json's function) of its sites; it is on the data where one
of its accesses names `d`, else on the synchronisation variable. Each kernel's found pairs
(data or sync, class) are compared with its label under race.json's model. Prints the confusion
table (per class: true positives, false negatives, false positives, true negatives) and each
wrong kernel; with several detection runs (`--runs N`), also the kernels whose verdict was not
the same in every run (a found pair whose rows were seen in fewer than N runs); exits 1 when a
verdict is wrong, differs between runs, or a row belongs to no kernel.
"""
import json
import re
import sys
from pathlib import Path

CLASSES = ["data-race", "relaxed-message", "unordered-strong"]


def unwrap(path):
    d = json.loads(Path(path).read_text())
    return d["result"] if "meta" in d and "result" in d else d


def found_pairs(race, fences):
    """{kernel: {(var, class)}}, {(kernel, var, class): [each row's run list or run count]}, and
    the rows that belong to no kernel."""
    by_id = {f["id"]: f for f in fences["fences"]}
    found, seen, stray = {}, {}, []
    for row in race["rows"]:
        records = [by_id.get(row[side]["site"]) for side in ("first", "second")]
        records = [r for r in records if r is not None]
        if not records:
            stray.append(row)
            continue
        texts = [r.get("access", "") for r in records]
        texts += [a for r in records for a in r.get("accesses", [])]
        var = "data" if any("d +" in t for t in texts) else "sync"
        kernel = records[0]["function"]
        found.setdefault(kernel, set()).add((var, row["class"]))
        seen.setdefault((kernel, var, row["class"]), []).append(
            set(row["in_runs"]) if "in_runs" in row else row.get("runs", 1))
    return found, seen, stray


def not_in_every_run(seen, kernel, got, runs):
    """The found pairs of `kernel` some run did not show, in words. A kernel's verdict in a run
    is the pairs of the rows with that run: two symmetric rows (whichever thread a schedule
    made last) seen in alternate runs are one verdict. race.json files before `in_runs` give
    only counts: a pair counts as seen in every run only where one row was, and the rows'
    counts are shown."""
    partial = []
    for v, c in sorted(got):
        rows = seen[(kernel, v, c)]
        if all(isinstance(r, set) for r in rows):
            n = len(set().union(*rows))
            if n < runs:
                partial.append(f"{v}/{c} in {n}")
        elif max(r if isinstance(r, int) else len(r) for r in rows) < runs:
            counts = [r if isinstance(r, int) else len(r) for r in rows]
            partial.append(f"{v}/{c} in {max(counts)} (rows: {'+'.join(map(str, counts))}; "
                           "race.json names no runs)")
    return partial


def by_kernel(labels, model, found_kinds):
    """Kernel-level lines a side-by-side table reads: per kind, the kernels labelled with it
    under `model` and how many of them were found (`found_kinds(kernel)`: the kinds a tool
    reported there, or None for "named, kind unknown"); then the race-free kernels and how many
    were reported."""
    lines = []
    for c in CLASSES:
        labelled = [k for k, l in labels.items() if any(cl == c for _, cl in l[model])]
        hit = sum(1 for k in labelled if (f := found_kinds(k)) is None or c in f)
        lines.append(f"kernels {c} {len(labelled)} {hit}")
    free = [k for k, l in labels.items() if not l[model]]
    lines.append(f"kernels race-free {len(free)} {sum(1 for k in free if found_kinds(k) != set())}")
    return lines


def main(folder, labels_path):
    folder = Path(folder)
    race_json = folder / "race" / "race.json"
    race = unwrap(race_json if race_json.exists() else folder / "race.json")
    fences = unwrap(folder / "fences.json")
    labels = json.loads(Path(labels_path).read_text())
    model = race.get("model", "ptx")
    found, seen, stray = found_pairs(race, fences)
    runs = len(race.get("runs") or [None])
    table = {c: [0, 0, 0, 0] for c in CLASSES}
    wrong, unstable = [], []
    for kernel, label in labels.items():
        want = {tuple(p) for p in label[model]}
        got = found.get(kernel, set())
        for c in CLASSES:
            for var in ("data", "sync"):
                w, g = (var, c) in want, (var, c) in got
                table[c][0 if w and g else 1 if w else 2 if g else 3] += 1
        if want != got:
            wrong.append(f"{kernel}: expected {sorted(want)}, found {sorted(got)}")
        partial = not_in_every_run(seen, kernel, got, runs)
        if partial:
            unstable.append(f"{kernel}: {', '.join(partial)} of {runs} runs")
    print(f"model {model}: {len(labels)} kernels, {runs} detection run(s)")
    print(f"{'class':18} {'TP':>6} {'FN':>6} {'FP':>6} {'TN':>6}")
    for c, (tp, fn, fp, tn) in table.items():
        print(f"{c:18} {tp:>6} {fn:>6} {fp:>6} {tn:>6}")
    if runs > 1:
        print(f"kernels with the same verdict in all {runs} runs: {len(labels) - len(unstable)} "
              f"of {len(labels)}")
    for line in by_kernel(labels, model, lambda k: {c for _, c in found.get(k, set())}):
        print(line)
    for line in wrong:
        print(f"WRONG {line}")
    for line in unstable:
        print(f"NOT IN EVERY RUN {line}")
    for row in stray:
        print(f"a row in no kernel: {row['first']['location']} -> {row['second']['location']}")
    return 1 if wrong or unstable or stray else 0


def racecheck(output_path, labels_path):
    """compute-sanitizer's racecheck on the suite as written, beside the labels: a kernel is
    found when a hazard or race record of the output names it. racecheck checks shared memory
    only and says no kind, so per kind (the ptx labels) a kernel counts as found when racecheck
    named it at all; a kernel race-free under both models that it named is a false report."""
    labels = json.loads(Path(labels_path).read_text())
    text = Path(output_path).read_text(errors="replace")
    records = re.split(r"(?im)^=+\s*(?=error|warning)", text)[1:]
    named = set()
    for rec in records:
        if re.search(r"(?i)race reported|hazard", rec):
            named.update(k for k in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", rec) if k in labels)
    found = {c: [0, 0] for c in CLASSES}
    free = [0, 0]
    for kernel, label in labels.items():
        got = kernel in named
        for c in {c for _, c in label["ptx"]}:
            found[c][0 if got else 1] += 1
        if not label["ptx"] and not label["scoped-hrf"]:
            free[0 if got else 1] += 1
    print(f"racecheck: {len(labels)} kernels, {len(named)} named in its hazard reports")
    print(f"{'class':18} {'TP':>6} {'FN':>6}   (kernels with a race of that kind under ptx)")
    for c, (tp, fn) in found.items():
        print(f"{c:18} {tp:>6} {fn:>6}")
    print(f"race-free kernels  FP {free[0]:>6} TN {free[1]:>6}")
    for line in by_kernel(labels, "ptx", lambda k: None if k in named else set()):
        print(line)
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--racecheck":
        sys.exit(racecheck(sys.argv[2], sys.argv[3]))
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
