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
3. The specimen's plane in a reconstruction (`--reconstruct`), as IMOD's
   findsection and tomopitch look for it: the views moved back by their
   TRUE offsets (the best case), reconstructed by the reference's filtered
   back-projection (bench/tilt_reference.py) at the nominal angles, the
   detail's energy (the slices less a Gaussian of sigma 2, squared, a 4 x
   4 box mean) summed over the rows into a map over (depth, place across
   the axis), and the offset that makes the
   specimen level in it by three measures over the central 80 % of the
   field:
   - tensor: the mean orientation of the map's gradients (Gaussian
     derivatives, sigma 1.5 px), the structure tensor's;
   - sharpest: the turn under which the map, summed along the turned
     rows, gives the most concentrated depth profile (sum of squares);
   - continuity: the turn under which each column of the map best
     correlates with the columns 8, 16 and 32 px further on, sheared by it.
   A constant offset of every angle turns the reconstruction by it, so
   each measure's answer at the +2 degree stage less its answer at 0 should
   be 2 (the `slab` and `slab-offset` rows check that).

usage: python3 bench/slab_plane.py [--size 256] [--noise 1000] [--cache DIR]
       python3 bench/slab_plane.py --reconstruct [--noise 1000] [--cache DIR] [--cases ...]
"""
import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import ndimage

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tilt_accuracy  # noqa: E402
import tilt_reference  # noqa: E402
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


def detail_map(vol):
    detail = vol - ndimage.gaussian_filter(vol, (2, 0, 2))
    return ndimage.uniform_filter(detail ** 2, (4, 1, 4)).sum(0)  # (depth, x)


def tensor_offset(m):
    gz = ndimage.gaussian_filter(m, 1.5, order=(1, 0))
    gx = ndimage.gaussian_filter(m, 1.5, order=(0, 1))
    depth, width = m.shape
    x = np.arange(width) - (width - 1) / 2
    keep = (np.abs(x)[None, :] < 0.4 * width) & (np.abs(np.arange(depth) - (depth - 1) / 2) < depth / 2 - 4)[:, None]
    jxx, jzz, jxz = (gx * gx)[keep].sum(), (gz * gz)[keep].sum(), (gx * gz)[keep].sum()
    return 0.5 * np.degrees(np.arctan2(2 * jxz, jzz - jxx))


def turns():
    return np.arange(-10, 10.001, 0.1)


def sharpest_offset(m):
    depth, width = m.shape
    z = np.arange(depth) - (depth - 1) / 2
    x = np.arange(width) - (width - 1) / 2
    keep = np.abs(x) < 0.4 * width
    zz, xx = np.meshgrid(z, x[keep], indexing="ij")
    w = m[:, keep]
    big = w > w.max() * 1e-3
    zz, xx, w = zz[big], xx[big], w[big]
    grid = np.arange(z[0], z[-1], 0.5)
    best, found = -1.0, 0.0
    for phi in turns():  # each sample spread by the same Gaussian at every turn: no turn favoured
        level = zz * np.cos(np.radians(phi)) - xx * np.sin(np.radians(phi))
        profile = np.zeros(len(grid))
        for a in range(0, len(level), 20000):
            profile += (w[a:a + 20000, None] * np.exp(-0.5 * (grid[None, :] - level[a:a + 20000, None]) ** 2)).sum(0)
        score = np.sum(profile ** 2) / profile.sum() ** 2
        if score > best:
            best, found = score, phi
    return -found


def continuity_offset(m):
    m = ndimage.gaussian_filter1d(m, 1.0, axis=0)
    depth, width = m.shape
    x = np.arange(width) - (width - 1) / 2
    keep = np.where(np.abs(x) < 0.4 * width)[0]
    z = np.arange(depth, dtype=float)
    phis = turns()
    scores = []
    for phi in phis:
        t, score = np.tan(np.radians(phi)), 0.0
        for step in (8, 16, 32):
            cols = keep[keep + step < width]
            a = np.array([np.interp(z - step * t / 2, z, m[:, i]) for i in cols])
            b = np.array([np.interp(z + step * t / 2, z, m[:, i + step]) for i in cols])
            score += (a * b).sum() / (np.linalg.norm(a) * np.linalg.norm(b))
        scores.append(score)
    k = int(np.argmax(scores))
    if 0 < k < len(scores) - 1:  # a parabola through the best three
        s0, s1, s2 = scores[k - 1:k + 2]
        return -(phis[k] + 0.5 * (s0 - s2) / (s0 - 2 * s1 + s2) * (phis[1] - phis[0]))
    return -phis[k]


def reconstructed_planes(args):
    print("| series | stage offset | tensor | sharpest | continuity |\n|---|---|---|---|---|")
    for case in args.cases:
        geometry, views, axis, stage = tilt_accuracy.CASES[case]
        kept = Path(args.cache) / f"{case}_{args.size}_{args.noise:g}_3_7.npz" if args.cache else None
        if kept and kept.exists():
            z = np.load(kept)
            stack, tilts, truth = z["stack"].astype(np.float64), z["angles"], z["truth"]
        else:
            stack, tilts, truth, _ = tilt_sim.series(REPO, geometry, args.size, views, axis, 3.0, args.noise, 7,
                                                     angle_offset=stage)
            stack = stack.astype(np.float64)
        views = np.stack([tilt_sim.moved(v, -dx, -dy) for v, (dx, dy) in zip(stack, truth)])
        views -= views.mean((1, 2), keepdims=True)
        depth = views.shape[2] // 2
        _, slices, _ = tilt_reference.reconstruct(views, tilts, depth, "fbp")  # (depth * width, rows)
        m = detail_map(slices.T.reshape(views.shape[1], depth, views.shape[2]))
        found = [tensor_offset(m), sharpest_offset(m), continuity_offset(m)]
        print(f"| {case} | {stage:+g} | " + " | ".join(f"{f:+.2f}" for f in found) + " |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--noise", type=float, default=1000)
    ap.add_argument("--cache", help="tilt_accuracy.py's --cache folder (the same series files)")
    ap.add_argument("--reconstruct", action="store_true", help="the specimen's plane in reconstructions (3. above)")
    ap.add_argument("--cases", nargs="+", choices=[c for c in tilt_accuracy.CASES if tilt_accuracy.CASES[c][2] == 0
                                                   and tilt_sim.is_slab(tilt_accuracy.CASES[c][0])],
                    default=["slab", "slab-offset", "slab-thin", "slab-wide", "slab-layer1", "slab-layers2",
                             "slab-layers3", "slab-layers"])
    args = ap.parse_args()
    if args.reconstruct:
        reconstructed_planes(args)
        return
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
