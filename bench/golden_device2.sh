#!/usr/bin/env bash
# On the GPU machine: the structure change of issue #13 (.mid = its last
# commit) against the tree before it (.old), on the CUDA backend, with the
# fields that differ and by how much; then racecheck on the refinement's GPU
# test alone, and the refinement cost per pair after fewer blocks per shift.
source bench/device_env.sh
make -j8 DEPS="$deps" CUDA_ARCHS=90 build/stackalign build/tests >"$OUT/build.log" 2>&1 &
a=$!
(cd .old && make -j4 DEPS="$deps" CUDA_ARCHS=90 build/stackalign) >"$OUT/build_old.log" 2>&1 &
b=$!
(cd .mid && make -j4 DEPS="$deps" CUDA_ARCHS=90 build/stackalign) >"$OUT/build_mid.log" 2>&1 &
c=$!
wait $a || { tail -20 "$OUT/build.log"; exit 1; }
wait $b || { tail -20 "$OUT/build_old.log"; exit 1; }
wait $c || { tail -20 "$OUT/build_mid.log"; exit 1; }
echo "== issue #13 on CUDA: before (.old) vs after (.mid)"
python3 .mid/bench/golden_outputs.py run .old/build/stackalign /tmp/g_old --backend cuda | tail -1
python3 .mid/bench/golden_outputs.py run .mid/build/stackalign /tmp/g_mid --backend cuda | tail -1
python3 bench/golden_outputs.py diff /tmp/g_old /tmp/g_mid | tee "$OUT/golden13.txt" | tail -14
echo "== refinement cost per pair after the block change"
build/stackalign run -q --backend cuda configs/sample_timelapse.toml
python3 -c "import json; j=json.load(open('out/sample_timelapse/run.json')); s=j['seconds']; n=len(j['pairs'])+len(j['skip_pairs']); print('cuda: search %.4f s, refine %.4f s, %.2f ms/pair refine' % (s['search'], s['refine'], 1e3*s['refine']/n))"
build/tests -tc='refine: CUDA*' | tail -1
echo "== racecheck, refinement GPU test alone"
timeout 280 compute-sanitizer --tool racecheck --error-exitcode 9 build/tests -tc='refine: CUDA*' >"$OUT/racecheck_refine.log" 2>&1; echo "racecheck rc=$?"; grep -E "hazard|ERROR SUMMARY|passed" "$OUT/racecheck_refine.log" | tail -3
