"""stackalign from Python: what a notebook or napari script does.

Run from the repository after `make python`:
    PYTHONPATH=build/python python3 docs/python_example.py
"""
import numpy as np

import stackalign

# A stack as numpy holds it: (frames, rows, cols), any pixel type the CLI reads.
stack = stackalign.read("sample_data/drosophila_embryo_13x512x512.tif")
print("stack", stack.shape, stack.dtype)

# Keywords are the TOML keys (`build/stackalign keys`); the section is implied.
result = stackalign.align_stack(stack, backend="auto", max_shift=16, window=[384, 384], reference="middle",
                                progress=lambda what, done, total: print(f"\r{what} {done}/{total}", end=""))
print()
print("backend:", result.backend)
print("content offset of each frame (dx, dy) relative to the reference:")
for i, (dx, dy) in enumerate(result.shifts):
    print(f"  frame {i:2d}: {dx:+8.3f} {dy:+8.3f}  {result.status[i]}")
print("aligned", result.aligned.shape, result.aligned.dtype)

# The rows of shifts.csv, as dicts.
worst = max(result.table[1:], key=lambda row: abs(row["neighbour_dx"]) + abs(row["neighbour_dy"]))
print("largest neighbour step:", worst)

# Tilt angles may be given as numbers instead of a .tlt file.
tilt = stackalign.read("sample_data/haadf_tilt_91x64x64.tif")
angles = np.loadtxt("sample_data/haadf_tilt_91x64x64.tlt")
series = stackalign.align_stack(tilt, angles=angles, window=[40, 40], max_shift=12)
print("tilt series: views", len(series.shifts), "RMS offset %.2f px" % np.sqrt((series.shifts ** 2).sum(1).mean()))

# Landmarks: points (x, y, z) of one volume found in another, with a fit.
source = stackalign.read("sample_data/fish1_pre_anatomy_41x83x166.tif")
target = stackalign.read("sample_data/fish1_post_anatomy_41x83x166.tif")
points = np.loadtxt("sample_data/fish1_pre_landmarks.csv", delimiter=",", skiprows=1, usecols=(1, 2, 3))
found = stackalign.match_landmarks(source, target, points, fit="rigid", refine="global")
print("matched", int(np.isfinite(found.matches[:, 0]).sum()), "of", len(points), "points; rigid fit [A | t]:")
print(np.round(found.fit, 4))

# Bad input raises with the CLI's message.
try:
    stackalign.align_stack(stack, max_shfit=4)
except ValueError as e:
    print("ValueError:", e)
