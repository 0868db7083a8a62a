#!/usr/bin/env python3
"""Raw landmark matches (no fit) against the truth, beside a plain peer, in
one run: `python3 bench/landmark_raw.py [--backend cpu|cuda]`.

The real zebrafish volume of sample_data/ moved by known rigid motions
(bench/landmark_peers.py's: rotation about z through a point, then a shift;
cubic resampling), the 24 sample points searched with a 15x15x9 window and
a range of 8x8x7 voxels, each match compared with where the motion puts
the point. Users who match different brains (no rigid model) live on these
raw points, so their error is reported before any fit: the median and 90th
percentile of the distance, voxels. The peer: normalised cross-correlation
of the same windows over the same range, a parabola per axis through the
integer peak.
"""
import argparse
import csv
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from landmark_peers import tifffile, write_moved_case  # noqa: E402

WINDOW = (15, 15, 9)      # x, y, z
REACH = (8, 8, 7)
MOTIONS = [(3.0, (2.0, -1.5, 1.0)), (-5.0, (-1.25, 2.5, -0.75)), (1.5, (0.3, 0.6, -0.4)), (-2.5, (1.7, -0.2, 0.35))]


def stackalign(work, backend, keys=""):
    """Matches by stackalign; `keys`: 'section.key = value' lines that override the job's."""
    sections = {"landmarks": {"source": '"source.tif"', "target": '"target.tif"', "points": '"points.csv"',
                              "window": str(list(WINDOW)), "max_shift": str(list(REACH))},
                "preprocess": {"threshold": "10.0"}, "search": {},
                "output": {"dir": '"out"', "fit": '"none"'}, "device": {"backend": f'"{backend}"'}}
    for line in filter(None, (k.strip() for k in keys.split(";"))):
        name, value = (t.strip() for t in line.split("=", 1))
        section, key = name.split(".", 1)
        sections[section][key] = value
    (work / "job.toml").write_text('mode = "landmarks"\n' + "".join(
        f"[{name}]\n" + "".join(f"{k} = {v}\n" for k, v in keys_.items()) for name, keys_ in sections.items()))
    subprocess.run([str(REPO / "build/stackalign"), "run", "-q", str(work / "job.toml")], check=True)
    rows = list(csv.DictReader(open(work / "out/matches.csv")))
    return np.array([[float(r["dst_x"]), float(r["dst_y"]), float(r["dst_z"])] for r in rows]), rows


def ncc_parabola(source, target, points):
    """Integer NCC peak of each point's window over the range, a parabola per axis."""
    hx, hy, hz = (w // 2 for w in WINDOW)
    out = []
    for x, y, z in np.rint(points).astype(int):
        a = source[z - hz:z + hz + 1, y - hy:y + hy + 1, x - hx:x + hx + 1].astype(float)
        a = (a - a.mean()) / (a.std() + 1e-12)
        scores = np.full((2 * REACH[2] + 1, 2 * REACH[1] + 1, 2 * REACH[0] + 1), -np.inf)
        for dz in range(-REACH[2], REACH[2] + 1):
            for dy in range(-REACH[1], REACH[1] + 1):
                for dx in range(-REACH[0], REACH[0] + 1):
                    z0, y0, x0 = z + dz - hz, y + dy - hy, x + dx - hx
                    if min(z0, y0, x0) < 0 or z0 + 2 * hz >= target.shape[0] or y0 + 2 * hy >= target.shape[1] \
                            or x0 + 2 * hx >= target.shape[2]:
                        continue
                    b = target[z0:z0 + 2 * hz + 1, y0:y0 + 2 * hy + 1, x0:x0 + 2 * hx + 1].astype(float)
                    scores[dz + REACH[2], dy + REACH[1], dx + REACH[0]] = (a * (b - b.mean())).mean() / (b.std() + 1e-12)
        k = np.unravel_index(np.argmax(scores), scores.shape)
        sub = []
        for axis in range(3):
            lo, hi = list(k), list(k)
            lo[axis] -= 1
            hi[axis] += 1
            if lo[axis] < 0 or hi[axis] >= scores.shape[axis] or not np.isfinite(scores[tuple(lo)]) \
                    or not np.isfinite(scores[tuple(hi)]):
                sub.append(0.0)
                continue
            s0, s1, s2 = scores[tuple(lo)], scores[k], scores[tuple(hi)]
            d = s0 - 2 * s1 + s2
            sub.append(0.5 * (s0 - s2) / d if d < 0 else 0.0)
        dz, dy, dx = (k[0] - REACH[2] + sub[0], k[1] - REACH[1] + sub[1], k[2] - REACH[0] + sub[2])
        out.append([x + dx, y + dy, z + dz])
    return np.array(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--variants", nargs="*", default=[], help="'name=section.key = value;section.key = value': the job's keys changed")
    args = ap.parse_args()
    source = tifffile.imread(REPO / "sample_data/fish1_pre_anatomy_41x83x166.tif")
    points = np.array([[float(r["x"]), float(r["y"]), float(r["z"])]
                       for r in csv.DictReader(open(REPO / "sample_data/fish1_pre_landmarks.csv"))])
    variants = [("stackalign", "")] + [tuple(v.split("=", 1)) for v in args.variants]
    errors = {name: [] for name, _ in variants}
    errors["NCC + parabola"] = []
    flagged = {name: 0 for name, _ in variants}
    for angle, shift in MOTIONS:
        work = Path(tempfile.mkdtemp(prefix="landmark-raw-"))
        try:
            truth = write_moved_case(work, source, points, angle, shift)
            target = tifffile.imread(work / "target.tif")
            for name, keys in variants:
                got, rows = stackalign(work, args.backend, keys)
                errors[name] += list(np.linalg.norm(got - truth, axis=1))
                flagged[name] += sum(r["status"] != "ok" for r in rows)
            errors["NCC + parabola"] += list(np.linalg.norm(ncc_parabola(source, target, points) - truth, axis=1))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    n = len(points) * len(MOTIONS)
    print(f"| raw matches ({n}: {len(points)} points x {len(MOTIONS)} rigid motions) | median error, voxels | "
          "90th percentile | not ok |")
    print("|---|---|---|---|")
    for name, e in errors.items():
        print(f"| {name} | {np.median(e):.3f} | {np.percentile(e, 90):.3f} | {flagged.get(name, '')} |")


if __name__ == "__main__":
    main()
