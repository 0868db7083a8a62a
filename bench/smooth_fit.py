#!/usr/bin/env python3
"""Whether the views' own consistency finds a slab's smooth error: the
defaults' offsets moved across the axis within K smooth shapes to the least
residual of a least-squares reconstruction (`python3 bench/smooth_fit.py
CASE... [--size 512] [--k 6] [--blur 6]`; needs PyTorch, fast on a GPU).

Each case of bench/tilt_accuracy.py (axis 0) is aligned by stackalign with
the defaults (the angles alone); then, with no truth, `--steps` Gauss-Newton
steps move the offsets across the axis within K shapes (tan t, then
(t / t_max)^2 .. ^K, each less its gauge part c + a cos t + b sin t,
orthonormal) to the least residual of the views fitted by a slab's
least-squares reconstruction: CGLS (`--iters`) on `--rows` rows spread
along the axis, in a support as deep as the simulated box and as wide as
every view sees, the views at the nominal angles. The views are moved by
Fourier phase ramps (edge-padded). `--blur S` compares views and
reprojections after a Gaussian of S px across the axis: the projector
(linear interpolation onto the detector) and the simulator (rays sampled
through the volume) differ at the finest scales. Each shape's effect on
the residual is a finite difference of the whole fit (CGLS is not linear
in the views, so the fit of a slope image is not that effect), and each
step is scaled by 1, 1/2 or 1/4, or not taken, by the residual it leaves.
`--ray` fits with a ray-driven projector that samples as the simulator
does; `--positive` holds the reconstruction non-negative (FISTA, `--iters`
iterations from zero); `--axis-position` frees the tilt axis's place (a
constant offset of every view, which the shapes leave out with the gauge
but a reconstruction sees); `--from-truth` starts from the true offsets.
Printed per case: the gauge-free error (and its across-axis part, the tan
mode's share) before and after, the residual's change, and each
coefficient over its jackknife error over the rows; on stderr, where the
offsets put the tilt axis against the truth's place before and after.
"""
import argparse
import sys
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import tilt_accuracy  # noqa: E402
import tilt_modes  # noqa: E402
import tilt_reference  # noqa: E402
import tilt_sim  # noqa: E402

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
PAD = 24  # px of edge padding around each view before its phase ramp


def sparse(m):
    m = m.tocsr()
    return torch.sparse_csr_tensor(torch.as_tensor(m.indptr), torch.as_tensor(m.indices), torch.as_tensor(m.data),
                                   size=m.shape, device=DEVICE)


class SlabFit:
    """The least-squares fit of a series' rows in a slab support."""

    def __init__(self, stack, angles, depth, rows, iters, blur, ray=False, positive=False):
        n, height, self.width = stack.shape
        support = tilt_reference.slab_support(self.width, depth, angles)
        P = (tilt_reference.ray_projector(self.width, depth, angles, support) if ray
             else tilt_reference.projector(self.width, depth, angles, support, np.float64))
        self.P, self.PT = sparse(P), sparse(P.T)
        self.iters, self.rows, self.positive = iters, rows, positive
        self.lipschitz = None
        self.picked = torch.as_tensor(tilt_modes.fit_rows(height, rows), device=DEVICE)
        big = np.pad(stack.astype(np.float64), ((0, 0), (PAD, PAD), (PAD, PAD)), mode="edge")
        self.spectra = torch.fft.fft2(torch.as_tensor(big, device=DEVICE))
        self.ky = torch.fft.fftfreq(big.shape[1], device=DEVICE, dtype=torch.float64)[None, :, None]
        self.kx = torch.fft.fftfreq(big.shape[2], device=DEVICE, dtype=torch.float64)[None, None, :]
        self.kernel = None
        if blur > 0:
            h = int(np.ceil(3 * blur))
            k = np.exp(-0.5 * (np.arange(-h, h + 1) / blur) ** 2)
            self.kernel = torch.as_tensor(k / k.sum(), device=DEVICE, dtype=torch.float64)[None, None]

    def forward(self, v):
        """The reprojection of `v` as the fit compares it: band-limited."""
        return self.blurred(self.P @ v)

    def blurred(self, y):
        """(views * width, C) blurred across the axis, view by view."""
        if self.kernel is None:
            return y
        c = y.shape[1]
        z = y.reshape(-1, self.width, c).permute(0, 2, 1).reshape(-1, 1, self.width)
        z = torch.nn.functional.conv1d(z, self.kernel, padding=self.kernel.shape[-1] // 2)
        return z.reshape(-1, c, self.width).permute(0, 2, 1).reshape(-1, c)

    def views(self, offsets):
        """The picked rows of every view moved back by `offsets`: (views * width, rows)."""
        o = torch.as_tensor(offsets, device=DEVICE, dtype=torch.float64)
        ramp = torch.exp(2j * np.pi * (self.kx * o[:, 0, None, None] + self.ky * o[:, 1, None, None]))
        moved = torch.fft.ifft2(self.spectra * ramp).real[:, PAD:-PAD, PAD:-PAD][:, self.picked]
        return moved.permute(0, 2, 1).reshape(-1, self.rows)

    def residuals(self, offsets_list):
        """The fit's residual for each set of offsets (one CGLS over all their columns)."""
        b = self.blurred(torch.cat([self.views(o) for o in offsets_list], 1))
        r = self.nonnegative_fit(b) if self.positive else self.cgls(b)
        return [r[:, i * self.rows:(i + 1) * self.rows] for i in range(len(offsets_list))]

    def normal(self, v):
        return self.PT @ self.blurred(self.forward(v))

    def nonnegative_fit(self, b):
        """The residual of a fit held non-negative (FISTA from zero; the
        views are line integrals of a density, which is never negative)."""
        if self.lipschitz is None:  # the largest eigenvalue of the normal operator, by power iteration
            v = torch.ones(self.P.shape[1], 1, device=DEVICE, dtype=torch.float64)
            for _ in range(30):
                v = self.normal(v)
                norm = float(torch.linalg.norm(v))
                v /= norm
            self.lipschitz = 1.05 * norm
        x = torch.zeros(self.P.shape[1], b.shape[1], device=DEVICE, dtype=torch.float64)
        y, momentum = x.clone(), 1.0
        for _ in range(self.iters):
            step = self.PT @ self.blurred(self.forward(y) - b)
            x_next = torch.clamp(y - step / self.lipschitz, min=0.0)
            momentum_next = (1 + np.sqrt(1 + 4 * momentum * momentum)) / 2
            y = x_next + ((momentum - 1) / momentum_next) * (x_next - x)
            x, momentum = x_next, momentum_next
        return b - self.forward(x)

    def cgls(self, b):
        """The residual of the least-squares fit after self.iters CGLS iterations."""
        x = torch.zeros(self.P.shape[1], b.shape[1], device=DEVICE, dtype=torch.float64)
        r = b.clone()
        s = self.PT @ self.blurred(r)
        p = s.clone()
        g = (s * s).sum(0)
        for _ in range(self.iters):
            q = self.forward(p)
            a = g / torch.clamp((q * q).sum(0), min=1e-30)
            x += a * p
            r -= a * q
            s = self.PT @ self.blurred(r)
            g_next = (s * s).sum(0)
            p = s + g_next / torch.clamp(g, min=1e-30) * p
            g = g_next
        return r


def gauss_newton(fit, offsets, shape, steps, eps, log):
    """The offsets after up to `steps` steps, and the residual before and after."""
    def across(coefficients):
        return np.c_[shape @ coefficients, np.zeros(len(shape))]

    k = shape.shape[1]
    r0 = fit.residuals([offsets])[0]
    start = last = float((r0 * r0).sum())
    for step in range(steps):
        rs = fit.residuals([offsets + across(eps * np.eye(k)[j]) for j in range(k)])
        J = torch.stack([(rs[j] - r0) / eps for j in range(k)], -1)  # (views * width, rows, k)
        coef = -torch.linalg.lstsq(J.reshape(-1, k), r0.reshape(-1, 1)).solution.ravel()
        left_out = []  # the jackknife over rows
        for j in range(fit.rows):
            keep = [i for i in range(fit.rows) if i != j]
            left_out.append(-torch.linalg.lstsq(J[:, keep].reshape(-1, k), r0[:, keep].reshape(-1, 1)).solution.ravel())
        left_out = torch.stack(left_out)
        error = torch.sqrt((fit.rows - 1) / fit.rows * ((left_out - left_out.mean(0)) ** 2).sum(0)).cpu().numpy()
        coef = coef.cpu().numpy()
        scales = (1.0, 0.5, 0.25)
        trial = fit.residuals([offsets + across(s * coef) for s in scales])
        values = [float((r * r).sum()) for r in trial]
        best = int(np.argmin(values))
        log(f"  step {step + 1}: coefficients / their error {np.round(coef / np.maximum(error, 1e-12), 1)}, "
            + (f"taken x {scales[best]}" if values[best] < last else "none taken"))
        if values[best] >= last:
            break
        offsets = offsets + across(scales[best] * coef)
        r0, last = trial[best], values[best]
    return offsets, start, last


def scan_axis_place(case, fit, est, truth, angles, reach, step=0.5):
    """The fit's residual with every view moved alike by c (the tilt axis
    moved across the views) over -reach..reach px, its least by a parabola
    through the best three, against where the truth puts the axis."""
    cs = np.arange(-reach, reach + step / 2, step)
    rs = []
    for chunk in range(0, len(cs), 8):  # one CGLS over 8 sets of offsets at a time
        trial = [est + np.c_[np.full(len(est), c), np.zeros(len(est))] for c in cs[chunk:chunk + 8]]
        rs += [float((r * r).sum()) for r in fit.residuals(trial)]
    rs = np.array(rs)
    i = int(np.clip(np.argmin(rs), 1, len(cs) - 2))
    a, b, _ = np.polyfit(cs[i - 1:i + 2], rs[i - 1:i + 2], 2)
    least = -b / (2 * a) if a > 0 else cs[i]
    truth_c = -tilt_sim.axis_place(est, truth, angles)  # the move that puts the axis at the truth's place
    print("  residual over c: " + " ".join(f"{c:+.1f}:{r / rs.min() - 1:.4f}" for c, r in zip(cs, rs)),
          file=sys.stderr, flush=True)
    print(f"| {case} | axis place scan | least residual at c = {least:+.2f} px | the truth's {truth_c:+.2f} px |", flush=True)


def main():
    slabs = [c for c in tilt_accuracy.CASES if c.startswith("slab") and c != "slab-oblique"]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="+", choices=slabs)
    ap.add_argument("--stackalign", default=str(tilt_accuracy.REPO / "build/stackalign"))
    ap.add_argument("--backend", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--noise", type=float, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cache", help="a folder that keeps simulated series between runs")
    ap.add_argument("--k", type=int, default=6, help="how many smooth shapes are free")
    ap.add_argument("--blur", type=float, default=0.0, help="Gaussian across the axis before the fit, px")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--iters", type=int, default=150, help="CGLS (or, with --positive, FISTA) iterations")
    ap.add_argument("--ray", action="store_true", help="the ray-driven projector (the simulator's sampling)")
    ap.add_argument("--positive", action="store_true", help="the reconstruction held non-negative (FISTA)")
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--from-truth", action="store_true",
                    help="start from the true offsets instead of the defaults' (is the truth the fit's minimum?)")
    ap.add_argument("--axis-position", action="store_true",
                    help="the tilt axis's place across the views (a constant offset) free too")
    ap.add_argument("--scan-axis-place", type=float, default=0.0, metavar="REACH",
                    help="instead of the fit: the residual with every view moved alike by -REACH..REACH px")
    ap.add_argument("--eps", type=float, default=0.05, help="the finite difference, px")
    args = ap.parse_args()
    print(f"# The defaults, then the least-squares residual's smooth fit: {args.size} px, {args.noise:g} photons, "
          f"seed {args.seed}, K {args.k}, blur {args.blur:g} px"
          f"{', ray-driven projector' if args.ray else ''}{', non-negative' if args.positive else ''}, {DEVICE}\n")
    print("| case | tracks' across-axis corrections | gauge-free px: the defaults | across (tan mode) "
          "| after the fit | across (tan mode) | residual change |\n|---|---|---|---|---|---|---|")
    for case in args.cases:
        geometry = tilt_accuracy.CASES[case][0]
        stack, angles, truth = tilt_accuracy.simulated(case, 0.0, args.size, args.noise, 3.0, args.seed, args.cache)
        if args.from_truth:
            est, record = truth.astype(np.float64), {}
        else:
            est, record = tilt_accuracy.defaults_on(args.stackalign, stack, angles, args.backend)
        tracks = record.get("tilt_axis_tracks", {})
        applied = ("taken off" if tracks.get("across_applied") else "left out") + \
            f" ({tracks.get('across_rms_px', 0) / max(tracks.get('across_noise_px', 0), 1e-12):.1f} x noise)"
        depth = tilt_sim.box_depth(geometry, args.size)
        fit = SlabFit(stack, angles, depth, args.rows, args.iters, args.blur, args.ray, args.positive)
        print(f"{case}:", file=sys.stderr)
        if args.scan_axis_place:
            scan_axis_place(case, fit, est, truth, angles, args.scan_axis_place)
            continue
        shape = tilt_sim.smooth_shapes(angles, args.k, args.axis_position)
        moved, before, after = gauss_newton(fit, est, shape, args.steps, args.eps,
                                            lambda line: print(line, file=sys.stderr, flush=True))
        cells = []
        for o in (est, moved):
            print(f"  the tilt axis off the truth's place: {tilt_sim.axis_place(o, truth, angles):+.3f} px",
                  file=sys.stderr, flush=True)
            g = tilt_sim.gauge_free(o, truth, angles)
            across, share, _ = tilt_modes.across_split(o, truth, angles)
            cells.append(f"{g[0]:.3f} | {across:.3f} ({share:+.3f})")
        print(f"| {case} | {applied} | {cells[0]} | {cells[1]} | {after / before - 1:+.2%} |", flush=True)


if __name__ == "__main__":
    main()
