#!/usr/bin/env python3
"""Where the axis place's sharpness measure peaks on views at their true
offsets (`python3 bench/axis_place_bias.py [--cases slab-layer1 ...]
[--views N --range DEG] [--noise 0] [--mirror x] [--binning 2]
[--moves -4:4:2] [--depth PX]`).

The stage (docs/tomography.md#axis-place) moves every view alike to where
a filtered back-projection about the views' centre is sharpest (the fourth-
power mean's fourth root over the square mean's square root, over the
middle half across). On a case of bench/tilt_accuracy.py (axis 0), the
views moved back to their true offsets, then all moved alike by each of
`--moves` frame px (whole binned pixels: no sample falls between pixels),
reconstructed as deep as they are wide and measured the same way; the
parabola through the sharpest and its neighbours is the measure's own
bias, which the stage keeps. `--mirror x` mirrors the object across the
axis before it is projected: a bias that follows the content changes
sign, one of the geometry's conventions would not.
"""
import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tilt_accuracy  # noqa: E402
import tilt_reference  # noqa: E402


def sharpness(volume):
    """l4 / l2 over the middle half across (volume: thickness, width, rows)."""
    width = volume.shape[1]
    core = volume[:, width // 4: 3 * width // 4, :].astype(np.float64)
    return (core ** 4).mean() ** 0.25 / np.sqrt((core ** 2).mean())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", default=["slab-layer1"], choices=list(tilt_accuracy.CASES))
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--views", type=int, help="views in each series (default: the case's)")
    ap.add_argument("--range", type=float, help="the tilts run -RANGE..RANGE degrees (default: the case's)")
    ap.add_argument("--noise", type=float, default=0.0)
    ap.add_argument("--mirror", default="", choices=["", "x", "y", "z", "xz"])
    ap.add_argument("--binning", type=int, default=2)
    ap.add_argument("--moves", default="-4:4:2", help="first:last:step, frame px (a multiple of --binning)")
    ap.add_argument("--depth", type=int, help="the reconstruction's depth, frame px (default: as deep as wide)")
    ap.add_argument("--cache", help="a folder that keeps simulated series between runs")
    args = ap.parse_args()
    first, last, step = map(float, args.moves.split(":"))
    moves = np.arange(first, last + step / 2, step)
    print(f"| case | mirror | sharpness at each move ({', '.join(f'{m:+g}' for m in moves)} px) | sharpest at, px |")
    print("|---|---|---|---|")
    for case in args.cases:
        stack, angles, truth = tilt_accuracy.simulated(case, 0.0, args.size, args.noise, 3.0, 7, args.cache,
                                                       args.views, args.range, args.mirror)
        values = []
        for move in moves:
            offsets = np.asarray(truth, float).copy()
            offsets[:, 0] += move
            views = tilt_reference.grid_views(stack, offsets, 0.0, args.binning)
            _, rows, width = views.shape
            depth = args.depth // args.binning if args.depth else width
            _, volume, _ = tilt_reference.reconstruct(views, angles, depth, "fbp")
            values.append(sharpness(np.asarray(volume).reshape(depth, width, rows)))
        k = int(np.clip(np.argmax(values), 1, len(values) - 2))
        f0, f1, f2 = values[k - 1:k + 2]
        peak = moves[k] + step * 0.5 * (f0 - f2) / (f0 - 2 * f1 + f2)
        print(f"| {case} | {args.mirror or '-'} | {' '.join(f'{v:.4f}' for v in values)} | {peak:+.2f} |", flush=True)


if __name__ == "__main__":
    main()
