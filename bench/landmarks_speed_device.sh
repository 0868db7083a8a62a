#!/usr/bin/env bash
# On the GPU machine: landmark jobs, this build against another (OLD_SRC, a
# `git archive` of its commit), side by side in one call: the tests, the
# module's tests and compute-sanitizer over the 3D GPU twins; then the
# landmark jobs of bench/held_landmarks.py (the sample brains, and the same
# enlarged SCALES times) from the CLI on cpu, cuda and auto, builds taking
# turns, ROUNDS times, with whether both builds wrote the same matches.csv;
# then stackalign.match_landmarks from arrays in one process per module,
# modules taking turns.
# Usage there, in two calls (each within a call's 10 minutes):
#   OLD_SRC=build/old-src bash bench/landmarks_speed_device.sh tests   (both builds, the tests)
#   OLD_SRC=build/old-src bash bench/landmarks_speed_device.sh bench   (ROUNDS=3, SCALES="1 3")
source bench/device_env.sh
OLD_SRC=${OLD_SRC:?set OLD_SRC to the other build\'s source tree}
exec > >(tee -a "$OUT/landmarks_speed.log") 2>&1
py=$(command -v python3)
build_old() {
  make -C "$OLD_SRC" -j"${1:-6}" DEPS="$deps" CUDA_ARCHS=90 PYTHON="$py" build/stackalign python >"$OUT/build_old.log" 2>&1 ||
    echo "OLD BUILD FAILED"
}
if [ "${1:-}" = tests ]; then
  build_old 6 &
  old_build=$!
  MAKE_JOBS=10 device_build PYTHON="$py" build/stackalign build/tests python
  wait $old_build
  run_tests
  echo "== the module's tests"
  PYTHONPATH=build/python "$py" -m pytest -q python/tests 2>&1 | tail -2
  echo "== compute-sanitizer memcheck, the 3D GPU twins"
  "$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)" --tool memcheck --error-exitcode 9 \
    build/tests -tc='landmarks: the CUDA*,preprocess: CUDA*,refine: CUDA*' 2>&1 | tail -3
  exit 0
fi
# A carried OLD_SRC arrives without the build the first call made there.
[ -x "$OLD_SRC/build/stackalign" ] || build_old 16
ROUNDS=${ROUNDS:-3}
SCALES=${SCALES:-1 3}
work=build/landmarks-speed
PYTHONPATH=build/python "$py" bench/held_landmarks.py make $work $SCALES
for scale in $SCALES; do
  for backend in cpu cuda auto; do
    for r in $(seq "$ROUNDS"); do
      for tag in new old; do
        bin=$PWD/build/stackalign; [ $tag = old ] && bin=$PWD/$OLD_SRC/build/stackalign
        d=$work/x$scale
        start=$(date +%s.%N)
        $bin run -q $d/$backend.toml || echo "FAILED"
        end=$(date +%s.%N)
        printf 'x%s %s %s round %s: %.3f s start to exit; ' "$scale" "$backend" $tag "$r" "$(awk "BEGIN { print $end - $start }")"
        "$py" -c "import json,sys; j=json.load(open('$d/out_$backend/run.json')); s=j['seconds']; c=j['plan'].get('backend_choice'); print(', '.join('%s %.3f' % (k, v) for k, v in s.items() if v), '| backend', j['plan']['backend'], '(auto: cpu %.3f, cuda %.3f)' % (c['cpu_seconds_estimate'], c['cuda_seconds_estimate']) if c else '')"
        cp $d/out_$backend/matches.csv $d/matches_${backend}_$tag.csv
      done
      cmp -s $d/matches_${backend}_new.csv $d/matches_${backend}_old.csv || echo "x$scale $backend: matches.csv DIFFERS between the builds"
    done
  done
  cmp -s $work/x$scale/matches_cpu_new.csv $work/x$scale/matches_cuda_new.csv && echo "x$scale: this build's matches.csv identical on cpu and cuda"
done
for turn in 1 2; do
  for backend in cpu cuda; do
    echo "== turn $turn, $backend: $OLD_SRC's module"
    PYTHONPATH=$OLD_SRC/build/python "$py" bench/held_landmarks.py time "$ROUNDS" $backend $SCALES
    echo "== turn $turn, $backend: this tree's module"
    PYTHONPATH=build/python "$py" bench/held_landmarks.py time "$ROUNDS" $backend $SCALES
  done
done
