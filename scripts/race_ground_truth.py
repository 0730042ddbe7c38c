#!/usr/bin/env python3
"""The generated race ground truth on the GPU: `wmfix race`'s rows against each kernel's label.

    python3 scripts/race_ground_truth.py FOLDER LABELS
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
import sys
from pathlib import Path

CLASSES = ["data-race", "relaxed-message", "unordered-strong"]


def unwrap(path):
    d = json.loads(Path(path).read_text())
    return d["result"] if "meta" in d and "result" in d else d


def found_pairs(race, fences):
    """{kernel: {(var, class)}}, {(kernel, var, class): most runs a row of it was seen in}, and
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
        key = (kernel, var, row["class"])
        seen[key] = max(seen.get(key, 0), row.get("runs", 1))
    return found, seen, stray


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
        partial = sorted(f"{v}/{c} in {seen[(kernel, v, c)]}" for v, c in got
                         if seen[(kernel, v, c)] < runs)
        if partial:
            unstable.append(f"{kernel}: {', '.join(partial)} of {runs} runs")
    print(f"model {model}: {len(labels)} kernels, {runs} detection run(s)")
    print(f"{'class':18} {'TP':>6} {'FN':>6} {'FP':>6} {'TN':>6}")
    for c, (tp, fn, fp, tn) in table.items():
        print(f"{c:18} {tp:>6} {fn:>6} {fp:>6} {tn:>6}")
    if runs > 1:
        print(f"kernels with the same verdict in all {runs} runs: {len(labels) - len(unstable)} "
              f"of {len(labels)}")
    for line in wrong:
        print(f"WRONG {line}")
    for line in unstable:
        print(f"NOT IN EVERY RUN {line}")
    for row in stray:
        print(f"a row in no kernel: {row['first']['location']} -> {row['second']['location']}")
    return 1 if wrong or unstable or stray else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
