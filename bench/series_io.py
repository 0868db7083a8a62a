"""Reading the sample TIFFs and writing MRC stacks from numpy, for the bench
scripts (compare, peak_memory.sh, multi_gpu.sh). Needs only numpy: TIFFs are
read with tifffile, Pillow or OpenCV, whichever is there (the GPU machine has no
registry to bring tifffile), and cases reach stackalign as MRC."""
import numpy as np


def tiff_pages(path, dtype=np.float64):
    """A TIFF's pages one at a time, as `dtype`: with Pillow, else OpenCV
    (a series larger than memory is converted page by page)."""
    try:
        from PIL import Image, ImageSequence
        with Image.open(path) as im:
            for page in ImageSequence.Iterator(im):
                yield np.array(page, dtype=dtype)
        return
    except ImportError:
        pass
    try:
        import cv2
    except ImportError:
        raise SystemExit("reading sample TIFFs needs python3-tifffile, Pillow or OpenCV")
    ok, pages = cv2.imreadmulti(str(path), flags=cv2.IMREAD_UNCHANGED)
    if not ok:
        raise SystemExit(f"cannot read {path}")
    for page in pages:
        yield page.astype(dtype)


def read_stack(path):
    """Every page of a TIFF as float64, (pages, rows, columns)."""
    try:
        import tifffile
        return tifffile.imread(path).astype(np.float64)
    except ImportError:
        pass
    return np.stack(list(tiff_pages(path)))


def write_mrc(path, frames, count=None):
    """float32 MRC2014 (mode 2), what stackalign reads as `stack = "x.mrc"`.
    `frames`: an array (n, rows, columns) or, with `count`, an iterable of
    2D arrays written one at a time (series larger than memory)."""
    frames = iter(frames) if count is not None else frames
    first = next(frames) if count is not None else frames[0]
    nz = count if count is not None else len(frames)
    ny, nx = first.shape
    header = np.zeros(256, dtype="<i4")
    header[0:4] = (nx, ny, nz, 2)
    header[7:10] = (nx, ny, nz)
    header[10:13] = np.array([nx, ny, nz], dtype="<f4").view("<i4")
    header[16:19] = (1, 2, 3)
    raw = bytearray(header.tobytes())
    raw[208:212] = b"MAP "
    raw[212:214] = b"\x44\x44"
    with open(path, "wb") as f:
        f.write(bytes(raw))
        if count is None:
            f.write(np.ascontiguousarray(frames, dtype="<f4").tobytes())
        else:
            f.write(np.ascontiguousarray(first, dtype="<f4").tobytes())
            for frame in frames:
                f.write(np.ascontiguousarray(frame, dtype="<f4").tobytes())


def read_shifts(path, columns=("dx", "dy")):
    """Two columns of a shifts.csv (or the bench's NAME_truth.csv) as a
    (views, 2) array; None where the file has no such columns."""
    import csv
    rows = list(csv.DictReader(open(path)))
    if not rows or columns[0] not in rows[0]:
        return None
    return np.array([[float(r[columns[0]]), float(r[columns[1]])] for r in rows])
