#!/usr/bin/env python3
"""AreTomo2 beside stackalign on `bench stages acquisition`'s series (61 x
4096^2 uint16, or 5760 x 4092 with "acquisition k3"), scored gauge-free
from the truth the bench wrote beside it.

Usage, on the GPU machine after `build/bench stages acquisition`:
    python3 bench/aretomo_acquisition.py AreTomo2-BINARY [--folder build/bench-stages] [--name acquisition]

The series is converted to a float32 MRC (AreTomo2 reads MRC only; not
timed) and aligned by AreTomo2 as a user would run it (`-VolZ 0`: no
reconstruction; `-TiltCor 1`: the specimen is a slab; `-AlignZ`: an
eighth of the width, as deep as a lamella; bench/aretomo_peer.py says how
its `.aln` is read), with its own axis search and then with the true
axis given and held. stackalign's answer is the bench's own run
(`out_NAME_cuda/shifts.csv`, its `run.json` total and wall). Seconds are
AreTomo2's start to exit.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import aretomo_peer  # noqa: E402
import tilt_sim  # noqa: E402
from series_io import read_shifts, tiff_pages, write_mrc  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("aretomo", help="the AreTomo2 binary")
    ap.add_argument("--folder", default="build/bench-stages")
    ap.add_argument("--name", default="acquisition")
    args = ap.parse_args()
    folder = Path(args.folder).resolve()
    tif, tlt = folder / f"{args.name}.tif", folder / f"{args.name}.tlt"
    angles = np.loadtxt(tlt)
    truth = read_shifts(folder / f"{args.name}_truth.csv")
    mrc = folder / f"{args.name}.mrc"
    if not mrc.exists():
        write_mrc(mrc, tiff_pages(tif, np.float32), count=len(angles))
    width, rows = np.fromfile(mrc, dtype="<i4", count=2)  # the MRC header's nx, ny
    print(f"# {args.name}: {len(angles)} views of {width} x {rows}; gauge-free RMS from the truth, px\n")
    print("| aligner | RMS px | across | along | axis found | seconds |")
    print("|---|---|---|---|---|---|")

    def row(name, est, axis, seconds):
        g, dropped = tilt_sim.gauge_free_of_kept(est, truth, angles, 0.0)
        if dropped:
            name += f" ({dropped} views dropped, scored without them)"
        print(f"| {name} | {g[0]:.3f} | {g[1]:.3f} | {g[2]:.3f} | {axis} | {seconds} |", flush=True)

    row("no alignment", np.zeros_like(truth), "", "")
    out = folder / f"out_{args.name}_cuda"
    if (out / "shifts.csv").exists():
        record = json.load(open(out / "run.json"))
        row("stackalign, the defaults (CUDA)", read_shifts(out / "shifts.csv"),
            f"{record['plan']['tilt_axis']:.3f}", f"{record['seconds']['total']:.2f} (run.json total)")
    align_z = width // 8
    for given in (None, 0.0):
        name = "AreTomo2" + (", the true axis given" if given is not None else ", its axis search")
        work = folder / f"aretomo_{'given' if given is not None else 'search'}"
        work.mkdir(exist_ok=True)
        try:
            est, axis, _, seconds, cmd = aretomo_peer.align(args.aretomo, work, mrc, tlt, len(angles), align_z, True, given)
            row(f"{name} (-AlignZ {align_z})", est, f"{axis:.3f}", f"{seconds:.2f}")
            sys.stderr.write(f"AreTomo2 {cmd}\n")
        except RuntimeError as why:
            print(f"| {name}: {why} | | | | | |", flush=True)


if __name__ == "__main__":
    main()
