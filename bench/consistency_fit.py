#!/usr/bin/env python3
"""Whether a slab's smooth error shows in its views' exact least-squares
consistency (`python3 bench/consistency_fit.py CASE... [--size 512]
[--binning 4] [--views 71 --range 70]`; numpy and SciPy only).

bench/smooth_fit.py fits the same K smooth shapes (tan t, then (t /
t_max)^2 .. ^K, each less its gauge part) to the residual of a CGLS fit
stopped after some iterations, by finite differences. Here the
least-squares fit is exact and linear in the views, so no solver's
convergence is in the answer: the views, moved by the offsets (Fourier
phase ramps, edge-padded) and binned, are fitted by a slab's
reconstruction x = (P^T P + lambda I)^-1 P^T b, whose Cholesky factor every
row along the axis shares (support: the simulated box's depth, as wide as
every view sees; P samples rays every quarter pixel bilinearly, as
bench/tilt_sim.py does, or `--projector linear` splats). The residual M b
is then linear in b, and b in the offsets to first order through each
view's derivative across the axis, so each Gauss-Newton step is one
linear least-squares solve over the K shapes; `--steps` of them. Printed
per case (on stderr also the first reconstruction's detail by depth):
whether the tracks took their across-axis corrections off (the
rule that tells layered content from content filling the depth:
docs/tomography.md#tilt-axis), the gauge-free error before and after
(across / along), the residual's change and the first step's
coefficients over their jackknife errors over the rows. `--from-truth`
starts from the true offsets: how far the fit's own minimum lies from the
truth, which the model's mismatch with the simulator sets.
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np
from scipy import linalg, sparse

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import tilt_accuracy  # noqa: E402
import tilt_reference  # noqa: E402
import tilt_sim  # noqa: E402

PAD = 24  # px of edge padding around each view before its phase ramp
ROWS = 0.7  # the middle share of the rows along the axis that is fitted


class MovedViews:
    """A series' views moved by offsets and binned, with their derivatives
    across the axis (axis along y)."""

    def __init__(self, stack, binning):
        self.n, self.h, self.w = stack.shape
        self.binning = binning
        big = np.pad(stack.astype(np.float64), ((0, 0), (PAD, PAD), (PAD, PAD)), mode="edge")
        self.spectra = np.fft.fft2(big)
        self.ky = np.fft.fftfreq(big.shape[1])[None, :, None]
        self.kx = np.fft.fftfreq(big.shape[2])[None, None, :]
        rows = self.h // binning
        skip = int((1 - ROWS) / 2 * rows)
        self.rows = np.arange(skip, rows - skip)

    def binned(self, spectra):
        """(views * binned width, rows): the columns the fit takes."""
        b = self.binning
        img = np.fft.ifft2(spectra).real[:, PAD:-PAD, PAD:-PAD]
        img = img.reshape(self.n, self.h // b, b, self.w // b, b).mean((2, 4))[:, self.rows, :]
        return img.transpose(0, 2, 1).reshape(-1, len(self.rows))

    def moved_spectra(self, offsets):
        ramp = np.exp(2j * np.pi * (self.kx * offsets[:, 0, None, None] + self.ky * offsets[:, 1, None, None]))
        return self.spectra * ramp

    def moved(self, offsets):
        """The views moved back by `offsets`."""
        return self.binned(self.moved_spectra(offsets))

    def at(self, offsets):
        """The views moved back by `offsets` and their derivatives by the
        offset across and along the axis."""
        s = self.moved_spectra(offsets)
        return self.binned(s), (self.binned(s * (2j * np.pi * self.kx)), self.binned(s * (2j * np.pi * self.ky)))


class SlabConsistency:
    """The residual of the exact least-squares fit of a slab's slices."""

    def __init__(self, width, depth, angles, lam, projector, blur):
        support = tilt_reference.slab_support(width, depth, angles)
        P = (tilt_reference.ray_projector(width, depth, angles, support, step=0.25) if projector == "ray"
             else tilt_reference.projector(width, depth, angles, support, np.float64))
        self.blur = blurring(width, len(angles), blur)
        self.P = (self.blur @ P).tocsr()
        normal = (self.P.T @ self.P).toarray()
        normal[np.diag_indices_from(normal)] += lam * np.mean(np.diag(normal))
        self.factor = linalg.cho_factor(normal)
        self.depth, self.support, self.width = depth, support, width

    def residual(self, b):
        """The residual of views `b` (views * width, rows), band-limited as the projector is."""
        b = self.blur @ b
        return b - self.P @ self.reconstruction(b, blurred=True)

    def reconstruction(self, b, blurred=False):
        """The least-squares slices (depth * support, rows) of views `b`."""
        return linalg.cho_solve(self.factor, self.P.T @ (b if blurred else self.blur @ b))

    def depth_profile(self, b):
        """The reconstruction's detail (its slices' differences across) per
        depth, over the part every view sees, as a share of the largest."""
        x = self.reconstruction(b).reshape(self.depth, self.support, -1)
        inner = slice((self.support - self.width) // 2, (self.support + self.width) // 2)
        energy = (np.diff(x[:, inner], axis=1) ** 2).sum((1, 2))
        return energy / energy.max()


def blurring(width, views, sigma):
    """A Gaussian of `sigma` px across the axis, view by view, as a sparse
    matrix (the identity for 0); edges renormalised."""
    if sigma <= 0:
        return sparse.identity(width * views, format="csr")
    h = int(np.ceil(3 * sigma))
    u = np.arange(width)
    d = u[:, None] - u[None, :]
    g = np.where(np.abs(d) <= h, np.exp(-0.5 * (d / sigma) ** 2), 0.0)
    g /= g.sum(1, keepdims=True)
    return sparse.block_diag([sparse.csr_matrix(g)] * views, format="csr")


def content_depth(views, offsets, angles):
    """Where the views moved by `offsets` put their content's detail in depth
    (binned px from the middle): a filtered back-projection as deep as the
    views are wide, its slices' differences across, the centroid of the
    depths with at least a fifth of the largest energy."""
    b = views.moved(offsets)
    width = views.w // views.binning
    grid = b.reshape(views.n, width, -1).transpose(0, 2, 1)
    _, vol, _ = tilt_reference.reconstruct(grid, angles, width, "fbp")
    energy = (np.diff(vol.reshape(width, width, -1), axis=1) ** 2).sum((1, 2))
    z = np.nonzero(energy >= 0.2 * energy.max())[0]
    return float((z * energy[z]).sum() / energy[z].sum() - (width - 1) / 2.0)


def depth_by_residual(views, consistency, offsets, angles, span):
    """The object's move in depth (px) that fits the views best into the
    support: every view moved by z sin t, z over -span..span, first a binned
    px apart, then a quarter of that about the best, a parabola through the
    least three. It is a move of the object's own gauge, which no score
    counts, but it decides which of the content the support holds."""
    sin = np.sin(np.radians(angles))

    def least(values):
        res = []
        for z in values:
            r = consistency.residual(views.moved(offsets + np.c_[z * sin, np.zeros_like(sin)]))
            res.append(float((r * r).sum()))
        i = min(max(int(np.argmin(res)), 1), len(values) - 2)
        curve = res[i - 1] - 2 * res[i] + res[i + 1]
        step = values[1] - values[0]
        return values[i] + (0.5 * (res[i - 1] - res[i + 1]) / curve * step if curve > 0 else 0.0)

    b = views.binning
    z = least(np.arange(-span, span + 1e-9, b))
    return least(z + np.arange(-b, b + 1e-9, b / 4))


def jackknife(A, r, groups=8):
    """The coefficients' errors: the fit refitted with each eighth of the rows left out."""
    rows, k = A.shape[1], A.shape[2]
    size = max(1, rows // groups)
    left_out = []
    for start in range(0, rows, size):
        keep = np.ones(rows, bool)
        keep[start:start + size] = False
        left_out.append(np.linalg.lstsq(A[:, keep].reshape(-1, k), -r[:, keep].ravel(), rcond=None)[0])
    left_out = np.array(left_out)
    m = len(left_out)
    return np.sqrt((m - 1) / m * ((left_out - left_out.mean(0)) ** 2).sum(0))


def fit(views, consistency, offsets, shapes, steps):
    """The offsets after `steps` Gauss-Newton steps within `shapes` ((views,
    K) across the axis and (views, K') along it), the residual after each
    step as a share of the first, and the first step's coefficients over
    their errors."""
    first, significance = None, None
    for step in range(steps + 1):
        b, slopes = views.at(offsets)
        r = consistency.residual(b)
        value = float((r * r).sum())
        if first is None:
            first = value
        if step == steps:
            break
        columns = [(shape[:, j], slope) for shape, slope in zip(shapes, slopes) for j in range(shape.shape[1])]
        A = np.stack([consistency.residual(np.repeat(v, slope.shape[0] // len(v))[:, None] * slope)
                      for v, slope in columns], -1)
        c = np.linalg.lstsq(A.reshape(-1, len(columns)), -r.ravel(), rcond=None)[0]
        if significance is None:
            significance = c / np.maximum(jackknife(A, r), 1e-12)
        k = shapes[0].shape[1]
        offsets = offsets + np.c_[shapes[0] @ c[:k], shapes[1] @ c[k:]]
    return offsets, value / first - 1, significance


def main():
    slabs = [c for c in tilt_accuracy.CASES if c.startswith("slab") and c != "slab-oblique"]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="+", choices=slabs)
    ap.add_argument("--stackalign", default=str(tilt_accuracy.REPO / "build/stackalign"))
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--noise", type=float, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cache", help="a folder that keeps simulated series between runs")
    ap.add_argument("--views", type=int, help="views in each series (default: the case's)")
    ap.add_argument("--range", type=float, help="the series' tilts run -RANGE..RANGE degrees (default: the case's)")
    ap.add_argument("--binning", type=int, default=2,
                    help="the views binned so: the fit has fewer unknowns than each row has data")
    ap.add_argument("--k", type=int, default=6, help="how many smooth shapes are free")
    ap.add_argument("--along", type=int, default=0,
                    help="how many smooth shapes are free along the axis too (1 - cos t first)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--lam", type=float, default=1e-3, help="Tikhonov weight, of the normal matrix's mean diagonal")
    ap.add_argument("--projector", choices=("ray", "linear"), default="ray")
    ap.add_argument("--blur", type=float, default=0.0,
                    help="a Gaussian across the axis (binned px) on the views and the projector alike")
    ap.add_argument("--depth-scale", type=float, default=1.0,
                    help="the support this many times as deep as the simulated box")
    ap.add_argument("--from-truth", action="store_true", help="start from the true offsets")
    place = ap.add_mutually_exclusive_group()
    place.add_argument("--placed-by-profile", action="store_true",
                    help="the start's object moved in depth to the support's middle, where a filtered "
                         "back-projection as deep as the binned views are wide puts its detail")
    place.add_argument("--placed-by-residual", action="store_true",
                    help="the start's object moved in depth (b sin t, its own gauge) to where the support "
                         "explains the views best: content off the box's middle is otherwise outside it")
    place.add_argument("--placed-by-truth", action="store_true",
                    help="a diagnosis: the start's object moved to the truth's place (its gauge error, c + a cos t "
                         "+ b sin t across, removed), so the content lies in the box support")
    args = ap.parse_args()
    print(f"# The defaults, then the exact least-squares consistency's smooth fit: {args.size} px binned "
          f"{args.binning}, {args.noise:g} photons, seed {args.seed}, K {args.k}, {args.projector} projector, "
          f"blur {args.blur:g} binned px\n")
    print("| case | tracks' across-axis corrections | gauge-free px: start (across / along) | after the fit "
          "| residual change | first step: coefficients / their errors | s |\n|---|---|---|---|---|---|---|",
          flush=True)
    for case in args.cases:
        geometry = tilt_accuracy.CASES[case][0]
        stack, angles, truth = tilt_accuracy.simulated(case, 0.0, args.size, args.noise, 3.0, args.seed, args.cache,
                                                       views=args.views, half=args.range)
        applied = "(truth)"
        if args.from_truth:
            est = truth.astype(np.float64)
        else:
            est, record = tilt_accuracy.defaults_on(args.stackalign, stack, angles, args.backend)
            tracks = record.get("tilt_axis_tracks", {})
            applied = ("taken off" if tracks.get("across_applied") else "left out") + \
                f" ({tracks.get('across_rms_px', 0) / max(tracks.get('across_noise_px', 0), 1e-12):.1f} x noise)"
        if args.placed_by_truth:
            est = est.copy()
            est[:, 0] = truth[:, 0] + tilt_sim.less_gauge(est[:, 0] - truth[:, 0], angles)
        t = time.perf_counter()
        views = MovedViews(stack, args.binning)
        if args.placed_by_profile:
            depth0 = content_depth(views, est, angles)
            est = est + np.c_[depth0 * args.binning * np.sin(np.radians(angles)), np.zeros(len(angles))]
            print(f"  {case}: content {depth0 * args.binning:+.1f} px off the middle in depth", file=sys.stderr)
        depth = int(np.ceil(args.depth_scale * tilt_sim.box_depth(geometry, args.size) / args.binning)) + 1
        consistency = SlabConsistency(views.w // args.binning, depth, angles, args.lam, args.projector, args.blur)
        if args.placed_by_residual:
            z = depth_by_residual(views, consistency, est, angles, np.ceil(tilt_sim.box_depth(geometry, args.size) / 2))
            est = est + np.c_[z * np.sin(np.radians(angles)), np.zeros(len(angles))]
            print(f"  {case}: object moved {z:+.1f} px in depth", file=sys.stderr)
        profile = consistency.depth_profile(views.moved(est))
        print(f"  {case}: detail by depth (x10): {''.join(str(min(9, int(10 * p))) for p in profile)}; "
              f"median / largest {np.median(profile):.2f}", file=sys.stderr, flush=True)
        along = tilt_sim.smooth_shapes(angles, args.along, along=True) if args.along else np.zeros((len(angles), 0))
        moved, change, significance = fit(views, consistency, est, (tilt_sim.smooth_shapes(angles, args.k), along),
                                          args.steps)
        cells = [f"{g[0]:.3f} ({g[1]:.3f} / {g[2]:.3f})" for g in
                 (tilt_sim.gauge_free(est, truth, angles), tilt_sim.gauge_free(moved, truth, angles))]
        print(f"| {case} | {applied} | {cells[0]} | {cells[1]} | {change:+.2%} | "
              f"{' '.join(f'{s:+.1f}' for s in significance)} | {time.perf_counter() - t:.0f} |", flush=True)


if __name__ == "__main__":
    main()
