"""Landmark jobs at several volume sizes: the sample brains (41 x 83 x 166)
and the same brains enlarged SCALE times along each axis (voxels repeated,
float32; the points scaled with them), so the volume-wide work
(preprocessing, and in the Python module the inputs' way in) grows while
the points' work stays the same.

usage (PYTHONPATH=build/python):
  python3 bench/held_landmarks.py make DIR SCALE...
      writes DIR/x{SCALE}/{pre,post}.tif, points.csv and a config per
      backend (cpu, cuda, auto) for `stackalign run`
  python3 bench/held_landmarks.py time ROUNDS BACKEND SCALE...
      stackalign.match_landmarks from arrays in this process, ROUNDS calls
      per scale, in turn; prints each scale's first call and the median
      [range] of the later ones, and whether every call gave the first
      one's matches.csv
"""
import sys
from pathlib import Path

import numpy as np

import stackalign
from timed_rounds import spread, timed_rounds

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_data"
# configs/sample_landmarks.toml's search, in voxels at every scale.
KEYS = dict(window=[21, 21, 11], max_shift=[8, 8, 4], subpixel=True, mean_radius=1, sobel=True, threshold=10.0,
            bins=64, fit="affine")


def inputs(scale):
    def enlarged(name):
        v = stackalign.read(SAMPLE / f"fish1_{name}_anatomy_41x83x166.tif")
        for axis in range(3):
            v = np.repeat(v, scale, axis)
        return np.ascontiguousarray(v.astype(np.float32))

    rows = [line.split(",") for line in (SAMPLE / "fish1_pre_landmarks.csv").read_text().splitlines()[1:]]
    points = np.array([[float(v) * scale for v in row[1:4]] for row in rows])
    return enlarged("pre"), enlarged("post"), points, [row[0] for row in rows]


def make(folder, scales):
    for scale in scales:
        d = Path(folder) / f"x{scale}"
        d.mkdir(parents=True, exist_ok=True)
        pre, post, points, names = inputs(scale)
        stackalign.write(d / "pre.tif", pre)
        stackalign.write(d / "post.tif", post)
        (d / "points.csv").write_text("name,x,y,z\n" + "".join(
            f"{n},{float(p[0])!r},{float(p[1])!r},{float(p[2])!r}\n" for n, p in zip(names, points)))
        for backend in ("cpu", "cuda", "auto"):
            (d / f"{backend}.toml").write_text(
                'mode = "landmarks"\n[landmarks]\nsource = "pre.tif"\ntarget = "post.tif"\npoints = "points.csv"\n'
                'window = [21, 21, 11]\nmax_shift = [8, 8, 4]\nsubpixel = true\n'
                '[preprocess]\nmean_radius = 1\nsobel = true\nthreshold = 10.0\nbins = 64\n'
                f'[output]\ndir = "out_{backend}"\nfit = "affine"\n[device]\nbackend = "{backend}"\n')


def time_calls(rounds, backend, scales):
    jobs = {s: inputs(s) for s in scales}

    def job(s):
        pre, post, points, names = jobs[s]
        return stackalign.match_landmarks(pre, post, points, names=names, backend=backend, **KEYS).matches_csv

    calls = timed_rounds(rounds, scales, job)
    print(f"stackalign.match_landmarks from arrays, backend {backend}: {rounds} rounds\n")
    print("| volumes | MB each | first call s | later calls: median [range] s | same matches.csv |")
    print("|---|---|---|---|---|")
    for s in scales:
        (first, csv), later = calls[s][0], calls[s][1:]
        same = all(c == csv for _, c in later)
        shape = "x".join(str(n) for n in jobs[s][0].shape[::-1])
        print(f"| {shape} | {jobs[s][0].nbytes / 1e6:.0f} | {first:.3f} | {spread(w for w, _ in later)} | "
              f"{'yes' if same else 'NO'} |")

if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], [int(s) for s in sys.argv[3:]])
    else:
        time_calls(int(sys.argv[2]), sys.argv[3], [int(s) for s in sys.argv[4:]])
