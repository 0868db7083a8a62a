#!/usr/bin/env bash
# On the GPU machine: issue #19's target jobs timed by `bench stages` (the
# CLI from its start to its exit, the bench holding no CUDA driver open),
# this build and OLD_SRC's alternating, ROUNDS times, and whether each
# job's shifts.csv (matches.csv) is the same in both.
# Usage there: OLD_SRC=build/old-src bash bench/targets_device.sh
#   (GPU_JOBS="tilt standard X-ray drift landmarks" on cuda and auto,
#    CPU_JOBS="X-ray drift landmarks" on cpu too, ROUNDS=2, TESTS=0)
source bench/device_env.sh
OLD_SRC=${OLD_SRC:?set OLD_SRC to the other build\'s source tree}
exec > >(tee "$OUT/targets.log") 2>&1
build_with_old
[ "${TESTS:-0}" = 1 ] && run_tests
results() { ls build/bench-stages/out_${1}*_$2/shifts.csv build/bench-stages/out_${1}*_$2/matches.csv 2>/dev/null | head -1; }
GPU_JOBS=${GPU_JOBS:-tilt standard X-ray drift landmarks}
CPU_JOBS=${CPU_JOBS:-X-ray drift landmarks}
for job in $GPU_JOBS; do
  backends=cuda,auto; [[ " $CPU_JOBS " == *" $job "* ]] && backends=cuda,cpu,auto
  for r in $(seq "${ROUNDS:-2}"); do
    for tag in new old; do
      bin=$PWD/build/stackalign; [ $tag = old ] && bin=$PWD/$OLD_SRC/build/stackalign
      echo "-- $job, $tag build, round $r"
      STAGES_BACKENDS=$backends STACKALIGN=$bin build/bench stages "$job" 2>&1 | stage_rows
      for b in ${backends//,/ }; do f=$(results "$job" $b); [ -n "$f" ] && cp "$f" "/tmp/${job}_${b}_$tag.out"; done
    done
  done
  for b in ${backends//,/ }; do
    cmp -s "/tmp/${job}_${b}_new.out" "/tmp/${job}_${b}_old.out" && echo "$job $b: results the same in both builds" ||
      echo "$job $b: results DIFFER between the builds"
  done
done
