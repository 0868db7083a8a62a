"""The Python module against the CLI on one backend: the sample time-lapse
and landmark configs run by `align_stack` / `match_landmarks` with the
configs' keys as keywords, their shifts.csv / matches.csv compared as text
with the CLI's (run first, into out/).

usage: PYTHONPATH=build/python python3 bench/module_equals_cli.py BACKEND
"""
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
import stackalign

BACKEND = sys.argv[1] if len(sys.argv) > 1 else "cuda"


def keywords(name, skip):
    doc = tomllib.loads(Path("configs", name).read_text())
    return {k: v for s, t in doc.items() if isinstance(t, dict) for k, v in t.items() if f"{s}.{k}" not in skip}

skip = {"input.stack", "output.dir", "device.backend", "device.gpu", "landmarks.source", "landmarks.target", "landmarks.points"}
stack = stackalign.read("sample_data/drosophila_embryo_13x512x512.tif")
t = time.perf_counter()
r = stackalign.align_stack(stack, backend=BACKEND, **keywords("sample_timelapse.toml", skip))
print("module, %s: %.3f s, %s" % (BACKEND, time.perf_counter() - t, r.backend))
print("time-lapse shifts.csv equal to the CLI's:", r.shifts_csv == Path("out/sample_timelapse/shifts.csv").read_text())
rows = [l.split(",") for l in Path("sample_data/fish1_pre_landmarks.csv").read_text().splitlines()[1:]]
pts = np.array([[float(v) for v in row[1:4]] for row in rows])
m = stackalign.match_landmarks(stackalign.read("sample_data/fish1_pre_anatomy_41x83x166.tif"),
                               stackalign.read("sample_data/fish1_post_anatomy_41x83x166.tif"), pts,
                               names=[row[0] for row in rows], backend=BACKEND, **keywords("sample_landmarks.toml", skip))
print("landmark matches.csv equal to the CLI's:", m.matches_csv == Path("out/sample_landmarks/matches.csv").read_text())
