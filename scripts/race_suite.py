#!/usr/bin/env python3
"""The race detector's ground truth (tests/race-suite): each kernel's verdict from race.json.

    python3 scripts/race_suite.py FOLDER [SUITE]   # FOLDER holds race.json and fences.json;
                                                   # SUITE: the kernels' source (default
                                                   # tests/race-suite/suite.cu)

A kernel named race_* must have a racing pair with an access in it (or in a device function
it calls, the pair's other access being in it); ok_* none. Prints a table and exits 1 when a
verdict is wrong or a pair belongs to no kernel.
"""
import json
import re
import sys
from pathlib import Path


def unwrap(path):
    d = json.loads(Path(path).read_text())
    return d["result"] if "meta" in d and "result" in d else d


def main(folder, suite=None):
    folder = Path(folder)
    race = unwrap(folder / "race.json")
    fences = unwrap(folder / "fences.json")
    default = Path(__file__).resolve().parent.parent / "tests/race-suite/suite.cu"
    source = Path(suite or default).read_text()
    kernels = re.findall(r"__global__ void ((?:ok|race)_\w+)\(", source)
    function = {f["id"]: f["function"] for f in fences["fences"]}
    raced, stray = {}, []
    for row in race["rows"]:
        names = [function.get(row[side]["site"]) for side in ("first", "second")]
        mine = [n for n in names if n in kernels]
        if not mine:
            stray.append(row)
            continue
        raced.setdefault(mine[0], []).append(row)
    wrong = 0
    print(f"{'kernel':40} {'expected':9} {'found':6} fences suggested")
    for k in kernels:
        expected = k.startswith("race_")
        rows = raced.get(k, [])
        found = bool(rows)
        sugg = sorted({s for r in rows for s in r["suggested"]})
        mark = "" if found == expected else "  WRONG"
        wrong += found != expected
        print(f"{k:40} {'race' if expected else 'none':9} {'race' if found else 'none':6} "
              f"{','.join(map(str, sugg)) or '-'}{mark}")
    for row in stray:
        wrong += 1
        print(f"a pair in no kernel: {row['first']['location']} -> {row['second']['location']}")
    total = len(kernels)
    print(f"{total - wrong} of {total} verdicts right"
          f" ({sum(k.startswith('race_') for k in kernels)} racy kernels, "
          f"{sum(k.startswith('ok_') for k in kernels)} race-free)")
    return 1 if wrong else 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
