#!/usr/bin/env python3
"""Where a thick slab's error along the tilt axis comes from (`python3
bench/along_bias.py [--size 512] [--cases slab-wide slab] [--noise 0]
[--blur 0 4 16 64] [--shifts OUT/shifts.csv]`).

Along the axis no depth moves a point, so views at their true place
should register with no shift along it. They do not: each view pair's
content at different depths moves across the axis by different amounts
(parallax), and where the content is oriented (neither along nor across
the axis) a translation's best fit turns part of that into a shift along
it, the same sign pair after pair (docs/tomography.md#accuracy-and-its-limits).

On a case of bench/tilt_accuracy.py (axis 0), the views moved back to
their true place (Fourier ramps), the middle two thirds of each, every
neighbour pair's shift along the axis is measured twice: by upsampled
phase correlation (scikit-image), and by iterated linearised least squares
(cubic shifts); the latter also on views blurred across the axis by a
Gaussian of each `--blur` sigma, which keeps the content whose gradient
lies along the axis. Printed: the mean shift a pair (what adds up to a
drift in t), its spread, and the chain's RMS (the pairs summed from the
first view, mean removed).

`--profiles`: each view's row profile (its mean across a window whose
width is 0.9 of the view's times cos t, the same width of specimen at
mid-depth at every tilt) against their mean, found by a parabola through
the least squared difference: how far the true views' profiles are from
each other (the content entering across the axis) and the line in t that
fits them. With `--shifts` (stackalign's shifts.csv on the same series),
the profiles of the views at its offsets, and its along-axis error
(gauge-free) as it is and with their line in t taken off.
"""
import argparse
import sys
from pathlib import Path

import numpy as np
from scipy import ndimage
from skimage.registration import phase_cross_correlation

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import tilt_accuracy  # noqa: E402
import tilt_sim  # noqa: E402
from series_io import read_shifts  # noqa: E402


def least_squares_dy(a, b, inner, rounds=5):
    """b's content shift along the axis (rows) against a's."""
    d = 0.0
    for _ in range(rounds):
        moved = ndimage.shift(b, (d, 0), order=3, mode="nearest")
        g = 0.5 * (np.gradient(a, axis=0) + np.gradient(moved, axis=0))
        d -= np.sum(g[inner] * (a[inner] - moved[inner])) / np.sum(g[inner] ** 2)
    return d


def pair_report(label, d):
    chain = np.concatenate([[0.0], np.cumsum(d)])
    chain -= chain.mean()
    print(f"  {label}: mean a pair {d.mean():+.5f} px, spread {d.std():.4f}, chain RMS {np.sqrt(np.mean(chain ** 2)):.3f}")


def profile_shift(p, ref, inner):
    """p's shift against ref: the least squared difference over shifts, a parabola through the best three."""
    def fitted(steps):
        r = [np.sum((ndimage.shift(p, -s, order=3, mode="nearest")[inner] - ref[inner]) ** 2) for s in steps]
        i = int(np.clip(np.argmin(r), 1, len(steps) - 2))
        curve = r[i - 1] - 2 * r[i] + r[i + 1]
        return steps[i] + (0.5 * (r[i - 1] - r[i + 1]) / curve * (steps[1] - steps[0]) if curve > 0 else 0.0)
    coarse = fitted(np.arange(-3, 3.001, 0.25))
    return fitted(coarse + np.arange(-0.25, 0.2501, 0.025))


def profiles(stack, offsets, tilts):
    n, h, w = stack.shape
    u = np.arange(w) - (w - 1) / 2
    out = []
    for k in range(n):
        view = tilt_sim.moved(stack[k], -offsets[k, 0], -offsets[k, 1])
        weight = np.clip((0.45 * w * np.cos(tilts[k]) - np.abs(u)) / 16, 0, 1)
        out.append((view * weight[None, :]).sum(1) / weight.sum())
    return np.array(out)


def profile_shifts(p, h):
    inner = slice(int(0.15 * h), int(0.85 * h))
    s = np.zeros(len(p))
    for _ in range(2):
        ref = np.mean([ndimage.shift(q, -si, order=3, mode="nearest") for q, si in zip(p, s)], 0)
        s = np.array([profile_shift(q, ref, inner) for q in p])
        s -= s.mean()
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--cases", nargs="+", default=["slab-wide", "slab"])
    ap.add_argument("--noise", type=float, default=0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cache")
    ap.add_argument("--blur", nargs="+", type=float, default=[0, 4, 16, 64])
    ap.add_argument("--profiles", action="store_true")
    ap.add_argument("--shifts", nargs="+", help="stackalign's shifts.csv on each case, in order")
    a = ap.parse_args()
    for c, case in enumerate(a.cases):
        if tilt_accuracy.CASES[case][2] != 0:
            raise SystemExit(f"{case}: axis-0 cases only")
        stack, angles, truth = tilt_accuracy.simulated(case, 0.0, a.size, a.noise, 3.0, a.seed, a.cache)
        stack = stack.astype(np.float64)
        n, h, w = stack.shape
        tilts = np.radians(angles)
        print(f"{case}, {a.size} px, noise {a.noise:g}: neighbour pairs of the views at their true place")
        placed = np.stack([tilt_sim.moved(stack[k], -truth[k, 0], -truth[k, 1]) for k in range(n)])
        inner = (slice(h // 6, -h // 6), slice(w // 6, -w // 6))
        d = np.array([phase_cross_correlation(placed[k][inner], placed[k + 1][inner], upsample_factor=200)[0][0]
                      for k in range(n - 1)])
        pair_report("phase correlation", d)
        for sigma in a.blur:
            v = np.stack([ndimage.gaussian_filter1d(p, sigma, axis=1) for p in placed]) if sigma > 0 else placed
            d = np.array([least_squares_dy(v[k], v[k + 1], inner) for k in range(n - 1)])
            pair_report(f"least squares, blurred across by sigma {sigma:g} px", d)
        if not a.profiles:
            continue
        line = np.stack([np.ones(n), tilts], 1)
        s = profile_shifts(profiles(stack, truth, tilts), h)
        print(f"  profiles at the true place: ends {s[0]:+.3f} / {s[-1]:+.3f} px, RMS {np.sqrt(np.mean(s ** 2)):.3f}, "
              f"line {np.linalg.lstsq(line, s, rcond=None)[0][1]:+.4f} px a radian")
        if a.shifts and c < len(a.shifts):
            est = read_shifts(Path(a.shifts[c]))
            s = profile_shifts(profiles(stack, est, tilts), h)
            fixed = est.copy()
            fixed[:, 1] += line @ np.linalg.lstsq(line, s, rcond=None)[0]
            for label, e in (("stackalign", est), ("with the profiles' line taken off", fixed)):
                (rms, across, along), _ = tilt_sim.gauge_free_of_kept(e, truth, angles)
                print(f"  {label}: {rms:.4f} px gauge-free (across {across:.4f}, along {along:.4f})")


if __name__ == "__main__":
    main()
