#!/usr/bin/env bash
# On the GPU machine: the CUDA jobs of `bench stages` with the exhaustive
# search against `[search] coarse_to_fine = true`, this build, alternating,
# and whether each job's shifts.csv is the same both ways; then the CPU's
# small jobs with this build against OLD_SRC's (16 threads), alternating.
# Usage there: OLD_SRC=build/old-src bash bench/search_modes_device.sh
#   (JOBS="tilt standard X-ray drift", CPU_JOBS="X-ray drift", ROUNDS=2,
#    TESTS=1 runs build/tests first)
source bench/device_env.sh
OLD_SRC=${OLD_SRC:?set OLD_SRC to the other build\'s source tree}
exec > >(tee "$OUT/search_modes.log") 2>&1
build_with_old
[ "${TESTS:-1}" = 1 ] && run_tests
for job in ${JOBS:-tilt standard X-ray drift}; do
  for r in $(seq "${ROUNDS:-2}"); do
    for mode in false true; do
      echo "-- $job, cuda, coarse_to_fine = $mode, round $r"
      STAGES_SEARCH="coarse_to_fine = $mode" STAGES_BACKENDS=cuda build/bench stages "$job" 2>&1 | stage_rows
      cp build/bench-stages/out_${job}*_cuda/shifts.csv "/tmp/${job}_c2f_$mode.csv"
    done
  done
  cmp -s "/tmp/${job}_c2f_false.csv" "/tmp/${job}_c2f_true.csv" && echo "$job: shifts.csv the same both ways" ||
    { echo "$job: shifts.csv DIFFERS"; diff "/tmp/${job}_c2f_false.csv" "/tmp/${job}_c2f_true.csv" | head -6; }
done
for job in ${CPU_JOBS:-X-ray drift}; do
  for r in $(seq "${ROUNDS:-2}"); do
    for tag in new old; do
      bin=$PWD/build/stackalign; [ $tag = old ] && bin=$PWD/$OLD_SRC/build/stackalign
      echo "-- $job, cpu, $tag build, round $r"
      STAGES_BACKENDS=cpu STACKALIGN=$bin build/bench stages "$job" 2>&1 | stage_rows
      grep -o '"backend": *"[^"]*"' build/bench-stages/out_${job}*_cpu/run.json | head -1
      cp build/bench-stages/out_${job}*_cpu/shifts.csv "/tmp/${job}_cpu_$tag.csv"
    done
  done
  cmp -s "/tmp/${job}_cpu_new.csv" "/tmp/${job}_cpu_old.csv" && echo "$job: cpu shifts.csv the same in both builds" ||
    echo "$job: cpu shifts.csv DIFFERS between the builds"
done
