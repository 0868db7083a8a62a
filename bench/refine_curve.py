#!/usr/bin/env python3
"""Subpixel error against the fractional part of the shift (issue #14's
curve): a real frame (sample_data's Drosophila time-lapse, frame 6) and the
same frame moved by Fourier phase ramps of (3 + f, -2 + f/2) px for f = 0,
0.05, ..., 1, aligned by the CLI with subpixel = "continuous" and
"parabola". Prints a markdown table; a benchmark, not a test.

    python3 bench/refine_curve.py [path/to/stackalign]
"""
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from series_io import read_stack, write_mrc  # noqa: E402


def fourier_shift(img, dx, dy):
    ky = np.fft.fftfreq(img.shape[0])[:, None]
    kx = np.fft.fftfreq(img.shape[1])[None, :]
    return np.real(np.fft.ifft2(np.fft.fft2(img) * np.exp(-2j * np.pi * (kx * dx + ky * dy))))


def measured(binary, work, frames, subpixel):
    write_mrc(work / "pair.mrc", frames)
    (work / "job.toml").write_text(
        '[input]\nstack = "pair.mrc"\n[search]\nwindow = [200, 200]\nwindow_origin = [156, 156]\nmax_shift = 8\n'
        f'subpixel = "{subpixel}"\n[alignment]\nreference = 0\nsolve = "chain"\n'
        '[output]\ndir = "out"\naligned = false\nreport = false\n[device]\nbackend = "cpu"\n')
    subprocess.run([str(binary), "run", "-q", str(work / "job.toml")], check=True)
    row = (work / "out/shifts.csv").read_text().splitlines()[2].split(",")
    return float(row[1]), float(row[2])


def main():
    binary = Path(sys.argv[1] if len(sys.argv) > 1 else REPO / "build/stackalign").resolve()
    base = read_stack(REPO / "sample_data/drosophila_embryo_13x512x512.tif")[6].astype(np.float64)
    rows, errs = [], {"continuous": [], "parabola": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for f in np.round(np.arange(0, 1.0001, 0.05), 2):
            dx, dy = 3 + f, -2 + 0.5 * f
            frames = np.stack([base, fourier_shift(base, dx, dy)])
            line = [f"{f:.2f}"]
            for mode in ("continuous", "parabola"):
                mx, my = measured(binary, work, frames, mode)
                ex, ey = mx - dx, my - dy
                errs[mode].append((ex, ey))
                line += [f"{ex:+.4f}", f"{ey:+.4f}"]
            rows.append("| " + " | ".join(line) + " |")
    print("| fraction f | continuous x error | continuous y error | parabola x error | parabola y error |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    for mode, e in errs.items():
        e = np.array(e)
        print(f"\n{mode}: mean error x {e[:, 0].mean():+.4f}, y {e[:, 1].mean():+.4f}; "
              f"mean |error| x {np.abs(e[:, 0]).mean():.4f}, y {np.abs(e[:, 1]).mean():.4f}; worst {np.abs(e).max():.4f} px")


if __name__ == "__main__":
    main()
