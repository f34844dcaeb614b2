#!/usr/bin/env python3
"""Old and new binaries side by side: for each (size, kernel) of `host run --json` files
DIR/WORKLOAD-old-R.json and DIR/WORKLOAD-new-R.json, the range of the per-run medians of each
side, whether the ranges overlap (within the run-to-run spread), and new / old of the medians.

    python3 scripts/old_new.py DIR [WORKLOAD]   (WORKLOAD: attention by default)
"""
import glob
import json
import statistics
import sys


def median(times):
    s = sorted(times)
    n = len(s)
    return (s[n // 2 - 1] + s[n // 2]) / 2 if n % 2 == 0 else s[n // 2]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    folder, workload = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "attention")
    runs = {}
    for side in ("old", "new"):
        files = sorted(glob.glob(f"{folder}/{workload}-{side}-*.json"))
        if not files:
            sys.exit(f"no {workload}-{side}-*.json in {folder}")
        for path in files:
            for problem in json.load(open(path))["problems"]:
                for row in problem["rows"]:
                    if row.get("times_ms"):
                        key = (problem["size"], row["name"])
                        runs.setdefault(key, {}).setdefault(side, []).append(median(row["times_ms"]))
    apart = 0
    print(f"{'size':24} {'kernel':34} {'old ms':>15} {'new ms':>15}  spread   new/old")
    for (size, name), sides in runs.items():
        old, new = sides.get("old", []), sides.get("new", [])
        if not old or not new:
            continue
        overlap = not (max(new) < min(old) or min(new) > max(old))
        apart += not overlap
        ratio = statistics.median(new) / statistics.median(old)
        print(f"{size:24} {name:34} {min(old):7.4f}-{max(old):7.4f} {min(new):7.4f}-{max(new):7.4f}"
              f"  {'overlap' if overlap else 'apart':7}  {ratio:.3f}")
    print(f"{len(runs)} kernels x sizes, {apart} with ranges apart")


if __name__ == "__main__":
    main()
