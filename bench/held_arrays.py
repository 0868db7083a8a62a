"""A config's job run from numpy arrays by one resident Python process
(stackalign.align_stack, issue #19): what a caller whose series is already
in memory pays, call after call, the GPU started once.

usage: python3 bench/held_arrays.py ROUNDS CONFIG...   (PYTHONPATH=build/python)

Each CONFIG's stack is read into an array once (not timed); its keys become
align_stack's keywords (its stack, output folder and backend set by the
module; the backend is the config's). Each round calls align_stack once per
CONFIG, in the order given. The table gives each config's first call and
the median [range] of the later ones, and whether every call gave the first
one's shifts.csv.
"""
import statistics
import sys
import time
import tomllib
from pathlib import Path

import stackalign

SET_BY_THE_MODULE = {"input.stack", "input.files", "input.glob", "output.dir", "output.report", "device.backend"}


def job_of(config):
    path = Path(config).resolve()
    doc = tomllib.loads(path.read_text())
    keys, stack, backend = {}, None, "auto"
    for section, table in doc.items():
        if not isinstance(table, dict):
            continue
        for key, value in table.items():
            if f"{section}.{key}" == "input.stack":
                stack = path.parent / value
            elif f"{section}.{key}" == "device.backend":
                backend = value
            elif f"{section}.{key}" not in SET_BY_THE_MODULE:
                if key == "angles" and isinstance(value, str):
                    value = str(path.parent / value)
                keys[key] = value
    return stackalign.read(stack), backend, keys


def main():
    rounds, configs = int(sys.argv[1]), sys.argv[2:]
    jobs = {c: job_of(c) for c in configs}
    calls = {c: [] for c in configs}
    for _ in range(rounds):
        for c in configs:
            array, backend, keys = jobs[c]
            t = time.perf_counter()
            r = stackalign.align_stack(array, backend=backend, **keys)
            calls[c].append((time.perf_counter() - t, r.shifts_csv, r.aligned.nbytes))
    print(f"stackalign.align_stack from arrays: {rounds} rounds, configs in this order each round\n")
    print("| config | MB in | first call s | later calls: median [range] s | same shifts.csv |")
    print("|---|---|---|---|---|")
    for c in configs:
        first, later = calls[c][0], calls[c][1:]
        walls = [w for w, _, _ in later]
        same = all(csv == first[1] for _, csv, _ in later)
        print(f"| {Path(c).stem} | {first[2] / 1e6:.0f} | {first[0]:.3f} | "
              f"{statistics.median(walls):.3f} [{min(walls):.3f}-{max(walls):.3f}] | {'yes' if same else 'NO'} |")


if __name__ == "__main__":
    main()
