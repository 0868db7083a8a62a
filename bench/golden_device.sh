#!/usr/bin/env bash
# On the GPU machine: checks that a change of structure changed no result on
# the CUDA backend, and no speed. Builds this tree and an older one side by
# side (.old/, e.g. `git archive <commit> | tar -x -C .old`), runs the test
# suite, the golden jobs (bench/golden_outputs.py) with both binaries on the
# GPU, compute-sanitizer over the GPU tests, and `bench gpu` of both.
# Usage there: bash bench/golden_device.sh   (expects .deps and .old; logs to $OUT)
source bench/device_env.sh
make -j10 DEPS="$deps" CUDA_ARCHS=90 build/stackalign build/tests build/bench >"$OUT/build.log" 2>&1 &
new=$!
(cd .old && make -j6 DEPS="$deps" CUDA_ARCHS=90 build/stackalign build/bench) >"$OUT/build_old.log" 2>&1 &
old=$!
wait $new || { tail -30 "$OUT/build.log"; exit 1; }
wait $old || { tail -30 "$OUT/build_old.log"; exit 1; }
echo "== tests"; build/tests 2>&1 | tee "$OUT/tests.log" | tail -3
echo "== golden jobs on the GPU, old vs new binary"
python3 bench/golden_outputs.py run .old/build/stackalign /tmp/golden_old --backend cuda 2>&1 | tail -1
python3 bench/golden_outputs.py run build/stackalign /tmp/golden_new --backend cuda 2>&1 | tail -1
python3 bench/golden_outputs.py diff /tmp/golden_old /tmp/golden_new | tee "$OUT/golden_diff.txt" | tail -5
echo "== golden jobs, new binary, GPU vs CPU"
python3 bench/golden_outputs.py run build/stackalign /tmp/golden_cpu --backend cpu 2>&1 | tail -1
python3 bench/golden_outputs.py diff /tmp/golden_new /tmp/golden_cpu | tail -8
echo "== compute-sanitizer memcheck (GPU tests)"
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 build/tests -tc='*CUDA*' >"$OUT/memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -3 "$OUT/memcheck.log"
echo "== compute-sanitizer racecheck (GPU tests)"
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 build/tests -tc='*CUDA*' >"$OUT/racecheck.log" 2>&1; echo "racecheck rc=$?"; tail -3 "$OUT/racecheck.log"
echo "== bench strategies, old then new (same machine, one run)"
(cd .old && build/bench strategies) >"$OUT/bench_old.md" 2>&1
build/bench strategies >"$OUT/bench_new.md" 2>&1
paste -d'\n' <(grep '^| ' "$OUT/bench_old.md" | sed 's/^/old /') <(grep '^| ' "$OUT/bench_new.md" | sed 's/^/new /') | head -40
