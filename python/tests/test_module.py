"""The Python module against the CLI: the same results on the sample configs,
every error path with the CLI's message, dtype round trips, progress, the
GIL released during a run. Run by `make test` (tests/run_suite.sh)."""
import json
import os
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import numpy as np
import pytest

import stackalign

# As in the C++ suite: GPU runs time their own choices, as a first run does,
# and leave the user's tuning cache alone (the module reads this at each
# first tuning, the CLI runs below inherit it).
os.environ["STACKALIGN_TUNING_CACHE"] = "off"

REPO = Path(__file__).resolve().parents[2]
CLI = os.environ.get("STACKALIGN_CLI", str(REPO / "build/stackalign"))
DROSOPHILA = REPO / "sample_data/drosophila_embryo_13x512x512.tif"
FISH_PRE = REPO / "sample_data/fish1_pre_anatomy_41x83x166.tif"
FISH_POST = REPO / "sample_data/fish1_post_anatomy_41x83x166.tif"
LANDMARKS = REPO / "sample_data/fish1_pre_landmarks.csv"


def config_keywords(name, skip):
    """A sample config's keys as keywords (paths made absolute, `skip` left out)."""
    config = REPO / "configs" / name
    doc = tomllib.loads(config.read_text())
    keys = {}
    for section, table in doc.items():
        if not isinstance(table, dict):
            continue
        for key, value in table.items():
            if f"{section}.{key}" in skip:
                continue
            if key in ("angles",) and isinstance(value, str):
                value = str((config.parent / value).resolve())
            keys[key] = value
    return keys


def config_copy(tmp_path, config_name, out_name, backend, extra=""):
    """A copy of a sample config writing into tmp_path / out_name, beside the
    original (its relative paths still hold); `extra` is appended."""
    config = REPO / "configs" / config_name
    text = config.read_text().replace('backend = "auto"', f'backend = "{backend}"')
    lines = []
    for line in text.splitlines():
        if line.strip().startswith("dir ="):
            line = f'dir = "{tmp_path / out_name}"'
        lines.append(line)
    copy = config.parent / f".pytest-{tmp_path.name}-{out_name}.toml"
    copy.write_text("\n".join(lines) + "\n" + extra)
    return copy


def run_cli(tmp_path, config_name, out_name, backend):
    """The CLI on a copy of a sample config writing into tmp_path."""
    copy = config_copy(tmp_path, config_name, out_name, backend)
    try:
        subprocess.run([CLI, "run", "-q", str(copy)], check=True)
    finally:
        copy.unlink()
    return tmp_path / out_name


# ---- results equal the CLI's -------------------------------------------------


def test_align_stack_equals_the_cli_on_the_sample_time_lapse(tmp_path):
    out = run_cli(tmp_path, "sample_timelapse.toml", "cli", "cpu")
    keys = config_keywords("sample_timelapse.toml", {"input.stack", "output.dir", "device.backend", "device.gpu"})
    r = stackalign.align_stack(stackalign.read(DROSOPHILA), backend="cpu", **keys)
    assert r.shifts_csv == (out / "shifts.csv").read_text()
    assert r.shifts.shape == (13, 2)
    assert r.aligned.dtype == np.uint8 and r.aligned.shape == (13, 512, 512)
    assert np.array_equal(r.aligned, stackalign.read(out / "aligned.tif"))
    assert r.table[0]["frame"] == 0 and r.table[6]["status"] == "reference"
    assert r.shifts[6].tolist() == [0.0, 0.0]


def test_align_stack_equals_the_cli_on_the_sample_tilt_series(tmp_path):
    out = run_cli(tmp_path, "sample_tilt_series.toml", "cli", "cpu")
    keys = config_keywords("sample_tilt_series.toml", {"input.stack", "output.dir", "device.backend", "device.gpu"})
    stack = stackalign.read(REPO / "sample_data/haadf_tilt_91x64x64.tif")
    r = stackalign.align_stack(stack, backend="cpu", **keys)
    assert r.shifts_csv == (out / "shifts.csv").read_text()


def test_match_landmarks_equals_the_cli_on_the_sample_brains(tmp_path):
    out = run_cli(tmp_path, "sample_landmarks.toml", "cli", "cpu")
    keys = config_keywords("sample_landmarks.toml",
                           {"landmarks.source", "landmarks.target", "landmarks.points", "output.dir", "device.backend",
                            "device.gpu"})
    rows = [line.split(",") for line in LANDMARKS.read_text().splitlines()[1:]]
    points = np.array([[float(v) for v in row[1:4]] for row in rows])
    r = stackalign.match_landmarks(stackalign.read(FISH_PRE), stackalign.read(FISH_POST), points,
                                   names=[row[0] for row in rows], backend="cpu", **keys)
    assert r.matches_csv == (out / "matches.csv").read_text()
    assert r.matches.shape == (24, 3) and r.fit.shape == (3, 4) and r.fitted.shape == (24, 3)


def test_run_equals_the_cli_on_a_sample_config(tmp_path):
    out = run_cli(tmp_path, "sample_tilt_series.toml", "cli", "cpu")
    copy = config_copy(tmp_path, "sample_tilt_series.toml", "module", "auto")
    try:
        rows = stackalign.run(copy, backend="cpu")
    finally:
        copy.unlink()
    assert [(r["status"], r["items"], r["exit_code"]) for r in rows] == [("ok", 91, 0)]
    assert "cpu" in rows[0]["backend"] and rows[0]["output"] == str(tmp_path / "module")
    for name in ("shifts.csv", "transforms.xf"):
        assert (tmp_path / "module" / name).read_text() == (out / name).read_text()
    assert (tmp_path / "module/aligned.tif").read_bytes() == (out / "aligned.tif").read_bytes()
    # The session's memory high-water mark is the caller's: left alone, and run.json says whose peak it gives.
    assert json.loads((tmp_path / "module/run.json").read_text())["peak_memory_of"] == "process"


def test_run_a_batch_keeps_going_past_a_failed_job_and_says_why(tmp_path):
    (tmp_path / "not_a_tiff.tif").write_text("not an image\n")
    jobs = (f'[[job]]\noutput = {{dir = "{tmp_path / "b1"}"}}\n'
            f'[[job]]\ninput = {{stack = "{tmp_path / "not_a_tiff.tif"}"}}\noutput = {{dir = "{tmp_path / "b2"}"}}\n')
    copy = config_copy(tmp_path, "sample_tilt_series.toml", "batch", "cpu", jobs)
    try:
        rows = stackalign.run(copy)
        again = stackalign.run(copy, resume=True)
    finally:
        copy.unlink()
    assert [r["status"] for r in rows] == ["ok", "failed"]
    assert "not_a_tiff.tif" in rows[1]["error"] and rows[1]["exit_code"] != 0
    assert (tmp_path / "b1/shifts.csv").exists() and not (tmp_path / "b2/shifts.csv").exists()
    assert (tmp_path / "batch/batch.json").exists()
    assert [r["status"] for r in again] == ["skipped (up to date)", "failed"]


def test_run_errors_name_the_file_and_key(tmp_path):
    with pytest.raises(ValueError, match="missing.toml"):
        stackalign.run(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text('[input]\nstack = "x.tif"\n[search]\nmax_shfit = 4\n')
    with pytest.raises(ValueError, match=r"bad\.toml.*max_shfit.*max_shift"):
        stackalign.run(bad)
    with pytest.raises(ValueError, match="backend 'gpu'"):
        stackalign.run(bad, backend="gpu")


def test_run_charges_a_session_s_kth_job_the_gpu_start_over_k(tmp_path):
    """A fresh session whose jobs went to the CPU weighs the GPU's start over the jobs it has run (ski rental)."""
    copy = config_copy(tmp_path, "sample_tilt_series.toml", "k", "auto")
    # Searched coarse to fine, the 64^2 sample's CPU estimate stays under the GPU's at every charge.
    text = copy.read_text()
    assert "\nmax_shift = 12" in text
    copy.write_text(text.replace("\nmax_shift = 12", "\ncoarse_to_fine = true\nmax_shift = 12", 1))
    script = ("import json, sys, stackalign\n"
              "for _ in range(3):\n"
              "    stackalign.run(sys.argv[1])\n"
              "    print(json.load(open(sys.argv[2]))['plan']['backend_choice']['cuda_start_seconds'])\n")
    try:
        out = subprocess.run([sys.executable, "-c", script, str(copy), str(tmp_path / "k/run.json")], check=True,
                             capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    finally:
        copy.unlink()
    charged = [float(x) for x in out.stdout.split()]
    # The 64^2 sample, searched coarse to fine, stays on the CPU whatever the charge (estimated 0.22 s on
    # 2 threads against the GPU's 0.72 with no start; scoring every shift, 0.31 against 0.18: a GPU is
    # looked for from the second job), so no context is ever made.
    assert charged == pytest.approx([0.2, 0.1, 0.2 / 3])


def test_run_on_a_gpu_machine_charges_no_gpu_start_after_the_first_gpu_job(tmp_path):
    """A session's later jobs find the GPU's context made: `auto` weighs them without its start."""
    first = config_copy(tmp_path, "sample_tilt_series.toml", "first", "cuda")
    later = config_copy(tmp_path, "sample_timelapse.toml", "later", "auto")
    try:
        try:
            stackalign.run(first)
        except RuntimeError:
            pytest.skip("no GPU")
        stackalign.run(later)
    finally:
        first.unlink()
        later.unlink()
    choice = json.loads((tmp_path / "later/run.json").read_text())["plan"]["backend_choice"]
    assert choice["cuda_start_seconds"] == 0


# ---- errors: the CLI's messages, Python's exception types ---------------------


def small_stack(dtype=np.uint16):
    frames = stackalign.read(DROSOPHILA)[:3, 100:228, 100:228]
    return frames.astype(dtype)


def test_a_2d_array_is_a_value_error():
    with pytest.raises(ValueError, match=r"stack: expected a 3D array \(frames, rows, cols\), got a 2D array of shape \(128, 128\)"):
        stackalign.align_stack(small_stack()[0])


def test_an_unsupported_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="dtype float64 is not supported; expected uint8, uint16, int16, int32 or float32"):
        stackalign.align_stack(small_stack(np.float64))


def test_an_unknown_keyword_names_the_nearest_valid_one():
    with pytest.raises(ValueError, match="unknown keyword 'max_shfit'; did you mean 'max_shift'"):
        stackalign.align_stack(small_stack(), max_shfit=4)


def test_a_keyword_of_the_other_mode_is_unknown():
    with pytest.raises(ValueError, match="unknown keyword 'voxel_size'"):
        stackalign.align_stack(small_stack(), voxel_size=[1, 1, 1])


def test_a_bad_value_gets_the_cli_message_without_the_temporary_file():
    with pytest.raises(ValueError) as e:
        stackalign.align_stack(small_stack(), max_shift=-3)
    assert str(e.value).startswith("[search] max_shift:")
    with pytest.raises(ValueError, match=r'\[search\] metric: .*"mutual"'):
        stackalign.align_stack(small_stack(), metric="mutual")


def test_too_few_frames_is_the_cli_error():
    with pytest.raises(ValueError, match="alignment needs at least 2 frames"):
        stackalign.align_stack(small_stack()[:1])


def test_a_key_the_module_sets_is_refused():
    with pytest.raises(ValueError, match="glob: set by the module"):
        stackalign.align_stack(small_stack(), glob="*.tif")


def test_cuda_without_a_gpu_is_a_runtime_error_not_a_bad_value():
    try:
        r = stackalign.align_stack(small_stack(), backend="cuda", max_shift=4)
    except RuntimeError as e:
        assert "cuda" in str(e).lower() or "gpu" in str(e).lower()
    else:
        assert "cuda" in r.backend  # a machine with a GPU ("2 searchers on 1 GPU, ...; GPU 0: cuda (...)")


def test_landmark_errors():
    volume = stackalign.read(FISH_PRE)
    with pytest.raises(ValueError, match=r"points: expected an \(N, 3\) array"):
        stackalign.match_landmarks(volume, volume, np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"points: expected an \(N, 3\) array of x, y, z with N >= 1, got no points"):
        stackalign.match_landmarks(volume, volume, np.zeros((0, 3)))
    with pytest.raises(ValueError, match="points: row 1 has a coordinate that is not a finite number"):
        stackalign.match_landmarks(volume, volume, np.array([[60.0, 40, 20], [100, np.nan, 20]]))
    with pytest.raises(ValueError, match="rigid fit: needs at least 3 matched points, got 2"):
        stackalign.match_landmarks(volume, volume, np.array([[60.0, 40, 20], [100, 40, 20]]), fit="rigid")


def test_landmark_inputs_stay_in_memory_and_name_their_points(tmp_path):
    volume = stackalign.read(FISH_PRE)
    points = np.array([[60.0, 40, 20], [100, 40, 20], [80, 30, 25]])
    r = stackalign.match_landmarks(volume, volume, points, names=["a,b", "", "c"], backend="cpu",
                                   dir=str(tmp_path / "kept"))
    # An empty name is a points file's unnamed point; a comma survives the table.
    assert [row["name"] for row in r.table] == ["a,b", "Pt-1", "c"]
    assert np.allclose(r.matches, points, atol=0.05)  # the volume against itself, within the refinement's 0.03 voxel
    assert (tmp_path / "kept/matches.csv").read_text() == r.matches_csv
    record = json.loads((tmp_path / "kept/run.json").read_text())
    assert record["input"]["in_memory"] is True and record["input"]["points"] == 3


def test_read_names_a_missing_file(tmp_path):
    with pytest.raises(ValueError, match="missing.tif"):
        stackalign.read(tmp_path / "missing.tif")


# ---- dtypes, angles, progress, the GIL ------------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int16, np.int32, np.float32])
def test_tiff_round_trips_every_dtype(tmp_path, dtype):
    a = (np.arange(3 * 5 * 7) - 20).reshape(3, 5, 7).astype(dtype)
    stackalign.write(tmp_path / "a.tif", a)
    b = stackalign.read(tmp_path / "a.tif")
    assert b.dtype == a.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int16, np.float32])
def test_mrc_round_trips_its_dtypes(tmp_path, dtype):
    a = (np.arange(3 * 5 * 7) + 3).reshape(3, 5, 7).astype(dtype)
    stackalign.write(tmp_path / "a.mrc", a)
    b = stackalign.read(tmp_path / "a.mrc")
    assert b.dtype == a.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
def test_the_aligned_stack_keeps_the_dtype(dtype):
    r = stackalign.align_stack(small_stack(dtype), backend="cpu", max_shift=4, subpixel=False)
    assert r.aligned.dtype == np.dtype(dtype) and r.aligned.shape == (3, 128, 128)


def test_tilt_angles_as_numbers_equal_the_angle_file(tmp_path):
    stack = stackalign.read(REPO / "sample_data/haadf_tilt_91x64x64.tif")[40:50]
    angles = [float(v) for v in (REPO / "sample_data/haadf_tilt_91x64x64.tlt").read_text().split()][40:50]
    (tmp_path / "a.tlt").write_text("".join(f"{a!r}\n" for a in angles))
    from_numbers = stackalign.align_stack(stack, backend="cpu", angles=angles, max_shift=6)
    from_file = stackalign.align_stack(stack, backend="cpu", angles=str(tmp_path / "a.tlt"), max_shift=6)
    assert from_numbers.shifts_csv == from_file.shifts_csv
    assert from_numbers.table[0]["tilt"] == angles[0]


def test_progress_is_reported():
    calls = []
    stackalign.align_stack(small_stack(), backend="cpu", max_shift=4, progress=lambda *a: calls.append(a))
    assert calls and calls[-1][0] == "pairs" and calls[-1][1] == calls[-1][2]


def test_the_gil_is_released_while_aligning():
    done = threading.Event()
    ticks = 0

    def run():
        try:
            stackalign.align_stack(stackalign.read(DROSOPHILA)[:6], backend="cpu", max_shift=16)
        finally:
            done.set()  # also when it fails: the loop below must end

    t = threading.Thread(target=run)
    t.start()
    while not done.is_set():
        ticks += 1
    t.join()
    assert ticks > 1000  # the main thread ran Python code during the whole run


def test_outputs_are_kept_where_dir_says(tmp_path):
    r = stackalign.align_stack(small_stack(), backend="cpu", max_shift=4, dir=str(tmp_path / "kept"))
    assert r.output_dir == str(tmp_path / "kept")
    assert (tmp_path / "kept/shifts.csv").read_text() == r.shifts_csv
    # The array went in and came back in memory; the kept file holds the same frames.
    assert np.array_equal(stackalign.read(tmp_path / "kept/aligned.tif"), r.aligned)
    record = json.loads((tmp_path / "kept/run.json").read_text())
    assert record["input"]["in_memory"] is True and record["input"]["frames"] == 3


def test_no_aligned_stack_where_aligned_is_false(tmp_path):
    r = stackalign.align_stack(small_stack(), backend="cpu", max_shift=4, aligned=False, dir=str(tmp_path / "kept"))
    assert r.aligned is None and not (tmp_path / "kept/aligned.tif").exists()
    assert r.shifts.shape == (3, 2)


def test_frames_without_pixels_are_a_value_error():
    with pytest.raises(ValueError, match=r"stack: expected frames of at least 1 x 1 pixels, got shape \(3, 0, 5\)"):
        stackalign.align_stack(np.zeros((3, 0, 5), np.float32))


def test_ctrl_c_stops_a_run_with_keyboard_interrupt():
    import signal

    stack = stackalign.read(DROSOPHILA)

    def press_ctrl_c(what, done, total):  # after the first pair, wherever the machine's speed
        if done == 1:
            os.kill(os.getpid(), signal.SIGINT)

    # Whatever handler the process had before (Python's own, or SIG_IGN in a
    # process started in the background without job control) is put back.
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        stackalign.align_stack(stack, backend="cpu", max_shift=16, progress=press_ctrl_c)
    # The handler is back, and the next run is not interrupted.
    assert signal.getsignal(signal.SIGINT) is before
    assert stackalign.align_stack(stack[:3, :128, :128], backend="cpu", max_shift=4).shifts.shape == (3, 2)


def test_jobs_from_two_threads_both_finish_with_their_own_results():
    stack = small_stack()
    results = {}

    def run(name, shift):
        results[name] = stackalign.align_stack(stack, backend="cpu", max_shift=shift, subpixel=False)

    threads = [threading.Thread(target=run, args=(n, s)) for n, s in (("a", 4), ("b", 6))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    alone = stackalign.align_stack(stack, backend="cpu", max_shift=6, subpixel=False)
    assert results["b"].shifts_csv == alone.shifts_csv
    assert results["a"].shifts.shape == (3, 2)


def test_rigid_alignment_returns_the_transforms_and_angles():
    # A real frame and the same frame turned by 2 degrees about its centre
    # (bilinear, in numpy), cut to the middle.
    base = stackalign.read(REPO / "sample_data/drosophila_embryo_13x512x512.tif")[6].astype(np.float32)
    h, w = base.shape
    a = np.radians(2.0)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    cx, cy = (w - 1) / 2, (h - 1) / 2
    # frame 1 at X shows frame 0's content at R^-1 (X - c) + c (bilinear).
    sx = np.cos(a) * (xx - cx) + np.sin(a) * (yy - cy) + cx
    sy = -np.sin(a) * (xx - cx) + np.cos(a) * (yy - cy) + cy
    x0, y0 = np.clip(np.floor(sx).astype(int), 0, w - 2), np.clip(np.floor(sy).astype(int), 0, h - 2)
    fx, fy = np.clip(sx - x0, 0, 1), np.clip(sy - y0, 0, 1)
    turned = ((1 - fy) * ((1 - fx) * base[y0, x0] + fx * base[y0, x0 + 1]) +
              fy * ((1 - fx) * base[y0 + 1, x0] + fx * base[y0 + 1, x0 + 1]))
    stack = np.stack([base, turned.astype(np.float32)])[:, 128:384, 128:384]
    r = stackalign.align_stack(stack, backend="cpu", transform="rigid", max_shift=8, reference=0, aligned=False)
    assert r.transforms.shape == (2, 2, 3)
    assert abs(r.angles[1] - 2.0) < 0.05
    np.testing.assert_allclose(r.transforms[0], [[1, 0, 0], [0, 1, 0]], atol=1e-12)
    assert abs(np.degrees(np.arctan2(r.transforms[1, 1, 0], r.transforms[1, 0, 0])) - r.angles[1]) < 1e-9
    assert "angle" in r.table[1]
