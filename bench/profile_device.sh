#!/usr/bin/env bash
# On the GPU machine: where a CUDA job's GPU time goes, kernel by kernel
# (Nsight Compute's gpu__time_duration for the first PROFILE_KERNELS
# launches), against the job's wall time and run.json stages. The machine
# has ncu but no nsys, so the host's share is wall minus the kernels' sum.
# Usage there: bash bench/profile_device.sh [job ...]   (bench stages job
# names, default "tilt"; expects .deps and a build; STACKALIGN=<binary>
# profiles another build, KERNELS=<regex> only the kernels it matches)
source bench/device_env.sh
jobs=${*:-tilt}
for job in $jobs; do
  STAGES_BACKENDS=cuda build/bench stages "$job" 2>&1 | grep -E "^\|" | grep cuda
  toml=$(ls build/bench-stages/${job}*_cuda.toml)
  bin=${STACKALIGN:-build/stackalign}
  $bin run -q "$toml"
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print('  stages:', ', '.join('%s %.3f' % (k, v) for k, v in j['seconds'].items() if v), '| views_preprocessed', j.get('views_preprocessed'))" \
    build/bench-stages/out_${job}*_cuda/run.json
  timeout 400 ncu ${KERNELS:+--kernel-name "regex:$KERNELS"} --metrics gpu__time_duration.sum --csv \
    -c "${PROFILE_KERNELS:-3000}" $bin run -q "$toml" >"$OUT/ncu_$job.csv" 2>"$OUT/ncu_$job.err"
  echo "ncu rc=$?"
  python3 - "$OUT/ncu_$job.csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head = rows[0]; name = head.index("Kernel Name"); unit = head.index("Metric Unit"); val = head.index("Metric Value")
total = collections.Counter(); count = collections.Counter()
for r in rows[1:]:
    if r[val] in ("", "n/a"): continue
    ns = float(r[val].replace(",", "")) * {"ns": 1, "us": 1e3, "ms": 1e6, "nsecond": 1, "usecond": 1e3, "msecond": 1e6}[r[unit]]
    k = r[name].split("(")[0].split("<")[0][-60:]
    total[k] += ns; count[k] += 1
s = sum(total.values())
print(f"  {sum(count.values())} kernels, {s/1e6:.1f} ms of GPU time")
for k, ns in total.most_common(25):
    print(f"  {ns/1e6:9.2f} ms {100*ns/s:5.1f} % {count[k]:6d} x {ns/count[k]/1e3:8.1f} us  {k}")
PY
done
