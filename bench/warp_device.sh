#!/usr/bin/env bash
# On the GPU machine: stretched and turned views resampled on the GPU
# (src/alignment/frame_warp.hpp), timed against another build side by side:
# the tilt series job of `bench stages` (121 x 512x512, stretch) and the
# rigid job (121 x 1024x1024 float32, +-10 deg, +-24 px), each run twice per
# build, alternating; and whether the outputs are the same.
# Usage there: OLD=<other build's stackalign> bash bench/warp_device.sh
# (expects .deps and both builds made).
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:$PWD/.deps/usr/lib:${LD_LIBRARY_PATH:-}
OLD=${OLD:?set OLD to the stackalign binary of the other build}
echo "== tilt series, this build"
build/bench stages tilt 2>&1 | grep -E "^\|"
cmp -s build/bench-stages/out_tilt_cuda/shifts.csv build/bench-stages/out_tilt_cpu/shifts.csv &&
  echo "tilt: cuda == cpu shifts.csv" || echo "tilt: cuda DIFFERS from cpu"
cp build/bench-stages/out_tilt_cuda/shifts.csv /tmp/tilt_new.csv
echo "== tilt series, $OLD"
STACKALIGN=$OLD build/bench stages tilt 2>&1 | grep -E "^\|" | grep -v "^| job\|^|---"
cmp -s /tmp/tilt_new.csv build/bench-stages/out_tilt_cuda/shifts.csv &&
  echo "tilt cuda: shifts.csv the same in both builds" || echo "tilt cuda: shifts.csv DIFFERS between the builds"

echo "== rigid, 121 x 1024x1024"
work=build/rigid-speed
mkdir -p $work
[ -f "$work/series.mrc" ] || python3 bench/rigid_series.py "$work/series.mrc"
python3 - "$work" <<'PY'
import sys
from pathlib import Path
work = Path(sys.argv[1])
for tag in ("new", "old"):
    (work / f"{tag}.toml").write_text(
        f"[input]\nstack = \"series.mrc\"\n[search]\nmax_shift = 24\ntransform = \"rigid\"\n"
        f"[output]\ndir = \"out_{tag}\"\nreport = false\n[device]\nbackend = \"cuda\"\n")
PY
build/stackalign run -q $work/new.toml  # warm the GPU and the page cache
for r in 1 2; do
  for tag in new old; do
    bin=build/stackalign; [ $tag = old ] && bin=$OLD
    TIMEFORMAT="rigid, $tag build, run $r: %R s wall"; time $bin run -q $work/$tag.toml
    python3 -c "import json; s=json.load(open('$work/out_$tag/run.json'))['seconds']; print('   ', ', '.join('%s %.3f' % (k, v) for k, v in s.items() if v))"
  done
done
cmp -s $work/out_new/shifts.csv $work/out_old/shifts.csv &&
  echo "rigid: shifts.csv the same in both builds" || echo "rigid: shifts.csv DIFFERS between the builds"
