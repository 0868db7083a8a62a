#!/usr/bin/env python3
"""Tilt-series accuracy against a known answer, stackalign beside a peer in
one run (`python3 bench/tilt_accuracy.py [--size 256] [--cases ...]`).

Each case is a series simulated from the real zebrafish volume
(bench/tilt_sim.py says the geometry and its conventions): a slab over
+-60 degrees or a whole object over +-90, the tilt axis at 0 or 84 degrees,
each view moved by a known sub-pixel jitter, with no noise or Poisson noise.
stackalign runs on it through the CLI (the pairs alone, then with
projection matching), and the reference of bench/tilt_reference.py on the
same views. Every answer is scored gauge-free: the error less
c + a cos t + b sin t across the axis and a constant along it, which no
alignment of projections can tell (the object's own 3D position).

The truth checks, on the noiseless cases: the true offsets themselves
score 0.000 (the scoring), and the reference's matching started from them
moves the views by the RMS printed in its first round at full resolution
(the simulator's and the reconstruction's conventions agree to that). On
the whole object, stackalign's centres of mass, which assume nothing but
the geometry, land 0.005 px from the truth.
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import aretomo_peer  # noqa: E402
import tilt_reference  # noqa: E402
import tilt_sim  # noqa: E402
from series_io import read_shifts, write_mrc  # noqa: E402

CASES = {  # name: (geometry, views, axis, tilt-angle offset: the true angles less those stackalign is given)
    "slab": ("slab", 121, 0.0, 0.0),
    "slab-oblique": ("slab", 121, 84.0, 0.0),
    "slab-offset": ("slab", 121, 0.0, 2.0),
    "slab-thin": ("thin", 121, 0.0, 0.0),
    "slab-wide": ("wide", 121, 0.0, 0.0),
    "slab-layers": ("layers", 121, 0.0, 0.0),
    # one, two and three of those layers: content at one depth, and at two or three far apart
    "slab-layer1": ("layers1", 121, 0.0, 0.0),
    "slab-layers2": ("layers2", 121, 0.0, 0.0),
    "slab-layers3": ("layers3", 121, 0.0, 0.0),
    # flat content with the stage at +2 degrees: where the stage's zero is the specimen's plane
    "slab-thin-offset": ("thin", 121, 0.0, 2.0),
    "slab-layer1-offset": ("layers1", 121, 0.0, 2.0),
    "slab-layers3-offset": ("layers3", 121, 0.0, 2.0),
    "whole": ("whole", 91, 0.0, 0.0),
    "whole-oblique": ("whole", 91, 84.0, 0.0),
}


def simulated(case, axis, size, noise, jitter, seed, cache=None, views=None, half=None, mirror=""):
    """The case's views, nominal angles and true offsets (`views` over
    -`half`..`half` degrees where given, else the case's); kept in `cache`
    (a folder) between runs where one is given."""
    geometry, case_views, default_axis, offset = CASES[case]
    at = "" if axis == default_axis else f"_axis{axis:g}"
    at += "" if views is None else f"_views{views}"
    at += "" if half is None else f"_range{half:g}"
    at += f"_mirror{mirror}" if mirror else ""
    kept = Path(cache) / f"{case}{at}_{size}_{noise:g}_{jitter:g}_{seed}.npz" if cache else None
    if kept and kept.exists():
        z = np.load(kept)
        return z["stack"], z["angles"], z["truth"]
    stack, angles, truth, _ = tilt_sim.series(REPO, geometry, size, views or case_views, axis, jitter, noise, seed,
                                             angle_offset=offset, half=half, mirror=mirror)
    if kept:
        kept.parent.mkdir(parents=True, exist_ok=True)
        np.savez(kept, stack=stack, angles=angles, truth=truth)
    return stack, angles, truth


def write_series(folder, stack, angles):
    """`folder`/series.mrc and series.tlt (the nominal angles), what run_stackalign reads."""
    write_mrc(folder / "series.mrc", stack)
    (folder / "series.tlt").write_text("".join(f"{a:.4f}\n" for a in angles))


def run_stackalign(binary, folder, name, angles_file, axis, backend, keys, max_shift=10):
    out = folder / f"out_{name}"
    cfg = folder / f"{name}.toml"
    # keys are [alignment]'s but those written "search.KEY = ...", which go to [search]
    lines = keys.split("\n")
    search = "".join(k[len("search."):] + "\n" for k in lines if k.startswith("search."))
    keys = "\n".join(k for k in lines if not k.startswith("search."))
    cfg.write_text(f'[input]\nstack = "series.mrc"\nangles = "{angles_file}"\n'
                   f'[search]\nmax_shift = {max_shift}\n{search}'
                   f'[alignment]\n{"" if axis is None or "tilt_axis" in keys else f"tilt_axis = {axis}"}\n{keys}\n'
                   f'[output]\ndir = "{out.name}"\naligned = false\nreport = false\n'
                   f'[device]\nbackend = "{backend}"\n')
    t = time.perf_counter()
    r = subprocess.run([str(binary), "run", "-q", str(cfg)], capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"stackalign failed on {cfg}: {r.stderr.strip()}")
    est = read_shifts(out / "shifts.csv")
    coarse = read_shifts(out / "shifts.csv", ("coarse_dx", "coarse_dy"))
    record = json.load(open(out / "run.json"))
    plan = record["plan"]
    found = {"matching seconds": record["seconds"]["projection_matching"]}
    if plan.get("tilt_axis_from", "config") != "config":
        found["axis"] = (plan["tilt_axis"], plan.get("tilt_axis_standard_error"))
    offset_from = plan.get("tilt_offset_from", "")
    if offset_from == "auto" or "tracked points" in offset_from or "reconstruction" in offset_from:
        # the pairs' estimate, or the tracks' or the reconstruction's level
        found["offset"] = (plan["tilt_offset"], plan.get("tilt_offset_standard_error"))
        if "reconstruction" in offset_from:
            found["offset by"] = "reconstruction"
    elif "pairs_tilt_offset" in plan:  # the angles written are those read; the estimate only stretched the pairs
        found["offset"] = (plan["tilt_offset"], None)
        found["pairs offset"] = plan["pairs_tilt_offset"]
    level = record.get("tilt_offset_reconstruction", {})
    if level.get("ran"):
        found["level"] = (f"reconstruction's level: gradients {level['by_gradients']:+.2f}, "
                          f"depth profile {level['by_depth_profile']:+.2f}" + ("" if level["found"] else ", not used") +
                          f", {level['seconds']:.2f} s")
    placed = record.get("axis_place", {})
    if placed.get("ran"):
        found["axis place"] = (f"axis place {placed['shift_px']:+.2f} px, {placed['seconds']:.2f} s" if placed["moved"]
                               else f"axis place not moved: {placed.get('why_not', '')}")
    fit = record.get("slab_fit", {})
    if fit.get("ran"):
        chosen = " (the thinnest tried)" if fit.get("depth_chosen_by") == "thinnest" else ""
        found["slab fit"] = f"slab fit {fit['thickness_px']:g} px deep{chosen}, {fit['seconds']:.1f} s"
    elif "slab_fit" in keys:
        found["slab fit"] = f"slab fit not run: {fit.get('why_not', '')}"
    return est, coarse, seconds, found


def defaults_on(binary, stack, angles, backend="cpu"):
    """stackalign's offsets with the defaults (the nominal angles alone) on a
    simulated series, and its run.json."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_series(folder, stack, angles)
        est, _, _, _ = run_stackalign(binary, folder, "v", "series.tlt", None, backend, "")
        return est, json.load(open(folder / "out_v" / "run.json"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stackalign", default=str(REPO / "build/stackalign"))
    ap.add_argument("--size", type=int, default=256, help="view width across the axis (rows: half of it)")
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--noise", nargs="+", type=float, default=[0, 1000, 100],
                    help="photons per pixel at the mean; 0: none")
    ap.add_argument("--backends", nargs="+", default=["cpu"])
    ap.add_argument("--jitter", type=float, default=3.0)
    ap.add_argument("--views", type=int, help="views in each series (default: the case's, 121 on a slab, 91 whole)")
    ap.add_argument("--range", type=float, help="the series' tilts run -RANGE..RANGE degrees (default 60 on a slab, "
                                                "90 on a whole object)")
    ap.add_argument("--max-shift", type=int, default=10,
                    help="stackalign's [search] max_shift: at least twice the jitter, which neighbours may differ by")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--aretomo", help="an AreTomo2 binary, run beside stackalign on each case (bench/aretomo_peer.py)")
    ap.add_argument("--cache", help="a folder that keeps simulated series between runs")
    ap.add_argument("--mirror", default="", choices=["", "x", "y", "z", "xy", "xz", "yz", "xyz"],
                    help="mirror each object along these axes before projecting: a bias of the method keeps its "
                         "sign under a mirror, where one the content causes turns with the frame's handedness")
    ap.add_argument("--axis", type=float, default=84.0,
                    help="the oblique cases' tilt axis, degrees from y (the axis's angle from the frame's own axes "
                         "is what tilts a slab's axis estimate: docs/tomography.md)")
    ap.add_argument("--variants", nargs="+", default=["pairs", "projection matching"],
                    help="stackalign settings to run: defaults (the angles alone), pairs and 'projection matching' "
                         "(the true axis given), or 'name=[alignment] keys' (the true axis given unless they "
                         "name tilt_axis; ';' between keys; 'search.KEY = ...' sets a [search] key)")
    args = ap.parse_args()
    views = args.views or "the case's"
    tilts = f"+-{args.range:g} degrees" if args.range else "the case's range"
    shape = "" if args.views is None and args.range is None else f"; {views} views over {tilts}"
    shape += f"; objects mirrored in {args.mirror}" if args.mirror else ""
    print(f"# Tilt-series accuracy: gauge-free RMS from the truth, px ({args.size} px views; "
          f"jitter up to {args.jitter} px; seed {args.seed}{shape})\n")
    print("| case | noise | method | RMS px | across | along | tilt axis off the centre, px | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for case in args.cases:
        geometry, views, axis, offset = CASES[case]
        if case.endswith("oblique"):
            axis = args.axis
        for noise in args.noise:
            t0 = time.perf_counter()
            stack, angles, truth = simulated(case, axis, args.size, noise, args.jitter, args.seed, args.cache,
                                             args.views, args.range, args.mirror)
            label = "none" if noise == 0 else f"{noise:g}"
            sys.stderr.write(f"{case}, noise {label}: simulated in {time.perf_counter() - t0:.1f} s\n")
            with tempfile.TemporaryDirectory() as tmp:
                folder = Path(tmp)
                write_series(folder, stack, angles)

                def row(method, est, seconds):
                    # the object's own 3D shift at the true angles
                    g, dropped = tilt_sim.gauge_free_of_kept(est, truth, angles + offset, axis)
                    if dropped:
                        method += f" ({dropped} views dropped, scored without them)"
                    place = tilt_sim.axis_place(est, truth, angles + offset, axis)
                    print(f"| {case} | {label} | {method} | {g[0]:.3f} | {g[1]:.3f} | {g[2]:.3f} | {place:+.3f} "
                          f"| {seconds:.1f} |", flush=True)

                row("no alignment", np.zeros_like(truth), 0.0)
                if noise == 0:
                    row("truth check: the true offsets", truth, 0.0)
                first_outputs = {}  # variant: (backend, the bytes of its shifts.csv and .tlt)
                for backend in args.backends:
                    for variant in args.variants:
                        # The true axis is given unless the keys name tilt_axis;
                        # "defaults": nothing but the angles, as a user starts.
                        keys = {"pairs": "projection_matching = false", "defaults": "",
                                "projection matching": "projection_matching = true"}.get(variant)
                        name = variant
                        if keys is None:
                            name, keys = variant.split("=", 1)
                            keys = keys.replace(";", "\n")
                        est, coarse, seconds, found = run_stackalign(args.stackalign, folder, "v", "series.tlt",
                                                                     None if variant == "defaults" else axis,
                                                                     backend, keys, args.max_shift)
                        if "axis place" in found:
                            name += f" [{found['axis place']}]"
                        if "slab fit" in found:
                            name += f" [{found['slab fit']}]"
                        if "level" in found:
                            name += f" [{found['level']}]"
                        if found["matching seconds"] > 0:
                            name += f" [matching {found['matching seconds']:.2f} s of the job]"
                        for what, truth_value in (("axis", axis), ("offset", offset)):  # found, against the truth
                            if what in found:
                                value, error = found[what]
                                stated = (f"stated +- {error:.2f}" + (", by the reconstruction" if what == "offset" and
                                                                      "offset by" in found else "")
                                          if error is not None else
                                          f"as read; the pairs stretched at {found['pairs offset']:+.2f}")
                                name += f" ({what} {value:.2f}, {value - truth_value:+.2f} off; {stated})"
                        row(f"stackalign {backend}, {name}", est, seconds)
                        # Backends side by side: the same answer to the byte, or not.
                        written = tuple(p.read_bytes() for p in sorted((folder / "out_v").glob("*"))
                                        if p.name == "shifts.csv" or p.suffix == ".tlt")
                        if variant not in first_outputs:
                            first_outputs[variant] = (backend, written)
                        else:
                            other, before = first_outputs[variant]
                            same = "yes" if written == before else "NO"
                            print(f"| {case} | {label} | {variant}: {other} and {backend} write the same shifts.csv "
                                  f"and .tlt bytes: {same} | | | | | |", flush=True)
                if args.aretomo:
                    # As a user would run it: the angles, the slab's depth
                    # (a quarter of the width; the simulator's is a fifth),
                    # its tilt-offset correction on a slab, the axis its own.
                    depth = round(0.25 * args.size) if tilt_sim.is_slab(geometry) else args.size
                    # Then with the true axis given and held.
                    for given in (None, axis):
                        name = "AreTomo2" + (", the true axis given" if given is not None else "")
                        try:
                            est, found, tilt_offset, seconds, _ = aretomo_peer.align(
                                args.aretomo, folder, folder / "series.mrc", folder / "series.tlt", len(angles),
                                depth, tilt_sim.is_slab(geometry), given)
                            found_offset = (f"; offset {tilt_offset:.2f}, {tilt_offset - offset:+.2f} off"
                                            if tilt_sim.is_slab(geometry) else "")
                            row(f"{name} (axis {found:.2f}{found_offset}; -AlignZ {depth})", est, seconds)
                        except RuntimeError as why:
                            print(f"| {case} | {label} | {name}: {why} | | | | | |", flush=True)
                if not args.no_reference:
                    t = time.perf_counter()
                    est, _ = tilt_reference.align(stack, angles, axis)
                    row("reference (reconstruct, reproject, cross-correlate)", est, time.perf_counter() - t)
                    if noise == 0:
                        start = truth.copy()
                        est, hist = tilt_reference.align(stack, angles, axis, binnings=(1,), rounds=(1,),
                                                         start=start)
                        moved = np.sqrt(np.mean(np.sum((est - truth) ** 2, 1)))
                        print(f"| {case} | {label} | truth check: the reference's first round from the true offsets "
                              f"moves them by (RMS) | {moved:.3f} | | | | |", flush=True)


if __name__ == "__main__":
    main()
