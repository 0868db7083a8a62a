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
import sys
import tomllib
from pathlib import Path

import stackalign
from timed_rounds import spread, timed_rounds

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

    def job(c):
        array, backend, keys = jobs[c]
        r = stackalign.align_stack(array, backend=backend, **keys)
        return r.shifts_csv, r.aligned.nbytes

    calls = timed_rounds(rounds, configs, job)
    print(f"stackalign.align_stack from arrays: {rounds} rounds, configs in this order each round\n")
    print("| config | MB in | first call s | later calls: median [range] s | same shifts.csv |")
    print("|---|---|---|---|---|")
    for c in configs:
        (first, (csv, nbytes)), later = calls[c][0], calls[c][1:]
        same = all(r[0] == csv for _, r in later)
        print(f"| {Path(c).stem} | {nbytes / 1e6:.0f} | {first:.3f} | {spread(w for w, _ in later)} | "
              f"{'yes' if same else 'NO'} |")

if __name__ == "__main__":
    main()
