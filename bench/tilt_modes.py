#!/usr/bin/env python3
"""What shape a slab's remaining error has, whether the views' own
consistency shows it, and where it comes from (`python3
bench/tilt_modes.py [--cases ...] [--scan | --chain | --zero-tilt]`).

stackalign runs with the defaults (the angles alone) on the cases of
bench/tilt_accuracy.py, and its error across the axis is split, after the
gauge (c + a cos t + b sin t), into its tan t mode and the rest: the mode
a pair's tracked depth leaves where it drifts evenly with the tilt
(docs/tomography.md#accuracy-and-its-limits). A track segment's own
point absorbs that mode over a few views, so the tracks cannot see it.

`--scan`: the mode's size as the views show it, with no truth: the views
moved by stackalign's offsets plus alpha times the mode (RMS 1 px, gauge
removed) are fitted by a slab's least-squares reconstruction (CGLS,
`--iterations`, on `--rows` rows spread along the axis, a support as deep
as the simulated slab and as wide as every view sees), and the alpha that
leaves the least residual is taken (a parabola through the best three of
-0.3 .. +0.2); its error is a jackknife over the rows. Axis-0 cases only
(the views are sampled on the frame's own grid).

(A fit over several smooth shapes at once: bench/smooth_fit.py.)

`--chain`: where the mode comes from, without stackalign: the views moved
to their true place, their Sobel magnitudes (of a 3 x 3 mean) registered
pair by pair outward from the zero tilt by upsampled cross-correlation,
the higher-tilt view stretched about the axis by cos t_placed / cos t,
each chained offset (placed + found) / stretch; once in one window (the
frame less 12 px a side) for every pair, once in a window whose width
across the axis is that window's times cos t_placed (the same width of
specimen at every tilt), once with both views stretched by 1/cos t to
the zero tilt's foreshortening in the one window (the same specimen
again).

`--zero-tilt`: the same idea in stackalign's own pairs: every view
stretched across the axis by 1/cos t to the zero tilt's foreshortening
(cubic), the series aligned as a plain stack (no angles; `max_shift`
14, the middle view the reference), the offsets found times cos t;
beside stackalign with the true axis and angles given (its tracks
included).
"""
import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy import ndimage

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import tilt_accuracy  # noqa: E402
import tilt_reference  # noqa: E402
import tilt_sim  # noqa: E402

ALPHAS = np.array([-0.3, -0.2, -0.1, 0.0, 0.1, 0.2])


def tan_mode(angles):
    """tan t less its gauge part, RMS 1."""
    m = tilt_sim.less_gauge(np.tan(np.radians(angles)), angles)
    return m / np.sqrt(np.mean(m ** 2))


def across_split(est, truth, angles):
    """(across RMS, the tan mode's share of it in px, the rest's RMS)."""
    e = tilt_sim.less_gauge(est[:, 0] - truth[:, 0], angles)
    m = tan_mode(angles)
    share = float(e @ m / len(m))
    return float(np.sqrt(np.mean(e ** 2))), share, float(np.sqrt(np.mean((e - share * m) ** 2)))


def cgls_residual(P, b, iterations):
    """b less its CGLS fit by P after `iterations`, column by column."""
    x = np.zeros((P.shape[1], b.shape[1]))
    r = b.copy()
    s = P.T @ r
    p = s.copy()
    g = (s * s).sum(0)
    for _ in range(iterations):
        q = P @ p
        a = g / np.maximum((q * q).sum(0), 1e-30)
        x += a * p
        r -= a * q
        s = P.T @ r
        g_next = (s * s).sum(0)
        p = s + g_next / np.maximum(g, 1e-30) * p
        g = g_next
    return r


def fit_rows(height, rows):
    """The `rows` rows of a view a slab's least-squares fit is made on,
    spread over its middle 70 %."""
    return np.linspace(0.15 * height, 0.85 * height, rows).astype(int)


def scan(stack, angles, offsets, depth, rows, iterations):
    """(alpha, its jackknife error, the residual per alpha)."""
    n, height, width = stack.shape
    P = tilt_reference.projector(width, depth, angles, tilt_reference.slab_support(width, depth, angles), np.float64)
    picked = fit_rows(height, rows)
    mode = tan_mode(angles)
    per_row = []
    for alpha in ALPHAS:
        moved = offsets.copy()
        moved[:, 0] += alpha * mode
        views = np.stack([ndimage.shift(stack[k].astype(np.float64), (-moved[k, 1], -moved[k, 0]), order=3,
                                        mode="nearest")[picked] for k in range(n)])  # n, rows, width
        r = cgls_residual(P, views.transpose(0, 2, 1).reshape(n * width, rows), iterations)
        per_row.append((r ** 2).sum(0))
    per_row = np.array(per_row)  # alphas x rows

    def vertex(y):
        k = min(max(int(np.argmin(y)), 1), len(ALPHAS) - 2)
        y0, y1, y2 = y[k - 1:k + 2]
        return ALPHAS[k] + 0.5 * (y0 - y2) / (y0 - 2 * y1 + y2) * (ALPHAS[1] - ALPHAS[0])

    total = per_row.sum(1)
    left_out = np.array([vertex(total - per_row[:, j]) for j in range(rows)])
    error = np.sqrt((rows - 1) / rows * np.sum((left_out - left_out.mean()) ** 2))
    return vertex(total), error, total / total.min()


def stretched_across(view, scale):
    """`view` (axis along y) stretched across the axis by `scale` about its centre (cubic)."""
    h, w = view.shape
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    cx = (w - 1) / 2.0
    return ndimage.map_coordinates(view.astype(np.float64), [yy, (xx - cx) / scale + cx], order=3, mode="nearest")


def chain_error(stack, angles, truth, window):
    """The simple chain of `--chain`: the views' offsets from the truth.
    `window`: "one" (the moving view stretched to the placed one's
    foreshortening, one window), "specimen" (the same, the window's width
    times cos t_placed), "zero tilt" (both views stretched to the zero
    tilt's foreshortening, one window: the same specimen again)."""
    from skimage.registration import phase_cross_correlation
    n, h, w = stack.shape
    t = np.radians(angles)
    edges = []
    for k in range(n):
        v = ndimage.uniform_filter(ndimage.shift(stack[k].astype(np.float64), (-truth[k, 1], -truth[k, 0]), order=3,
                                                 mode="nearest"), 3)
        edges.append(np.hypot(ndimage.sobel(v, 1), ndimage.sobel(v, 0)))
    cx = (w - 1) / 2.0

    def found(placed, moving, t_placed, t_moving):
        """The moving view's offset less the placed one's, in the placed view's pixels."""
        s = np.cos(t_placed) / np.cos(t_moving)
        half = (w - 24) / 2.0 * (np.cos(t_placed) if window == "specimen" else 1.0)
        wnd = (slice(12, h - 12), slice(int(round(cx - half + 0.5)), int(round(cx + half + 0.5))))
        if window == "zero tilt":
            a, b, unit = (stretched_across(placed, 1 / np.cos(t_placed)), stretched_across(moving, 1 / np.cos(t_moving)),
                          np.cos(t_placed))
        else:
            a, b, unit = placed, stretched_across(moving, s), 1.0
        shift, _, _ = phase_cross_correlation(a[wnd], b[wnd], upsample_factor=200, normalization=None)
        return -shift[1] * unit  # the stretched moving view's content against the placed one's

    reference = int(np.argmin(np.abs(angles)))
    x = np.zeros(n)
    for step in (1, -1):
        j = reference
        while 0 <= j + step < n:
            i = j + step
            s = np.cos(t[j]) / np.cos(t[i])
            x[i] = (x[j] + found(edges[j], edges[i], t[j], t[i])) / s
            j = i
    return np.c_[x, np.zeros(n)]


def zero_tilt_error(binary, stack, angles, truth):
    """stackalign's offsets (a plain stack of the views stretched to the zero
    tilt's foreshortening), and those it finds given the true axis and angles."""
    n = len(stack)
    t = np.radians(angles)
    wide = np.stack([stretched_across(stack[k], 1 / np.cos(t[k])) for k in range(n)]).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tilt_accuracy.write_mrc(folder / "series.mrc", wide)
        cfg = folder / "plain.toml"
        cfg.write_text(f'[input]\nstack = "series.mrc"\n[search]\nmax_shift = 14\n[alignment]\nreference = {n // 2}\n'
                       '[output]\ndir = "out"\naligned = false\nreport = false\n[device]\nbackend = "cpu"\n')
        r = subprocess.run([str(binary), "run", "-q", str(cfg)], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit(f"stackalign failed on {cfg}: {r.stderr.strip()}")
        plain = tilt_accuracy.read_shifts(folder / "out" / "shifts.csv")
        plain[:, 0] *= np.cos(t)
        tilt_accuracy.write_series(folder, stack, angles)
        given, _, _, _ = tilt_accuracy.run_stackalign(binary, folder, "v", "series.tlt", 0.0, "cpu", "tilt_offset = 0")
    return plain, given


def main():
    slabs = [c for c in tilt_accuracy.CASES if c.startswith("slab") and c != "slab-oblique"]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stackalign", default=str(tilt_accuracy.REPO / "build/stackalign"))
    ap.add_argument("--cases", nargs="+", default=slabs, choices=slabs)
    ap.add_argument("--noise", type=float, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--cache", help="a folder that keeps simulated series between runs")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--scan", action="store_true")
    mode.add_argument("--chain", action="store_true", help="the simple chain's error instead of stackalign's")
    mode.add_argument("--zero-tilt", action="store_true",
                      help="stackalign's pairs on the views stretched to the zero tilt's foreshortening")
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--iterations", type=int, default=150)
    args = ap.parse_args()
    print(f"# The across-axis error's tan t mode: {args.size} px views, {args.noise:g} photons, seed {args.seed}\n")
    if args.zero_tilt:
        print("| case | stackalign, the true axis and angles given: across (tan mode) | the views at the zero tilt's "
              "foreshortening, a plain stack: across (tan mode) |\n|---|---|---|")
        for case in args.cases:
            stack, angles, truth = tilt_accuracy.simulated(case, 0.0, args.size, args.noise, 3.0, args.seed,
                                                           args.cache)
            plain, given = zero_tilt_error(args.stackalign, stack, angles, truth)
            cells = []
            for est in (given, plain):
                across, share, _ = across_split(est, truth, angles)
                cells.append(f"{across:.3f} ({share:+.3f})")
            print(f"| {case} | {cells[0]} | {cells[1]} |", flush=True)
        return
    if args.chain:
        print("| case | window | across | its tan mode | across without it |\n|---|---|---|---|---|")
        for case in args.cases:
            stack, angles, truth = tilt_accuracy.simulated(case, 0.0, args.size, args.noise, 3.0, args.seed,
                                                           args.cache)
            for window, name in (("one", "one for every pair"), ("specimen", "the same width of specimen"),
                                 ("zero tilt", "one, both views stretched to the zero tilt's foreshortening")):
                est = chain_error(stack, angles, truth, window)
                across, share, rest = across_split(est, np.zeros_like(est), angles)
                print(f"| {case} | {name} | {across:.3f} | {share:+.3f} | {rest:.3f} |", flush=True)
        return
    print("| case | gauge-free px | across | its tan mode | across without it |"
          + (" scan's alpha (+-) | gauge-free with it | across with it |" if args.scan else ""))
    print("|---|---|---|---|---|" + ("---|---|---|" if args.scan else ""))
    for case in args.cases:
        geometry = tilt_accuracy.CASES[case][0]
        stack, angles, truth = tilt_accuracy.simulated(case, 0.0, args.size, args.noise, 3.0, args.seed, args.cache)
        est, _ = tilt_accuracy.defaults_on(args.stackalign, stack, angles)
        g = tilt_sim.gauge_free(est, truth, angles)
        across, share, rest = across_split(est, truth, angles)
        line = f"| {case} | {g[0]:.3f} | {across:.3f} | {share:+.3f} | {rest:.3f} |"
        depth = tilt_sim.box_depth(geometry, args.size)
        if args.scan:
            alpha, error, _ = scan(stack, angles, est, depth, args.rows, args.iterations)
            moved = est.copy()
            moved[:, 0] += alpha * tan_mode(angles)
            g2 = tilt_sim.gauge_free(moved, truth, angles)
            line += f" {alpha:+.3f} ({error:.3f}) | {g2[0]:.3f} | {g2[1]:.3f} |"
        print(line, flush=True)


if __name__ == "__main__":
    main()
