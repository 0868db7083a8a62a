#!/usr/bin/env bash
# A batch of 8 series on one GPU and spread over every GPU ([device] gpus =
# "all"): wall time of each and whether every job's shifts.csv is identical.
# Needs python3 with numpy (and tifffile or Pillow). Usage: bash bench/multi_gpu.sh
set -euo pipefail
work=${WORK:-build/multi-gpu}
rm -rf "$work"; mkdir -p "$work"
python3 - "$work" <<'PY'
import sys, numpy as np
work = sys.argv[1]
try:
    import tifffile
    base = tifffile.imread("sample_data/drosophila_embryo_13x512x512.tif")[6].astype(np.float32)
except ImportError:
    from PIL import Image
    im = Image.open("sample_data/drosophila_embryo_13x512x512.tif"); im.seek(6)
    base = np.array(im, dtype=np.float32)
big = np.kron(base, np.ones((2, 2), dtype=np.float32))  # 1024 x 1024
for s in range(8):
    rng = np.random.default_rng(s)
    walk = np.cumsum(rng.integers(-4, 5, size=(61, 2)), axis=0)
    frames = np.stack([np.roll(big, (int(dy), int(dx)), axis=(0, 1)) for dx, dy in walk]).astype("<f4")
    n, ny, nx = frames.shape
    h = np.zeros(256, dtype="<i4"); h[0:4] = (nx, ny, n, 2); h[7:10] = (nx, ny, n)
    h[10:13] = np.array([nx, ny, n], dtype="<f4").view("<i4"); h[16:19] = (1, 2, 3)
    raw = bytearray(h.tobytes()); raw[208:212] = b"MAP "; raw[212:214] = b"\x44\x44"
    with open(f"{work}/s{s}.mrc", "wb") as f:
        f.write(bytes(raw)); f.write(frames.tobytes())
    if s == 0:  # and one long series: 181 frames
        walk = np.cumsum(rng.integers(-4, 5, size=(181, 2)), axis=0)
        with open(f"{work}/long.mrc", "wb") as f:
            h[2] = 181; h[9] = 181; h[12] = np.array([181], dtype="<f4").view("<i4")[0]
            raw = bytearray(h.tobytes()); raw[208:212] = b"MAP "; raw[212:214] = b"\x44\x44"
            f.write(bytes(raw))
            for dx, dy in walk:
                f.write(np.roll(big, (int(dy), int(dx)), axis=(0, 1)).astype("<f4").tobytes())
print("8 series of 61 x 1024x1024 and one of 181 x 1024x1024 float32 written")
PY
jobs=""
for s in 0 1 2 3 4 5 6 7; do jobs+=$'[[job]]\n'"input = {stack = \"s$s.mrc\"}"$'\n'"output = {dir = \"out/s$s\"}"$'\n'; done
for gpus in '[0]' '"all"'; do
  printf '[preprocess]\nthreshold = 20.0\n[search]\nwindow = [896, 896]\nmax_shift = 24\n[output]\ndir = "out"\nreport = false\n[device]\nbackend = "cuda"\ngpus = %s\n%s' "$gpus" "$jobs" > "$work/batch.toml"
  start=$(date +%s.%N)
  build/stackalign run -q "$work/batch.toml"
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
