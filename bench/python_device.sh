#!/usr/bin/env bash
# On the GPU machine (issue #20): the Python module built against that
# machine's own Python and its pybind11 (3.x there; the DEPS prefix's 2.10
# is for Python 3.11 and stops the build on 3.12), the sample
# configs aligned on the GPU by the module and by the CLI, compared as text,
# then the pytest suite if that Python has pytest.
# Usage there: bash bench/python_device.sh   (expects .deps; logs to $OUT)
source bench/device_env.sh
py=$(command -v python3)
"$py" --version
device_build PYTHON="$py" build/stackalign python
build/stackalign run -q --backend cuda configs/sample_timelapse.toml
build/stackalign run -q --backend cuda configs/sample_landmarks.toml
PYTHONPATH=build/python "$py" - <<'PY'
import tomllib, time
from pathlib import Path
import numpy as np
import stackalign

def keywords(name, skip):
    doc = tomllib.loads(Path("configs", name).read_text())
    return {k: v for s, t in doc.items() if isinstance(t, dict) for k, v in t.items() if f"{s}.{k}" not in skip}

skip = {"input.stack", "output.dir", "device.backend", "device.gpu", "landmarks.source", "landmarks.target", "landmarks.points"}
stack = stackalign.read("sample_data/drosophila_embryo_13x512x512.tif")
t = time.perf_counter()
r = stackalign.align_stack(stack, backend="cuda", **keywords("sample_timelapse.toml", skip))
print("module, cuda: %.3f s, %s" % (time.perf_counter() - t, r.backend))
print("time-lapse shifts.csv equal to the CLI's on cuda:", r.shifts_csv == Path("out/sample_timelapse/shifts.csv").read_text())
rows = [l.split(",") for l in Path("sample_data/fish1_pre_landmarks.csv").read_text().splitlines()[1:]]
pts = np.array([[float(v) for v in row[1:4]] for row in rows])
m = stackalign.match_landmarks(stackalign.read("sample_data/fish1_pre_anatomy_41x83x166.tif"),
                               stackalign.read("sample_data/fish1_post_anatomy_41x83x166.tif"), pts,
                               names=[row[0] for row in rows], backend="cuda", **keywords("sample_landmarks.toml", skip))
print("landmark matches.csv equal to the CLI's on cuda:", m.matches_csv == Path("out/sample_landmarks/matches.csv").read_text())
PY
if "$py" -c "import pytest" 2>/dev/null; then
  PYTHONPATH=build/python STACKALIGN_CLI=build/stackalign "$py" -m pytest -q -p no:cacheprovider python/tests 2>&1 | tail -3
else
  echo "no pytest in this Python: the suite ran on the CPU machine only"
fi
