#!/usr/bin/env bash
# On the GPU machine (issue #18): build, every test, compute-sanitizer
# (memcheck, racecheck) over the tomography twin test and the CPU == CUDA
# projection-matching test, then projection matching timed and scored with
# and without, on both backends: the sample HAADF series, and a 121 x
# 512x512 series simulated from the real zebrafish volume with known jitter
# (bench/projection_series.py).
# Usage there: bash bench/projection_device.sh   (expects .deps; logs to $OUT)
#   BACKENDS="cuda" to time one backend (default "cuda cpu"; the CPU rows
#   take most of a call); NO_TESTS=1 to skip the tests and the sanitizers;
#   PM_DEVICE="searchers = 1" more [device] keys for the simulated series.
source bench/device_env.sh
device_build build/stackalign build/tests
exec > >(tee "$OUT/progress.log") 2>&1
[ -n "${HAADF_ONLY:-}${NO_TESTS:-}" ] || { echo "== tests"; build/tests ${TESTS:+-tc="$TESTS"} 2>&1 | tee "$OUT/tests.log" | tail -2
grep -E "FAILED|ERROR" -A3 "$OUT/tests.log" | head -20
grep -E "RMS error from the jitter|correlation of the" "$OUT/tests.log"
pm_tests='tomo: the CUDA*,projection matching: a tilt*'
echo "== memcheck (tomography twins, projection matching on CUDA)"
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 build/tests -tc="$pm_tests" >"$OUT/memcheck.log" 2>&1
echo "memcheck rc=$?"; tail -2 "$OUT/memcheck.log"
echo "== racecheck (tomography twins)"
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 9 build/tests -tc='tomo: the CUDA*' >"$OUT/racecheck.log" 2>&1
echo "racecheck rc=$?"; tail -2 "$OUT/racecheck.log"; }

seconds() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); s=j['seconds']; print('   ', ', '.join('%s %.3f' % (k, v) for k, v in s.items()))" "$1"; }
echo "== sample HAADF series (91 x 64x64), with and without projection matching"
for b in ${BACKENDS:-cuda cpu}; do
  for pm in false true; do
    sed -e "s|^projection_matching = false|projection_matching = $pm|" -e "s|out/sample_tilt_series|out/haadf_${b}_$pm|" \
      configs/sample_tilt_series.toml > configs/.pm_device.toml
    build/stackalign run -q --backend $b configs/.pm_device.toml
    TIMEFORMAT="$b projection_matching=$pm: %R s wall"; time build/stackalign run -q --backend $b configs/.pm_device.toml
    seconds out/haadf_${b}_$pm/run.json
  done
done
if [ -z "${BACKENDS:-}" ]; then
  cmp out/haadf_cuda_true/shifts.csv out/haadf_cpu_true/shifts.csv && echo "HAADF shifts.csv with projection matching identical on cuda and cpu"
fi

[ -n "${HAADF_ONLY:-}" ] && exit 0
echo "== simulated 121 x 512x512 series from the zebrafish volume"
work=build/pm-bench
python3 bench/projection_series.py $work || exit 1
for b in ${BACKENDS:-cuda cpu}; do
  for pm in "false" "true" "true\nprojection_thickness = 160"; do
    tag=$(echo -e "$pm" | head -1)$(echo -e "$pm" | grep -q thickness && echo _160)
    printf "[input]\nstack = \"series.mrc\"\nangles = \"series.tlt\"\n[search]\nmax_shift = 12\n[alignment]\nprojection_matching = $pm\n[output]\ndir = \"out_${b}_$tag\"\nreport = false\n[device]\nbackend = \"$b\"\n${PM_DEVICE:+$PM_DEVICE\n}" > $work/${b}_$tag.toml
    [ $b = cuda ] && build/stackalign run -q $work/${b}_$tag.toml
    TIMEFORMAT="$b $tag: %R s wall"; time timeout 300 build/stackalign run -q $work/${b}_$tag.toml
    seconds $work/out_${b}_$tag/run.json
    python3 bench/projection_error.py $work/truth.csv $work/out_${b}_$tag/shifts.csv
    python3 -c "import json,sys; j=json.load(open(sys.argv[1])).get('projection_matching'); j and print('    rounds', j['rounds'], 'max move', ['%.3f' % m for m in j['max_move_px']], 'reconstruct s', ['%.3f' % m for m in j['reconstruct_seconds']], 'match s', ['%.3f' % m for m in j['match_seconds']])" $work/out_${b}_$tag/run.json
  done
done
if [ -z "${BACKENDS:-}" ]; then
  cmp $work/out_cuda_true/shifts.csv $work/out_cpu_true/shifts.csv && echo "simulated series shifts.csv with projection matching identical on cuda and cpu"
fi
