"""Tilt series with a known answer, for bench/tilt_accuracy.py.

Geometry (the one stackalign's tomography uses, kernels/tomo/tomo.hpp): the
object's slice (x, z) seen at tilt t puts the point (x, z) at detector
position u = x cos t + z sin t, x and u measured from the image centre
((width - 1) / 2, pixel centres at integers) and z from the object's centre;
the tilt axis runs along the image's y axis through the centre, then the
image is turned so the axis lies `axis` degrees counter-clockwise from y
(stackalign's tilt_axis). View k is that projection with its content moved
by (dx_k, dy_k): view_k(x, y) = P_k(x - dx_k, y - dy_k), exactly (Fourier
phase ramps), which is what stackalign's shifts.csv reports as dx, dy.

The object is the real zebrafish volume of sample_data/ (41 x 83 x 166,
z y x), zoomed: a *slab* wider than the field of view (its depth about a
fifth of the view's width; material enters and leaves the view with tilt,
as in a lamella) seen over +-60 degrees, or a *whole* object inside the
field at every angle seen over +-90, as X-ray projections of a pillar are.
*thin* is the slab 0.03 of the view's width deep instead of 0.2 (8 px at
256). *wide* is the slab 2.6 fields wide instead of 1.3, so that its ends
never come into view within +-60 degrees (the 1.3-field slab's do beyond
about 40), as a lamella's do not. *layers* is the slab's box holding five
thin flat layers instead (each a slice of the volume, turned or moved so
that no two are alike, at depths evenly spread over three quarters of the
box): a specimen whose plane is the stage's by construction, and whose
depths differ sharply; *layersN* holds N such layers (one: a single flat
layer, 19 px from the middle at 256).
"""
import multiprocessing
import os

import numpy as np
from scipy import ndimage

try:
    import tifffile
except ImportError:  # the GPU machine's Python has no tifffile
    tifffile = None


def zebrafish(repo):
    path = repo / "sample_data/fish1_pre_anatomy_41x83x166.tif"
    if tifffile:
        return tifffile.imread(path).astype(np.float32)
    from series_io import read_stack
    return read_stack(path).astype(np.float32)


def is_slab(geometry):
    return geometry in ("slab", "thin", "wide") or geometry.startswith("layers")


def depth_fraction(geometry):
    """A slab's depth as a fraction of the view's width."""
    return 0.03 if geometry == "thin" else 0.2


def box_depth(geometry, width):
    """The simulated slab's depth in px and a pixel either side: the support
    a least-squares fit of its views needs."""
    return int(np.ceil(depth_fraction(geometry) * width)) + 2


def gauge_basis(angles):
    """(views, 3): 1, cos t, sin t."""
    t = np.radians(angles)
    return np.stack([np.ones_like(t), np.cos(t), np.sin(t)], 1)


def less_gauge(values, angles):
    """`values` across the axis (views, or views x columns) less their least-
    squares fit by c + a cos t + b sin t, what no alignment of projections
    can tell (the object's own place)."""
    basis = gauge_basis(angles)
    return values - basis @ np.linalg.lstsq(basis, values, rcond=None)[0]


def smooth_shapes(angles, k, axis_position=False, along=False):
    """(views, k): tan t, then (t / t_max)^2 .. ^k, each less its gauge part,
    orthonormal, RMS 1; with `axis_position`, a constant first: every view
    moved alike is the tilt axis moved off the views' centre, which no
    object's translation gives, so a reconstruction sees it. `along`: the
    shapes along the axis, (t / t_max)^1 .. ^k less their mean (the only
    gauge there)."""
    t = np.radians(angles)
    if along:
        b = np.stack([(t / np.abs(t).max()) ** d for d in range(1, k + 1)], 1)
        return np.linalg.qr(b - b.mean(0))[0] * np.sqrt(len(t))
    b = less_gauge(np.stack([np.tan(t)] + [(t / np.abs(t).max()) ** d for d in range(2, k + 1)], 1), angles)
    if axis_position:
        b = np.c_[np.ones_like(t), b]
    return np.linalg.qr(b)[0] * np.sqrt(len(t))


def flat_layers(slab, count=5, sigma=1.5):
    """`count` layers of `slab` (z, y, x), each one of its slices, flat, at
    depths evenly over the middle three quarters of the box; flipped and
    rolled across so that no two layers' content lines up."""
    nz, ny, nx = slab.shape
    zc = np.arange(nz) - (nz - 1) / 2
    out = np.zeros_like(slab)
    for k, depth in enumerate(np.linspace(-0.375, 0.375, count) * nz):
        layer = slab[int(np.clip(round((nz - 1) / 2 + depth), 0, nz - 1))]
        if k % 2:
            layer = layer[:, ::-1]
        if k % 3 == 1:
            layer = layer[::-1, :]
        layer = np.roll(layer, (k * nx) // count, axis=1)
        out += np.exp(-0.5 * ((zc - depth) / sigma) ** 2)[:, None, None] * layer[None]
    return out


def object_volume(repo, geometry, width, rows):
    """(z, y, x) float32, >= 0, centred."""
    if geometry.startswith("layers"):  # "layers": five; "layersN": N
        count = int(geometry[len("layers"):] or 5)
        return flat_layers(object_volume(repo, "slab", width, rows), count).astype(np.float32)
    vol = zebrafish(repo)
    vol -= np.percentile(vol, 5)
    np.clip(vol, 0, None, out=vol)
    if is_slab(geometry):
        # wider than the field: material enters with tilt
        fx = (2.6 if geometry == "wide" else 1.3) * width / vol.shape[2]
        # a fifth of the view's width deep (thin: 0.03)
        fz = depth_fraction(geometry) * width / vol.shape[0]
    else:
        fx = 0.8 * width / vol.shape[2]          # inside the field at every angle
        fz = fx
    fy = 0.85 * rows / vol.shape[1]
    return ndimage.zoom(vol, (fz, fy, fx), order=1).astype(np.float32)


def project(vol, angle_deg, width, rows, geometry, step=0.5):
    """Line integrals of `vol` (z, y, x) at tilt `angle_deg`: (rows, width)."""
    nz, ny, nx = vol.shape
    t = np.radians(angle_deg)
    c, s = np.cos(t), np.sin(t)
    u = np.arange(width, dtype=np.float64) - (width - 1) / 2.0
    zh = (nz - 1) / 2.0 + 1
    if is_slab(geometry):
        # Along each ray only where it is inside the slab: from z = -zh to zh.
        span = 2 * zh / abs(c)
        k = np.arange(0, span + step, step) - span / 2
        s0 = -u * np.tan(t)                        # where the ray crosses z = 0
        ray = s0[None, :] + k[:, None]             # (steps, width)
    else:
        reach = np.hypot((nx - 1) / 2.0, zh) + 1
        k = np.arange(-reach, reach + step, step)
        ray = np.broadcast_to(k[:, None], (len(k), width))
    x = u[None, :] * c - ray * s + (nx - 1) / 2.0
    z = u[None, :] * s + ray * c + (nz - 1) / 2.0
    y = np.arange(rows, dtype=np.float64) - (rows - 1) / 2.0 + (ny - 1) / 2.0
    out = np.zeros((rows, width), np.float64)
    for r0 in range(0, rows, 16):   # rows in blocks: bounded memory
        yy = y[r0:r0 + 16]
        coords = np.stack(np.broadcast_arrays(z[:, None, :], yy[None, :, None], x[:, None, :]))
        samples = ndimage.map_coordinates(vol, coords.reshape(3, -1), order=1, mode="constant", cval=0.0)
        out[r0:r0 + 16] = samples.reshape(len(k), len(yy), width).sum(0) * step
    return out


_VOLUME = None  # the object the pool's forked workers project (inherited, not pickled per view)


def _projected(args):
    return project(_VOLUME, *args)


def projections(vol, angles_deg, width, rows, geometry):
    """project() at every angle, the views spread over the machine's cores
    (each view is computed alone, so the result is the same on any count):
    at 512 px a series took minutes a case on one core."""
    global _VOLUME
    tasks = [(t, width, rows, geometry) for t in angles_deg]
    workers = min(len(tasks), os.cpu_count() or 1)
    if workers < 2 or "fork" not in multiprocessing.get_all_start_methods():
        return [project(vol, *a) for a in tasks]
    _VOLUME = vol
    try:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            return pool.map(_projected, tasks)
    finally:
        _VOLUME = None


def turned(p, axis_deg, frame_w, frame_h):
    """The projection p (rows, width; axis along y) seen with its axis `axis_deg`
    counter-clockwise from y, on a frame_w x frame_h image (cubic)."""
    if axis_deg == 0 and p.shape == (frame_h, frame_w):
        return p
    a = np.radians(axis_deg)
    yy, xx = np.mgrid[0:frame_h, 0:frame_w].astype(np.float64)
    xx -= (frame_w - 1) / 2.0
    yy -= (frame_h - 1) / 2.0
    u = xx * np.cos(a) + yy * np.sin(a) + (p.shape[1] - 1) / 2.0
    w = -xx * np.sin(a) + yy * np.cos(a) + (p.shape[0] - 1) / 2.0
    return ndimage.map_coordinates(p, [w, u], order=3, mode="constant", cval=0.0)


def moved(img, dx, dy, pad=32):
    """img with its content moved by (dx, dy), by Fourier phase ramps on an
    edge-padded copy (nothing wraps into the field)."""
    big = np.pad(img, pad, mode="edge")
    ky = np.fft.fftfreq(big.shape[0])[:, None]
    kx = np.fft.fftfreq(big.shape[1])[None, :]
    out = np.real(np.fft.ifft2(np.fft.fft2(big) * np.exp(-2j * np.pi * (kx * dx + ky * dy))))
    return out[pad:-pad, pad:-pad]


def series(repo, geometry, width, views, axis, jitter, noise, seed, angle_offset=0.0, sub_pixel=True, half=None,
           mirror=""):
    """The views (views, frame_h, frame_w) float32, the nominal angles (-half..half:
    60 degrees on a slab, 90 on a whole object, unless given), the true content
    offsets (views, 2), and the frame size. `mirror` ("x", "y", "z" or several)
    mirrors the object along those axes before it is projected."""
    rng = np.random.default_rng(seed)
    rows = width // 2
    if half is None:
        half = 60.0 if is_slab(geometry) else 90.0
    nominal = np.linspace(-half, half, views)
    true_angles = nominal + angle_offset
    vol = object_volume(repo, geometry, width, rows)
    for name, dim in (("z", 0), ("y", 1), ("x", 2)):
        if name in mirror:
            vol = np.flip(vol, dim)
    vol = np.ascontiguousarray(vol)
    # A frame that holds the turned projection: sides swapped past 45 degrees.
    upright = abs(np.cos(np.radians(axis))) >= abs(np.sin(np.radians(axis)))
    frame_w, frame_h = (width, rows) if upright else (rows, width)
    # The projection is made on a larger detector so turning it leaves no gap.
    det_w, det_rows = width + 2 * rows, rows + width
    jit = rng.uniform(-jitter, jitter, (views, 2))
    if not sub_pixel:
        jit = np.round(jit)
    out = []
    for k, p in enumerate(projections(vol, true_angles, det_w if axis else width, det_rows if axis else rows,
                                      geometry)):
        img = turned(p, axis, frame_w, frame_h)
        img = moved(img, jit[k, 0], jit[k, 1])
        out.append(img)
    stack = np.stack(out).astype(np.float64)
    if noise > 0:  # Poisson noise, `noise` photons per pixel at the mean
        scale = noise / max(stack.mean(), 1e-12)
        stack = rng.poisson(np.clip(stack, 0, None) * scale) / scale
    return stack.astype(np.float32), nominal, jit, (frame_w, frame_h)


def error_across_along(est, truth, axis=0.0):
    """est - truth (views, 2) across and along a tilt axis `axis` degrees from y."""
    e = np.asarray(est, float) - np.asarray(truth, float)
    ca, sa = np.cos(np.radians(axis)), np.sin(np.radians(axis))
    return e[:, 0] * ca + e[:, 1] * sa, -e[:, 0] * sa + e[:, 1] * ca


def gauge_free(est, truth, angles, axis=0.0):
    """RMS of est - truth (views, 2) after removing what no alignment of
    projections can tell: c + a cos t + b sin t across the axis, a constant
    along it. Returns (rms, across, along)."""
    across, along = error_across_along(est, truth, axis)
    rx = less_gauge(across, angles)
    ry = along - along.mean()
    return (float(np.sqrt(np.mean(rx ** 2 + ry ** 2))), float(np.sqrt(np.mean(rx ** 2))),
            float(np.sqrt(np.mean(ry ** 2))))


def axis_place(est, truth, angles, axis=0.0):
    """Where `est` puts the tilt axis across the views, px, relative to
    where the simulator turned the object (the views' centre): the c of
    the fit of c + a cos t + b sin t to the error across the axis. The
    gauge-free score leaves it out, as the issue defines it, but a
    reconstruction about the views' centre sees it: only a cos t + b sin t
    is the object's own place."""
    across, _ = error_across_along(est, truth, axis)
    kept = np.isfinite(across)
    return float(np.linalg.lstsq(gauge_basis(angles)[kept], across[kept], rcond=None)[0][0])


def gauge_free_of_kept(est, truth, angles, axis=0.0):
    """gauge_free over the views `est` has (a peer may drop some: NaN rows),
    and how many it dropped."""
    est, truth, angles = np.asarray(est, float), np.asarray(truth, float), np.asarray(angles, float)
    kept = np.all(np.isfinite(est), 1)
    return gauge_free(est[kept], truth[kept], angles[kept], axis), int((~kept).sum())
