#!/usr/bin/env python3
"""A tilt series simulated from the real zebrafish volume (sample_data), for
the projection-matching benchmark (issue #18): the volume upsampled (trilinear,
x3 across, x6 along the axis, x3 in depth), projected by parallel rays at
121 angles (-60..60 in 1-degree steps) about the y axis through its centre,
each view moved by a known random jitter (up to 3 px across the axis, 2 px
along it, Fourier phase ramps), written as float32 MRC with its .tlt and the
jitter. Projection runs on the GPU through PyTorch when there is one.

usage: projection_series.py OUT_DIR [--views N] [--scale K]"""
import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from series_io import read_stack, write_mrc  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def project(volume, angles_deg):
    """Parallel projections about the y axis: volume (z, y, x) -> (views, y, x)."""
    import torch
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    v = torch.from_numpy(volume.astype(np.float32)).to(dev)[None, None]  # N C D H W = z y x
    nz, ny, nx = volume.shape
    out = []
    for a in np.radians(angles_deg):
        c, s = float(np.cos(a)), float(np.sin(a))
        # Samples on a (nx along the ray) x ny x nx grid: detector u, ray t.
        # Normalised coordinates; the ray's length in x-voxel units, so the
        # depth (z) axis is scaled by nx / nz in normalised terms.
        u = torch.linspace(-1, 1, nx, device=dev)
        t = torch.linspace(-1, 1, nx, device=dev)
        T, U = torch.meshgrid(t, u, indexing="ij")  # (t, u)
        x = U * c - T * s
        z = (U * s + T * c) * (nx - 1) / (nz - 1)
        y = torch.linspace(-1, 1, ny, device=dev)
        grid = torch.stack([x[:, None, :].expand(nx, ny, nx), y[None, :, None].expand(nx, ny, nx),
                            z[:, None, :].expand(nx, ny, nx)], -1)[None]
        sampled = torch.nn.functional.grid_sample(v, grid, mode="bilinear", padding_mode="zeros", align_corners=True)
        out.append(sampled[0, 0].sum(0).cpu().numpy())
    return np.stack(out)


def fourier_shift(img, dx, dy):
    ky = np.fft.fftfreq(img.shape[0])[:, None]
    kx = np.fft.fftfreq(img.shape[1])[None, :]
    return np.real(np.fft.ifft2(np.fft.fft2(img) * np.exp(-2j * np.pi * (kx * dx + ky * dy))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--views", type=int, default=121)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    vol = read_stack(REPO / "sample_data/fish1_pre_anatomy_41x83x166.tif")  # z y x
    from scipy import ndimage
    big = ndimage.zoom(vol, (3, 6, 3), order=1)  # 123 x 498 x 498
    big = np.pad(big, ((0, 0), (7, 7), (7, 7)))   # 512 x 512 views
    angles = np.linspace(-60, 60, args.views)
    views = project(big, angles)
    rng = np.random.default_rng(args.seed)
    jx, jy = rng.uniform(-3, 3, len(angles)), rng.uniform(-2, 2, len(angles))
    # Pad before the phase ramps so nothing wraps into the field.
    padded = [fourier_shift(np.pad(v, 16, mode="edge"), x, y)[16:-16, 16:-16] for v, x, y in zip(views, jx, jy)]
    write_mrc(out / "series.mrc", np.stack(padded).astype(np.float32))
    (out / "series.tlt").write_text("".join(f"{a:.2f}\n" for a in angles))
    np.savetxt(out / "truth.csv", np.stack([angles, jx, jy], 1), delimiter=",", header="angle,jx,jy", comments="")
    print(f"{len(angles)} views of {views.shape[2]}x{views.shape[1]} written to {out}")


if __name__ == "__main__":
    main()
