#!/usr/bin/env python3
"""What tilt offset the bench's slab can show without its truth.

1. The content's own plane: the simulated slab's volume (bench/tilt_sim.py,
   `object_volume`), its depth of contrast (the volume, or its detail: less
   a Gaussian of sigma 2) averaged over y, per lateral place x; the line
   through those depths over the field's central part, as the tilt offset a
   plane of that slope gives (a plane z = s x foreshortens as
   cos(t - atan s), stackalign's offset -atan s).
2. The slab's path length: a slab wider than the field makes each view's
   mean follow a + b / cos(t + offset); the offset of the best such fit to
   the views' means (over the whole view, and over a disc inside it) for
   the bench's slab at a stage offset of 0 and +2 degrees.

usage: python3 bench/slab_plane.py [--size 256] [--noise 1000] [--cache DIR]
"""
import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import ndimage

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tilt_sim  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def content_plane(width):
    vol = tilt_sim.object_volume(REPO, "slab", width, width // 2)  # (z, y, x)
    z = np.arange(vol.shape[0]) - (vol.shape[0] - 1) / 2
    x = np.arange(vol.shape[2]) - (vol.shape[2] - 1) / 2
    for name, weight in (("density", vol), ("detail", np.abs(vol - ndimage.gaussian_filter(vol, 2)))):
        m = weight.sum(1)  # (z, x)
        depth = (m * z[:, None]).sum(0) / np.maximum(m.sum(0), 1e-12)
        for half in (width // 2, width // 3):
            k = np.abs(x) <= half
            slope = np.polyfit(x[k], depth[k], 1, w=np.sqrt(m.sum(0)[k]))[0]
            print(f"| content plane, {name} | central {2 * half} px | {-np.degrees(np.arctan(slope)):+.2f} |")


def path_length_offset(tilts, means):
    candidates = np.arange(-15, 15.001, 0.05)
    residual = []
    for d in candidates:
        basis = np.stack([np.ones_like(tilts), 1 / np.cos(np.radians(tilts + d))], 1)
        fit = np.linalg.lstsq(basis, means, rcond=None)[0]
        residual.append(np.sum((means - basis @ fit) ** 2))
    return candidates[int(np.argmin(residual))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--noise", type=float, default=1000)
    ap.add_argument("--cache", help="tilt_accuracy.py's --cache folder (the same series files)")
    args = ap.parse_args()
    print("| measure | over | offset, degrees |\n|---|---|---|")
    content_plane(args.size)
    for case, stage in (("slab", 0.0), ("slab-offset", 2.0)):
        kept = Path(args.cache) / f"{case}_{args.size}_{args.noise:g}_3_7.npz" if args.cache else None
        if kept and kept.exists():
            z = np.load(kept)
            stack, tilts = z["stack"].astype(np.float64), z["angles"]
        else:
            stack, tilts, _, _ = tilt_sim.series(REPO, "slab", args.size, 121, 0.0, 3.0, args.noise, 7,
                                                 angle_offset=stage)
            stack = stack.astype(np.float64)
        h, w = stack.shape[1:]
        yy, xx = np.mgrid[0:h, 0:w]
        disc = (xx - (w - 1) / 2) ** 2 + (yy - (h - 1) / 2) ** 2 <= (0.45 * min(h, w)) ** 2
        for region, mask in (("whole view", np.ones_like(disc)), ("inner disc", disc)):
            found = path_length_offset(tilts, stack[:, mask].mean(1))
            print(f"| path length, stage at {stage:+g} | {region} | {found:+.2f} ({found - stage:+.2f} off) |")


if __name__ == "__main__":
    main()
