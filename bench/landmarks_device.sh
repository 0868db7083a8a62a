#!/usr/bin/env bash
# On the GPU machine (issue #15): build, every test, compute-sanitizer
# (memcheck, racecheck) over the landmark and refinement GPU twins, and the
# sample landmark job on both backends with its stage times.
# Usage there: bash bench/landmarks_device.sh   (expects .deps; logs to $OUT)
source bench/device_env.sh
device_build build/stackalign build/tests
echo "== tests"; build/tests 2>&1 | tee "$OUT/tests.log" | tail -2
grep -E "FAILED|ERROR" -A3 "$OUT/tests.log" | head -20
echo "== memcheck (landmark, refinement and global-refinement GPU twins)"
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 build/tests -tc='landmarks: the CUDA*,refine: CUDA*,landmarks: refine = "global" on the CUDA*' >"$OUT/memcheck.log" 2>&1
echo "memcheck rc=$?"; tail -2 "$OUT/memcheck.log"
echo "== racecheck (landmark and refinement GPU twins)"
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 build/tests -tc='landmarks: the CUDA*,refine: CUDA*' >"$OUT/racecheck.log" 2>&1
echo "racecheck rc=$?"; tail -2 "$OUT/racecheck.log"
# The global refinement's kernel: its first two launches of a real job (all
# of them take racecheck too long; the kernel is the same every launch).
sed 's/^subpixel = true.*/&\nrefine = "global"/; s/^fit = .*/fit = "rigid"/; s|out/sample_landmarks|out/sample_global|' configs/sample_landmarks.toml > configs/.global_device.toml
echo "== racecheck (global refinement kernel, 2 launches)"
timeout 200 compute-sanitizer --tool racecheck --kernel-name kns=affine_parzen_kernel --launch-count 2 --error-exitcode 9 \
  build/stackalign run -q --backend cuda configs/.global_device.toml >"$OUT/racecheck_global.log" 2>&1
echo "racecheck rc=$?"; tail -1 "$OUT/racecheck_global.log"
echo "== sample landmark job, both backends"
for b in cuda cpu; do
  for i in 1 2; do build/stackalign run -q --backend $b configs/sample_landmarks.toml; done
  python3 -c "import json; j=json.load(open('out/sample_landmarks/run.json')); s=j['seconds']; print('$b:', ', '.join('%s %.4f' % (k, v) for k, v in s.items()))"
  cp out/sample_landmarks/matches.csv "$OUT/matches_$b.csv"
done
cmp "$OUT/matches_cuda.csv" "$OUT/matches_cpu.csv" && echo "sample matches.csv identical on cuda and cpu"
echo "== the same with refine = \"global\" (rigid fit)"
for b in cuda cpu; do
  for i in 1 2; do build/stackalign run -q --backend $b configs/.global_device.toml; done
  python3 -c "import json; j=json.load(open('out/sample_global/run.json')); s=j['seconds']; print('$b:', ', '.join('%s %.4f' % (k, v) for k, v in s.items()), j['fit']['global_refinement'])"
  cp out/sample_global/fit.txt "$OUT/global_fit_$b.txt"
done
cmp "$OUT/global_fit_cuda.txt" "$OUT/global_fit_cpu.txt" && echo "global fit.txt identical on cuda and cpu"
