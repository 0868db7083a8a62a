#!/usr/bin/env python3
"""Landmark precision against elastix, on the same data in one run (issue #15).

The real zebrafish volume of sample_data/ moved by a known rigid motion
(rotation about z through a point, then a shift; cubic resampling, scipy),
the sample points: where does each tool put the points in the moved volume?
Rows: stackalign's rigid fit of matched points, the same refined globally
(`[landmarks] refine = "global"`), and elastix (Euler transform, Mattes MI,
the points mapped by transformix). Error = RMS distance from the truth at
the 24 points, voxels. Usage: python3 bench/landmark_peers.py [--backend cpu|cuda]
"""
import argparse
import csv
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
try:
    import tifffile
    from scipy import ndimage
except ImportError:
    raise SystemExit("needs python3-tifffile and python3-scipy")

ELASTIX_EULER = """(FixedInternalImagePixelType "float")
(MovingInternalImagePixelType "float")
(FixedImageDimension 3)
(MovingImageDimension 3)
(Registration "MultiResolutionRegistration")
(Metric "AdvancedMattesMutualInformation")
(NumberOfHistogramBins 32)
(Transform "EulerTransform")
(AutomaticTransformInitialization "false")
(AutomaticScalesEstimation "true")
(Optimizer "AdaptiveStochasticGradientDescent")
(MaximumNumberOfIterations 1000)
(NumberOfResolutions 2)
(FixedImagePyramid "FixedSmoothingImagePyramid")
(MovingImagePyramid "MovingSmoothingImagePyramid")
(ImageSampler "RandomCoordinate")
(NumberOfSpatialSamples 20000)
(NewSamplesEveryIteration "true")
(Interpolator "BSplineInterpolator")
(BSplineInterpolationOrder 1)
(ResampleInterpolator "FinalBSplineInterpolator")
(Resampler "DefaultResampler")
(HowToCombineTransforms "Compose")
(WriteResultImage "false")
"""


def moved_volume(v, angle_deg, centre, shift):
    """Content at p (x, y, z) appears at R (p - c) + c + t."""
    a = np.deg2rad(angle_deg)
    r = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
    ri = r.T
    swap = np.array([[0, 0, 1], [0, 1, 0], [1, 0, 0]])  # (x, y, z) <-> scipy's (z, y, x)
    matrix = swap @ ri @ swap
    offset = swap @ (centre - ri @ (centre + shift))
    out = ndimage.affine_transform(v.astype(np.float64), matrix, offset=offset, order=3, mode="constant")
    return np.clip(np.rint(out), 0, 65535).astype(np.uint16), r


def write_moved_case(work, source, points, angle, shift):
    """The sample volume as source, it moved (rotation about z through
    (83, 41, 20), then `shift`) as target, and the sample points, written
    into `work`; returns where the motion puts each point."""
    centre = np.array([83.0, 41.0, 20.0])
    target, r = moved_volume(source, angle, centre, np.array(shift))
    tifffile.imwrite(work / "source.tif", source)
    tifffile.imwrite(work / "target.tif", target)
    shutil.copy(REPO / "sample_data/fish1_pre_landmarks.csv", work / "points.csv")
    return (points - centre) @ r.T + centre + np.array(shift)


def stackalign(work, backend, refine):
    (work / "job.toml").write_text(
        'mode = "landmarks"\n[landmarks]\nsource = "source.tif"\ntarget = "target.tif"\npoints = "points.csv"\n'
        + ('refine = "global"\n' if refine else "")
        + f'[preprocess]\nthreshold = 10.0\n[output]\ndir = "out"\nfit = "rigid"\n[device]\nbackend = "{backend}"\n')
    t0 = time.perf_counter()
    subprocess.run([str(REPO / "build/stackalign"), "run", "-q", str(work / "job.toml")], check=True)
    seconds = time.perf_counter() - t0
    lines = (work / "out/fit.txt").read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("matrix"))
    m = np.array([[float(x) for x in lines[i + 1 + r].split()] for r in range(3)])
    return m, seconds


def elastix_points(work, points):
    (work / "euler.txt").write_text(ELASTIX_EULER)
    out = work / "elastix"
    out.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    # fixed = source, moving = target: the transform maps source points into the target.
    subprocess.run(["elastix", "-f", str(work / "source.tif"), "-m", str(work / "target.tif"), "-p",
                    str(work / "euler.txt"), "-out", str(out)], check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - t0
    (work / "points.txt").write_text("point\n%d\n" % len(points) + "".join("%g %g %g\n" % tuple(p) for p in points))
    subprocess.run(["transformix", "-def", str(work / "points.txt"), "-tp", str(out / "TransformParameters.0.txt"),
                    "-out", str(out)], check=True, stdout=subprocess.DEVNULL)
    mapped = []
    for line in (out / "outputpoints.txt").read_text().splitlines():
        got = re.search(r"OutputPoint = \[ ([^\]]+) \]", line)
        mapped.append([float(x) for x in got.group(1).split()])
    return np.array(mapped), seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cpu")
    args = ap.parse_args()
    if not shutil.which("elastix"):
        print("elastix is not installed (Debian: elastix); only stackalign's rows", file=sys.stderr)
    source = tifffile.imread(REPO / "sample_data/fish1_pre_anatomy_41x83x166.tif")
    points = np.array([[float(r["x"]), float(r["y"]), float(r["z"])]
                       for r in csv.DictReader(open(REPO / "sample_data/fish1_pre_landmarks.csv"))])
    print("| motion | tool | RMS error at the points, voxels | mean error x, y, z | seconds |")
    print("|---|---|---|---|---|")
    for angle, shift in [(3.0, (2.0, -1.5, 1.0)), (-5.0, (-1.25, 2.5, -0.75)), (1.5, (0.3, 0.6, -0.4)),
                         (-2.5, (1.7, -0.2, 0.35))]:
        work = Path(tempfile.mkdtemp(prefix="landmark-peers-"))
        try:
            truth = write_moved_case(work, source, points, angle, shift)
            rows = []
            for name, refine in [("stackalign rigid fit", False), ('stackalign rigid fit, refine = "global"', True)]:
                m, seconds = stackalign(work, args.backend, refine)
                rows.append((name, points @ m[:, :3].T + m[:, 3], seconds))
            if shutil.which("elastix"):
                mapped, seconds = elastix_points(work, points)
                rows.append(("elastix (Euler, Mattes MI)", mapped, seconds))
            for name, got, seconds in rows:
                e = got - truth
                print(f"| {angle:+.1f} deg, shift {shift} | {name} | {np.sqrt((e ** 2).sum(1).mean()):.3f} | "
                      f"{e.mean(0)[0]:+.3f}, {e.mean(0)[1]:+.3f}, {e.mean(0)[2]:+.3f} | {seconds:.2f} |", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
