#!/usr/bin/env bash
# The device half of issue #5: build, every test, `bench methods`, and the
# sample time-lapse run with each method on the GPU and on the CPU, whose
# shifts.csv must be identical. Usage on the GPU machine: bash bench/methods_device.sh
source bench/device_env.sh
device_build build/stackalign build/tests build/bench
echo "== tests"; build/tests 2>&1 | tee "$OUT/tests.log" | tail -2
for choice in 'metric = "ncc"' 'metric = "cr"\nhistogram = "presorted"' 'metric = "cr"\nhistogram = "cr-atomic"' \
              'histogram = "adaptive"' 'histogram = "bin-partitioned-sampled"' 'method = "mtb-projection"\nmin_sharpness = 1'; do
  cfg=build/methods_case.toml
  sed -e 's/^histogram = "auto".*//' -e "s|^\[search\]|[search]\n$choice|" -e 's|^dir = .*|dir = "'"$PWD"'/out/methods_case"|' \
      -e 's|"\.\./sample_data|"'"$PWD"'/sample_data|' configs/sample_timelapse.toml > "$cfg"
  if [[ $choice == *mtb* ]]; then sed -i -e '/^\[preprocess\]/,/^bins/d' -e 's/^min_sharpness = 1//' -e 's/^\[alignment\]/[alignment]\nmin_sharpness = 1/' "$cfg"; fi
  echo "== sample_timelapse with $(echo -e "$choice" | tr '\n' ' ')"
  build/stackalign run -q "$cfg" --backend cuda 2>&1 | tail -2; cp out/methods_case/shifts.csv "$OUT/gpu.csv"
  build/stackalign run -q "$cfg" --backend cpu 2>&1 | tail -2
  cmp out/methods_case/shifts.csv "$OUT/gpu.csv" && echo "shifts.csv identical on cuda and cpu"
done
echo "== bench methods"; build/bench methods 2>&1 | tee "$OUT/bench_methods.md"
echo "== compute-sanitizer memcheck (method GPU tests)"
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 build/tests -tc='methods: CUDA*' >"$OUT/memcheck.log" 2>&1; echo "memcheck rc=$?"; tail -2 "$OUT/memcheck.log"
echo "== racecheck"
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 build/tests -tc='methods: CUDA*' >"$OUT/racecheck.log" 2>&1; echo "racecheck rc=$?"; tail -2 "$OUT/racecheck.log"
