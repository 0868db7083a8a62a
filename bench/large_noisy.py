#!/usr/bin/env python3
"""Large noisy frames with a known answer, one or more builds side by side
(`python3 bench/large_noisy.py --side 3072 --frames 12 --photons 30 --seed 1
new=build/stackalign old=OTHER/build/stackalign`).

The real Drosophila frame (sample_data) upsampled bilinearly to twice SIDE,
moved along a seeded walk in half pixels and binned 2 x 2 (bench/compare's
large case at another size), then Poisson noise at PHOTONS a pixel at the
mean (0: none). Each build runs the CLI with bench/compare's keys on the
CPU; printed: its RMS and largest distance from the truth after removing
the series' mean offset, and the job's seconds. For what changes with a
window's size: docs/benchmarks.md (acquisition) has the refinement's
rows tried with it."""
import argparse
import os
import time
from importlib.machinery import SourceFileLoader
from importlib.util import module_from_spec, spec_from_loader
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
loader = SourceFileLoader("compare", str(HERE / "compare"))
compare = module_from_spec(spec_from_loader("compare", loader))
loader.exec_module(compare)


def series(side, frames, photons, rng):
    base = compare.read_stack(compare.REPO / "sample_data/drosophila_embryo_13x512x512.tif")[6]
    big = compare.upsampled(base, 2 * side + 256, np.float32)
    truth = compare.random_walk(rng, frames, 3, 24, unit=2)
    out = []
    for dx, dy in truth:
        sx, sy = int(round(2 * dx)), int(round(2 * dy))
        frame = big[128 - sy:128 - sy + 2 * side, 128 - sx:128 - sx + 2 * side].reshape(side, 2, side, 2).mean(axis=(1, 3))
        if photons > 0:
            frame = rng.poisson(frame / frame.mean() * photons).astype(np.float32)
        out.append(frame)
    return np.stack(out), truth


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--side", type=int, default=3072)
    ap.add_argument("--frames", type=int, default=12)
    ap.add_argument("--photons", type=float, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("builds", nargs="+", help="NAME=BINARY, run in the order given")
    args = ap.parse_args()
    frames, truth = series(args.side, args.frames, args.photons, np.random.default_rng(args.seed))
    for build in args.builds:
        name, binary = build.split("=", 1)
        os.environ["STACKALIGN"] = binary
        run = compare.stackalign("cpu")
        t = time.perf_counter()
        est = run(frames, dict(name=f"{args.side}^2", max_shift=8))
        e = compare.errors(est, truth)
        print(f"{args.side}^2 x {args.frames}, {args.photons:g} photons, seed {args.seed}: {name}: "
              f"RMS {np.sqrt((e ** 2).mean()):.4f} px, largest {e.max():.4f}, {time.perf_counter() - t:.1f} s", flush=True)


if __name__ == "__main__":
    main()
