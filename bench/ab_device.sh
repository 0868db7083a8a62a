#!/usr/bin/env bash
# On the GPU machine: this build against another, side by side in one call.
# Builds both (the other from OLD_SRC, a `git archive` of its commit), runs
# the GPU tests and compute-sanitizer over the CUDA twins named in TWINS,
# then the `bench stages` jobs named in JOBS on cuda, alternating builds,
# ROUNDS times, and says whether each job's shifts.csv is the same in both
# builds (and the aligned stack) and, for this build, on cuda and cpu for
# the sample configs.
# Usage there: OLD_SRC=build/old-src bash bench/ab_device.sh
#   (JOBS="tilt standard", ROUNDS=2, TESTS=1, TWINS=doctest -tc patterns,
#    PROFILE=1 adds bench/profile_device.sh for the first job, LOADS=1
#    `bench loads` on each job's config with this build, RIGID=1 the
#    rigid 121 x 1024^2 job of bench/rigid_series.py, RIGID_SEARCH=keys
#    added to its [search] in both builds, and this build's defaults timed
#    beside them; SEARCHERS="1 2" this build again with [device] searchers
#    set to each; MID_SRC=another tree, a third build timed beside them,
#    e.g. one of two changes alone)
source bench/device_env.sh
OLD_SRC=${OLD_SRC:?set OLD_SRC to the other build\'s source tree}
JOBS=${JOBS:-tilt standard}
exec > >(tee "$OUT/ab.log") 2>&1  # the whole log comes back, whatever the caller keeps
if [ -n "${MID_SRC:-}" ]; then
  (make -C "$MID_SRC" -j8 DEPS="$deps" CUDA_ARCHS=90 build/stackalign >"$OUT/build_mid.log" 2>&1 || echo "MID BUILD FAILED") &
  mid_build=$!
fi
build_with_old
[ -n "${MID_SRC:-}" ] && wait $mid_build  # not a bare wait: that would wait for the log's tee too
OLD=$OLD_SRC/build/stackalign
if [ "${TESTS:-1}" = 1 ]; then
  run_tests
  if [ -n "${TWINS:-}" ]; then
    timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 build/tests -tc="$TWINS" >"$OUT/memcheck.log" 2>&1
    echo "memcheck rc=$? $(grep -c 'test cases' "$OUT/memcheck.log") $(grep 'ERROR SUMMARY' "$OUT/memcheck.log")"
    timeout 300 compute-sanitizer --tool racecheck --error-exitcode 9 build/tests -tc="$TWINS" >"$OUT/racecheck.log" 2>&1
    echo "racecheck rc=$? $(grep 'RACECHECK SUMMARY\|hazard' "$OUT/racecheck.log" | tail -1)"
  fi
fi
# An aligned stack's pixels (a TIFF's through tifffile, so its strip layout does not count).
pixels_md5() {
  python3 -c "import hashlib, sys, tifffile; print(hashlib.md5(tifffile.imread(sys.argv[1]).tobytes()).hexdigest())" "$1" 2>/dev/null ||
    md5sum <"$1"
}
for job in $JOBS; do
  for r in $(seq "${ROUNDS:-2}"); do
    for tag in new old ${MID_SRC:+mid}; do
      bin=$PWD/build/stackalign; [ $tag = old ] && bin=$PWD/$OLD; [ $tag = mid ] && bin=$PWD/$MID_SRC/build/stackalign
      echo "-- $job, $tag build, round $r"
      STAGES_BACKENDS=cuda STACKALIGN=$bin build/bench stages "$job" 2>&1 | stage_rows
      cp build/bench-stages/out_${job}*_cuda/shifts.csv "/tmp/${job}_$tag.csv"
      pixels_md5 build/bench-stages/out_${job}*_cuda/aligned.* >"/tmp/${job}_$tag.md5"
      [ "$r$tag" = 1new ] && python3 -c "import json, sys; p = json.load(open(sys.argv[1]))['plan']; print('    refine_sigma', p.get('refine_sigma'), p.get('refine_sigma_from'), p.get('refine_sigma_trial', ''))" build/bench-stages/out_${job}*_cuda/run.json
    done
    for n in ${SEARCHERS:-}; do
      echo "-- $job, new build, searchers = $n, round $r"
      STAGES_DEVICE="searchers = $n" STAGES_BACKENDS=cuda build/bench stages "$job" 2>&1 | stage_rows
      cmp -s build/bench-stages/out_${job}*_cuda/shifts.csv "/tmp/${job}_new.csv" || echo "$job: shifts.csv DIFFERS with searchers = $n"
    done
  done
  cmp -s "/tmp/${job}_new.csv" "/tmp/${job}_old.csv" && echo "$job: shifts.csv the same in both builds" ||
    echo "$job: shifts.csv DIFFERS between the builds"
  cmp -s "/tmp/${job}_new.md5" "/tmp/${job}_old.md5" && echo "$job: aligned stack the same in both builds" ||
    echo "$job: aligned stack DIFFERS between the builds"
  if [ -n "${MID_SRC:-}" ]; then
    cmp -s "/tmp/${job}_new.csv" "/tmp/${job}_mid.csv" && echo "$job: shifts.csv the same in the third build" ||
      echo "$job: shifts.csv DIFFERS in the third build"
  fi
done
if [ "${RIGID:-0}" = 1 ]; then  # issue #17's rigid job (bench/rigid_series.py), least squares
  work=build/rigid-speed
  mkdir -p $work
  [ -f "$work/series.mrc" ] || python3 bench/rigid_series.py "$work/series.mrc"
  for tag in new old defaults; do
    keys="${RIGID_SEARCH:-}"; [ $tag = defaults ] && keys=""
    printf '[input]\nstack = "series.mrc"\n[search]\nmax_shift = 24\ntransform = "rigid"\n%s\n[output]\ndir = "out_%s"\nreport = false\n[device]\nbackend = "cuda"\n' "$keys" $tag >$work/$tag.toml
  done
  build/stackalign run -q $work/new.toml  # warm the GPU and the page cache
  for r in $(seq "${ROUNDS:-2}"); do
    for tag in new old ${RIGID_SEARCH:+defaults}; do
      bin=build/stackalign; [ $tag = old ] && bin=$OLD
      sync  # the last run's output flushed, so its writeback does not throttle this run's writes
      TIMEFORMAT="rigid, $tag build, round $r: %R s wall"; time $bin run -q $work/$tag.toml
      python3 -c "import json; s=json.load(open('$work/out_$tag/run.json')); print('   ', ', '.join('%s %.3f' % (k, v) for k, v in s['seconds'].items() if v), '| views', s.get('views_preprocessed'))"
    done
    for n in ${SEARCHERS:-}; do
      sed "s/^backend = \"cuda\"/&\nsearchers = $n/; s/out_new/out_s$n/" $work/new.toml >$work/s$n.toml
      TIMEFORMAT="rigid, new build, searchers = $n, round $r: %R s wall"; time build/stackalign run -q $work/s$n.toml
      cmp -s $work/out_s$n/shifts.csv $work/out_new/shifts.csv || echo "rigid: shifts.csv DIFFERS with searchers = $n"
    done
  done
  cmp -s $work/out_new/shifts.csv $work/out_old/shifts.csv && echo "rigid: shifts.csv the same in both builds" ||
    echo "rigid: shifts.csv DIFFERS between the builds"
  cmp -s $work/out_new/aligned.mrc $work/out_old/aligned.mrc && echo "rigid: aligned stack the same in both builds" ||
    echo "rigid: aligned stack DIFFERS between the builds"
fi
for config in sample_tilt_series sample_timelapse; do
  build/stackalign run -q --backend cuda configs/$config.toml && cp out/$config/shifts.csv /tmp/$config.cuda.csv
  build/stackalign run -q --backend cpu configs/$config.toml
  cmp -s /tmp/$config.cuda.csv out/$config/shifts.csv && echo "$config: shifts.csv identical on cuda and cpu" || echo "$config: shifts.csv DIFFERS"
done
if [ "${LOADS:-0}" = 1 ]; then
  for job in $JOBS; do build/bench loads build/bench-stages/${job}*_cuda.toml 2>&1 | grep -v "^$"; done
fi
[ "${PROFILE:-0}" = 1 ] && bash bench/profile_device.sh "${JOBS%% *}"
exit 0
