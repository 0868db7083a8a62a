#!/usr/bin/env bash
# Peak memory of a 4096x4096x121 float32 series (7.6 GB on disk), aligned end
# to end with the default frame cache and with a 512 MB one (streaming).
# Needs python3 with numpy and ~25 GB of free disk. Usage: bash bench/peak_memory.sh [backend]
set -euo pipefail
backend=${1:-auto}
work=${WORK:-build/peak-memory}
mkdir -p "$work"
PYTHONPATH=bench python3 - "$work/series.mrc" <<'PY'
import sys, numpy as np
from series_io import read_stack, write_mrc
# A real Drosophila frame (nearest-upsampled 8x to 4096x4096) moved along a
# seeded walk of integer shifts, written section by section as MRC mode 2.
big = np.kron(read_stack("sample_data/drosophila_embryo_13x512x512.tif")[6].astype(np.float32),
              np.ones((8, 8), dtype=np.float32))
walk = np.cumsum(np.random.default_rng(7).integers(-3, 4, size=(121, 2)), axis=0)
write_mrc(sys.argv[1], (np.roll(big, (int(dy), int(dx)), axis=(0, 1)) for dx, dy in walk), count=121)
print(f"wrote {sys.argv[1]}: 121 x 4096x4096 float32")
PY
cat > "$work/job.toml" <<TOML
[input]
stack = "series.mrc"
[preprocess]
threshold = 20.0
[search]
window = [2048, 2048]
max_shift = 16
[output]
dir = "out"
report = false
[device]
backend = "$backend"
TOML
for cache in default 512; do
  args=(); [ "$cache" = default ] || args=(--cache-mb "$cache")
  start=$(date +%s.%N)
  build/stackalign run -q "${args[@]}" "$work/job.toml"
  end=$(date +%s.%N)
  python3 -c "import json;j=json.load(open('$work/out/run.json'));print('cache $cache MB: peak memory %.0f MB (frame cache %.0f MB), wall %.1f s, backend %s' % (j['peak_memory_mb'], j['frame_cache_mb'], $end-$start, j['backend'].split(';')[0]))"
done
ls -la "$work/series.mrc" "$work/out/aligned.mrc"
rm -rf "$work"
