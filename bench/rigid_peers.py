#!/usr/bin/env python3
"""Rigid alignment against its peers, same data, same machine, one run
(`python3 bench/rigid_peers.py [--cuda]`).

1. Real frames turned and moved by known amounts: a 512x512 frame of the
   sample embryo time-lapse turned by three Fourier shears (no interpolation
   model favoured), moved by a Fourier ramp, cut to its central 384x384 and
   given Gaussian noise; each frame's angle and shift a random walk from the
   last. stackalign (transform = "rigid"), OpenCV's findTransformECC
   (MOTION_EUCLIDEAN) and elastix (EulerTransform, Mattes MI) register each
   frame to the previous one and compose. Errors: angle, and where the frame's
   centre and corners land, against the truth; the mean over a few seeds.
2. pystackreg's pc12 test stack (fetched from github.com/glichtner/pystackreg
   for this run, not stored here) with StackReg's own rigid-body output: how
   far stackalign's aligned frames are from StackReg's (ECC between the two),
   and how well each tool's frames match their neighbours.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from series_io import read_stack, write_mrc  # noqa: E402

try:
    import cv2
except ImportError:
    cv2 = None


def fourier_shear(img, axis, amount):
    """Each row (axis=1) or column (axis=0) k moved along itself by amount(k)."""
    n = img.shape[axis]
    f = np.fft.fftfreq(n)
    spec = np.fft.fft(img, axis=axis)
    k = np.arange(img.shape[1 - axis])
    shifts = amount(k)
    ramp = np.exp(-2j * np.pi * np.outer(shifts, f))  # (lines, n)
    if n % 2 == 0:
        ramp[:, n // 2] = np.cos(np.pi * shifts)
    spec = spec * (ramp if axis == 1 else ramp.T)
    return np.fft.ifft(spec, axis=axis).real


def turned(img, angle_deg, dx, dy):
    """Content at X moves to R (X - c) + c + d, R = [cos -sin; sin cos] (x right, y = row)."""
    h, w = img.shape
    a = np.radians(angle_deg)
    t, s = -np.tan(a / 2), np.sin(a)
    cx, cy = (w - 1) / 2, (h - 1) / 2
    out = fourier_shear(img, 1, lambda y: t * (y - cy))
    out = fourier_shear(out, 0, lambda x: s * (x - cx))
    out = fourier_shear(out, 1, lambda y: t * (y - cy) + dx)
    return fourier_shear(out, 0, lambda x: np.full_like(x, dy, dtype=float))


def matrix(angle_deg, dx, dy, c):
    """3x3 map of absolute coordinates: X -> R (X - c) + c + d."""
    a = np.radians(angle_deg)
    r = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    m = np.eye(3)
    m[:2, :2] = r
    m[:2, 2] = c - r @ c + np.array([dx, dy])
    return m


def make_case(rng, frame, n, step_deg, step_px, noise, invert=False):
    size, cut = frame.shape[0], 384
    o = (size - cut) // 2
    truth, frames = [], []
    angle = dx = dy = 0.0
    for k in range(n):
        if k:
            angle += rng.normal(0, step_deg)
            dx += rng.normal(0, step_px)
            dy += rng.normal(0, step_px)
        img = turned(frame, angle, dx, dy)[o:o + cut, o:o + cut]
        img = img + rng.normal(0, noise * (frame.max() - frame.min()), img.shape)
        # Every second frame's contrast inverted: what MI is for, and ECC is not.
        frames.append(frame.max() + frame.min() - img if invert and k % 2 else img)
        # The crop's centre is the big frame's centre: the same map about the crop's centre.
        truth.append((angle, dx, dy))
    return np.array(frames, dtype=np.float32), truth


def compose(pairs):
    """Per frame, the map from frame 0's content: G_(k+1) = P_k G_k."""
    g = [np.eye(3)]
    for p in pairs:
        g.append(p @ g[-1])
    return g


def errors(found, truth, shape):
    h, w = shape
    c = np.array([(w - 1) / 2, (h - 1) / 2])
    pts = np.array([[0, 0, 1], [w - 1, 0, 1], [0, h - 1, 1], [w - 1, h - 1, 1], [c[0], c[1], 1]]).T
    ang, centre, corner = [], [], []
    for g, (a, dx, dy) in zip(found, truth):
        t = matrix(a, dx, dy, c)
        if not np.all(np.isfinite(g)):
            ang.append(np.nan), centre.append(np.nan), corner.append(np.nan)
            continue
        d = (g @ pts - t @ pts)[:2]
        ang.append(np.degrees(np.arctan2(g[1, 0] - g[0, 1], g[0, 0] + g[1, 1])) - a)
        centre.append(np.hypot(*d[:, 4]))
        corner.append(np.hypot(*d[:, :4]).max())
    return np.array(ang), np.array(centre), np.array(corner)


# ---- the tools -----------------------------------------------------------------


def stackalign(backend, search="", alignment=""):
    def run(frames, work):
        write_mrc(work / "stack.mrc", frames)
        (work / "job.toml").write_text(
            "[input]\nstack = \"stack.mrc\"\n[search]\nmax_shift = 16\ntransform = \"rigid\"\n" + search +
            "[alignment]\nreference = 0\n" + alignment + "[output]\ndir = \"out\"\nreport = false\n"
            f"[device]\nbackend = \"{backend}\"\n")
        binary = os.environ.get("STACKALIGN", str(REPO / "build/stackalign"))
        r = subprocess.run([binary, "run", "--quiet", str(work / "job.toml")],
                           capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(r.stderr)
        head, *rows = (work / "out/shifts.csv").read_text().splitlines()
        cols = head.split(",")
        h, w = frames.shape[1:]
        c = np.array([(w - 1) / 2, (h - 1) / 2])
        out = []
        for row in rows:
            v = dict(zip(cols, row.split(",")))
            out.append(matrix(float(v["angle"]), float(v["dx"]), float(v["dy"]), c))
        return out
    return run


def ecc(frames, work):
    criteria = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 500, 1e-7)
    pairs = []
    for a, b in zip(frames[:-1], frames[1:]):
        warp = np.eye(2, 3, dtype=np.float32)
        try:
            _, warp = cv2.findTransformECC(a, b, warp, cv2.MOTION_EUCLIDEAN, criteria, None, 5)
            p = np.eye(3)
            p[:2] = warp  # template (a) x lies in input (b) at W x
        except cv2.error:
            p = np.full((3, 3), np.nan)
        pairs.append(p)
    return compose(pairs)


ELASTIX = """(FixedInternalImagePixelType "float")
(MovingInternalImagePixelType "float")
(FixedImageDimension 2)
(MovingImageDimension 2)
(Registration "MultiResolutionRegistration")
(Metric "AdvancedMattesMutualInformation")
(NumberOfHistogramBins 32)
(Transform "EulerTransform")
(AutomaticScalesEstimation "true")
(AutomaticTransformInitialization "false")
(Optimizer "AdaptiveStochasticGradientDescent")
(AutomaticParameterEstimation "true")
(MaximumNumberOfIterations 500)
(NumberOfResolutions 3)
(FixedImagePyramid "FixedSmoothingImagePyramid")
(MovingImagePyramid "MovingSmoothingImagePyramid")
(ImageSampler "RandomCoordinate")
(NumberOfSpatialSamples 4096)
(NewSamplesEveryIteration "true")
(Interpolator "BSplineInterpolator")
(BSplineInterpolationOrder 1)
(ResampleInterpolator "FinalBSplineInterpolator")
(Resampler "DefaultResampler")
(HowToCombineTransforms "Compose")
(WriteResultImage "false")
"""


def write_mha(path, img):
    h, w = img.shape
    path.write_bytes(("ObjectType = Image\nNDims = 2\nBinaryData = True\nBinaryDataByteOrderMSB = False\n"
                      f"DimSize = {w} {h}\nElementSpacing = 1 1\nElementType = MET_FLOAT\nElementDataFile = LOCAL\n")
                     .encode() + np.ascontiguousarray(img, dtype="<f4").tobytes())


def elastix(frames, work):
    (work / "p.txt").write_text(ELASTIX)
    pairs = []
    for a, b in zip(frames[:-1], frames[1:]):
        write_mha(work / "f.mha", a)
        write_mha(work / "m.mha", b)
        out = work / "ex"
        out.mkdir(exist_ok=True)
        r = subprocess.run(["elastix", "-f", str(work / "f.mha"), "-m", str(work / "m.mha"), "-p", str(work / "p.txt"),
                            "-out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        p = np.full((3, 3), np.nan)
        if r.returncode == 0:
            params = {}
            for line in (out / "TransformParameters.0.txt").read_text().splitlines():
                if line.startswith("("):
                    k, *v = line.strip("()").split()
                    params[k] = v
            th, tx, ty = map(float, params["TransformParameters"])
            cx, cy = map(float, params["CenterOfRotationPoint"])
            # fixed (a) x lies in moving (b) at R (x - C) + C + t
            r2 = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
            p = np.eye(3)
            p[:2, :2] = r2
            p[:2, 2] = np.array([cx, cy]) - r2 @ np.array([cx, cy]) + np.array([tx, ty])
        pairs.append(p)
    return compose(pairs)


def timed(tool, frames):
    work = Path(tempfile.mkdtemp(prefix="rigid-"))
    try:
        t0 = time.perf_counter()
        out = tool(frames, work)
        return out, time.perf_counter() - t0
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ---- pc12 ----------------------------------------------------------------------


def pc12(mirror, tools):
    """stackalign's aligned pc12 against StackReg's rigid-body output."""
    import tifffile
    repo = Path(mirror)
    def show(name):
        data = subprocess.run(["git", "--git-dir", str(repo), "show", f"HEAD:examples/data/{name}"],
                              capture_output=True, check=True).stdout
        p = Path(tempfile.mkdtemp(prefix="pc12-")) / name
        p.write_bytes(data)
        return tifffile.imread(p).astype(np.float32)
    unreg, stackreg = show("pc12-unreg.tif"), show("pc12-reg-rigid-body.tif")
    rows = []
    for name, tool in tools:
        found, secs = timed(tool, unreg)
        h, w = unreg.shape[1:]
        aligned = np.stack([cv2.warpAffine(f, np.linalg.inv(g)[:2], (w, h), flags=cv2.INTER_LINEAR)
                            for f, g in zip(unreg, found)])
        rows.append((name, aligned, secs, found))
    rows.append(("StackReg (ImageJ, its output)", stackreg, None, None))
    m = 20  # the rim, where each tool fills differently
    def ncc(a, b):
        a, b = a[m:-m, m:-m], b[m:-m, m:-m]
        a, b = a - a.mean(), b - b.mean()
        return float((a * b).sum() / np.sqrt((a * a).sum() * (b * b).sum()))
    out = []
    for name, aligned, secs, found in rows:
        neighbours = np.mean([ncc(aligned[k], aligned[k + 1]) for k in range(len(aligned) - 1)])
        vs = ""
        if found is not None:
            # ECC between this tool's frame and StackReg's: how far apart they are.
            ang, pos = [], []
            for k in range(1, len(aligned)):
                warp = np.eye(2, 3, dtype=np.float32)
                _, warp = cv2.findTransformECC(stackreg[k], aligned[k], warp, cv2.MOTION_EUCLIDEAN,
                                               (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 500, 1e-7), None, 5)
                ang.append(np.degrees(np.arctan2(warp[1, 0], warp[0, 0])))
                c = np.array([(w - 1) / 2, (h - 1) / 2])
                pos.append(np.hypot(*(warp[:, :2] @ c + warp[:, 2] - c)))
            vs = f"{np.max(np.abs(ang)):.3f} deg, {np.max(pos):.2f} px"
        out.append((name, neighbours, vs, secs))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuda", action="store_true", help="also stackalign's CUDA backend")
    ap.add_argument("--pystackreg", default="/work/.mirror/glichtner+pystackreg/repo",
                    help="git directory of a pystackreg clone (for pc12)")
    ap.add_argument("--no-elastix", action="store_true", help="leave elastix out (25-35 s per 12 frames)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--frames", type=int, default=25)
    ap.add_argument("--pc12-only", action="store_true", help="only the pc12 comparison")
    ap.add_argument("--metrics", nargs="*", default=["ncc"], help="refine_metric values run beside the defaults")
    ap.add_argument("--cases", type=int, nargs="+", help="only these cases (1-3) of the walks")
    ap.add_argument("--no-chained", dest="chained", action="store_false", help="leave out the chained (solve = chain) rows")
    args = ap.parse_args()
    chain = "solve = \"chain\"\n"
    tools = [("stackalign cpu", stackalign("cpu"))]
    for m in args.metrics:
        tools.append((f"stackalign cpu, refine_metric = {m}", stackalign("cpu", f"refine_metric = \"{m}\"\n")))
    if args.chained:
        tools.append(("stackalign cpu, chained (as before)", stackalign("cpu", "", chain)))
        tools += [(f"stackalign cpu, refine_metric = {m}, chained", stackalign("cpu", f"refine_metric = \"{m}\"\n", chain))
                  for m in args.metrics]
    if args.cuda:
        tools.append(("stackalign cuda", stackalign("cuda")))
        tools += [(f"stackalign cuda, refine_metric = {m}", stackalign("cuda", f"refine_metric = \"{m}\"\n"))
                  for m in args.metrics]
    if cv2 is not None:
        tools.append(("OpenCV ECC (euclidean)", ecc))
    if shutil.which("elastix") and not args.no_elastix:
        tools.append(("elastix (Euler, Mattes MI)", elastix))
    embryo = read_stack(REPO / "sample_data/drosophila_embryo_13x512x512.tif")
    # Several seeds of a longer walk: one 12-frame walk (the first version of
    # this script) moved the tools' order between runs of the same code.
    cases = [(f"embryo frame 6, {args.frames} frames, steps 1 deg / 2 px, noise 2 %", embryo[6], 1.0, 2.0, 0.02, False),
             (f"embryo frame 10, {args.frames} frames, steps 3 deg / 4 px, noise 5 %", embryo[10], 3.0, 4.0, 0.05, False),
             (f"embryo frame 6, {args.frames} frames, 1 deg / 2 px, 2 %, every second frame inverted", embryo[6],
              1.0, 2.0, 0.02, True)]
    if args.cases:
        cases = [cases[k - 1] for k in args.cases]
    if args.pc12_only:
        cases = []
    else:
        print(f"Mean over seeds {', '.join(map(str, args.seeds))} of each walk's RMS (and worst corner).\n")
        print("| case | tool | angle RMS (deg) | centre RMS (px) | worst corner (px) | seconds |")
        print("|---|---|---|---|---|---|")
    for label, frame, sd, sp, noise, invert in cases:
        rows = {name: [] for name, _ in tools}
        lost = {name: 0 for name, _ in tools}
        for seed in args.seeds:
            frames, truth = make_case(np.random.default_rng(seed), frame, args.frames, sd, sp, noise, invert)
            for name, tool in tools:
                try:
                    found, secs = timed(tool, frames)
                except RuntimeError:  # the tool gave up on the stack
                    lost[name] += len(frames) - 1
                    continue
                a, c, k = errors(found, truth, frames.shape[1:])
                lost[name] += int(np.sum(~np.isfinite(a)))
                if np.sum(np.isfinite(a)) <= 1:  # only the reference itself
                    continue
                rows[name].append((np.sqrt(np.nanmean(a ** 2)), np.sqrt(np.nanmean(c ** 2)), np.nanmax(k), secs))
        for name, v in rows.items():
            note = f" ({lost[name]} frames lost)" if lost[name] else ""
            if not v:
                print(f"| {label} | {name}{note} | - | - | - | - |", flush=True)
                continue
            a, c, k, secs = np.mean(v, axis=0)
            print(f"| {label} | {name}{note} | {a:.4f} | {c:.3f} | {k:.3f} | {secs:.2f} |", flush=True)
    if Path(args.pystackreg).exists() and cv2 is not None:
        print("\n| pc12 (5 x 201x199) | mean NCC of neighbours | furthest from StackReg's frame | seconds |")
        print("|---|---|---|---|")
        for name, ncc, vs, secs in pc12(args.pystackreg, tools):
            print(f"| {name} | {ncc:.4f} | {vs or '-'} | {'' if secs is None else f'{secs:.2f}'} |", flush=True)


if __name__ == "__main__":
    main()
