"""A plain reference of tilt-series projection matching, the peer of
bench/tilt_accuracy.py (in the manner of TomoPy's align_joint): the views,
moved by the current offsets and turned so the tilt axis is vertical, are
binned, reconstructed slice by slice (filtered back-projection for a whole
object; SIRT inside a slab's support for a slab), reprojected, and each view
is moved to its reprojection by cross-correlation (band-passed, the peak
upsampled), coarse to fine over binning 4, 2, 1. It starts from no offsets
and knows only what stackalign is given: the views, the angles, the axis.
"""
import numpy as np
from scipy import ndimage, sparse
from skimage.registration import phase_cross_correlation


def grid_views(views, offsets, axis, binning):
    """Each view moved back by its offset, on the axis-vertical grid, binned:
    (n, rows, width), levelled and tapered as stackalign's projection views."""
    n, fh, fw = views.shape
    a = np.radians(axis)
    px, py = np.cos(a), np.sin(a)
    upright = abs(px) >= abs(py)
    width, rows = ((fw, fh) if upright else (fh, fw))
    width, rows = width // binning, rows // binning
    sub = (np.arange(binning) - (binning - 1) / 2.0)
    u = ((np.arange(width) - (width - 1) / 2.0)[:, None] * binning + sub[None, :]).ravel()
    w = ((np.arange(rows) - (rows - 1) / 2.0)[:, None] * binning + sub[None, :]).ravel()
    W, U = np.meshgrid(w, u, indexing="ij")
    rx, ry = U * px - W * py, U * py + W * px
    out = np.empty((n, rows, width), np.float32)
    taper = np.ones(width)
    edge = max(2, width // 16)
    ramp = 0.5 - 0.5 * np.cos(np.pi * (np.arange(edge) + 0.5) / edge)
    taper[:edge], taper[-edge:] = ramp, ramp[::-1]
    for k in range(n):
        x = rx + (fw - 1) / 2.0 + offsets[k, 0]
        y = ry + (fh - 1) / 2.0 + offsets[k, 1]
        s = ndimage.map_coordinates(views[k], [y, x], order=1, mode="nearest")
        s = s.reshape(rows, binning, width, binning).mean((1, 3))
        out[k] = (s - s.mean()) * taper[None, :]
    return out


def projector(width, thickness, angles, support=None, dtype=np.float32):
    """Voxel-driven parallel projector of one slice (thickness x support,
    support = width unless given; centred on the views' centre) onto `width`
    detector pixels at `angles`: a sparse (views * width) x (thickness *
    support) matrix."""
    support = support or width
    cx, cz = (support - 1) / 2.0, (thickness - 1) / 2.0
    z, x = np.mgrid[0:thickness, 0:support]
    x, z = x.ravel() - cx, z.ravel() - cz
    vox = np.arange(support * thickness)
    rows, cols, vals = [], [], []
    for k, t in enumerate(np.radians(angles)):
        u = x * np.cos(t) + z * np.sin(t) + (width - 1) / 2.0
        i = np.floor(u).astype(int)
        f = u - i
        for j, wgt in ((i, 1 - f), (i + 1, f)):
            ok = (j >= 0) & (j < width)
            rows.append(k * width + j[ok]), cols.append(vox[ok]), vals.append(wgt[ok])
    return sparse.csr_matrix((np.concatenate(vals).astype(dtype), (np.concatenate(rows), np.concatenate(cols))),
                             shape=(len(angles) * width, thickness * support))


def slab_support(width, thickness, angles):
    """How wide a slab `thickness` deep reaches into some view `width` px
    across at `angles`: the support of a slab's least-squares fit."""
    t_max = np.radians(np.abs(angles).max())
    return int(np.ceil(width / np.cos(t_max) + thickness * np.tan(t_max))) + 2


def ray_projector(width, thickness, angles, support, step=0.5):
    """Ray-driven projector of the same slice onto the same detector, for a
    slab: each ray sampled every `step` px through the slice's depth, each
    sample bilinear in the slice, as bench/tilt_sim.py samples its volume.
    A sparse (views * width) x (thickness * support) float64 matrix."""
    cx, cz = (support - 1) / 2.0, (thickness - 1) / 2.0
    u = np.arange(width, dtype=np.float64) - (width - 1) / 2.0
    blocks = []
    for t in np.radians(angles):
        c, s = np.cos(t), np.sin(t)
        span = 2 * (cz + 1) / abs(c)
        ray = -u[None, :] * np.tan(t) + (np.arange(0, span + step, step) - span / 2)[:, None]  # (samples, width)
        x, z = u[None, :] * c - ray * s + cx, u[None, :] * s + ray * c + cz
        ix, iz = np.floor(x).astype(np.int64), np.floor(z).astype(np.int64)
        fx, fz = x - ix, z - iz
        det = np.broadcast_to(np.arange(width)[None, :], x.shape)
        rows, cols, vals = [], [], []
        for dz, wz in ((0, 1 - fz), (1, fz)):
            for dx, wx in ((0, 1 - fx), (1, fx)):
                jx, jz = ix + dx, iz + dz
                ok = (jx >= 0) & (jx < support) & (jz >= 0) & (jz < thickness)
                rows.append(det[ok]), cols.append((jz * support + jx)[ok]), vals.append((wz * wx)[ok] * step)
        m = sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                              shape=(width, thickness * support))
        m.sum_duplicates()
        blocks.append(m)
    return sparse.vstack(blocks).tocsr()


def ramp_filtered(sino, angles):
    """Rows of (views, rows, width) filtered by a Hann-windowed ramp, weighted by
    each view's share of the angular range."""
    n, rows, width = sino.shape
    size = int(2 ** np.ceil(np.log2(2 * width)))
    f = np.fft.rfftfreq(size)
    filt = 2 * f * (0.5 + 0.5 * np.cos(np.pi * f / f.max()))
    out = np.fft.irfft(np.fft.rfft(sino, size, axis=2) * filt, size, axis=2)[..., :width]
    a = np.radians(np.sort(angles))
    gaps = np.gradient(a)
    weight = np.empty(n)
    weight[np.argsort(angles)] = gaps
    return out * weight[:, None, None]


def reconstruct(views, angles, thickness, method, iterations=30):
    """Slices (rows, thickness * width) of the views (n, rows, width)."""
    n, rows, width = views.shape
    A = projector(width, thickness, angles)
    sino = views.transpose(0, 2, 1).reshape(n * width, rows)       # (views * width, rows)
    if method == "fbp":
        filtered = ramp_filtered(views, angles).transpose(0, 2, 1).reshape(n * width, rows)
        return A, A.T @ filtered, filtered
    row_sum = np.asarray(A.sum(1)).ravel()
    col_sum = np.asarray(A.sum(0)).ravel()
    R = np.where(row_sum > 0, 1 / np.maximum(row_sum, 1e-12), 0)[:, None]
    C = np.where(col_sum > 0, 1 / np.maximum(col_sum, 1e-12), 0)[:, None]
    vol = np.zeros((thickness * width, rows), np.float32)
    for _ in range(iterations):
        vol += C * (A.T @ (R * (sino - A @ vol)))
    return A, vol, None


def reprojections(A, vol, n, rows, width, filtered=None):
    """Each view's reprojection; with `filtered` (a filtered back-projection's
    views), of the volume less that view's own back-projection, so no view is
    matched to itself."""
    proj = A @ vol
    if filtered is not None:
        for k in range(n):
            Ak = A[k * width:(k + 1) * width]
            proj[k * width:(k + 1) * width] -= Ak @ (Ak.T @ filtered[k * width:(k + 1) * width])
    return proj.reshape(n, width, rows).transpose(0, 2, 1)


def band_passed(img, low, high):
    return ndimage.gaussian_filter(img, low) - ndimage.gaussian_filter(img, high)


def slab_thickness(views, angles):
    """A first filtered back-projection as deep as the views are wide; the
    depth holding the slices with at least a fifth of the peak energy, x 1.3."""
    n, rows, width = views.shape
    _, vol, _ = reconstruct(views, angles, width, "fbp")
    energy = (vol.reshape(width, width, rows) ** 2).sum((1, 2))
    z = np.nonzero(energy >= 0.2 * energy.max())[0]
    reach = max(abs(z[0] - (width - 1) / 2.0), abs(z[-1] - (width - 1) / 2.0)) + 0.5
    return int(min(width, max(8, 2 * np.ceil(1.3 * reach))))


def align(views, angles, axis, binnings=(4, 2, 1), rounds=(12, 8, 6), tolerance=0.05, log=None, start=None, high=6.0,
          leave_one_out=False, relax=1.0):
    """Content offsets (n, 2) of the views, in frame pixels (from `start`, else
    none), and the history: (binning, largest move) per round."""
    n = views.shape[0]
    angles = np.asarray(angles, float)
    whole = np.ptp(angles) > 150                # no slab: the object stays in view
    a = np.radians(axis)
    offsets = np.zeros((n, 2)) if start is None else np.array(start, float)
    t = np.radians(angles)
    basis = np.stack([np.ones(n), np.cos(t), np.sin(t)], 1)
    history = []
    for binning, most in zip(binnings, rounds):
        grid = grid_views(views, offsets, axis, binning)
        width = grid.shape[2]
        thickness = width if whole else slab_thickness(grid, angles)
        for _ in range(most):
            grid = grid_views(views, offsets, axis, binning)
            A, vol, filtered = reconstruct(grid, angles, thickness, "fbp" if whole else "sirt")
            proj = reprojections(A, vol, n, grid.shape[1], width, filtered if leave_one_out else None)
            step = np.zeros((n, 2))
            for k in range(n):
                ref = band_passed(proj[k], 0.7, high)
                mov = band_passed(grid[k], 0.7, high)
                shift = phase_cross_correlation(ref, mov, upsample_factor=50, normalization=None)[0]
                du, dw = -shift[1] * binning, -shift[0] * binning   # the view's content relative to its reprojection
                step[k] = [du * np.cos(a) - dw * np.sin(a), du * np.sin(a) + dw * np.cos(a)]
            # What the reprojections cannot tell (the object's own shift) is not moved.
            across = step[:, 0] * np.cos(a) + step[:, 1] * np.sin(a)
            along = -step[:, 0] * np.sin(a) + step[:, 1] * np.cos(a)
            across -= basis @ np.linalg.lstsq(basis, across, rcond=None)[0]
            along -= along.mean()
            step = np.stack([across * np.cos(a) - along * np.sin(a), across * np.sin(a) + along * np.cos(a)], 1)
            offsets += relax * step
            largest = float(np.abs(step).max())
            history.append((binning, largest))
            if log:
                log(f"  reference: binning {binning}, thickness {thickness}, largest move {largest:.3f} px")
            if largest < tolerance * binning:
                break
    return offsets, history
