#!/usr/bin/env bash
# On the GPU machine: the bench stages GPU jobs' wall time, process start to
# exit, as the CLI runs them (CUDA_DEVICE_MAX_CONNECTIONS 2 unless set) and
# with CUDA_DEVICE_MAX_CONNECTIONS set to each of $CONNS (8: the driver's
# default), alternating, and whether shifts.csv stays the same.
# Usage there: bash bench/connections_device.sh  (TESTS=1 runs build/tests
# first; JOBS="tilt standard X-ray drift landmarks", CONNS="8", ROUNDS=3)
source bench/device_env.sh
MAKE_JOBS=16 device_build build/stackalign build/bench build/tests
[ "${TESTS:-0}" = 1 ] && run_tests
JOBS=${JOBS:-tilt standard X-ray drift landmarks}
for job in $JOBS; do STAGES_BACKENDS=cuda build/bench stages "$job" >/dev/null 2>&1; done
for job in $JOBS; do
  cfg=$(ls build/bench-stages/*_cuda.toml | grep -i "/${job:0:4}" | head -1)
  out="build/bench-stages/$(sed -n 's/^dir = "\(.*\)"/\1/p' "$cfg")"
  results=$( [ -f "$out/shifts.csv" ] && echo shifts.csv || echo matches.csv )
  for r in $(seq "${ROUNDS:-3}"); do
    for c in cli ${CONNS:-8}; do
      if [ "$c" = cli ]; then t=$( { /usr/bin/time -f "%e" build/stackalign run -q "$cfg"; } 2>&1 | tail -1)
      else t=$( { CUDA_DEVICE_MAX_CONNECTIONS=$c /usr/bin/time -f "%e" build/stackalign run -q "$cfg"; } 2>&1 | tail -1); fi
      rec=$(python3 -c "import json;d=json.load(open('$out/run.json'));print(round(d['seconds']['total'],3), 'connections', repr(d['plan'].get('cuda_device_max_connections')))")
      echo "$job $c round $r: wall $t s, run.json total $rec"
      cp "$out/$results" "/tmp/$job.$c.out"
    done
  done
  for c in ${CONNS:-8}; do cmp -s "/tmp/$job.cli.out" "/tmp/$job.$c.out" && echo "$job: $results the same" || echo "$job: $results DIFFERS with $c"; done
done
