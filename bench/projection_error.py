#!/usr/bin/env python3
"""RMS error of a shifts.csv against a simulated series' jitter (truth.csv of
projection_series.py or the test), up to what no alignment of projections
can tell: the reconstruction's own shift, X cos t + Z sin t across the axis
and a constant along it, fitted out by least squares. Prints the final
offsets' error and, with projection matching, the pairs' (coarse) one.

usage: projection_error.py TRUTH_CSV SHIFTS_CSV"""
import csv
import sys

import numpy as np


def rms(dx, dy, angles, jx, jy):
    ex, ey = dx - jx, dy - jy
    a = np.radians(angles)
    basis = np.stack([np.cos(a), np.sin(a)], 1)
    coef = np.linalg.lstsq(basis, ex, rcond=None)[0]
    rx, ry = ex - basis @ coef, ey - ey.mean()
    return np.sqrt(np.mean(rx ** 2 + ry ** 2))


def main():
    truth = np.loadtxt(sys.argv[1], delimiter=",", skiprows=1)
    rows = list(csv.DictReader(open(sys.argv[2])))
    col = lambda k: np.array([float(r[k]) for r in rows])  # noqa: E731
    line = f"final {rms(col('dx'), col('dy'), *truth.T):.3f} px"
    if "coarse_dx" in rows[0]:
        line += f", pairs (coarse) {rms(col('coarse_dx'), col('coarse_dy'), *truth.T):.3f} px"
    print(line)


if __name__ == "__main__":
    main()
