#!/usr/bin/env bash
# On the GPU machine: `[search] refine_metric = "ncc"` (NCC's fixed-point
# pixel moments, kernels/refine/pair_moments.hpp). Build, every test,
# compute-sanitizer over the twin tests that run the moment kernels
# (translation and rigid), the rigid peers benchmark with both backends and
# both refinement metrics, the rigid job of 121 x 1024x1024 on the GPU with
# the least-squares solve and chained, then `make compare`'s GPU table
# (docs/benchmarks.md copied to $OUT, as this machine's working tree does not
# come back).
# Usage there: bash bench/ncc_device.sh   (expects .deps; logs to $OUT;
# TESTS=pattern runs those tests only; COMPARE=0 leaves make compare out,
# SPEED=0 the rigid job, PEERS=0 the peers)
source bench/device_env.sh
device_build build/stackalign build/tests
exec > >(tee "$OUT/progress.log") 2>&1
echo "== tests"; build/tests ${TESTS:+-tc="$TESTS"} 2>&1 | tee "$OUT/tests.log" | tail -2
grep -E "FAILED|ERROR" -A3 "$OUT/tests.log" | head -20
twins='refine: CUDA Parzen*,motion: the CUDA*'
echo "== memcheck ($twins)"
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 build/tests -tc="$twins" >"$OUT/memcheck.log" 2>&1
echo "memcheck rc=$?"; tail -2 "$OUT/memcheck.log"
echo "== racecheck (refine: CUDA Parzen*)"
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 build/tests -tc='refine: CUDA Parzen*' >"$OUT/racecheck.log" 2>&1
echo "racecheck rc=$?"; tail -2 "$OUT/racecheck.log"

if [ "${PEERS:-1}" != 0 ]; then
  echo "== rigid peers (ECC; elastix is not on this machine), both backends, MI and NCC refinement"
  python3 bench/rigid_peers.py --cuda --pystackreg /nonexistent 2>&1 | tail -20
fi

if [ "${SPEED:-1}" != 0 ]; then
  echo "== rigid job, 121 x 1024x1024 float32, +-10 deg, +-24 px, cuda: least squares and chained"
  work=build/rigid-speed
  mkdir -p $work
  python3 bench/rigid_series.py "$work/series.mrc"
  python3 - "$work" <<'PY'
import sys
from pathlib import Path
work = Path(sys.argv[1])
for solve in ("least-squares", "chain"):
    (work / f"{solve}.toml").write_text(
        f"[input]\nstack = \"series.mrc\"\n[search]\nmax_shift = 24\ntransform = \"rigid\"\n[alignment]\nsolve = \"{solve}\"\n"
        f"[output]\ndir = \"out_{solve}\"\nreport = false\n[device]\nbackend = \"cuda\"\n")
PY
  build/stackalign run -q $work/chain.toml  # warm the GPU and the page cache
  for solve in least-squares chain; do
    TIMEFORMAT="cuda rigid $solve: %R s wall"; time build/stackalign run -q $work/$solve.toml
    python3 -c "import json; j=json.load(open('$work/out_$solve/run.json')); s=j['seconds']; print('   ', ', '.join('%s %.3f' % (k, v) for k, v in s.items()))"
  done
fi

if [ "${COMPARE:-1}" != 0 ]; then
  echo "== make compare (GPU table)"
  COMPARE_NO_INSTALL=1 python3 bench/compare >"$OUT/compare.log" 2>&1; echo "compare rc=$?"
  tail -25 "$OUT/compare.log"
  cp docs/benchmarks.md "$OUT/benchmarks.md"
fi
