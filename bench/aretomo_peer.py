"""AreTomo2 as a peer beside stackalign (bench/tilt_accuracy.py --aretomo).

AreTomo2 (github.com/czimaginginstitute/AreTomo2) is built on the GPU
machine from its own sources, outside this repository:
    make -C LibSrc/Util all && make -C LibSrc/Mrcfile all &&
    make exe CUDAHOME=/usr/local/cuda CUFLAG="-O2 -gencode arch=compute_90,code=sm_90"
It aligns a series given as an MRC and its angles (-VolZ 0: no
reconstruction) and writes the input's NAME.aln beside its output. Each row of its global section is
SEC ROT GMAG TX TY SMEAN SFIT SCALE BASE TILT, TILT the angle it
reconstructs the view at (with -TiltCor 1 the given angle plus the offset
it found). Its stack correction
(Correct/GCorrPatchShift.cu) samples the raw view at R x + (TX, TY) about
the view's centre, so (TX, TY) is where the view's content lies moved,
in raw pixels before the turn: stackalign's shifts.csv (dx, dy).
"""
import subprocess
import time
from pathlib import Path

import numpy as np


def read_aln(path, views):
    """(views, 2) shifts (TX, TY) by section (NaN for a section it dropped),
    the tilt axis (ROT) of its first row, and (views,) tilts (TILT)."""
    shifts = np.full((views, 2), np.nan)
    tilts = np.full(views, np.nan)
    axis = np.nan
    for line in Path(path).read_text().splitlines():
        if line.startswith("# Local"):
            break
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        sec = int(f[0])
        if 0 <= sec < views:
            shifts[sec] = float(f[3]), float(f[4])
            tilts[sec] = float(f[9])
            if np.isnan(axis):
                axis = float(f[1])
    return shifts, axis, tilts


def align(binary, folder, mrc, tlt, views, align_z, tilt_offset, axis=None, gpu=0):
    """Runs AreTomo2 on `mrc` with the angles of `tlt` (and `axis` given,
    held: -TiltAxis A -1; AreTomo2 reads 0 as "search", so 0 is given as
    0.001); returns the shifts, its axis, its tilt offset (the median of
    its angles less those given), the seconds start to exit, and the
    command."""
    out = Path(folder).resolve() / "aretomo.mrc"
    cmd = [str(Path(binary).resolve()), "-InMrc", str(mrc), "-OutMrc", str(out), "-AngFile", str(tlt), "-VolZ", "0",
           "-AlignZ", str(int(align_z)), "-TiltCor", "1" if tilt_offset else "0", "-Gpu", str(gpu)]
    if axis is not None:
        cmd += ["-TiltAxis", f"{axis if axis != 0 else 0.001:g}", "-1"]
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=folder)
    seconds = time.perf_counter() - t
    aln = out.parent / (Path(mrc).stem + ".aln")  # the input's name in the output's folder
    if r.returncode != 0 or not aln.exists():
        tail = (r.stdout + r.stderr).strip().splitlines()[-5:]
        raise RuntimeError(f"AreTomo2 failed ({r.returncode}): {' | '.join(tail)}")
    shifts, axis, tilts = read_aln(aln, views)
    given = np.loadtxt(tlt, ndmin=1)[:views]
    offset = float(np.nanmedian(tilts - given))
    return shifts, axis, offset, seconds, " ".join(cmd[1:])
