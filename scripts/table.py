#!/usr/bin/env python3
"""Markdown table of error rates from `wmfix test` summaries (issue 6's table).

Usage: scripts/table.py SUMMARY.json...   (one per study, named <study>.json)
Each cell is errors/runs; a study whose test was interrupted is marked so.
"""
import json
import os
import sys

ENVS = ["no-str-", "no-str+", "sys-str-", "sys-str+", "rand-str-", "rand-str+", "cache-str-", "cache-str+"]


def main(paths):
    print("| study | " + " | ".join(f"`{e}`" for e in ENVS) + " |")
    print("|---|" + "---|" * len(ENVS))
    for path in paths:
        s = json.load(open(path))
        rows = {r["env"]: r for r in s["rows"]}
        cells = []
        for env in ENVS:
            r = rows.get(env)
            if r is None:
                cells.append("-")
            else:
                errors = r["fail"] + r["timeout"] + r["crash"]
                cells.append(f"{errors}/{r['runs']}")
        name = os.path.basename(path).removesuffix(".json")
        if s.get("interrupted"):
            name += " (cut short)"
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
