#!/usr/bin/env python3
"""Result files of a fixed set of jobs, for checking that a change of
structure changes no result, byte for byte.

    python3 bench/golden_outputs.py run OLD_BINARY /tmp/before [--backend cpu]
    python3 bench/golden_outputs.py run build/stackalign /tmp/after [--backend cpu]
    python3 bench/golden_outputs.py diff /tmp/before /tmp/after

The jobs: the sample configs and variants of them (every metric, the sampled
histogram, MTB, stretching with excluded views and interpolation, MRC output,
a fixed window origin, landmarks with voxel size and a rigid fit, a batch),
plus the real data in ../shared/data used differently (a zebrafish volume's
slices aligned as a stack, the tilt series with its angle file). run.json is
reduced to its results (timings, versions and the config echo may change);
report.html is left out (its backend line holds auto-tuning times)."""
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(HERE, "sample_data")
SHARED = os.path.normpath(os.path.join(HERE, "..", "shared", "data"))


def with_keys(base, edits):
    """The sample config `base` with absolute paths and `edits`
    {section: {key: toml value or None to delete}} applied."""
    text = open(os.path.join(HERE, "configs", base + ".toml")).read()
    text = text.replace('"../sample_data/', '"' + SAMPLE + "/")
    lines, section, out = text.split("\n"), "", []
    for line in lines:
        m = re.match(r"^\[(\w+)\]", line)
        if m:
            section = m.group(1)
        if section in edits and edits[section] is None:
            continue  # the whole section dropped
        key = re.match(r"^(\w+)\s*=", line)
        if key and section in edits and key.group(1) in edits[section]:
            continue
        out.append(line)
        if m and section in edits:
            out += [f"{k} = {v}" for k, v in edits[section].items() if v is not None]
    text = "\n".join(out)
    for section, keys in edits.items():
        if keys and not re.search(r"^\[" + section + r"\]", text, re.M):
            text += f"\n[{section}]\n" + "".join(f"{k} = {v}\n" for k, v in keys.items() if v is not None)
    return text


def jobs():
    j = {
        "tilt": with_keys("sample_tilt_series", {}),
        "tilt_stretch": with_keys("sample_tilt_series", {
            "alignment": {"cosine_stretch": "true", "tilt_axis": "5.0", "exclude": "[10, 11]",
                          "on_outlier": '"interpolate"', "min_sharpness": "6.0"},
            "output": {"format": '"mrc"'}}),
        "tilt_fixed_window": with_keys("sample_tilt_series", {
            "search": {"subpixel": "false", "window": "[36, 36]", "window_origin": "[14, 13]"}, "alignment": {"reference": "30"}}),
        "timelapse": with_keys("sample_timelapse", {}),
        "timelapse_nmi": with_keys("sample_timelapse", {"search": {"metric": '"nmi"'}}),
        "timelapse_ncc": with_keys("sample_timelapse", {"search": {"metric": '"ncc"'}}),
        "timelapse_cr": with_keys("sample_timelapse", {"search": {"metric": '"cr"', "histogram": '"presorted"'}}),
        "timelapse_sampled": with_keys("sample_timelapse", {
            "search": {"histogram": '"bin-partitioned-sampled"'},
            "preprocess": {"bins": "32", "sobel": "false", "mean_radius": "0"}}),
        "timelapse_mtb": with_keys("sample_timelapse", {
            "search": {"method": '"mtb-projection"', "histogram": None, "mtb_band": "6"}, "preprocess": None}),
        "landmarks": with_keys("sample_landmarks", {}),
        "landmarks_rigid": with_keys("sample_landmarks", {
            "landmarks": {"voxel_size": "[2.0, 2.0, 4.0]", "subpixel": "false"}, "output": {"fit": '"rigid"'}}),
    }
    if os.path.isdir(SHARED):
        j["shared_zebrafish_slices"] = (
            f'[input]\nstack = "{SHARED}/zebrafish_brains/fish1_pre_anatomy_41x83x166.tif"\n'
            "[preprocess]\nthreshold = 10.0\nbins = 32\n[search]\nmax_shift = 6\n"
            '[alignment]\nreference = 20\non_outlier = "interpolate"\n[output]\nformat = "tiff"\n')
        j["shared_tilt_angles_txt"] = with_keys("sample_tilt_series", {
            "input": {"stack": f'"{SHARED}/tilt_haadf/haadf_tilt_91x64x64.tif"',
                      "angles": f'"{SHARED}/tilt_haadf/haadf_tilt_angles.txt"'},
            "alignment": {"cosine_stretch": "true"}})
    return j


BATCH = """[preprocess]
bins = 32
[search]
max_shift = 10
window = [40, 40]
[[job]]
name = "first"
input = {{stack = "{s}/haadf_tilt_91x64x64.tif"}}
output = {{dir = "{o}/a"}}
[[job]]
name = "second"
input = {{stack = "{s}/haadf_tilt_91x64x64.tif", angles = {{start = -90, step = 2}}}}
alignment = {{exclude = [0, 1]}}
output = {{dir = "{o}/b", aligned = false}}
"""


def keep(src, dst):
    os.makedirs(dst, exist_ok=True)
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        if os.path.isdir(path):
            keep(path, os.path.join(dst, name))
        elif name == "report.html":
            continue
        elif name.endswith(".json"):
            j = json.load(open(path))
            results = {k: j[k] for k in ("pairs", "points", "fit", "jobs") if k in j}
            for job in results.get("jobs", []):
                for k in ("seconds", "backend", "output"):
                    job.pop(k, None)
            json.dump(results, open(os.path.join(dst, name + ".results"), "w"), indent=1, sort_keys=True)
        else:
            shutil.copy(path, dst)


def run(binary, root, backend):
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, "configs"))
    all_jobs = jobs()
    all_jobs["batch"] = None
    for name, text in all_jobs.items():
        work = os.path.join(root, "work", name)
        if text is None:
            text = BATCH.format(s=SAMPLE, o=work)
        else:
            text = re.sub(r'^dir = .*$', "", text, flags=re.M)
            text = re.sub(r"^\[output\]", f'[output]\ndir = "{work}"', text, flags=re.M)
            if "[output]" not in text:
                text += f'\n[output]\ndir = "{work}"\n'
        cfg = os.path.join(root, "configs", name + ".toml")
        open(cfg, "w").write(text)
        rc = subprocess.run([binary, "run", "-q", "--backend", backend, cfg]).returncode
        if rc:
            sys.exit(f"job {name} failed with exit code {rc} ({cfg})")
        keep(work, os.path.join(root, "results", name))
    count = sum(len(f) for _, _, f in os.walk(os.path.join(root, "results")))
    print(f"{len(all_jobs)} jobs, {count} result files of {binary} ({backend}) in {root}/results")


def json_differences(a, b, path=""):
    """(field path, largest relative difference) of two JSON values."""
    out = {}
    if isinstance(a, dict) and isinstance(b, dict):
        for k in set(a) | set(b):
            for f, d in json_differences(a.get(k), b.get(k), path + "." + k).items():
                out[f] = max(out.get(f, 0), d)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for x, y in zip(a, b):
            for f, d in json_differences(x, y, path + "[]").items():
                out[f] = max(out.get(f, 0), d)
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        if a != b:
            out[path] = abs(a - b) / max(abs(a), abs(b), 1e-300)
    elif a != b:
        out[path] = float("inf")
    return out


def diff(before, after):
    bad = 0
    files = sorted(os.path.relpath(os.path.join(d, f), before)
                   for d, _, fs in os.walk(os.path.join(before, "results")) for f in fs)
    for f in files:
        a, b = os.path.join(before, f), os.path.join(after, f)
        if not os.path.exists(b) or open(a, "rb").read() != open(b, "rb").read():
            detail = ""
            if f.endswith(".results") and os.path.exists(b):
                fields = json_differences(json.load(open(a)), json.load(open(b)))
                detail = "; ".join(f"{k} (relative {v:.1e})" for k, v in sorted(fields.items()))
            print("DIFFERS:", f, detail)
            bad += 1
    print(f"{len(files) - bad} of {len(files)} result files identical")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "run":
        backend = sys.argv[sys.argv.index("--backend") + 1] if "--backend" in sys.argv else "cpu"
        run(os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3]), backend)
    elif len(sys.argv) == 4 and sys.argv[1] == "diff":
        sys.exit(diff(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
