#!/usr/bin/env bash
# A batch of 8 series on one GPU and spread over every GPU ([device] gpus =
# "all"): wall time of each and whether every job's shifts.csv is identical.
# Needs python3 with numpy (and tifffile or Pillow). Usage: bash bench/multi_gpu.sh
# (RUN_OPTIONS: more options for every run, e.g. "--jobs-at-once 1").
set -euo pipefail
work=${WORK:-build/multi-gpu}
rm -rf "$work"; mkdir -p "$work"
PYTHONPATH=bench python3 - "$work" <<'PY'
import sys, numpy as np
from series_io import read_stack, write_mrc
work = sys.argv[1]
big = np.kron(read_stack("sample_data/drosophila_embryo_13x512x512.tif")[6].astype(np.float32),
              np.ones((2, 2), dtype=np.float32))  # 1024 x 1024
def series(seed, n):
    walk = np.cumsum(np.random.default_rng(seed).integers(-4, 5, size=(n, 2)), axis=0)
    return (np.roll(big, (int(dy), int(dx)), axis=(0, 1)) for dx, dy in walk)
for s in range(8):
    write_mrc(f"{work}/s{s}.mrc", series(s, 61), count=61)
write_mrc(f"{work}/long.mrc", series(100, 181), count=181)  # one long series
print("8 series of 61 x 1024x1024 and one of 181 x 1024x1024 float32 written")
PY
jobs=""
for s in 0 1 2 3 4 5 6 7; do jobs+=$'[[job]]\n'"input = {stack = \"s$s.mrc\"}"$'\n'"output = {dir = \"out/s$s\"}"$'\n'; done
for gpus in '[0]' '"all"'; do
  printf '[preprocess]\nthreshold = 20.0\n[search]\nwindow = [896, 896]\nmax_shift = 24\n[output]\ndir = "out"\nreport = false\n[device]\nbackend = "cuda"\ngpus = %s\n%s' "$gpus" "$jobs" > "$work/batch.toml"
  start=$(date +%s.%N)
  build/stackalign run -q ${RUN_OPTIONS:-} "$work/batch.toml"
  end=$(date +%s.%N)
  echo "gpus = $gpus: $(python3 -c "print('%.2f' % ($end - $start))") s for 8 jobs"
  for s in 0 1 2 3 4 5 6 7; do cp "$work/out/s$s/shifts.csv" "$work/s$s.$([ "$gpus" = '[0]' ] && echo one || echo all).csv"; done
done
same=0; for s in 0 1 2 3 4 5 6 7; do cmp -s "$work/s$s.one.csv" "$work/s$s.all.csv" && same=$((same + 1)); done
echo "shifts.csv identical between one GPU and all GPUs: $same/8 jobs"
python3 -c "import json; print('GPUs used:', json.load(open('$work/out/batch.json')).get('gpus'))"
# One long series: its pairs split over the GPUs.
for gpus in '[0]' '"all"'; do
  printf '[input]\nstack = "long.mrc"\n[preprocess]\nthreshold = 20.0\n[search]\nwindow = [896, 896]\nmax_shift = 24\n[output]\ndir = "out/long"\nreport = false\n[device]\nbackend = "cuda"\ngpus = %s\n' "$gpus" > "$work/long.toml"
  start=$(date +%s.%N)
  build/stackalign run -q "$work/long.toml"
  end=$(date +%s.%N)
  python3 -c "import json; j=json.load(open('$work/out/long/run.json')); print('one series of 181 frames, gpus = $gpus: %.2f s (search %.3f s summed over GPUs)' % ($end - $start, j['seconds']['search']))"
  cp "$work/out/long/shifts.csv" "$work/long.$([ "$gpus" = '[0]' ] && echo one || echo all).csv"
done
cmp -s "$work/long.one.csv" "$work/long.all.csv" && echo "long series: shifts.csv identical" || echo "long series: shifts.csv DIFFER"
rm -rf "$work"
