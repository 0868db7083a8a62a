#!/usr/bin/env python3
"""Which way cosine_stretch = "auto" keeps on the slab cases of
bench/tilt_accuracy.py, and how far each way is from the truth
(`python3 bench/stretch_ways.py [--sizes 256 512] [--backend cpu|cuda]`):
per case the defaults, `cosine_stretch = true` and `false` (the axis and
offset "auto" in each), gauge-free px, and the defaults' run.json
`plan.cosine_stretch_chosen_by` (whether the way as read stopped early,
or the two residuals that decided)."""
import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tilt_accuracy  # noqa: E402
import tilt_sim  # noqa: E402

SLABS = [c for c in tilt_accuracy.CASES if c.startswith("slab")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stackalign", default=str(tilt_accuracy.REPO / "build/stackalign"))
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 512])
    ap.add_argument("--cases", nargs="+", default=SLABS, choices=SLABS)
    ap.add_argument("--noise", type=float, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--cache", help="a folder that keeps simulated series between runs")
    args = ap.parse_args()
    print("| px | case | defaults | stretched | as read | the defaults' choice |\n|---|---|---|---|---|---|")
    for size in args.sizes:
        for case in args.cases:
            axis = tilt_accuracy.CASES[case][2]
            stack, angles, truth = tilt_accuracy.simulated(case, axis, size, args.noise, 3.0, args.seed, args.cache)
            errors, why = [], ""
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp)
                tilt_accuracy.write_series(folder, stack, angles)
                for name, keys in (("d", ""), ("s", "cosine_stretch = true"), ("r", "cosine_stretch = false")):
                    est, *_ = tilt_accuracy.run_stackalign(args.stackalign, folder, name, "series.tlt", None,
                                                           args.backend, keys)
                    errors.append(tilt_sim.gauge_free(est, truth, angles, axis)[0])
                why = json.load(open(folder / "out_d" / "run.json"))["plan"].get("cosine_stretch_chosen_by", "")
            print(f"| {size} | {case} | {errors[0]:.3f} | {errors[1]:.3f} | {errors[2]:.3f} | {why} |", flush=True)


if __name__ == "__main__":
    main()
