#!/usr/bin/env bash
# A batch of 8 series on one GPU ([device] gpus = [0]) and spread over every
# GPU ("all"): each batch's wall time, whether every job's shifts.csv is the
# same bytes both ways, and each stage's seconds summed over the 8 jobs
# (from their run.json), so the stage that holds the speed-up back shows.
#   tilt: 8 of `bench stages`' 121 x 512^2 tilt series, the defaults (axis
#         and offset "auto"), then again with projection_matching = true
#   watch: a watch already running (warmed by 4 series) and 8 of the tilt
#         series arriving at once: seconds to the last one's run.json
#   frames: 8 series of 61 x 1024^2 float32 (a real Drosophila frame moved
#         along seeded walks), and one of 181 frames split over the GPUs
# Needs build/stackalign, build/bench and python3 with numpy.
# Usage: bash bench/multi_gpu.sh [tilt] [watch] [frames]  (all by default;
# ROUNDS=N runs each batch N times, RUN_OPTIONS adds options to every run,
# KEEP=1 leaves the series and outputs in build/multi-gpu).
set -euo pipefail
root=$PWD
work=$root/${WORK:-build/multi-gpu}
rounds=${ROUNDS:-2}
parts=${*:-tilt watch frames}
rm -rf "$work"; mkdir -p "$work"
echo "host: $(nproc) cores; GPUs: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | paste -sd, -)"

# batch NAME GPUS HEAD: writes $work/NAME.toml (HEAD, then [device] and one
# [[job]] per series s0..s7) and runs it ROUNDS times, printing each wall.
batch() {
  local name=$1 gpus=$2 head=$3 jobs=""
  for s in 0 1 2 3 4 5 6 7; do
    jobs+=$'[[job]]\n'"name = \"s$s\""$'\n'"input = {stack = \"s$s.$ext\"}"$'\n'"output = {dir = \"out_$name/s$s\"}"$'\n'
  done
  printf '%s\n[output]\ndir = "out_%s"\nreport = false\n[device]\nbackend = "cuda"\ngpus = %s\n%s' \
    "$head" "$name" "$gpus" "$jobs" >"$work/$name.toml"
  for r in $(seq "$rounds"); do
    sync
    local start
    start=$(date +%s.%N)
    build/stackalign run -q ${RUN_OPTIONS:-} "$work/$name.toml"
    python3 -c "import sys, time; print('%s, gpus = %s, round %s: %.2f s for 8 jobs' % (sys.argv[1], sys.argv[2], sys.argv[3], time.time() - float(sys.argv[4])))" "$name" "$gpus" "$r" "$start"
  done
}

# compare ONE ALL: shifts.csv of the two batches' jobs, and each stage's
# seconds summed over the jobs (the last round's run.json).
compare() {
  python3 - "$work" "$1" "$2" <<'PY'
import json, sys, filecmp, pathlib
work, names = pathlib.Path(sys.argv[1]), sys.argv[2:]
same = sum(filecmp.cmp(work / f"out_{names[0]}/s{s}/shifts.csv", work / f"out_{names[1]}/s{s}/shifts.csv", shallow=False)
           for s in range(8))
print(f"shifts.csv the same bytes on one GPU and on all: {same}/8 jobs")
sums = {}
for n in names:
    for s in range(8):
        for k, v in json.load(open(work / f"out_{n}/s{s}/run.json"))["seconds"].items():
            if isinstance(v, (int, float)):
                sums.setdefault(k, {}).setdefault(n, 0.0)
                sums[k][n] += v
print("| stage, seconds summed over the 8 jobs | " + " | ".join(names) + " |")
print("|---|" + "---|" * len(names))
for k, by in sums.items():
    if max(by.values()) >= 0.01:
        print(f"| {k} | " + " | ".join(f"{by.get(n, 0):.2f}" for n in names) + " |")
PY
}

if [[ " $parts " == *" tilt "* ]]; then
  STAGES_BACKENDS=cuda build/bench stages "tilt series" | grep -E '^\| tilt' || true
  for s in 0 1 2 3 4 5 6 7; do cp build/bench-stages/tilt.tif "$work/s$s.tif"; done
  cp build/bench-stages/tilt.tlt "$work/tilt.tlt"
  ext=tif
  head=$'[input]\nangles = "tilt.tlt"\n[search]\nmax_shift = 17\n[alignment]\ncosine_stretch = true'
  batch tilt_one '[0]' "$head"
  batch tilt_all '"all"' "$head"
  compare tilt_one tilt_all
  head+=$'\nprojection_matching = true'
  batch match_one '[0]' "$head"
  batch match_all '"all"' "$head"
  compare match_one match_all
fi

# A watch already running, its GPUs warmed by 4 series, then 8 series
# arriving at once (renamed into its folder): seconds from their arrival
# to the last one's run.json, on one GPU and on all.
if [[ " $parts " == *" watch "* ]]; then
  if [ ! -f "$work/s0.tif" ]; then
    STAGES_BACKENDS=cuda build/bench stages "tilt series" >/dev/null
    for s in 0 1 2 3 4 5 6 7; do cp build/bench-stages/tilt.tif "$work/s$s.tif"; done
    cp build/bench-stages/tilt.tlt "$work/tilt.tlt"
  fi
  for gpus in '[0]' '"all"'; do
    name=watch_$([ "$gpus" = '[0]' ] && echo one || echo all)
    d=$work/$name
    rm -rf "$d"; mkdir -p "$d/incoming" "$d/waiting"
    cp "$work/tilt.tlt" "$d/"
    printf '[input]\nglob = "incoming/*.tif"\nangles = "tilt.tlt"\n[search]\nmax_shift = 17\n[alignment]\ncosine_stretch = true\n[output]\ndir = "out"\nreport = false\n[device]\nbackend = "cuda"\ngpus = %s\n' "$gpus" >"$d/watch.toml"
    for s in 0 1 2 3 4 5 6 7; do ln "$work/s$s.tif" "$d/waiting/s$s.tif"; done
    for s in 0 1 2 3; do ln "$work/s$s.tif" "$d/waiting/warm$s.tif"; done
    (cd "$d" && exec "$root/build/stackalign" watch -q --settle-seconds 0 --poll-seconds 0.05 watch.toml) &
    pid=$!
    python3 - "$d" <<'PY'
import os, sys, time, glob
d = sys.argv[1]
def arrive_and_wait(prefix, count):
    for f in sorted(glob.glob(f"{d}/waiting/{prefix}*.tif")):
        os.rename(f, f"{d}/incoming/{os.path.basename(f)}")
    start = time.perf_counter()
    while len(glob.glob(f"{d}/out/{prefix}*/run.json")) < count:
        if time.perf_counter() - start > 120: sys.exit("timed out")
        time.sleep(0.005)
    return time.perf_counter() - start
arrive_and_wait("warm", 4)
print(f"{os.path.basename(d)}: 8 series in {arrive_and_wait('s', 8):.2f} s from their arrival to the last run.json")
PY
    kill -TERM $pid; wait $pid || true
  done
  same=0
  for s in 0 1 2 3 4 5 6 7; do
    cmp -s "$work/watch_one/out/s$s/shifts.csv" "$work/watch_all/out/s$s/shifts.csv" && same=$((same + 1))
  done
  echo "watch: shifts.csv the same bytes on one GPU and on all: $same/8 series"
fi

if [[ " $parts " == *" frames "* ]]; then
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
  ext=mrc
  head=$'[preprocess]\nthreshold = 20.0\n[search]\nwindow = [896, 896]\nmax_shift = 24'
  batch frames_one '[0]' "$head"
  batch frames_all '"all"' "$head"
  compare frames_one frames_all
  # One long series: its pairs split over the GPUs.
  for gpus in '[0]' '"all"'; do
    printf '[input]\nstack = "long.mrc"\n[preprocess]\nthreshold = 20.0\n[search]\nwindow = [896, 896]\nmax_shift = 24\n[output]\ndir = "out_long"\nreport = false\n[device]\nbackend = "cuda"\ngpus = %s\n' "$gpus" >"$work/long.toml"
    start=$(date +%s.%N)
    build/stackalign run -q "$work/long.toml"
    end=$(date +%s.%N)
    python3 -c "import json; j=json.load(open('$work/out_long/run.json')); print('one series of 181 frames, gpus = $gpus: %.2f s (search %.3f s summed over GPUs)' % ($end - $start, j['seconds']['search']))"
    cp "$work/out_long/shifts.csv" "$work/long.$([ "$gpus" = '[0]' ] && echo one || echo all).csv"
  done
  cmp -s "$work/long.one.csv" "$work/long.all.csv" && echo "long series: shifts.csv identical" || echo "long series: shifts.csv DIFFER"
fi
[ -n "${KEEP:-}" ] || rm -rf "$work"
