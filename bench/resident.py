"""Jobs run by one resident Python process through stackalign.run (issue #19):
the GPU started once for every call, as a batch starts it once.

usage: python3 bench/resident.py ROUNDS CONFIG...   (PYTHONPATH=build/python)
       python3 bench/resident.py --cli BINARY ROUNDS CONFIG...

Each round runs every CONFIG once, in the order given, in this process; the
table gives each config's first call and the median [range] of the later
ones: the call's wall time in Python, the job's own seconds (run.json's
total, as the CLI's summary counts it) and the backend it ran on. With
--cli, each job is instead `BINARY run -q CONFIG` in a process of its own,
timed from its start to its exit, in the same order.
"""
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from timed_rounds import spread, timed_rounds


def cli(binary, rounds, configs):
    calls = timed_rounds(rounds, configs, lambda c: subprocess.run([binary, "run", "-q", c], check=True))
    print(f"the CLI, a process per job, start to exit: {rounds} rounds\n")
    print("| config | median [range] s | backend |\n|---|---|---|")
    for c in configs:
        out = Path(c).parent / ("out_" + Path(c).stem) / "run.json"
        backend = json.loads(out.read_text())["plan"]["backend"] if out.exists() else "?"
        print(f"| {Path(c).stem} | {spread(w for w, _ in calls[c])} | {backend} |")


def main():
    if sys.argv[1] == "--cli":
        return cli(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
    started = time.perf_counter()
    import stackalign  # its import is part of what a session pays once
    imported = time.perf_counter() - started
    rounds, configs = int(sys.argv[1]), sys.argv[2:]

    def job(c):
        rows = stackalign.run(c)
        if [r["status"] for r in rows] != ["ok"]:
            raise SystemExit(f"{c}: {rows}")
        return rows[0]["seconds"], rows[0]["backend"].split(";")[0].split(" (")[0]

    calls = timed_rounds(rounds, configs, job)
    print(f"import stackalign: {imported:.3f} s; {rounds} rounds, configs in this order each round\n")
    print("| config | first call s (own) | backend | later calls: median [range] s | own s | backend |")
    print("|---|---|---|---|---|---|")
    for c in configs:
        (first, (first_own, first_backend)), later = calls[c][0], calls[c][1:]
        own = statistics.median(s for _, (s, _) in later) if later else float("nan")
        backends = sorted({b for _, (_, b) in later})
        print(f"| {Path(c).stem} | {first:.3f} ({first_own:.3f}) | {first_backend} | "
              f"{spread(w for w, _ in later)} | {own:.3f} | {', '.join(backends)} |")

if __name__ == "__main__":
    main()
