#!/usr/bin/env python3
"""The rigid speed job's series (`python3 bench/rigid_series.py OUT.mrc [--frames N]`):
the sample embryo frame 6 zoomed 2x to 1024x1024, each frame turned and moved
by a seeded random walk (0.7 deg, 2 px steps; scipy, bilinear), float32 MRC.
The device scripts that time rigid jobs all use it, so their numbers are of
one series."""
import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import ndimage

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from series_io import read_stack, write_mrc  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", help="the MRC file to write")
    ap.add_argument("--frames", type=int, default=121)
    args = ap.parse_args()
    base = ndimage.zoom(read_stack(REPO / "sample_data/drosophila_embryo_13x512x512.tif")[6], 2, order=3)
    rng = np.random.default_rng(3)

    def frames():
        angle = dx = dy = 0.0
        for k in range(args.frames):
            if k:
                angle += rng.normal(0, 0.7)
                dx += rng.normal(0, 2)
                dy += rng.normal(0, 2)
            f = ndimage.rotate(base, angle, reshape=False, order=1, mode="reflect")
            yield ndimage.shift(f, (dy, dx), order=1, mode="reflect").astype(np.float32)

    write_mrc(Path(args.out), frames(), count=args.frames)


if __name__ == "__main__":
    main()
