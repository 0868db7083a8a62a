#!/usr/bin/env bash
# On the GPU machine (issue #14): build, every test (the GPU twins of the
# refinement among them), compute-sanitizer over the GPU tests, the cost of
# refinement per pair on the GPU and the CPU, and the time-lapse shifts of
# both backends compared.
# Usage there: bash bench/precision_device.sh   (expects .deps; logs to $OUT)
source bench/device_env.sh
device_build build/stackalign build/tests build/bench
echo "== tests"; build/tests 2>&1 | tee "$OUT/tests.log" | tail -2
echo "== memcheck (GPU tests)"
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 build/tests -tc='*CUDA*' >"$OUT/memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -2 "$OUT/memcheck.log"
echo "== racecheck (GPU tests but the long all-strategies sweep)"
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 build/tests -tc='*CUDA*' -tce='mi search: CUDA histograms*' >"$OUT/racecheck.log" 2>&1; echo "racecheck rc=$?"; tail -2 "$OUT/racecheck.log"
echo "== refinement cost per pair, sample time-lapse (12 pairs, window 384)"
for b in cuda cpu; do
  build/stackalign run -q --backend $b configs/sample_timelapse.toml
  python3 -c "import json; j=json.load(open('out/sample_timelapse/run.json')); s=j['seconds']; n=len(j['pairs'])+len(j['skip_pairs']); print('$b: search %.4f s, refine %.4f s for %d pairs: %.2f ms/pair refine, total %.3f s' % (s['search'], s['refine'], n, 1e3*s['refine']/n, s['total']))"
  cp out/sample_timelapse/shifts.csv "$OUT/timelapse_$b.csv"
done
cmp "$OUT/timelapse_cuda.csv" "$OUT/timelapse_cpu.csv" && echo "time-lapse shifts.csv identical on cuda and cpu"
