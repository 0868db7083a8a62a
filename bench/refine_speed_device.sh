#!/usr/bin/env bash
# On the GPU machine: the refinement's GPU twin still equals the CPU's, its
# cost per pair on the sample time-lapse (twice), memcheck on its test.
source bench/device_env.sh
device_build build/stackalign build/tests
build/tests -tc='refine*' | tail -1
for k in 1 2; do build/stackalign run -q --backend cuda configs/sample_timelapse.toml
python3 -c "import json; j=json.load(open('out/sample_timelapse/run.json')); s=j['seconds']; n=len(j['pairs'])+len(j['skip_pairs']); print('cuda: search %.4f s, refine %.4f s, %.2f ms/pair refine' % (s['search'], s['refine'], 1e3*s['refine']/n))"; done
cp out/sample_timelapse/shifts.csv /tmp/cuda.csv; build/stackalign run -q --backend cpu configs/sample_timelapse.toml; cmp /tmp/cuda.csv out/sample_timelapse/shifts.csv && echo "shifts.csv identical on cuda and cpu"
timeout 200 compute-sanitizer --tool memcheck build/tests -tc='refine: CUDA*' 2>&1 | tail -2
