#!/usr/bin/env bash
# On the GPU machine's host: this build's CPU backend against another's,
# side by side in one call. Builds both (the other from OLD_SRC, a `git
# archive` of its commit), runs the tests (GPU twins included) and `bench
# cpu`, then the sample configs on the CPU with every core and with
# THREADS (default 2), alternating builds, ROUNDS times (default 3):
# each run's stage seconds, and whether each job's shifts.csv is the same
# in both builds; then the `bench stages` jobs named in JOBS (default
# "X-ray drift") on the CPU, alternating builds, ROUNDS times.
# Usage there: OLD_SRC=build/old-src bash bench/cpu_ab_device.sh
source bench/device_env.sh
OLD_SRC=${OLD_SRC:?set OLD_SRC to the other build\'s source tree}
exec > >(tee "$OUT/cpu_ab.log") 2>&1
build_with_old
[ "${TESTS:-1}" = 1 ] && run_tests
echo "== bench cpu (this build)"; build/bench cpu
work=build/cpu-ab; mkdir -p $work
for job in sample_timelapse sample_tilt_series; do
  for tag in new old; do
    sed "s#\.\./sample_data#$PWD/sample_data#; s#^dir *=.*#dir = \"out_${job}_$tag\"#" configs/$job.toml >$work/${job}_$tag.toml
  done
done
for threads in "$(nproc)" "${THREADS:-2}"; do
  for job in sample_timelapse sample_tilt_series; do
    for r in $(seq "${ROUNDS:-3}"); do
      for tag in new old; do
        bin=$PWD/build/stackalign; [ $tag = old ] && bin=$PWD/$OLD_SRC/build/stackalign
        rm -rf $work/out_${job}_$tag
        printf '%s %s threads %s round %s: ' "$job" $tag "$threads" "$r"
        OMP_NUM_THREADS=$threads $bin run --backend cpu $work/${job}_$tag.toml 2>&1 | tail -1 | sed 's/.*done in/done in/; s/; outputs.*//'
      done
      cmp -s $work/out_${job}_new/shifts.csv $work/out_${job}_old/shifts.csv || echo "$job: shifts.csv DIFFERS between the builds"
    done
  done
done
for job in ${JOBS-X-ray drift}; do
  for r in $(seq "${ROUNDS:-3}"); do
    for tag in new old; do
      bin=$PWD/build/stackalign; [ $tag = old ] && bin=$PWD/$OLD_SRC/build/stackalign
      echo "-- $job, $tag build, round $r"
      STAGES_BACKENDS=cpu STACKALIGN=$bin build/bench stages "$job" 2>&1 | stage_rows
      cp build/bench-stages/out_${job}*_cpu/shifts.csv "/tmp/${job}_$tag.csv"
    done
    cmp -s "/tmp/${job}_new.csv" "/tmp/${job}_old.csv" || echo "$job: shifts.csv DIFFERS between the builds"
  done
done
