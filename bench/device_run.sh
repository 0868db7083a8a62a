#!/usr/bin/env bash
# One full GPU-machine session: build (sm_90), all tests, the sample jobs on
# the GPU vs CPU, the benchmarks, then compute-sanitizer over the GPU tests.
# Usage there: bash bench/device_run.sh   (expects the .deps prefix, writes logs to $OUT)
source bench/device_env.sh
device_build build/stackalign build/tests build/bench
echo "== tests"; build/tests 2>&1 | tee "$OUT/tests.log" | tail -3
# Runs CONFIG on the GPU (verbose, so the chosen strategy shows), then on
# the CPU, and says whether OUTPUT (a file under its output dir) is identical.
compare_backends() {
  local config=$1 output=$2 name=$3
  local copy="$OUT/${name}_cuda.${output##*.}"
  echo "== $name, cuda vs cpu"
  build/stackalign run -v "$config" 2>&1 | grep -E "backend|done"
  cp "$output" "$copy"
  build/stackalign run -q --backend cpu "$config"
  cmp "$output" "$copy" && echo "$name: $(basename "$output") identical on cuda and cpu"
}
compare_backends configs/sample_tilt_series.toml out/sample_tilt_series/shifts.csv sample
echo "== bench gpu"; build/bench gpu 2>&1 | tee "$OUT/bench_gpu.md"
compare_backends configs/sample_landmarks.toml out/sample_landmarks/matches.csv landmarks
echo "== compare (no registry here: peers come from the machine's Python environment; missing ones are skipped and listed)"
COMPARE_NO_INSTALL=1 timeout 300 make compare DEPS=.deps CUDA_ARCHS=90 PYTHON=${PYTHON:-python3} >"$OUT/compare.log" 2>&1; echo "compare rc=$?"
sed -n '/<!-- compare:gpu -->/,/<!-- \/compare:gpu -->/p' docs/benchmarks.md > "$OUT/compare_gpu.md"; tail -12 "$OUT/compare_gpu.md"
echo "== bench cpu"; build/bench cpu 2>&1 | tee "$OUT/bench_cpu.md"
echo "== compute-sanitizer memcheck (GPU tests)"
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 build/tests -tc='*CUDA*' >"$OUT/memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -3 "$OUT/memcheck.log"
echo "== compute-sanitizer racecheck (GPU tests)"
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 build/tests -tc='*CUDA*' >"$OUT/racecheck.log" 2>&1; echo "racecheck rc=$?"; tail -3 "$OUT/racecheck.log"
