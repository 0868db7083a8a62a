#!/usr/bin/env bash
# On the GPU machine (issue #17): build, every test, compute-sanitizer
# (memcheck, racecheck) over the rigid search's GPU twin test, the rigid
# search of a 121 x 1024x1024 series (+-10 deg, +-24 px) end to end on both
# backends, the peers benchmark with the CUDA backend, and tilt_axis = "auto"
# on the sample tilt series.
# Usage there: bash bench/rigid_device.sh   (expects .deps; logs to $OUT;
# TESTS=pattern runs those tests only, SKIP_CPU=1 times the CUDA backend only)
source bench/device_env.sh
device_build build/stackalign build/tests
exec > >(tee "$OUT/progress.log") 2>&1
echo "== tests"; build/tests ${TESTS:+-tc="$TESTS"} 2>&1 | tee "$OUT/tests.log" | tail -2
grep -E "FAILED|ERROR" -A3 "$OUT/tests.log" | head -20
echo "== memcheck (rigid / similarity GPU twin)"
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 build/tests -tc='motion: the CUDA*' >"$OUT/memcheck.log" 2>&1
echo "memcheck rc=$?"; tail -2 "$OUT/memcheck.log"
echo "== racecheck (rigid / similarity GPU twin)"
timeout 240 compute-sanitizer --tool racecheck --error-exitcode 9 build/tests -tc='motion: the CUDA*' >"$OUT/racecheck.log" 2>&1
echo "racecheck rc=$?"; tail -2 "$OUT/racecheck.log"

echo "== rigid search, 121 x 1024x1024 float32, +-10 deg, +-24 px"
work=build/rigid-speed
mkdir -p $work
python3 bench/rigid_series.py "$work/series.mrc"
python3 - "$work" <<'PY'
import sys
from pathlib import Path
work = Path(sys.argv[1])
for backend in ("cuda", "cpu"):
    for transform in ("rigid", "translation"):
        (work / f"{backend}_{transform}.toml").write_text(
            f"[input]\nstack = \"series.mrc\"\n[search]\nmax_shift = 24\ntransform = \"{transform}\"\n"
            f"[output]\ndir = \"out_{backend}_{transform}\"\nreport = false\n[device]\nbackend = \"{backend}\"\n")
PY
backends="cuda cpu"; [ -n "${SKIP_CPU:-}" ] && backends=cuda
for b in $backends; do
  for t in rigid translation; do
    [ $b = cuda ] && build/stackalign run -q $work/${b}_$t.toml  # warm the GPU and the page cache
    TIMEFORMAT="$b $t: %R s wall"; time build/stackalign run -q $work/${b}_$t.toml
    python3 -c "import json; j=json.load(open('$work/out_${b}_$t/run.json')); s=j['seconds']; print('   ', ', '.join('%s %.3f' % (k, v) for k, v in s.items()))"
  done
done
[ -z "${SKIP_CPU:-}" ] && cmp <(cut -d, -f1-5 $work/out_cuda_rigid/shifts.csv) <(cut -d, -f1-5 $work/out_cpu_rigid/shifts.csv) && echo "rigid shifts.csv (frame,dx,dy,angle,scale) identical on cuda and cpu"

echo "== peers (ECC; elastix is not on this machine), CUDA backend too"
python3 bench/rigid_peers.py --cuda --pystackreg /nonexistent 2>&1 | tail -8

echo "== tilt_axis = \"auto\" on the sample tilt series"
sed 's|^tilt_axis = 0.0 |tilt_axis = "auto"|; s|out/sample_tilt_series|out/sample_tilt_auto|' configs/sample_tilt_series.toml > configs/.tilt_auto_device.toml
build/stackalign run configs/.tilt_auto_device.toml 2>&1 | grep -E "tilt axis|done"
