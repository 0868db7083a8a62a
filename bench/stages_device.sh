#!/usr/bin/env bash
# Issue #19 on the GPU machine: build (sm_90), the GPU tests and
# compute-sanitizer over the twins this work touches, then `bench stages`
# (every job shape on cuda, cpu and auto) and whether each job's shifts.csv
# is the same on both backends. Logs to $OUT.
# Usage there: bash bench/stages_device.sh   (expects the .deps prefix; TESTS=0 skips the tests)
source bench/device_env.sh
device_build build/stackalign build/bench build/tests
if [ "${TESTS:-1}" = 1 ]; then
  echo "== tests"; build/tests >"$OUT/tests.log" 2>&1; grep -E "ERROR|FAILED" "$OUT/tests.log" | head -20; tail -2 "$OUT/tests.log"
  echo "== memcheck"
  timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 build/tests -tc='refine: CUDA*,mi search: CUDA*,mi search: a range*,landmarks: refine = "global" on the CUDA*' >"$OUT/memcheck.log" 2>&1
  echo "memcheck rc=$?"; tail -2 "$OUT/memcheck.log"
  echo "== racecheck"
  timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 build/tests -tc='refine: CUDA*,mi search: CUDA histograms*' >"$OUT/racecheck.log" 2>&1
  echo "racecheck rc=$?"; tail -2 "$OUT/racecheck.log"
fi
echo "== stages"
build/bench stages ${STAGES_ARGS:-} 2>&1 | tee "$OUT/stages.md" | grep -vE "^\s*$"
for cuda in build/bench-stages/out_*_cuda; do
  cpu=${cuda%_cuda}_cpu
  [ -f "$cuda/shifts.csv" ] && { cmp -s "$cuda/shifts.csv" "$cpu/shifts.csv" && echo "$(basename "$cuda"): shifts.csv identical on cpu" || echo "$(basename "$cuda"): shifts.csv DIFFERS from cpu"; }
done
for config in sample_tilt_series sample_timelapse; do
  build/stackalign run -q --backend cuda configs/$config.toml && cp out/$config/shifts.csv /tmp/$config.cuda.csv
  build/stackalign run -q --backend cpu configs/$config.toml
  cmp -s /tmp/$config.cuda.csv out/$config/shifts.csv && echo "$config: shifts.csv identical on cuda and cpu" || echo "$config: shifts.csv DIFFERS"
done
