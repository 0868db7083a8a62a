#!/usr/bin/env bash
# One full GPU-machine session: build (sm_90), all tests, the sample jobs on
# the GPU vs CPU, the benchmarks, then compute-sanitizer over the GPU tests.
# Usage there: bash bench/device_run.sh   (expects the .deps prefix, writes logs to $OUT)
set -uo pipefail
OUT=${OUT:-build/device-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
make -j16 DEPS=.deps CUDA_ARCHS=90 build/stackalign build/tests build/bench >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
echo "== tests"; build/tests 2>&1 | tee "$OUT/tests.log" | tail -3
echo "== sample job, cuda vs cpu"
build/stackalign run -v configs/sample_tilt_series.toml 2>&1 | grep -E "backend|done"
cp out/sample_tilt_series/shifts.csv "$OUT/sample_cuda.csv"
build/stackalign run -q --backend cpu configs/sample_tilt_series.toml
cmp out/sample_tilt_series/shifts.csv "$OUT/sample_cuda.csv" && echo "sample shifts.csv identical on cuda and cpu"
echo "== bench gpu"; build/bench gpu 2>&1 | tee "$OUT/bench_gpu.md"
echo "== landmark sample, cuda vs cpu"
build/stackalign run -v configs/sample_landmarks.toml 2>&1 | grep -E "backend|done"
cp out/sample_landmarks/matches.csv "$OUT/landmarks_cuda.csv"
build/stackalign run -q --backend cpu configs/sample_landmarks.toml
cmp out/sample_landmarks/matches.csv "$OUT/landmarks_cuda.csv" && echo "landmark matches.csv identical on cuda and cpu"
echo "== bench cpu"; build/bench cpu 2>&1 | tee "$OUT/bench_cpu.md"
echo "== compute-sanitizer memcheck (GPU tests)"
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 build/tests -tc='*CUDA*' >"$OUT/memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -3 "$OUT/memcheck.log"
echo "== compute-sanitizer racecheck (GPU tests)"
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 build/tests -tc='*CUDA*' >"$OUT/racecheck.log" 2>&1; echo "racecheck rc=$?"; tail -3 "$OUT/racecheck.log"
